// The JSON requests of the Flight API (docs/api.md): DoGet tickets and action bodies that name a
// table. Parsed here, away from gRPC and from the engine, so that clients can build them without
// linking the server, and so they can be unit-tested and fuzzed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

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

// {"table":"ns.t","bucket":b,"from":"earliest"|"latest"|<offset>,"to":<offset>,
//  "columns":[...],"follow":false}
struct Ticket {
  std::string table;
  int32_t bucket = 0;
  StartPosition from;
  std::optional<int64_t> to;                        // exclusive end offset
  std::optional<std::vector<std::string>> columns;  // projection, in output order
  bool follow = false;
};

Result<Ticket> ParseTicket(std::string_view json);
std::string TicketToJson(const Ticket& ticket);

// {"table":"ns.t"} for drop_table / describe_table; also accepts a bare "ns.t".
Result<std::string> ParseTableNameBody(std::string_view body);

}  // namespace oxbow::flight
