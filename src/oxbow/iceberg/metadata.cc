#include "oxbow/iceberg/metadata.h"

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <type_traits>

namespace oxbow::iceberg {

using OJson = nlohmann::ordered_json;

std::string Snapshot::operation() const {
  auto it = summary.find("operation");
  return it == summary.end() ? "" : it->second;
}

const Schema* TableMetadata::SchemaById(int32_t id) const {
  for (const auto& s : schemas) {
    if (s.schema_id() == id) return &s;
  }
  return nullptr;
}

const Schema* TableMetadata::CurrentSchema() const { return SchemaById(current_schema_id); }

const PartitionSpec* TableMetadata::SpecById(int32_t id) const {
  for (const auto& s : partition_specs) {
    if (s.spec_id() == id) return &s;
  }
  return nullptr;
}

const PartitionSpec* TableMetadata::DefaultSpec() const { return SpecById(default_spec_id); }

const Schema* TableMetadata::SchemaForSpec(const PartitionSpec& spec) const {
  auto holds_sources = [&](const Schema* schema) {
    return schema != nullptr &&
           std::all_of(spec.fields().begin(), spec.fields().end(), [&](const PartitionField& f) {
             return schema->FindField(f.source_id) != nullptr;
           });
  };
  if (holds_sources(CurrentSchema())) return CurrentSchema();
  const Schema* newest = nullptr;
  for (const auto& s : schemas) {
    if (holds_sources(&s) && (newest == nullptr || s.schema_id() > newest->schema_id())) {
      newest = &s;
    }
  }
  return newest;
}

PartitionSpec EvolvePartitionSpec(const TableMetadata& metadata, const PartitionSpec& wanted) {
  std::vector<const PartitionField*> historic;
  int32_t highest_spec_id = -1;
  for (const auto& spec : metadata.partition_specs) {
    highest_spec_id = std::max(highest_spec_id, spec.spec_id());
    for (const auto& f : spec.fields()) historic.push_back(&f);
  }
  auto name_taken = [&](const std::string& name, const std::vector<PartitionField>& fields) {
    return std::any_of(historic.begin(), historic.end(),
                       [&](const PartitionField* h) { return h->name == name; }) ||
           std::any_of(fields.begin(), fields.end(),
                       [&](const PartitionField& f) { return f.name == name; });
  };
  int32_t last_id = metadata.last_partition_id;
  std::vector<PartitionField> fields;
  for (const auto& w : wanted.fields()) {
    auto same = std::find_if(historic.begin(), historic.end(), [&](const PartitionField* h) {
      return h->source_id == w.source_id && h->transform == w.transform;
    });
    if (same != historic.end()) {
      fields.push_back(**same);
      continue;
    }
    PartitionField f = w;
    f.field_id = ++last_id;
    if (name_taken(f.name, fields)) {
      const bool counted = f.transform.kind == TransformKind::kBucket ||
                           f.transform.kind == TransformKind::kTruncate;
      f.name.append(1, '_').append(std::to_string(counted ? f.transform.param : f.field_id));
      if (name_taken(f.name, fields)) f.name.append(1, '_').append(std::to_string(f.field_id));
    }
    fields.push_back(std::move(f));
  }
  for (const auto& spec : metadata.partition_specs) {
    if (spec.fields() == fields) return spec;
  }
  return PartitionSpec(highest_spec_id + 1, std::move(fields));
}

const Snapshot* TableMetadata::SnapshotById(int64_t id) const {
  for (const auto& s : snapshots) {
    if (s.snapshot_id == id) return &s;
  }
  return nullptr;
}

const Snapshot* TableMetadata::CurrentSnapshot() const {
  return current_snapshot_id ? SnapshotById(*current_snapshot_id) : nullptr;
}

std::string TableMetadata::Property(const std::string& key, const std::string& fallback) const {
  auto it = properties.find(key);
  return it == properties.end() ? fallback : it->second;
}

std::string TableMetadata::ToJson() const {
  OJson j;
  j["format-version"] = format_version;
  j["table-uuid"] = table_uuid;
  j["location"] = location;
  j["last-sequence-number"] = last_sequence_number;
  j["last-updated-ms"] = last_updated_ms;
  j["last-column-id"] = last_column_id;
  j["current-schema-id"] = current_schema_id;
  OJson schemas_json = OJson::array();
  for (const auto& s : schemas) schemas_json.push_back(OJson::parse(s.ToJson()));
  j["schemas"] = std::move(schemas_json);
  j["default-spec-id"] = default_spec_id;
  OJson specs = OJson::array();
  for (const auto& s : partition_specs) specs.push_back(OJson::parse(s.ToJson()));
  j["partition-specs"] = std::move(specs);
  j["last-partition-id"] = last_partition_id;
  j["default-sort-order-id"] = default_sort_order_id;
  j["sort-orders"] = OJson::parse(sort_orders_json);
  OJson props = OJson::object();
  for (const auto& [k, v] : properties) props[k] = v;
  j["properties"] = std::move(props);
  j["current-snapshot-id"] = current_snapshot_id.value_or(-1);
  OJson refs_json = OJson::object();
  for (const auto& [name, ref] : refs) {
    OJson r = ref.extra_json.empty() ? OJson::object() : OJson::parse(ref.extra_json);
    r["snapshot-id"] = ref.snapshot_id;
    r["type"] = ref.type;
    refs_json[name] = std::move(r);
  }
  j["refs"] = std::move(refs_json);
  OJson snaps = OJson::array();
  for (const auto& s : snapshots) {
    OJson sj;
    sj["snapshot-id"] = s.snapshot_id;
    if (s.parent_snapshot_id) sj["parent-snapshot-id"] = *s.parent_snapshot_id;
    sj["sequence-number"] = s.sequence_number;
    sj["timestamp-ms"] = s.timestamp_ms;
    sj["manifest-list"] = s.manifest_list;
    OJson summary = OJson::object();
    // "operation" first, as readers print it.
    summary["operation"] = s.operation().empty() ? "append" : s.operation();
    for (const auto& [k, v] : s.summary) {
      if (k != "operation") summary[k] = v;
    }
    sj["summary"] = std::move(summary);
    if (s.schema_id) sj["schema-id"] = *s.schema_id;
    snaps.push_back(std::move(sj));
  }
  j["snapshots"] = std::move(snaps);
  OJson slog = OJson::array();
  for (const auto& e : snapshot_log) {
    slog.push_back({{"timestamp-ms", e.timestamp_ms}, {"snapshot-id", e.snapshot_id}});
  }
  j["snapshot-log"] = std::move(slog);
  OJson mlog = OJson::array();
  for (const auto& e : metadata_log) {
    mlog.push_back({{"timestamp-ms", e.timestamp_ms}, {"metadata-file", e.metadata_file}});
  }
  j["metadata-log"] = std::move(mlog);
  return j.dump(2);
}

namespace {

// `v` (the value of `key`) as T, refusing other JSON types and integers out of T's range: a
// float converted to an integer would be undefined, a wide integer would wrap.
template <typename T>
T As(const OJson& v, const char* key) {
  auto wrong = [&](const char* what) {
    return std::runtime_error(std::string("\"") + key + "\" is not " + what);
  };
  if constexpr (std::is_same_v<T, std::string>) {
    if (!v.is_string()) throw wrong("a string");
    return v.get<std::string>();
  } else {
    if (!v.is_number_integer()) throw wrong("an integer");
    if (v.is_number_unsigned() ? v.get<uint64_t>() > uint64_t{std::numeric_limits<T>::max()}
                               : (v.get<int64_t>() < std::numeric_limits<T>::min() ||
                                  v.get<int64_t>() > std::numeric_limits<T>::max())) {
      throw wrong("in range");
    }
    return static_cast<T>(v.get<int64_t>());
  }
}

template <typename T>
T Required(const OJson& j, const char* key) {
  if (!j.is_object() || !j.contains(key)) {
    throw std::runtime_error(std::string("missing \"") + key + "\"");
  }
  return As<T>(j.at(key), key);
}

// The value of `key`, or `fallback` when it is absent or null.
template <typename T>
T Optional(const OJson& j, const char* key, T fallback) {
  if (!j.is_object() || !j.contains(key) || j.at(key).is_null()) return fallback;
  return As<T>(j.at(key), key);
}

Result<TableMetadata> Parse(const OJson& j) {
  TableMetadata m;
  m.format_version = Required<int32_t>(j, "format-version");
  if (m.format_version != 2) {
    return Status::NotImplemented("table metadata format-version " +
                                  std::to_string(m.format_version) + " (only 2)");
  }
  m.table_uuid = Required<std::string>(j, "table-uuid");
  m.location = Required<std::string>(j, "location");
  m.last_sequence_number = Required<int64_t>(j, "last-sequence-number");
  m.last_updated_ms = Required<int64_t>(j, "last-updated-ms");
  m.last_column_id = Required<int32_t>(j, "last-column-id");
  m.current_schema_id = Required<int32_t>(j, "current-schema-id");
  for (const auto& s : j.at("schemas")) {
    auto schema = Schema::FromJson(s.dump());
    if (!schema.ok()) return schema.status().WithContext("schemas");
    m.schemas.push_back(std::move(*schema));
  }
  m.default_spec_id = Required<int32_t>(j, "default-spec-id");
  for (const auto& s : j.at("partition-specs")) {
    auto spec = PartitionSpec::FromJson(s.dump());
    if (!spec.ok()) return spec.status().WithContext("partition-specs");
    m.partition_specs.push_back(std::move(*spec));
  }
  m.last_partition_id = Required<int32_t>(j, "last-partition-id");
  m.default_sort_order_id = Optional<int32_t>(j, "default-sort-order-id", 0);
  if (j.contains("sort-orders")) m.sort_orders_json = j["sort-orders"].dump();
  if (j.contains("properties") && j["properties"].is_object()) {
    for (const auto& [k, v] : j["properties"].items()) {
      m.properties[k] = v.is_string() ? v.get<std::string>() : v.dump();
    }
  }
  if (int64_t id = Optional<int64_t>(j, "current-snapshot-id", -1); id != -1) {
    m.current_snapshot_id = id;
  }
  if (j.contains("snapshots")) {
    for (const auto& sj : j["snapshots"]) {
      Snapshot s;
      s.snapshot_id = Required<int64_t>(sj, "snapshot-id");
      if (sj.contains("parent-snapshot-id") && !sj["parent-snapshot-id"].is_null()) {
        s.parent_snapshot_id = As<int64_t>(sj["parent-snapshot-id"], "parent-snapshot-id");
      }
      s.sequence_number = Optional<int64_t>(sj, "sequence-number", 0);
      s.timestamp_ms = Required<int64_t>(sj, "timestamp-ms");
      s.manifest_list = Required<std::string>(sj, "manifest-list");
      if (sj.contains("summary")) {
        for (const auto& [k, v] : sj["summary"].items()) {
          s.summary[k] = v.is_string() ? v.get<std::string>() : v.dump();
        }
      }
      if (sj.contains("schema-id") && !sj["schema-id"].is_null()) {
        s.schema_id = As<int32_t>(sj["schema-id"], "schema-id");
      }
      m.snapshots.push_back(std::move(s));
    }
  }
  if (j.contains("snapshot-log")) {
    for (const auto& e : j["snapshot-log"]) {
      m.snapshot_log.push_back(
          {Required<int64_t>(e, "timestamp-ms"), Required<int64_t>(e, "snapshot-id")});
    }
  }
  if (j.contains("metadata-log")) {
    for (const auto& e : j["metadata-log"]) {
      m.metadata_log.push_back(
          {Required<int64_t>(e, "timestamp-ms"), Required<std::string>(e, "metadata-file")});
    }
  }
  if (j.contains("refs")) {
    for (const auto& [name, rj] : j["refs"].items()) {
      SnapshotRef ref;
      ref.snapshot_id = Required<int64_t>(rj, "snapshot-id");
      ref.type = Required<std::string>(rj, "type");
      OJson extra = rj;
      extra.erase("snapshot-id");
      extra.erase("type");
      if (!extra.empty()) ref.extra_json = extra.dump();
      m.refs[name] = std::move(ref);
    }
  } else if (m.current_snapshot_id) {
    m.refs["main"] = SnapshotRef{*m.current_snapshot_id, "branch", ""};
  }
  // Cross references.
  if (m.CurrentSchema() == nullptr) {
    return Status::Invalid("current-schema-id " + std::to_string(m.current_schema_id) +
                           " names no schema");
  }
  if (m.DefaultSpec() == nullptr) {
    return Status::Invalid("default-spec-id " + std::to_string(m.default_spec_id) +
                           " names no partition spec");
  }
  if (m.current_snapshot_id && m.CurrentSnapshot() == nullptr) {
    return Status::Invalid("current-snapshot-id " + std::to_string(*m.current_snapshot_id) +
                           " names no snapshot");
  }
  return m;
}

}  // namespace

Result<TableMetadata> TableMetadata::FromJson(std::string_view json) {
  OJson j = OJson::parse(json, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Status::Invalid("table metadata is not JSON");
  try {
    return Parse(j);
  } catch (const std::exception& e) {
    return Status::Invalid(std::string("table metadata: ") + e.what());
  }
}

}  // namespace oxbow::iceberg
