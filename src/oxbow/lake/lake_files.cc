#include <map>
#include <set>

#include "oxbow/arrow/compute.h"
#include "oxbow/common/parse.h"
#include "oxbow/kv/row.h"
#include "oxbow/lake/tiering_internal.h"
#include "oxbow/parquet/reader.h"

namespace oxbow::lake {

namespace {

// The directory of `path` under <location>/data/: "" when unpartitioned.
std::string PartitionPathOf(const LakeTable& state, const std::string& path) {
  const std::string dir = path.substr(0, path.rfind('/'));
  const std::string data = state.location + "/data";
  return dir.size() > data.size() + 1 ? dir.substr(data.size() + 1) : "";
}

// The keys of a lake data file's rows, in position order (only the key columns are read, found
// by field id: a file written before columns were added or dropped has them elsewhere).
Result<std::vector<std::string>> ReadKeys(FileSystem* fs, const LakeTable& state,
                                          const std::string& path) {
  ASSIGN_OR_RAISE(auto reader, parquet::FileReader::Open(*fs, iceberg::LocalPath(path)));
  const std::vector<int>& key_columns = state.schema.key_columns;
  std::vector<int> in_file;
  for (int c : key_columns) {
    const arrow::Field& key = state.schema.arrow_schema->field(c);
    const std::optional<int32_t> id = internal::FieldIdOf(key);
    int found = -1;
    for (int f = 0; f < reader->schema()->num_fields() && id; ++f) {
      if (internal::FieldIdOf(reader->schema()->field(f)) == id) found = f;
    }
    if (found < 0) {
      return Status::Corruption(path + " lacks primary-key column " + Quote(key.name));
    }
    in_file.push_back(found);
  }
  std::vector<std::string> keys;
  for (int g = 0; g < reader->num_row_groups(); ++g) {
    ASSIGN_OR_RAISE(auto b, reader->ReadRowGroup(g, in_file));
    std::vector<arrow::Array> columns;
    for (size_t k = 0; k < key_columns.size(); ++k) {
      ASSIGN_OR_RAISE(auto cast,
                      arrow::Cast(b->column(static_cast<int>(k)),
                                  state.schema.arrow_schema->field(key_columns[k]).type));
      columns.push_back(std::move(cast));
    }
    for (int64_t r = 0; r < b->num_rows(); ++r) {
      std::string key;
      for (const auto& column : columns) kv::AppendKeyPart(column, r, &key);
      keys.push_back(std::move(key));
    }
  }
  return keys;
}

}  // namespace

bool IsFreshFile(const std::string& path) { return path.ends_with(kFreshFileSuffix); }

Result<std::unique_ptr<parquet::FileWriter>> OpenDataFile(FileSystem* fs, const LakeTable& state,
                                                          const std::string& partition_path,
                                                          const parquet::WriterOptions& options,
                                                          std::vector<std::string>* written,
                                                          bool fresh) {
  std::string dir = state.location + "/data";
  if (!partition_path.empty()) dir += "/" + partition_path;
  RETURN_NOT_OK(fs->CreateDirs(dir));
  const std::string path =
      dir + "/" + RandomName() + (fresh ? std::string(kFreshFileSuffix) : ".parquet");
  written->push_back(path);
  return parquet::FileWriter::Open(state.schema.arrow_schema, *fs, path, options);
}

Result<iceberg::DataFile> FinishDataFile(const LakeTable& state, parquet::FileWriter* writer,
                                         const std::string& path, int32_t spec_id,
                                         iceberg::PartitionValues partition) {
  ASSIGN_OR_RAISE(auto metrics, writer->Close());
  ASSIGN_OR_RAISE(auto file,
                  internal::MakeDataFile(state.schema, path, std::move(partition), metrics));
  file.spec_id = spec_id;
  return file;
}

Result<iceberg::DataFile> WriteDataFile(FileSystem* fs, const LakeTable& state,
                                        const std::string& partition_path,
                                        iceberg::PartitionValues partition,
                                        const std::vector<arrow::RecordBatchPtr>& batches,
                                        const parquet::WriterOptions& options,
                                        std::vector<std::string>* written, bool fresh) {
  ASSIGN_OR_RAISE(auto writer, OpenDataFile(fs, state, partition_path, options, written, fresh));
  for (const auto& b : batches) RETURN_NOT_OK(writer->Write(*b));
  return FinishDataFile(state, writer.get(), written->back(), state.spec.spec_id(),
                        std::move(partition));
}

Result<std::vector<arrow::RecordBatchPtr>> ReadLakeFile(FileSystem* fs, const LakeTable& state,
                                                        const std::string& path) {
  ASSIGN_OR_RAISE(auto reader, parquet::FileReader::Open(*fs, iceberg::LocalPath(path)));
  std::vector<int> all(static_cast<size_t>(reader->schema()->num_fields()));
  for (size_t c = 0; c < all.size(); ++c) all[c] = static_cast<int>(c);
  std::vector<arrow::RecordBatchPtr> out;
  for (int g = 0; g < reader->num_row_groups(); ++g) {
    ASSIGN_OR_RAISE(auto b, reader->ReadRowGroup(g, all));
    ASSIGN_OR_RAISE(auto batch, internal::ToLakeSchema(state.schema, *reader->schema(), *b));
    out.push_back(std::move(batch));
  }
  return out;
}

Result<internal::KeyIndex> LoadKeyIndex(FileSystem* fs, const LakeTable& state) {
  internal::KeyIndex index;
  ASSIGN_OR_RAISE(auto live, state.table->LiveEntries());
  std::map<std::string, std::set<int64_t>> deleted;
  for (const auto& e : live) {
    if (e.data_file.content == iceberg::FileContent::kData) continue;
    if (e.data_file.content != iceberg::FileContent::kPositionDeletes) {
      return Status::NotImplemented(e.data_file.file_path +
                                    ": equality deletes in a primary-key lake table");
    }
    ASSIGN_OR_RAISE(auto reader,
                    parquet::FileReader::Open(*fs, iceberg::LocalPath(e.data_file.file_path)));
    std::set<std::string> targets;
    for (int g = 0; g < reader->num_row_groups(); ++g) {
      ASSIGN_OR_RAISE(auto b, reader->ReadRowGroup(g, {0, 1}));
      for (int64_t r = 0; r < b->num_rows(); ++r) {
        std::string path(b->column(0).GetView(r));
        deleted[path].insert(b->column(1).Value<int64_t>(r));
        targets.insert(std::move(path));
      }
    }
    index.AddDeleteFile(e.data_file.file_path, std::move(targets));
  }
  for (const auto& e : live) {
    if (e.data_file.content != iceberg::FileContent::kData) continue;
    const std::string& path = e.data_file.file_path;
    ASSIGN_OR_RAISE(auto keys, ReadKeys(fs, state, path));
    auto gone = deleted.find(path);
    internal::FilePartition partition{e.data_file.spec_id.value_or(0), e.data_file.partition,
                                      PartitionPathOf(state, path)};
    RETURN_NOT_OK(index
                      .AddCommittedFile(path, std::move(partition), keys,
                                        gone == deleted.end() ? std::set<int64_t>() : gone->second)
                      .status());
  }
  return index;
}

parquet::WriterOptions FreshFileOptions(parquet::WriterOptions options) {
  options.row_group_bytes = std::min<int64_t>(options.row_group_bytes, int64_t{16} << 20);
  return options;
}

Result<iceberg::DataFile> WriteDeleteFile(FileSystem* fs, const LakeTable& state,
                                          const internal::FilePartition& partition,
                                          std::vector<std::pair<std::string, int64_t>> deletes,
                                          const parquet::WriterOptions& options,
                                          std::vector<std::string>* written) {
  std::string dir = state.location + "/data";
  if (!partition.path.empty()) dir += "/" + partition.path;
  RETURN_NOT_OK(fs->CreateDirs(dir));
  const std::string path = dir + "/" + RandomName() + "-deletes.parquet";
  written->push_back(path);
  ASSIGN_OR_RAISE(auto batch, internal::PositionDeleteBatch(std::move(deletes)));
  ASSIGN_OR_RAISE(auto writer,
                  parquet::FileWriter::Open(internal::PositionDeleteSchema(), *fs, path, options));
  RETURN_NOT_OK(writer->Write(*batch));
  ASSIGN_OR_RAISE(auto metrics, writer->Close());
  return internal::MakeDeleteFile(path, partition, metrics);
}

int64_t WrittenBytes(const parquet::FileWriter& writer) {
  int64_t bytes = 0;
  for (const auto& g : writer.metadata().row_groups) bytes += g.total_byte_size;
  return bytes;
}

}  // namespace oxbow::lake
