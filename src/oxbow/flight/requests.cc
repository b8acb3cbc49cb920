#include "oxbow/flight/requests.h"

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
  if (j.contains("columns") && !j["columns"].is_null()) {
    if (!j["columns"].is_array()) return Status::Invalid("ticket \"columns\" must be a list");
    std::vector<std::string> cols;
    for (const auto& c : j["columns"]) {
      if (!c.is_string()) return Status::Invalid("ticket \"columns\" must list column names");
      cols.push_back(c.get<std::string>());
    }
    r.columns = std::move(cols);
  }
  if (j.contains("follow")) {
    if (!j["follow"].is_boolean()) return Status::Invalid("ticket \"follow\" must be true/false");
    r.follow = j["follow"].get<bool>();
  }
  return r;
}

std::string TicketToJson(const Ticket& r) {
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
