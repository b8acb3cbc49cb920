// libFuzzer target: manifests and manifest lists read through the file system, as a table scan
// reads them. The manifest is decoded against the schema and partition spec its own header
// names when they parse, else against a fixed schema partitioned by every transform.
#include <stdlib.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

#include "oxbow/iceberg/manifest.h"

namespace {

using namespace oxbow;
using namespace oxbow::iceberg;

const std::string& FuzzFile() {
  static const std::string path = [] {
    std::string tmpl =
        (std::filesystem::temp_directory_path() / "oxbow_manifest_fuzz_XXXXXX").string();
    return std::string(mkdtemp(tmpl.data())) + "/input.avro";
  }();
  return path;
}

const Schema& FixedSchema() {
  static const Schema schema(0, {{1, "b", Type::Boolean(), false},
                                 {2, "i", Type::Int(), false},
                                 {3, "l", Type::Long(), true},
                                 {4, "f", Type::Float(), false},
                                 {5, "d", Type::Double(), false},
                                 {6, "dec", Type::Decimal(20, 2), false},
                                 {7, "date", Type::Date(), false},
                                 {8, "ts", Type::Timestamp(), false},
                                 {9, "tstz", Type::TimestampTz(), false},
                                 {10, "s", Type::String(), false},
                                 {11, "fx", Type::Fixed(3), false},
                                 {12, "bin", Type::Binary(), false}});
  return schema;
}

const PartitionSpec& FixedSpec() {
  static const PartitionSpec spec(0, {{1, 1000, "b", Transform::Identity()},
                                      {2, 1001, "i_b", Transform::Bucket(7)},
                                      {3, 1002, "l_t", Transform::Truncate(10)},
                                      {4, 1003, "f", Transform::Identity()},
                                      {5, 1004, "d", Transform::Identity()},
                                      {6, 1005, "dec", Transform::Identity()},
                                      {7, 1006, "date_m", Transform::Month()},
                                      {8, 1007, "ts_h", Transform::Hour()},
                                      {9, 1008, "tstz_d", Transform::Day()},
                                      {10, 1009, "s", Transform::Identity()},
                                      {11, 1010, "fx", Transform::Identity()},
                                      {12, 1011, "bin_t", Transform::Truncate(2)},
                                      {7, 1012, "date_y", Transform::Year()},
                                      {3, 1013, "l_null", {TransformKind::kVoid, 0}}});
  return spec;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FileSystem* fs = PosixFileSystem::Default().get();
  {
    auto file = fs->OpenFile(FuzzFile(), FileMode::kCreate);
    if (!file.ok()) abort();
    if (!(*file)->Truncate(0).ok() || !(*file)->WriteAt(0, ByteSpan(data, size)).ok()) abort();
  }

  auto list = ReadManifestList(fs, "file://" + FuzzFile());
  if (list.ok()) {
    for (const auto& m : *list) (void)m.partitions.size();
  }

  Schema schema = FixedSchema();
  PartitionSpec spec = FixedSpec();
  // The header's own schema and spec, as Java and pyiceberg write them.
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  if (auto avro = ReadAvroFile(bytes); avro.ok()) {
    auto header_schema = Schema::FromJson(avro->Metadata("schema").value_or(""));
    auto header_spec = PartitionSpec::FromJson(
        "{\"fields\":" + avro->Metadata("partition-spec").value_or("") + "}");
    if (header_schema.ok() && header_spec.ok()) {
      schema = *header_schema;
      spec = *header_spec;
    }
  }
  ManifestFile manifest;
  manifest.manifest_path = FuzzFile();
  manifest.sequence_number = size & 1;  // 0: v1 inheritance for every entry
  manifest.added_snapshot_id = 42;
  auto entries = ReadManifest(fs, manifest, schema, spec);
  if (entries.ok()) {
    for (const auto& e : *entries) {
      if (!e.snapshot_id || !e.sequence_number || !e.file_sequence_number) abort();
      if (e.data_file.partition.size() != spec.fields().size()) abort();
      if (e.data_file.spec_id != spec.spec_id()) abort();  // tuples decoded with that spec
    }
  }
  return 0;
}
