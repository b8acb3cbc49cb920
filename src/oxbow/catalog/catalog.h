// Table metadata: what a table is (schema, buckets, keys, properties), its JSON form in the
// Flight API, and the durable catalog of all tables in a data dir.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "oxbow/arrow/schema.h"
#include "oxbow/common/file_system.h"
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

// The compact schema syntax of the CLI: "id int64 not null, name string, ts timestamp[us, tz=UTC]".
// Fields are separated by commas outside brackets; each is "name type" plus an optional
// "not null" (or "null").
Result<arrow::SchemaPtr> ParseCompactSchema(std::string_view text);

// Parses a create_table request body (see docs/api.md) into a descriptor (id and time unset).
struct CreateTableRequest {
  TableDescriptor table;
  bool if_not_exists = false;
};
Result<CreateTableRequest> ParseCreateTable(std::string_view json);
// The descriptor as JSON: {"table":...,"schema":...,"buckets":...,...}.
std::string DescriptorToJson(const TableDescriptor& table);
Result<TableDescriptor> DescriptorFromJson(std::string_view json);

// The durable set of tables of one data dir, kept in <dir>/catalog.json. Every change is
// written to a temporary file, fsynced and renamed over the old one, so a crash leaves either
// the old or the new catalog.
class Catalog {
 public:
  static Result<std::unique_ptr<Catalog>> Open(std::shared_ptr<FileSystem> fs,
                                               const std::string& dir);

  // Assigns the id and creation time. AlreadyExists unless `if_not_exists`, in which case the
  // existing table is returned.
  Result<TableDescriptor> Create(TableDescriptor table, bool if_not_exists);
  Status Drop(const std::string& name);
  Result<TableDescriptor> Get(const std::string& name) const;
  std::vector<TableDescriptor> List() const;

 private:
  Catalog(std::shared_ptr<FileSystem> fs, std::string dir)
      : fs_(std::move(fs)), dir_(std::move(dir)) {}
  Status Persist(const std::map<std::string, TableDescriptor>& tables) const;

  std::shared_ptr<FileSystem> fs_;
  std::string dir_;
  mutable std::mutex mu_;
  std::map<std::string, TableDescriptor> tables_;
  int64_t next_table_id_ = 1;
};

}  // namespace oxbow::catalog
