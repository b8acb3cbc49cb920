#include <algorithm>

#include "oxbow/arrow/builder.h"
#include "oxbow/kv/row.h"
#include "oxbow/lake/pk_lake_internal.h"

namespace oxbow::lake::internal {

int32_t KeyIndex::AddFile(std::string path, FilePartition partition,
                          std::vector<std::string> keys) {
  const int32_t id = next_id_++;
  for (size_t pos = 0; pos < keys.size(); ++pos) {
    const RowLocation at{id, static_cast<int64_t>(pos)};
    // One lookup per key, and no node freed and made again for a key that moves.
    auto [it, inserted] = keys_.try_emplace(std::move(keys[pos]), at);
    if (!inserted) {
      Unlink(it->second);
      ++files_.at(Resolve(it->second).file).deleted;
      it->second = at;
    }
  }
  ids_[path] = id;
  files_[id] =
      DataFileInfo{std::move(path), std::move(partition), static_cast<int64_t>(keys.size()), 0};
  return id;
}

Result<int32_t> KeyIndex::AddCommittedFile(std::string path, FilePartition partition,
                                           const std::vector<std::string>& keys,
                                           const std::set<int64_t>& deleted) {
  const int32_t id = next_id_++;
  int64_t gone = 0;
  for (size_t pos = 0; pos < keys.size(); ++pos) {
    if (deleted.count(static_cast<int64_t>(pos))) {
      ++gone;
      continue;
    }
    auto [it, inserted] = keys_.emplace(keys[pos], RowLocation{id, static_cast<int64_t>(pos)});
    if (!inserted) {
      return Status::Corruption(
          "the lake holds a key twice: in " + files_.at(it->second.file).path + " at " +
          std::to_string(it->second.pos) + " and in " + path + " at " + std::to_string(pos));
    }
  }
  ids_[path] = id;
  files_[id] =
      DataFileInfo{std::move(path), std::move(partition), static_cast<int64_t>(keys.size()), gone};
  return id;
}

std::optional<RowLocation> KeyIndex::Find(const std::string& key) const {
  auto it = keys_.find(key);
  if (it == keys_.end()) return std::nullopt;
  return Resolve(it->second);
}

RowLocation KeyIndex::Resolve(RowLocation at) const {
  if (moves_.empty()) return at;
  auto m = moves_.find(at.file);
  if (m == moves_.end()) return at;
  return RowLocation{m->second.to, m->second.positions.at(static_cast<size_t>(at.pos))};
}

void KeyIndex::Unlink(RowLocation at) {
  if (watched_.empty()) return;
  auto w = watched_.find(at.file);
  if (w != watched_.end()) w->second.push_back(at.pos);
}

void KeyIndex::Remove(const std::string& key) {
  auto it = keys_.find(key);
  if (it == keys_.end()) return;
  Unlink(it->second);
  ++files_.at(Resolve(it->second).file).deleted;
  keys_.erase(it);
}

void KeyIndex::RemoveFile(int32_t file) {
  auto it = files_.find(file);
  if (it == files_.end()) return;
  ids_.erase(it->second.path);
  files_.erase(it);
}

void KeyIndex::Watch(int32_t file) { watched_[file]; }

std::vector<int64_t> KeyIndex::Unwatch(int32_t file) {
  auto node = watched_.extract(file);
  return node.empty() ? std::vector<int64_t>{} : std::move(node.mapped());
}

int32_t KeyIndex::AddMovedFile(std::string path, FilePartition partition, int64_t rows,
                               int64_t deleted) {
  const int32_t id = next_id_++;
  ids_[path] = id;
  files_[id] = DataFileInfo{std::move(path), std::move(partition), rows, deleted};
  return id;
}

void KeyIndex::Move(int32_t from, int32_t to, std::vector<int64_t> moved) {
  moves_[from] = Moved{to, std::move(moved)};
}

void KeyIndex::Settle(const std::string& key) {
  auto it = keys_.find(key);
  if (it != keys_.end()) it->second = Resolve(it->second);
}

void KeyIndex::EndMove(int32_t from) {
  moves_.erase(from);
  RemoveFile(from);
}

std::optional<int32_t> KeyIndex::FileId(const std::string& path) const {
  auto it = ids_.find(path);
  if (it == ids_.end()) return std::nullopt;
  return it->second;
}

void KeyIndex::AddDeleteFile(std::string path, std::set<std::string> data_files) {
  delete_files_[std::move(path)] = std::move(data_files);
}

std::vector<std::string> KeyIndex::ObsoleteDeleteFiles(
    const std::set<std::string>& removed_data) const {
  std::vector<std::string> out;
  for (const auto& [path, targets] : delete_files_) {
    const bool obsolete = std::all_of(targets.begin(), targets.end(), [&](const std::string& t) {
      return removed_data.count(t) || !ids_.count(t);
    });
    if (obsolete) out.push_back(path);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string EncodeLakeKey(const arrow::RecordBatch& batch, const std::vector<int>& key_columns,
                          int64_t row) {
  std::string key;
  for (int c : key_columns) kv::AppendKeyPart(batch.column(c), row, &key);
  return key;
}

const arrow::SchemaPtr& PositionDeleteSchema() {
  static const arrow::SchemaPtr schema =
      std::make_shared<const arrow::Schema>(std::vector<arrow::Field>{
          arrow::Field{"file_path",
                       arrow::DataType::String(),
                       false,
                       {{"PARQUET:field_id", std::to_string(kDeleteFilePathId)}}},
          arrow::Field{"pos",
                       arrow::DataType::Int64(),
                       false,
                       {{"PARQUET:field_id", std::to_string(kDeletePosId)}}}});
  return schema;
}

Result<arrow::RecordBatchPtr> PositionDeleteBatch(
    std::vector<std::pair<std::string, int64_t>> deletes) {
  std::sort(deletes.begin(), deletes.end());
  arrow::BinaryBuilder paths(arrow::DataType::String());
  arrow::Int64Builder positions(arrow::DataType::Int64());
  for (const auto& [path, pos] : deletes) {
    RETURN_NOT_OK(paths.Append(path));
    RETURN_NOT_OK(positions.Append(pos));
  }
  std::vector<arrow::Array> columns;
  ASSIGN_OR_RAISE(auto path_column, paths.Finish());
  ASSIGN_OR_RAISE(auto pos_column, positions.Finish());
  columns.push_back(std::move(path_column));
  columns.push_back(std::move(pos_column));
  return arrow::RecordBatch::Make(PositionDeleteSchema(), static_cast<int64_t>(deletes.size()),
                                  std::move(columns));
}

iceberg::DataFile MakeDeleteFile(std::string path, const FilePartition& partition,
                                 const parquet::FileMetrics& metrics) {
  iceberg::DataFile file;
  file.content = iceberg::FileContent::kPositionDeletes;
  file.file_path = std::move(path);
  file.spec_id = partition.spec_id;
  file.partition = partition.values;
  file.record_count = metrics.row_count;
  file.file_size_in_bytes = metrics.file_size;
  file.split_offsets = metrics.row_group_offsets;
  for (const auto& c : metrics.columns) {
    if (!c.field_id) continue;
    const int32_t id = *c.field_id;
    file.column_sizes[id] = c.compressed_size;
    file.value_counts[id] = c.value_count;
    file.null_value_counts[id] = c.null_count;
    // PLAIN bytes of a string and a little-endian long are Iceberg's single-value forms; the
    // file_path bounds tell readers which data files the deletes touch.
    if (c.lower_bound) file.lower_bounds[id] = *c.lower_bound;
    if (c.upper_bound) file.upper_bounds[id] = *c.upper_bound;
  }
  return file;
}

}  // namespace oxbow::lake::internal
