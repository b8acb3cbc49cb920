// Avro schemas as a schema registry needs them (Avro 1.11 specification, "Schema Declaration"
// and "Schema Resolution"): parsed and checked, in one normalized form that compares equal for
// equal schemas, and the problems a reader schema has reading data written with another.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "oxbow/common/status.h"

namespace oxbow::registry::internal {

class AvroSchema {
 public:
  // Invalid, saying what and where, for text that is no Avro schema: not JSON, an unknown type
  // or named type, a record without a name, a field without a type, duplicate names, a union in
  // a union or with two branches of one type, an enum symbol or name Avro does not allow.
  static Result<AvroSchema> Parse(std::string_view text);

  // The normalized form: every type in its full form (named types by their full names, defined
  // where first used and named after), without doc, aliases and order; defaults kept.
  const std::string& canonical() const { return canonical_; }
  const nlohmann::json& root() const { return root_; }
  // The named types (records, enums, fixed) by full name, each in its normalized form.
  const std::map<std::string, nlohmann::json>& named() const { return named_; }
  // What decides the binary encoding: the normalized form without defaults and without the
  // names of named types. Equal for schemas whose datums are the same bytes.
  const std::string& encoding() const { return encoding_; }
  // This schema with its top-level record named `name` (no namespace); itself when not a record.
  Result<AvroSchema> Renamed(const std::string& name) const;

 private:
  nlohmann::json root_;
  std::map<std::string, nlohmann::json> named_;
  std::string canonical_;
  std::string encoding_;
};

// Why `reader` cannot read every datum written with `writer` under Avro's schema resolution
// (each problem names the field path); empty when it can.
std::vector<std::string> ReadProblems(const AvroSchema& reader, const AvroSchema& writer);

}  // namespace oxbow::registry::internal
