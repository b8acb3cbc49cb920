#include "oxbow/flight/requests.h"

#include <algorithm>
#include <iterator>
#include <nlohmann/json.hpp>

namespace oxbow::flight {
namespace {

using nlohmann::json;

Result<json> ParseObject(std::string_view text, std::string_view what) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return Status::Invalid(std::string(what) + " must be a JSON object, got " + Quote(text));
  }
  return j;
}

Result<int64_t> NonNegativeOffset(const json& v, const char* key) {
  if (!v.is_number_integer() || v.get<int64_t>() < 0) {
    return Status::Invalid(std::string("ticket \"") + key +
                           "\" must be a non-negative integer offset");
  }
  return v.get<int64_t>();
}

Result<std::optional<std::vector<std::string>>> ColumnList(const json& j, const char* what) {
  if (!j.contains("columns") || j["columns"].is_null()) {
    return std::optional<std::vector<std::string>>();
  }
  if (!j["columns"].is_array())
    return Status::Invalid(std::string(what) + " \"columns\" must be a list");
  std::vector<std::string> cols;
  for (const auto& c : j["columns"]) {
    if (!c.is_string()) {
      return Status::Invalid(std::string(what) + " \"columns\" must list column names");
    }
    cols.push_back(c.get<std::string>());
  }
  return std::optional<std::vector<std::string>>(std::move(cols));
}

Result<bool> Flag(const json& j, const char* key, const char* what) {
  if (!j.contains(key)) return false;
  if (!j[key].is_boolean()) {
    return Status::Invalid(std::string(what) + " \"" + key + "\" must be true or false");
  }
  return j[key].get<bool>();
}

// {"a":[1,2],"b":["x","y"]} -> JSON Lines {"a":1,"b":"x"}\n{"a":2,"b":"y"}\n
Result<std::string> LookupKeys(const json& lookup) {
  if (!lookup.is_object() || lookup.empty()) {
    return Status::Invalid(
        "ticket \"lookup\" must be an object of key columns to lists of values, "
        "e.g. {\"id\": [1, 2]}");
  }
  size_t rows = 0;
  bool first = true;
  for (const auto& [column, values] : lookup.items()) {
    if (!values.is_array()) {
      return Status::Invalid("ticket \"lookup\" column " + Quote(column) +
                             " must be a list of values");
    }
    if (!first && values.size() != rows) {
      return Status::Invalid("ticket \"lookup\" columns must list the same number of values");
    }
    rows = values.size();
    first = false;
  }
  if (rows == 0) return Status::Invalid("ticket \"lookup\" lists no keys");
  std::string out;
  for (size_t r = 0; r < rows; ++r) {
    json row = json::object();
    for (const auto& [column, values] : lookup.items()) row[column] = values[r];
    out += row.dump();
    out += '\n';
  }
  return out;
}

constexpr std::pair<const char*, ColumnPredicate::Op> kOps[] = {
    {"<", ColumnPredicate::Op::kLess},    {"<=", ColumnPredicate::Op::kLessEqual},
    {">", ColumnPredicate::Op::kGreater}, {">=", ColumnPredicate::Op::kGreaterEqual},
    {"==", ColumnPredicate::Op::kEqual},  {"!=", ColumnPredicate::Op::kNotEqual}};

// "filter": [{"column": "x", "op": ">=", "value": 5}, ...], all of which must hold.
Result<std::vector<ColumnPredicate>> Filter(const json& j) {
  std::vector<ColumnPredicate> out;
  if (!j.contains("filter") || j["filter"].is_null()) return out;
  const json& list = j["filter"];
  if (!list.is_array()) {
    return Status::Invalid(
        "ticket \"filter\" must be a list of {\"column\", \"op\", \"value\"} objects");
  }
  for (const json& p : list) {
    const std::string at = "ticket \"filter\" entry " + std::to_string(out.size());
    if (!p.is_object() || p.size() != 3 || !p.contains("column") || !p.contains("op") ||
        !p.contains("value")) {
      return Status::Invalid(
          at + " must be {\"column\": name, \"op\": op, \"value\": value}, got " + p.dump());
    }
    ColumnPredicate predicate;
    if (!p["column"].is_string()) return Status::Invalid(at + ": \"column\" must be a name");
    predicate.column = p["column"].get<std::string>();
    const json& op = p["op"];
    auto found = std::find_if(std::begin(kOps), std::end(kOps), [&](const auto& o) {
      return op.is_string() && op.get<std::string>() == o.first;
    });
    if (found == std::end(kOps)) {
      return Status::Invalid(at + ": unknown op " + op.dump() + " (ops are <, <=, >, >=, ==, !=)");
    }
    predicate.op = found->second;
    const json& v = p["value"];
    if (v.is_number_integer() && !(v.is_number_unsigned() && v.get<uint64_t>() > INT64_MAX)) {
      predicate.value = v.get<int64_t>();
    } else if (v.is_number_float()) {
      predicate.value = v.get<double>();
    } else if (v.is_string()) {
      predicate.value = v.get<std::string>();
    } else {
      return Status::Invalid(at +
                             ": \"value\" must be a number (a 64-bit integer or a float) or "
                             "a string, got " +
                             v.dump());
    }
    out.push_back(std::move(predicate));
  }
  return out;
}

}  // namespace

Result<Ticket> ParseTicket(std::string_view text) {
  ASSIGN_OR_RAISE(json j, ParseObject(text, "ticket"));
  Ticket r;
  if (!j.contains("table") || !j["table"].is_string()) {
    return Status::Invalid("ticket needs \"table\": \"namespace.table\"");
  }
  r.table = j["table"].get<std::string>();
  if (j.contains("bucket")) {
    const json& b = j["bucket"];
    if (!b.is_number_integer() || b.get<int64_t>() < 0 || b.get<int64_t>() > INT32_MAX) {
      return Status::Invalid("ticket \"bucket\" must be an integer in [0, 2147483647]");
    }
    r.bucket = b.get<int32_t>();
    r.has_bucket = true;
  }
  ASSIGN_OR_RAISE(bool snapshot, Flag(j, "snapshot", "ticket"));
  if (snapshot) r.kind = Ticket::Kind::kSnapshot;
  ASSIGN_OR_RAISE(bool union_read, Flag(j, "union", "ticket"));
  if (j.contains("schema_id") && !j["schema_id"].is_null()) {
    const json& v = j["schema_id"];
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > INT32_MAX) {
      return Status::Invalid("ticket \"schema_id\" must be an integer in [0, 2147483647]");
    }
    if (snapshot || union_read || j.contains("lookup")) {
      return Status::Invalid(
          "ticket \"schema_id\" applies to log reads, not to snapshots, lookups or union "
          "reads");
    }
    r.schema_id = v.get<int32_t>();
  }
  if (union_read) {
    if (snapshot || j.contains("lookup")) {
      return Status::Invalid(
          "a ticket is a \"union\" read, a \"snapshot\" or a \"lookup\", "
          "not several");
    }
    for (const char* key : {"bucket", "from", "to"}) {
      if (j.contains(key)) {
        return Status::Invalid(std::string("ticket \"") + key +
                               "\" applies to log reads: a union read covers every bucket from "
                               "the lake's first row to the log's end");
      }
    }
    ASSIGN_OR_RAISE(r.follow, Flag(j, "follow", "ticket"));
    r.kind = Ticket::Kind::kUnion;
    ASSIGN_OR_RAISE(r.filter, Filter(j));
    ASSIGN_OR_RAISE(r.columns, ColumnList(j, "ticket"));
    if (j.contains("limit") && !j["limit"].is_null()) {
      if (!j["limit"].is_number_integer() || j["limit"].get<int64_t>() < 0) {
        return Status::Invalid("ticket \"limit\" must be a non-negative number of rows");
      }
      r.limit = j["limit"].get<int64_t>();
    }
    return r;
  }
  for (const char* key : {"limit", "filter"}) {
    if (j.contains(key)) {
      return Status::Invalid(std::string("ticket \"") + key +
                             "\" applies to union reads (\"union\": true)");
    }
  }
  if (j.contains("lookup")) {
    if (snapshot) return Status::Invalid("a ticket is a \"snapshot\" or a \"lookup\", not both");
    r.kind = Ticket::Kind::kLookup;
    ASSIGN_OR_RAISE(r.lookup_keys, LookupKeys(j["lookup"]));
    ASSIGN_OR_RAISE(r.prefix, Flag(j, "prefix", "ticket"));
  }
  if (r.kind != Ticket::Kind::kLog) {
    for (const char* key : {"from", "to", "follow"}) {
      if (j.contains(key)) {
        return Status::Invalid(std::string("ticket \"") + key + "\" applies to log reads, not to " +
                               (snapshot ? "snapshots" : "lookups"));
      }
    }
  }
  if (j.contains("from")) {
    const json& f = j["from"];
    if (f.is_string() && f.get<std::string>() == "earliest") {
      r.from.kind = StartPosition::Kind::kEarliest;
    } else if (f.is_string() && f.get<std::string>() == "latest") {
      r.from.kind = StartPosition::Kind::kLatest;
    } else if (f.is_object()) {
      if (f.size() != 1 || !f.contains("timestamp_ms") || !f["timestamp_ms"].is_number_integer()) {
        return Status::Invalid(
            "ticket \"from\" as an object must be {\"timestamp_ms\": <ms since the epoch>}");
      }
      r.from.kind = StartPosition::Kind::kTimestamp;
      r.from.timestamp_ms = f["timestamp_ms"].get<int64_t>();
    } else {
      if (!f.is_number_integer()) {
        return Status::Invalid(
            "ticket \"from\" must be \"earliest\", \"latest\", a non-negative integer offset "
            "or {\"timestamp_ms\": <ms>}");
      }
      ASSIGN_OR_RAISE(r.from.offset, NonNegativeOffset(f, "from"));
      r.from.kind = StartPosition::Kind::kOffset;
    }
  }
  if (j.contains("to") && !j["to"].is_null()) {
    ASSIGN_OR_RAISE(r.to, NonNegativeOffset(j["to"], "to"));
  }
  ASSIGN_OR_RAISE(r.columns, ColumnList(j, "ticket"));
  ASSIGN_OR_RAISE(r.follow, Flag(j, "follow", "ticket"));
  return r;
}

std::string TicketToJson(const Ticket& r) {
  if (r.kind == Ticket::Kind::kUnion) {
    json j = {{"table", r.table}, {"union", true}};
    if (r.columns) j["columns"] = *r.columns;
    if (r.limit) j["limit"] = *r.limit;
    if (r.follow) j["follow"] = true;
    if (!r.filter.empty()) {
      json filter = json::array();
      for (const auto& p : r.filter) {
        json entry = {{"column", p.column}};
        for (const auto& [name, op] : kOps) {
          if (op == p.op) entry["op"] = name;
        }
        std::visit([&](const auto& v) { entry["value"] = v; }, p.value);
        filter.push_back(std::move(entry));
      }
      j["filter"] = std::move(filter);
    }
    return j.dump();
  }
  if (r.kind != Ticket::Kind::kLog) {
    json j = {{"table", r.table}};
    if (r.has_bucket) j["bucket"] = r.bucket;
    if (r.columns) j["columns"] = *r.columns;
    if (r.kind == Ticket::Kind::kSnapshot) {
      j["snapshot"] = true;
      return j.dump();
    }
    json lookup = json::object();
    size_t start = 0;
    while (start < r.lookup_keys.size()) {
      size_t end = r.lookup_keys.find('\n', start);
      if (end == std::string::npos) end = r.lookup_keys.size();
      json row = json::parse(r.lookup_keys.substr(start, end - start), nullptr, false);
      if (row.is_object()) {
        for (const auto& [column, value] : row.items()) lookup[column].push_back(value);
      }
      start = end + 1;
    }
    j["lookup"] = std::move(lookup);
    j["prefix"] = r.prefix;
    return j.dump();
  }
  json j = {{"table", r.table}, {"bucket", r.bucket}, {"follow", r.follow}};
  switch (r.from.kind) {
    case StartPosition::Kind::kEarliest: j["from"] = "earliest"; break;
    case StartPosition::Kind::kLatest: j["from"] = "latest"; break;
    case StartPosition::Kind::kOffset: j["from"] = r.from.offset; break;
    case StartPosition::Kind::kTimestamp:
      j["from"] = {{"timestamp_ms", r.from.timestamp_ms}};
      break;
  }
  if (r.to) j["to"] = *r.to;
  if (r.columns) j["columns"] = *r.columns;
  if (r.schema_id) j["schema_id"] = *r.schema_id;
  return j.dump();
}

Result<Command> ParseCommand(std::string_view text) {
  ASSIGN_OR_RAISE(json j, ParseObject(text, "command descriptor"));
  Command c;
  if (!j.contains("table") || !j["table"].is_string()) {
    return Status::Invalid("command descriptor needs \"table\": \"namespace.table\"");
  }
  c.table = j["table"].get<std::string>();
  if (!j.contains("op")) {
    return Status::Invalid("command descriptor needs \"op\": \"upsert\", \"delete\" or \"lookup\"");
  }
  const std::string op = j["op"].is_string() ? j["op"].get<std::string>() : j["op"].dump();
  if (op == "upsert") {
    c.op = Command::Op::kUpsert;
  } else if (op == "delete") {
    c.op = Command::Op::kDelete;
  } else if (op == "lookup") {
    c.op = Command::Op::kLookup;
  } else {
    return Status::Invalid("command descriptor \"op\" " + Quote(op) +
                           " is unknown: it must be \"upsert\", \"delete\" or \"lookup\"");
  }
  ASSIGN_OR_RAISE(c.prefix, Flag(j, "prefix", "command descriptor"));
  ASSIGN_OR_RAISE(c.columns, ColumnList(j, "command descriptor"));
  if (j.contains("acks")) {
    const std::string acks =
        j["acks"].is_string() ? j["acks"].get<std::string>() : j["acks"].dump();
    if (acks != "all" && acks != "1" && acks != "-1") {
      return Status::Invalid("command descriptor \"acks\" " + Quote(acks) +
                             " is unknown: it must be \"all\" or \"1\"");
    }
    c.acks_leader = acks == "1";
  }
  if (j.contains("bucket")) {
    const json& b = j["bucket"];
    if (!b.is_number_integer() || b.get<int64_t>() < 0 || b.get<int64_t>() > INT32_MAX) {
      return Status::Invalid("command descriptor \"bucket\" must be an integer in [0, 2147483647]");
    }
    c.bucket = b.get<int32_t>();
  }
  return c;
}

std::string CommandToJson(const Command& c) {
  static constexpr const char* kOps[] = {"upsert", "delete", "lookup"};
  json j = {{"table", c.table}, {"op", kOps[static_cast<int>(c.op)]}};
  if (c.op == Command::Op::kLookup) j["prefix"] = c.prefix;
  if (c.columns) j["columns"] = *c.columns;
  if (c.acks_leader) j["acks"] = "1";
  if (c.bucket) j["bucket"] = *c.bucket;
  return j.dump();
}

Result<std::string> ParseTableNameBody(std::string_view body) {
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_discarded() && j.is_object() && j.contains("table") && j["table"].is_string()) {
    return j["table"].get<std::string>();
  }
  if (!j.is_discarded() && j.is_string()) return j.get<std::string>();
  std::string_view trimmed = body;
  while (!trimmed.empty() && (trimmed.back() == '\n' || trimmed.back() == ' ')) {
    trimmed.remove_suffix(1);
  }
  if (!trimmed.empty() && trimmed.front() != '{' && trimmed.find('"') == std::string_view::npos) {
    return std::string(trimmed);
  }
  return Status::Invalid("action body must be {\"table\": \"namespace.table\"}");
}

}  // namespace oxbow::flight
