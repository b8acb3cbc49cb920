// What a table is (schema, buckets, keys, properties) and its JSON form, shared by the Flight
// API and the durable catalog (catalog.h).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "oxbow/arrow/schema.h"
#include "oxbow/common/status.h"

namespace oxbow::catalog {

// The field ids of a column's nested fields, in pre-order: struct fields, a list's item, a map's
// key and value (its entries struct has none); empty for a flat column.
using ChildIds = std::vector<int32_t>;

// One version of a table's schema: its id, its columns and each column's field id (nested fields
// too). A field keeps its id across renames and widenings; a dropped field's id is never reused.
struct SchemaVersion {
  int32_t schema_id = 0;
  arrow::SchemaPtr schema;
  std::vector<int32_t> field_ids;   // per column of schema
  std::vector<ChildIds> child_ids;  // per column of schema (missing entries: none)

  // Column i's field with its nested fields' ids as their "PARQUET:field_id" metadata, the key
  // arrow::Cast matches struct fields by.
  arrow::DataType TypeWithIds(int i) const;
};

// How many ids `type`'s nested fields take (the length of its ChildIds).
int CountChildIds(const arrow::DataType& type);
// `type` with `ids` (pre-order, as ChildIds) as its nested fields' "PARQUET:field_id" metadata.
arrow::DataType WithChildIds(const arrow::DataType& type, const ChildIds& ids);

struct TableDescriptor {
  std::string name;  // "namespace.table"
  int64_t table_id = 0;
  arrow::SchemaPtr schema;  // the current schema, version schema_id
  int32_t schema_id = 0;
  std::vector<int32_t> field_ids;   // per column of schema
  std::vector<ChildIds> child_ids;  // per column of schema
  int32_t last_field_id = 0;        // the highest field id ever given
  // Every earlier schema version, oldest first (the log still holds batches written with them).
  std::vector<SchemaVersion> previous_schemas;
  int32_t buckets = 1;
  std::vector<std::string> bucket_key;   // empty: sticky bucket per batch
  std::vector<std::string> primary_key;  // empty: a log table
  std::map<std::string, std::string> properties;
  int64_t created_ms = 0;

  // Field indices of bucket_key in schema.
  std::vector<int> BucketKeyIndices() const;
  // The current version.
  SchemaVersion CurrentSchema() const { return {schema_id, schema, field_ids, child_ids}; }
  // Makes `schema` version 0 with field ids 1..n for the columns and the next ones for their
  // nested fields, forgetting any other version (a new table).
  void ResetSchemaVersions();
  // The version `id` (current or earlier); NotFound naming the table otherwise.
  Result<SchemaVersion> SchemaById(int32_t id) const;
};

// A column's doc (docs/api.md#alter_table) is the field metadata entry under this key, as
// pyiceberg's Arrow schemas carry an Iceberg field's doc; the JSON forms show it as the field's
// "doc". Each schema version keeps its own docs.
inline constexpr char kFieldDocKey[] = "doc";
// The doc of `field`, if it has one.
std::optional<std::string> FieldDoc(const arrow::Field& field);
// Sets (a value) or removes (nullopt) the doc of `field`.
void SetFieldDoc(arrow::Field* field, const std::optional<std::string>& doc);

// Checks "namespace.table" (letters, digits, '_' and '-', each part 1-128 characters).
Status ValidateTableName(std::string_view name);
// Checks a namespace alone, by the same rule.
Status ValidateNamespace(std::string_view name);

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

// One change of an alter_table request (docs/api.md#alter_table).
struct SchemaChange {
  enum class Op {
    kAddColumn,
    kDropColumn,
    kRenameColumn,
    kWidenType,
    kMakeOptional,
    kSetColumnDoc,
    kSetProperties
  };
  Op op = Op::kAddColumn;
  // The field changed (not for set_properties): a top-level column, or a nested field below one
  // ({"point", "z"}; a list's item by its name or "element", a map's "key" or "value").
  std::vector<std::string> path;
  std::string name;      // path as FormatColumnPath prints it (the column's name at top level)
  arrow::DataType type;  // add_column, widen_type
  std::string after;     // add_column: the sibling it follows; empty: at the end
  bool first = false;    // add_column: before every column
  std::string new_name;  // rename_column
  // set_column_doc: the new doc, nullopt removes it; add_column: its doc, if any.
  std::optional<std::string> doc;
  // set_properties: a value sets the property, nullopt removes it.
  std::map<std::string, std::optional<std::string>> properties;
};
// A field path as the CLI and messages write it: names joined by '.', a name holding '.' or '`'
// in backticks (a '`' in it doubled), as Spark SQL quotes: point.z, `a.b`.c.
std::string FormatColumnPath(const std::vector<std::string>& path);
// The reverse; Invalid for an empty name, an unclosed backtick or text after a closing one.
Result<std::vector<std::string>> ParseColumnPath(std::string_view text);

struct AlterTableRequest {
  std::string table;
  std::vector<SchemaChange> changes;
};
Result<AlterTableRequest> ParseAlterTable(std::string_view json);
// One change of an alter_table body's "changes", e.g. {"op": "set_properties", ...}.
Result<SchemaChange> ParseSchemaChange(std::string_view json);
// `table` with every change applied in order, or Invalid naming the change and the rule it
// breaks. Column changes make a new schema version (one per call); properties are only merged
// here: whoever applies them validates them as create_table does. The properties naming a column
// (fields.<col>.*, merge_engine.version_column) follow its rename and go with its drop (a
// version column cannot be dropped).
Result<TableDescriptor> ApplyAlter(const TableDescriptor& table,
                                   const std::vector<SchemaChange>& changes);
// Whether `from` may be widened to `to`: int8 -> int16 -> int32 -> int64, float -> double,
// decimal128 precision up with the same scale.
bool IsWidening(const arrow::DataType& from, const arrow::DataType& to);

}  // namespace oxbow::catalog
