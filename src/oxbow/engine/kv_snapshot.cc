#include <algorithm>
#include <nlohmann/json.hpp>

#include "oxbow/common/crc32c.h"
#include "oxbow/engine/kv_snapshot_internal.h"

namespace oxbow::engine::internal {

namespace {

using json = nlohmann::json;

constexpr char kManifest[] = "manifest.json";
constexpr char kSnapshotPrefix[] = "snapshot-";

std::string BucketDir(const KvSnapshotStore& store, int64_t table_id, int32_t bucket) {
  return JoinPath(JoinPath(store.root, std::to_string(table_id)), std::to_string(bucket));
}

Status Verify(FileSystem& fs, const std::string& path, int64_t size, uint32_t crc) {
  ASSIGN_OR_RAISE(auto stored, ReadWholeFile(fs, path));
  if (stored->size() != size || crc32c::Value(stored->data(), stored->size()) != crc) {
    return Status::IOError("KV snapshot file " + path + " does not match its manifest (" +
                           std::to_string(stored->size()) + " bytes, " + std::to_string(size) +
                           " expected)");
  }
  return Status::OK();
}

// The offsets of the bucket's snapshots in the store, oldest first.
Result<std::vector<int64_t>> ListSnapshots(FileSystem& fs, const std::string& dir) {
  auto names = fs.ListDir(dir);
  if (names.status().IsNotFound()) return std::vector<int64_t>{};
  RETURN_NOT_OK(names.status());
  std::vector<int64_t> offsets;
  for (std::string name : *names) {
    if (!name.empty() && name.back() == '/') name.pop_back();
    if (name.rfind(kSnapshotPrefix, 0) != 0) continue;
    const std::string digits = name.substr(sizeof(kSnapshotPrefix) - 1);
    if (digits.empty() || !std::all_of(digits.begin(), digits.end(), ::isdigit)) continue;
    offsets.push_back(std::stoll(digits));
  }
  std::sort(offsets.begin(), offsets.end());
  return offsets;
}

}  // namespace

Result<KvSnapshotRef> UploadKvSnapshot(const KvSnapshotStore& store, int64_t table_id,
                                       int32_t bucket, const kv::TableStore::BucketDump& dump,
                                       int32_t leader_epoch) {
  FileSystem& fs = *store.fs;
  const std::string bucket_dir = BucketDir(store, table_id, bucket);
  KvSnapshotRef ref;
  ref.offset = dump.applied_offset;
  ref.leader_epoch = leader_epoch;
  ref.path = JoinPath(bucket_dir, kSnapshotPrefix + std::to_string(dump.applied_offset));
  RETURN_NOT_OK(fs.CreateDirs(ref.path));
  json files = json::array();
  for (size_t i = 0; i < dump.files.size(); ++i) {
    ASSIGN_OR_RAISE(auto bytes, ReadWholeFile(*PosixFileSystem::Default(), dump.files[i]));
    const std::string name = "part-" + std::to_string(i) + ".sst";
    const uint32_t crc = crc32c::Value(bytes->data(), bytes->size());
    const std::string path = JoinPath(ref.path, name);
    RETURN_NOT_OK(WriteWholeFile(fs, path, bytes->view()));
    RETURN_NOT_OK(Verify(fs, path, bytes->size(), crc));
    files.push_back({{"name", name}, {"size", bytes->size()}, {"crc32c", crc}});
  }
  // Written last: a snapshot without its manifest is an interrupted upload, never read.
  const std::string manifest =
      json{{"table_id", table_id},         {"bucket", bucket},  {"offset", dump.applied_offset},
           {"leader_epoch", leader_epoch}, {"rows", dump.rows}, {"files", std::move(files)}}
          .dump();
  RETURN_NOT_OK(WriteWholeFile(fs, JoinPath(ref.path, kManifest), manifest));
  // The newest before this one stays, for a replica still downloading it.
  ASSIGN_OR_RAISE(auto offsets, ListSnapshots(fs, bucket_dir));
  std::erase_if(offsets, [&](int64_t offset) { return offset >= ref.offset; });
  if (!offsets.empty()) offsets.pop_back();
  for (int64_t offset : offsets) {
    RETURN_NOT_OK(fs.RemoveAll(JoinPath(bucket_dir, kSnapshotPrefix + std::to_string(offset))));
  }
  return ref;
}

Result<std::optional<KvSnapshotRef>> LatestKvSnapshot(const KvSnapshotStore& store,
                                                      int64_t table_id, int32_t bucket) {
  const std::string bucket_dir = BucketDir(store, table_id, bucket);
  ASSIGN_OR_RAISE(auto offsets, ListSnapshots(*store.fs, bucket_dir));
  for (auto it = offsets.rbegin(); it != offsets.rend(); ++it) {
    const std::string path = JoinPath(bucket_dir, kSnapshotPrefix + std::to_string(*it));
    auto bytes = ReadWholeFile(*store.fs, JoinPath(path, kManifest));
    if (bytes.status().IsNotFound()) continue;  // an interrupted upload
    RETURN_NOT_OK(bytes.status());
    json manifest = json::parse((*bytes)->view(), nullptr, false);
    if (!manifest.is_object() || manifest.value("offset", int64_t{-1}) != *it) {
      return Status::Corruption("KV snapshot manifest " + JoinPath(path, kManifest) +
                                " is not one of offset " + std::to_string(*it));
    }
    return std::optional<KvSnapshotRef>(
        KvSnapshotRef{*it, path, manifest.value("leader_epoch", int32_t{-1})});
  }
  return std::optional<KvSnapshotRef>();
}

Result<std::vector<std::string>> DownloadKvSnapshot(const KvSnapshotStore& store,
                                                    const KvSnapshotRef& ref,
                                                    const std::string& local_dir) {
  FileSystem& fs = *store.fs;
  ASSIGN_OR_RAISE(auto manifest_bytes, ReadWholeFile(fs, JoinPath(ref.path, kManifest)));
  json manifest = json::parse(manifest_bytes->view(), nullptr, false);
  if (manifest.is_discarded() || !manifest.contains("files") || !manifest["files"].is_array() ||
      manifest.value("offset", int64_t{-1}) != ref.offset) {
    return Status::Corruption("KV snapshot manifest " + JoinPath(ref.path, kManifest) +
                              " is not one of offset " + std::to_string(ref.offset));
  }
  FileSystem& local = *PosixFileSystem::Default();
  RETURN_NOT_OK(local.RemoveAll(local_dir));
  RETURN_NOT_OK(local.CreateDirs(local_dir));
  std::vector<std::string> out;
  for (const auto& file : manifest["files"]) {
    const std::string name = file.value("name", "");
    if (name.empty() || name.find('/') != std::string::npos) {
      return Status::Corruption("KV snapshot manifest in " + ref.path + " names a bad file");
    }
    const std::string path = JoinPath(ref.path, name);
    ASSIGN_OR_RAISE(auto bytes, ReadWholeFile(fs, path));
    if (bytes->size() != file.value("size", int64_t{-1}) ||
        crc32c::Value(bytes->data(), bytes->size()) != file.value("crc32c", uint32_t{0})) {
      return Status::Corruption("KV snapshot file " + path + " does not match its manifest");
    }
    out.push_back(JoinPath(local_dir, name));
    RETURN_NOT_OK(WriteWholeFile(local, out.back(), bytes->view()));
  }
  return out;
}

}  // namespace oxbow::engine::internal
