// The schema registry's ids of avro-confluent tables' schemas (docs/kafka.md#avro-confluent):
// each schema version of a table is its Avro form's id, asked of the registry once and kept.
#pragma once

#include <map>
#include <mutex>
#include <tuple>

#include "oxbow/kafka/kafka.h"
#include "oxbow/kafka/values_internal.h"

namespace oxbow::kafka::internal {

class RegistryIds {
 public:
  // `registry` may be null (no registry): Resolve then refuses.
  explicit RegistryIds(SchemaIds* registry) : registry_(registry) {}

  // Fills the kAvroConfluent part of `format`, `table`'s (which must outlive `format`): the ids
  // of its current value schema and of its key, and the reader of values of earlier versions.
  // NotImplemented without a registry; what the registry answers when it cannot give an id.
  Status Resolve(const catalog::TableDescriptor& table, TopicFormat* format);

 private:
  // The id of the Avro form of `schema`: schema version `schema_id`'s rows, or its key columns.
  Result<int32_t> IdOf(int64_t table_id, int32_t schema_id, const arrow::Schema& schema, bool key);
  // The values framed with `id`, of an earlier version of `table`, as rows of its current one.
  Result<arrow::RecordBatchPtr> ReadEarlier(const catalog::TableDescriptor& table, int32_t id,
                                            const std::vector<std::string_view>& datums,
                                            size_t first);

  SchemaIds* const registry_;
  std::mutex mu_;
  // By table id, schema version and whether the key's.
  std::map<std::tuple<int64_t, int32_t, bool>, int32_t> ids_;
};

}  // namespace oxbow::kafka::internal
