// KV snapshots in the object store (docs/cluster.md#kv-snapshots-in-object-storage): a bucket's
// rows dumped as SST files, uploaded under <root>/<table id>/<bucket>/snapshot-<offset>/ with a
// manifest written last, and downloaded back. The manifest's format is in docs/storage.md.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "oxbow/common/file_system.h"
#include "oxbow/engine/table.h"
#include "oxbow/kv/store.h"

namespace oxbow::engine::internal {

// Where a data dir's primary-key tables keep their snapshots; fs null: nowhere.
struct KvSnapshotStore {
  std::shared_ptr<FileSystem> fs;
  std::string root;
};

// Uploads `dump` (local files) as the snapshot of `bucket`, whose changelog batch before the
// dump's offset was written in `leader_epoch`; verifies each object, writes the manifest, and
// removes the bucket's snapshots older than the previous one.
Result<KvSnapshotRef> UploadKvSnapshot(const KvSnapshotStore& store, int64_t table_id,
                                       int32_t bucket, const kv::TableStore::BucketDump& dump,
                                       int32_t leader_epoch);

// The newest complete snapshot of `bucket` in the store (one with its manifest); nullopt when
// there is none.
Result<std::optional<KvSnapshotRef>> LatestKvSnapshot(const KvSnapshotStore& store,
                                                      int64_t table_id, int32_t bucket);

// Downloads the snapshot `ref` names into `local_dir` (created), verifying every file against
// its manifest; returns the local files in key order.
Result<std::vector<std::string>> DownloadKvSnapshot(const KvSnapshotStore& store,
                                                    const KvSnapshotRef& ref,
                                                    const std::string& local_dir);

}  // namespace oxbow::engine::internal
