// The tables' API: the list (filtered, paged), a table, its last rows, a lookup by key, its
// lake's snapshots and files, and an admin's change of its properties.
#include <algorithm>
#include <charconv>

#include "oxbow/catalog/descriptor.h"
#include "oxbow/console/service_internal.h"
#include "oxbow/engine/engine.h"
#include "oxbow/iceberg/table.h"
#include "oxbow/text/text.h"

namespace oxbow::console::internal {
namespace {

constexpr int64_t kDefaultTablesPage = 100;
constexpr int64_t kMaxTablesPage = 1000;
constexpr int64_t kDefaultRows = 20;
constexpr int64_t kMaxRows = 500;
constexpr int64_t kDefaultLakeFiles = 100;
constexpr int64_t kMaxLakeFiles = 1000;
constexpr int64_t kMaxSnapshots = 100;
constexpr auto kReadTimeout = std::chrono::seconds(5);

// The query parameter `name` as an integer in [min, max]; `fallback` when absent.
Result<int64_t> IntParam(const http::Request& request, const std::string& name, int64_t fallback,
                         int64_t min, int64_t max) {
  auto it = request.query.find(name);
  if (it == request.query.end()) return fallback;
  const std::string& text = it->second;
  int64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < min || value > max) {
    return Status::Invalid("parameter " + name + " must be an integer from " + std::to_string(min) +
                           " to " + std::to_string(max) + ", not " + Quote(text));
  }
  return value;
}

std::string StringParam(const http::Request& request, const std::string& name) {
  auto it = request.query.find(name);
  return it == request.query.end() ? std::string() : it->second;
}

// ?columns=a,b: the projection; nullopt (every column) when absent or empty.
std::optional<std::vector<std::string>> ColumnsParam(const http::Request& request) {
  const std::string text = StringParam(request, "columns");
  if (text.empty()) return std::nullopt;
  std::vector<std::string> columns;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    if (comma > start) columns.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return columns;
}

// The rows of `batch` as JSON objects, in docs/text-formats.md's JSON forms.
Result<std::vector<json>> RowsJson(const arrow::RecordBatch& batch) {
  ASSIGN_OR_RAISE(std::string lines, text::FormatBatch(text::TextFormat::kJsonLines, batch));
  std::vector<json> rows;
  size_t start = 0;
  while (start < lines.size()) {
    const size_t end = std::min(lines.find('\n', start), lines.size());
    json row = json::parse(lines.begin() + static_cast<std::ptrdiff_t>(start),
                           lines.begin() + static_cast<std::ptrdiff_t>(end), nullptr,
                           /*allow_exceptions=*/false);
    if (row.is_discarded()) return Status::Internal("a row's JSON Lines text does not parse");
    rows.push_back(std::move(row));
    start = end + 1;
  }
  return rows;
}

json LakeJson(const lake::LakeTableStatus& lake) {
  json j = {{"enabled", lake.enabled}};
  if (!lake.enabled) return j;
  j["lag_rows"] = lake.lag_rows;
  j["lag_ms"] = lake.lag_ms;
  j["snapshots"] = lake.snapshots;
  j["data_files"] = lake.data_files;
  j["metadata_location"] = lake.metadata_location;
  if (!lake.error.empty()) j["error"] = lake.error;
  return j;
}

json SchemaJson(const arrow::Schema& schema) {
  return json::parse(catalog::SchemaToJson(schema))["fields"];
}

const char* ContentName(iceberg::FileContent content) {
  switch (content) {
    case iceberg::FileContent::kData: return "data";
    case iceberg::FileContent::kPositionDeletes: return "position_deletes";
    case iceberg::FileContent::kEqualityDeletes: return "equality_deletes";
  }
  return "unknown";
}

}  // namespace

http::Response Service::Tables(const auth::User* user, const http::Request& request) const {
  auto offset = IntParam(request, "offset", 0, 0, INT64_MAX);
  auto limit = IntParam(request, "limit", kDefaultTablesPage, 1, kMaxTablesPage);
  if (!offset.ok()) return ProblemOf(offset.status());
  if (!limit.ok()) return ProblemOf(limit.status());
  const std::string filter = StringParam(request, "filter");
  // Only the page's tables are described (their lake's state): the list itself is in memory.
  std::vector<catalog::TableDescriptor> matching;
  for (catalog::TableDescriptor& table : node_->ListTables()) {
    if (user != nullptr && !user->Allows(table.name, auth::Access::kRead)) continue;
    if (!filter.empty() && table.name.find(filter) == std::string::npos) continue;
    matching.push_back(std::move(table));
  }
  json tables = json::array();
  const size_t first = static_cast<size_t>(std::min<int64_t>(*offset, std::ssize(matching)));
  const size_t last = std::min(matching.size(), first + static_cast<size_t>(*limit));
  for (size_t i = first; i < last; ++i) {
    const catalog::TableDescriptor& table = matching[i];
    auto described = node_->DescribeTable(table.name);
    if (!described.ok()) continue;
    const LogSize size = LogSizeOf(described->table.buckets);
    auto retention = table.properties.find(engine::kRetentionProperty);
    tables.push_back({{"name", table.name},
                      {"kind", KindOf(table)},
                      {"buckets", table.buckets},
                      {"log_records", size.records},
                      {"log_bytes", size.bytes},
                      {"retention", retention == table.properties.end() ? json(nullptr)
                                                                        : json(retention->second)},
                      {"schema_id", table.schema_id},
                      {"lake", LakeJson(described->lake)}});
  }
  return Json(200, {{"total", matching.size()},
                    {"offset", *offset},
                    {"limit", *limit},
                    {"filter", filter},
                    {"tables", std::move(tables)}});
}

http::Response Service::TablePage(const std::string& name) const {
  auto described = node_->DescribeTable(name);
  if (!described.ok()) return ProblemOf(described.status());
  const catalog::TableDescriptor& table = described->table.table;
  json versions = json::array();
  for (const catalog::SchemaVersion& v : table.previous_schemas) {
    versions.push_back({{"schema_id", v.schema_id}, {"fields", SchemaJson(*v.schema)}});
  }
  versions.push_back({{"schema_id", table.schema_id}, {"fields", SchemaJson(*table.schema)}});
  // In cluster mode each bucket's leader (-1: none in sync), replicas and ISR; null in
  // embedded mode.
  const auto meta = node_->cluster() ? node_->cluster()->Metadata() : nullptr;
  const cluster::TableMeta* placed = meta ? meta->FindTable(name) : nullptr;
  json buckets = json::array();
  for (const engine::BucketStatus& b : described->table.buckets) {
    const size_t index = static_cast<size_t>(b.bucket);
    json bucket = {{"bucket", b.bucket},           {"earliest_offset", b.earliest_offset},
                   {"next_offset", b.next_offset}, {"log_bytes", b.size_bytes},
                   {"segments", b.segments},       {"leader", nullptr},
                   {"replicas", nullptr},          {"isr", nullptr}};
    if (placed != nullptr && index < placed->states.size()) {
      bucket["leader"] = placed->states[index].leader;
      bucket["isr"] = placed->states[index].isr;
    }
    if (placed != nullptr && index < placed->replicas.size()) {
      bucket["replicas"] = placed->replicas[index];
    }
    buckets.push_back(std::move(bucket));
  }
  json lake = LakeJson(described->lake);
  if (described->lake.enabled) {
    json time_ms = json::array(), lag_rows = json::array(), lag_ms = json::array();
    for (const Sample& sample : history_->samples()) {
      auto it = sample.lake_lag.find(name);
      if (it == sample.lake_lag.end()) continue;
      time_ms.push_back(sample.time_ms);
      lag_rows.push_back(it->second.rows);
      lag_ms.push_back(it->second.ms);
    }
    lake["lag_history"] = {{"time_ms", time_ms}, {"lag_rows", lag_rows}, {"lag_ms", lag_ms}};
  }
  json read_columns = json::array();
  if (auto handle = node_->GetTable(name); handle.ok()) {
    for (const auto& field : handle->read_schema()->fields()) read_columns.push_back(field.name);
  }
  return Json(200, {{"name", table.name},
                    {"kind", KindOf(table)},
                    {"primary_key", table.primary_key},
                    {"bucket_key", table.bucket_key},
                    {"properties", table.properties},
                    {"schema_id", table.schema_id},
                    {"schema_versions", std::move(versions)},
                    {"read_columns", std::move(read_columns)},
                    {"buckets", std::move(buckets)},
                    {"lake", std::move(lake)}});
}

http::Response Service::Rows(const std::string& name, const http::Request& request) const {
  auto handle = node_->GetTable(name);
  if (!handle.ok()) return ProblemOf(handle.status());
  auto bucket = IntParam(request, "bucket", 0, 0, handle->bucket_count() - 1);
  auto limit = IntParam(request, "limit", kDefaultRows, 1, kMaxRows);
  if (!bucket.ok()) return ProblemOf(bucket.status());
  if (!limit.ok()) return ProblemOf(limit.status());
  // A bucket's rows are its leader's to serve (a follower's log may run past what is committed).
  if (node_->cluster() != nullptr) {
    if (Status leads = node_->cluster()->CheckLeader(name, static_cast<int32_t>(*bucket));
        !leads.ok()) {
      return ProblemOf(leads);
    }
  }
  const std::vector<engine::BucketStatus> statuses = handle->Buckets();
  const engine::BucketStatus& status = statuses[static_cast<size_t>(*bucket)];
  // The page before `before` (default: the newest rows).
  auto before = IntParam(request, "before", status.next_offset, 0, status.next_offset);
  if (!before.ok()) return ProblemOf(before.status());
  const int64_t from = std::max(status.earliest_offset, *before - *limit);
  json rows = json::array();
  // The columns asked for, by their index in what a read of the table returns.
  const arrow::SchemaPtr& read_schema = handle->read_schema();
  std::vector<int> projection;
  json columns = json::array();
  for (const std::string& column : ColumnsParam(request).value_or(std::vector<std::string>())) {
    const int index = read_schema->GetFieldIndex(column);
    if (index < 0) {
      return Problem(400, "table " + Quote(name) + " has no column " + Quote(column));
    }
    projection.push_back(index);
    columns.push_back(column);
  }
  if (projection.empty()) {
    for (const arrow::Field& field : read_schema->fields()) columns.push_back(field.name);
  }
  engine::ReadRequest read;
  read.bucket = static_cast<int32_t>(*bucket);
  read.from = {engine::StartPosition::Kind::kOffset, from, 0};
  read.to = *before;
  if (from < *before) {
    auto cursor = handle->OpenRead(read);
    if (!cursor.ok()) return ProblemOf(cursor.status());
    const auto deadline = std::chrono::steady_clock::now() + kReadTimeout;
    while (!(*cursor)->done()) {
      auto next = (*cursor)->NextDecoded(deadline);
      if (!next.ok()) return ProblemOf(next.status());
      if (!next->has_value()) break;
      const engine::DecodedBatch& decoded = **next;
      auto batch = projection.empty() ? decoded.batch : decoded.batch->SelectColumns(projection);
      if (!batch.ok()) return ProblemOf(batch.status());
      auto values = RowsJson(**batch);
      if (!values.ok()) return ProblemOf(values.status());
      for (size_t i = 0; i < values->size(); ++i) {
        const int64_t offset = decoded.base_offset + static_cast<int64_t>(i);
        if (offset < from || offset >= *before) continue;
        rows.push_back({{"offset", offset}, {"row", std::move((*values)[i])}});
      }
    }
  }
  return Json(200, {{"bucket", *bucket},
                    {"earliest_offset", status.earliest_offset},
                    {"next_offset", status.next_offset},
                    {"from", from},
                    {"to", *before},
                    {"columns", std::move(columns)},
                    {"rows", std::move(rows)}});
}

http::Response Service::Lookup(const std::string& name, const http::Request& request) const {
  auto handle = node_->GetTable(name);
  if (!handle.ok()) return ProblemOf(handle.status());
  const catalog::TableDescriptor& table = handle->descriptor();
  if (table.primary_key.empty()) {
    return Problem(400, "table " + Quote(name) + " has no primary key to look up");
  }
  std::vector<int> key_columns;
  for (const std::string& column : table.primary_key) {
    key_columns.push_back(table.schema->GetFieldIndex(column));
  }
  auto key_schema = table.schema->Select(key_columns);
  if (!key_schema.ok()) return ProblemOf(key_schema.status());
  const std::string key = StringParam(request, "key");
  if (key.empty()) return Problem(400, "parameter key (the key as a JSON object) is missing");
  auto reader = text::TextReader::Make(text::TextFormat::kJsonLines, key, *key_schema);
  if (!reader.ok()) return ProblemOf(reader.status());
  auto keys = (*reader)->Next();
  if (!keys.ok()) return ProblemOf(keys.status().WithContext("the key"));
  if (*keys == nullptr || (*keys)->num_rows() != 1) {
    return Problem(400, "parameter key must be one JSON object of the key's columns");
  }
  engine::LookupRequest lookup;
  lookup.table = name;
  lookup.keys = *keys;
  lookup.columns = ColumnsParam(request);
  auto found = handle->Lookup(std::move(lookup));
  if (!found.ok()) return ProblemOf(found.status());
  if (*found == nullptr || (*found)->num_rows() == 0) return Json(200, {{"found", false}});
  auto rows = RowsJson(**found);
  if (!rows.ok()) return ProblemOf(rows.status());
  return Json(200, {{"found", true}, {"row", std::move(rows->front())}});
}

http::Response Service::Lake(const std::string& name, const http::Request& request) const {
  auto limit = IntParam(request, "limit", kDefaultLakeFiles, 1, kMaxLakeFiles);
  if (!limit.ok()) return ProblemOf(limit.status());
  auto handle = node_->GetTable(name);
  if (!handle.ok()) return ProblemOf(handle.status());
  auto status = handle->LakeStatus();
  if (!status.ok()) return ProblemOf(status.status());
  json answer = {{"enabled", status->enabled},
                 {"metadata_location", status->metadata_location},
                 {"current_snapshot_id", nullptr},
                 {"snapshots", json::array()},
                 {"files", json::array()},
                 {"data_files", 0},
                 {"delete_files", 0},
                 {"records", 0},
                 {"bytes", 0}};
  if (!status->enabled || status->metadata_location.empty()) return Json(200, answer);
  const size_t dot = name.find('.');
  auto lake_table = iceberg::IcebergTable::Load(node_->LakeFileSystem(), node_->LakeCatalog(),
                                                {name.substr(0, dot), name.substr(dot + 1)});
  if (!lake_table.ok()) return ProblemOf(lake_table.status().WithContext("the lake table"));
  const iceberg::TableMetadata& metadata = (*lake_table)->metadata();
  answer["metadata_location"] = (*lake_table)->metadata_file();
  // Snapshot ids as strings: they run past JavaScript's 2^53.
  auto id = [](std::optional<int64_t> v) { return v ? json(std::to_string(*v)) : json(nullptr); };
  answer["current_snapshot_id"] = id(metadata.current_snapshot_id);
  // Newest first.
  json snapshots = json::array();
  for (auto s = metadata.snapshots.rbegin();
       s != metadata.snapshots.rend() && std::ssize(snapshots) < kMaxSnapshots; ++s) {
    snapshots.push_back({{"snapshot_id", id(s->snapshot_id)},
                         {"parent_snapshot_id", id(s->parent_snapshot_id)},
                         {"sequence_number", s->sequence_number},
                         {"timestamp_ms", s->timestamp_ms},
                         {"operation", s->operation()},
                         {"summary", s->summary}});
  }
  answer["snapshots"] = std::move(snapshots);
  auto entries = (*lake_table)->LiveEntries();
  if (!entries.ok()) return ProblemOf(entries.status().WithContext("the lake's manifests"));
  int64_t data_files = 0, delete_files = 0, records = 0, bytes = 0;
  json files = json::array();
  for (const iceberg::ManifestEntry& entry : *entries) {
    const iceberg::DataFile& file = entry.data_file;
    if (file.content == iceberg::FileContent::kData) {
      ++data_files;
      records += file.record_count;
    } else {
      ++delete_files;
    }
    bytes += file.file_size_in_bytes;
    if (std::ssize(files) < *limit) {
      files.push_back({{"path", file.file_path},
                       {"content", ContentName(file.content)},
                       {"records", file.record_count},
                       {"bytes", file.file_size_in_bytes},
                       {"spec_id", file.spec_id.value_or(0)},
                       {"snapshot_id", id(entry.snapshot_id)}});
    }
  }
  answer["files"] = std::move(files);
  answer["data_files"] = data_files;
  answer["delete_files"] = delete_files;
  answer["records"] = records;
  answer["bytes"] = bytes;
  return Json(200, answer);
}

http::Response Service::AlterProperties(const std::string& name,
                                        const http::Request& request) const {
  const json body = json::parse(request.body, nullptr, /*allow_exceptions=*/false);
  if (!body.is_object() || !body.contains("properties") || !body["properties"].is_object()) {
    return Problem(400, R"(the body must be {"properties": {"key": "value" or null, ...}})");
  }
  if (body["properties"].empty()) return Problem(400, "no property to change");
  // alter_table's set_properties, checked by its own parser (the body parsed: valid UTF-8).
  auto change = catalog::ParseSchemaChange(
      json{{"op", "set_properties"}, {"properties", body["properties"]}}.dump());
  if (!change.ok()) return ProblemOf(change.status());
  auto altered = node_->AlterTable({name, {std::move(*change)}});
  if (!altered.ok()) return ProblemOf(altered.status());
  return Json(200, {{"name", altered->name}, {"properties", altered->properties}});
}

}  // namespace oxbow::console::internal
