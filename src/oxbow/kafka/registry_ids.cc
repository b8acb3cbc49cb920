#include <algorithm>

#include "oxbow/arrow/compute.h"
#include "oxbow/kafka/avro_values_internal.h"
#include "oxbow/kafka/broker_internal.h"
#include "oxbow/kafka/registry_ids_internal.h"

namespace oxbow::kafka::internal {
namespace {

// Rows of version `from` as rows of `table`'s current version: columns matched by field id (a
// renamed one keeps its id), widened ones cast, columns added since null, dropped ones gone.
Result<arrow::RecordBatchPtr> ToCurrentVersion(const arrow::RecordBatch& rows,
                                               const catalog::SchemaVersion& from,
                                               const catalog::TableDescriptor& table) {
  std::vector<arrow::Array> columns;
  for (size_t i = 0; i < table.field_ids.size(); ++i) {
    const arrow::Field& field = table.schema->field(static_cast<int>(i));
    auto it = std::find(from.field_ids.begin(), from.field_ids.end(), table.field_ids[i]);
    if (it == from.field_ids.end()) {
      ASSIGN_OR_RAISE(auto nulls, arrow::MakeNullArray(field.type, rows.num_rows()));
      columns.push_back(std::move(nulls));
      continue;
    }
    ASSIGN_OR_RAISE(
        auto column,
        arrow::Cast(rows.column(static_cast<int>(it - from.field_ids.begin())), field.type));
    columns.push_back(std::move(column));
  }
  return arrow::RecordBatch::Make(table.schema, rows.num_rows(), std::move(columns));
}

}  // namespace

Status RegistryIds::Resolve(const catalog::TableDescriptor& table, TopicFormat* format) {
  if (registry_ == nullptr) {
    return Status::NotImplemented(
        "table " + Quote(table.name) +
        " has kafka.value.format=avro-confluent, whose values carry schema registry ids, and "
        "this server runs no schema registry (--schema-registry-listen)");
  }
  ASSIGN_OR_RAISE(format->value_schema_id,
                  IdOf(table.table_id, table.schema_id, *table.schema, /*key=*/false));
  if (format->keyed()) {
    // Key columns never change: every version has the same key schema.
    ASSIGN_OR_RAISE(format->key_schema_id,
                    IdOf(table.table_id, table.schema_id, *format->key_schema, /*key=*/true));
  }
  // By reference: a format lives within the request that resolved it, as its table does; no
  // copy of the descriptor per request.
  format->read_earlier = [this, &table](int32_t id, const std::vector<std::string_view>& datums,
                                        size_t first) {
    return ReadEarlier(table, id, datums, first);
  };
  return Status::OK();
}

Result<int32_t> RegistryIds::IdOf(int64_t table_id, int32_t schema_id, const arrow::Schema& schema,
                                  bool key) {
  const auto cache_key = std::make_tuple(table_id, schema_id, key);
  {
    std::lock_guard lock(mu_);
    if (auto it = ids_.find(cache_key); it != ids_.end()) return it->second;
  }
  ASSIGN_OR_RAISE(std::string avro, AvroSchemaOf(schema));
  ASSIGN_OR_RAISE(int32_t id, registry_->IdOf(avro));
  std::lock_guard lock(mu_);
  ids_[cache_key] = id;
  return id;
}

Result<arrow::RecordBatchPtr> RegistryIds::ReadEarlier(const catalog::TableDescriptor& table,
                                                       int32_t id,
                                                       const std::vector<std::string_view>& datums,
                                                       size_t first) {
  ASSIGN_OR_RAISE(int32_t current, IdOf(table.table_id, table.schema_id, *table.schema, false));
  std::string ids = std::to_string(current);
  for (auto v = table.previous_schemas.rbegin(); v != table.previous_schemas.rend(); ++v) {
    ASSIGN_OR_RAISE(int32_t version_id, IdOf(table.table_id, v->schema_id, *v->schema, false));
    if (version_id == id) {
      ASSIGN_OR_RAISE(auto rows, AvroToRows(datums, v->schema, first));
      return ToCurrentVersion(*rows, *v, table);
    }
    ids += ", " + std::to_string(version_id);
  }
  return Status::Invalid("record " + std::to_string(first) + "'s value has schema id " +
                         std::to_string(id) + ", which is no version of subject '" +
                         TopicForTable(table) + "-value' (its ids: " + ids + ")");
}

}  // namespace oxbow::kafka::internal
