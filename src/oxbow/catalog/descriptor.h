// What a table is (schema, buckets, keys, properties) and its JSON form, shared by the Flight
// API and the durable catalog (catalog.h).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "oxbow/arrow/schema.h"
#include "oxbow/common/status.h"

namespace oxbow::catalog {

struct TableDescriptor {
  std::string name;  // "namespace.table"
  int64_t table_id = 0;
  arrow::SchemaPtr schema;
  int32_t buckets = 1;
  std::vector<std::string> bucket_key;   // empty: sticky bucket per batch
  std::vector<std::string> primary_key;  // empty: a log table
  std::map<std::string, std::string> properties;
  int64_t created_ms = 0;

  // Field indices of bucket_key in schema.
  std::vector<int> BucketKeyIndices() const;
};

// Checks "namespace.table" (letters, digits, '_' and '-', each part 1-128 characters).
Status ValidateTableName(std::string_view name);

// {"fields":[{"name":"id","type":"int64","nullable":false,"metadata":{...}},...]}
Result<arrow::SchemaPtr> SchemaFromJson(std::string_view json);
std::string SchemaToJson(const arrow::Schema& schema);

// Parses a create_table request body (see docs/api.md) into a descriptor (id and time unset).
struct CreateTableRequest {
  TableDescriptor table;
  bool if_not_exists = false;
};
Result<CreateTableRequest> ParseCreateTable(std::string_view json);
// The descriptor as JSON: {"table":...,"schema":...,"buckets":...,...}.
std::string DescriptorToJson(const TableDescriptor& table);
Result<TableDescriptor> DescriptorFromJson(std::string_view json);

}  // namespace oxbow::catalog
