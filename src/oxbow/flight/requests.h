// The JSON requests of the Flight API (docs/api.md): DoGet tickets and action bodies that name a
// table. Parsed here, away from gRPC and from the engine, so that clients can build them without
// linking the server, and so they can be unit-tested and fuzzed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "oxbow/common/predicate.h"
#include "oxbow/common/status.h"

namespace oxbow::flight {

// Where a read starts.
struct StartPosition {
  // kTimestamp: the first batch appended at or after timestamp_ms.
  enum class Kind { kEarliest, kLatest, kOffset, kTimestamp };
  Kind kind = Kind::kEarliest;
  int64_t offset = 0;        // for kOffset
  int64_t timestamp_ms = 0;  // for kTimestamp, ms since the epoch
};

// A read of a table's log: {"table":"ns.t","bucket":b,"from":"earliest"|"latest"|<offset>,
// "to":<offset>,"columns":[...],"follow":false,"schema_id":n}
// The current rows of a primary-key table: {"table":"ns.t","snapshot":true,"bucket":b,
// "columns":[...]} (no "bucket": every bucket).
// A batch lookup: {"table":"ns.t","lookup":{"<col>":[values...],...},"prefix":false,
// "columns":[...]}.
// A union read of a log table's whole contents (lake snapshot plus the log after it):
// {"table":"ns.t","union":true,"columns":[...],"limit":n,"follow":false,
// "filter":[{"column":"x","op":">=","value":5},...]}.
struct Ticket {
  enum class Kind { kLog, kSnapshot, kLookup, kUnion };
  Kind kind = Kind::kLog;
  std::string table;
  int32_t bucket = 0;
  bool has_bucket = false;  // whether "bucket" was given (a snapshot reads every bucket if not)
  StartPosition from;
  std::optional<int64_t> to;                        // exclusive end offset
  std::optional<std::vector<std::string>> columns;  // projection, in output order
  bool follow = false;
  std::optional<int32_t> schema_id;     // kLog: read in this schema version
  std::optional<int64_t> limit;         // kUnion: stop after this many rows
  std::vector<ColumnPredicate> filter;  // kUnion: rows must match all of them
  // kLookup: the keys as JSON Lines, one object per key ({"<col>": value, ...}), and whether
  // they are bucket-key prefixes.
  std::string lookup_keys;
  bool prefix = false;
};

Result<Ticket> ParseTicket(std::string_view json);
std::string TicketToJson(const Ticket& ticket);

// The CMD descriptor of a DoPut or DoExchange: {"table":"ns.t","op":"upsert"|"delete"|"lookup",
// "prefix":false,"columns":[...],"acks":"all"|"1","bucket":b} ("prefix" and "columns" for
// "lookup" only; "acks" for puts in cluster mode, default "all"; "bucket" in cluster mode: every
// row is in that bucket and the receiving server must lead it, as a server routing a
// primary-key table's rows sends them).
struct Command {
  enum class Op { kUpsert, kDelete, kLookup };
  std::string table;
  Op op = Op::kUpsert;
  // A put is acknowledged once the leader has it ("1") rather than every in-sync replica.
  bool acks_leader = false;
  std::optional<int32_t> bucket;
  bool prefix = false;
  std::optional<std::vector<std::string>> columns;
};

Result<Command> ParseCommand(std::string_view json);
std::string CommandToJson(const Command& command);

// {"table":"ns.t"} for drop_table / describe_table; also accepts a bare "ns.t".
Result<std::string> ParseTableNameBody(std::string_view body);

}  // namespace oxbow::flight
