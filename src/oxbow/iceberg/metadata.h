// Iceberg v2 table metadata (the metadata/v<N>.metadata.json file). See docs/iceberg.md.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "oxbow/common/status.h"
#include "oxbow/iceberg/partition.h"
#include "oxbow/iceberg/types.h"

namespace oxbow::iceberg {

struct Snapshot {
  int64_t snapshot_id = 0;
  std::optional<int64_t> parent_snapshot_id;
  int64_t sequence_number = 0;
  int64_t timestamp_ms = 0;
  std::string manifest_list;
  // "operation" ("append", "replace", "overwrite", "delete") plus any keys of the committer.
  std::map<std::string, std::string> summary;
  std::optional<int32_t> schema_id;

  std::string operation() const;
};

struct SnapshotLogEntry {
  int64_t timestamp_ms = 0;
  int64_t snapshot_id = 0;
};

struct MetadataLogEntry {
  int64_t timestamp_ms = 0;
  std::string metadata_file;
};

struct SnapshotRef {
  int64_t snapshot_id = 0;
  std::string type = "branch";  // or "tag"
  // Retention settings are kept verbatim (JSON object text without the two keys above).
  std::string extra_json;
};

struct TableMetadata {
  int32_t format_version = 2;
  std::string table_uuid;
  std::string location;
  int64_t last_sequence_number = 0;
  int64_t last_updated_ms = 0;
  int32_t last_column_id = 0;
  std::vector<Schema> schemas;
  int32_t current_schema_id = 0;
  std::vector<PartitionSpec> partition_specs;
  int32_t default_spec_id = 0;
  int32_t last_partition_id = 999;
  std::map<std::string, std::string> properties;
  std::optional<int64_t> current_snapshot_id;  // written as -1 when none, as Java does
  std::vector<Snapshot> snapshots;
  std::vector<SnapshotLogEntry> snapshot_log;
  std::vector<MetadataLogEntry> metadata_log;
  // Sort orders are kept verbatim; new tables get [{"order-id":0,"fields":[]}] (unsorted).
  std::string sort_orders_json = R"([{"order-id":0,"fields":[]}])";
  int32_t default_sort_order_id = 0;
  std::map<std::string, SnapshotRef> refs;

  const Schema* CurrentSchema() const;
  const Schema* SchemaById(int32_t id) const;
  const PartitionSpec* DefaultSpec() const;
  const PartitionSpec* SpecById(int32_t id) const;
  // The schema that types `spec`'s partition fields: the current one, or (a source column
  // dropped since) the newest schema holding every source column; null when none does.
  const Schema* SchemaForSpec(const PartitionSpec& spec) const;
  const Snapshot* CurrentSnapshot() const;
  const Snapshot* SnapshotById(int64_t id) const;
  std::string Property(const std::string& key, const std::string& fallback) const;

  // Pretty-printed JSON (2-space indent), keys in the spec's order.
  std::string ToJson() const;
  // Parses v2 metadata (v1 is refused with NotImplemented), checking cross references.
  static Result<TableMetadata> FromJson(std::string_view json);
};

// Partition evolution (the spec's "Partition Evolution"): the spec that `wanted` (source ids,
// transforms and names; its field ids are ignored) is in `metadata`. A field with the source and
// transform of a field of any of the table's specs takes that field's id and name (the spec:
// "partition field IDs must be reused if an existing partition spec contains an equivalent
// field"); any other field takes the next id above last-partition-id, so an id never names two
// different fields, and, when a field of an earlier spec has its name, the suffix "_<N>"
// (bucket[N], truncate[N]) or "_<field id>". A spec of the table with the resulting fields is
// returned as it is (writers must not add an equivalent spec); otherwise the result has the
// spec-id above the highest.
PartitionSpec EvolvePartitionSpec(const TableMetadata& metadata, const PartitionSpec& wanted);

}  // namespace oxbow::iceberg
