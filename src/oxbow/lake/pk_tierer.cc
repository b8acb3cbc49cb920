#include <spdlog/spdlog.h>

#include <algorithm>
#include <set>
#include <unordered_map>

#include "oxbow/arrow/compute.h"
#include "oxbow/lake/tiering_internal.h"

namespace oxbow::lake {

namespace {

// Appends a round's changelog records (lake form, with _change_type) to the changelog lake table
// `c` as one data file per partition, its snapshot recording `next` as its own tiered offsets.
// The caller holds c.work.
Status TierChangelog(const LakeOptions& options, LakeTable& c,
                     const std::vector<arrow::RecordBatchPtr>& batches,
                     const std::vector<int64_t>& next) {
  if (batches.empty() && next == c.tiered) return Status::OK();
  bool committing = false;
  auto appended = AppendRound(options, c, batches, next, &committing, 0);
  if (!appended.ok()) {
    // Whether the snapshot landed is not known for every failure: read the offsets again.
    if (committing) c.offsets_stale = true;
    return appended.status().WithContext("changelog table");
  }
  if (options.observer.on_commit) options.observer.on_commit(c.descriptor.name, "append");
  return Status::OK();
}

// A primary-key lake that starts, or starts again, where the changelog no longer reaches (the
// lake was enabled late, or re-enabled, after retention dropped what it had not tiered): the
// current rows replace all the lake held, from one RocksDB snapshot per bucket, each
// consistent with a changelog offset, and rounds go on from those offsets. Deletes made while
// the lake was off cannot come back, and no key is missing (docs/lake.md, "Seeding").
Status SeedPrimaryKeyLake(engine::Engine* engine, const LakeOptions& options, LakeTable& s) {
  const int64_t now_ms = WallMs();
  std::vector<int64_t> seeded(s.tiered.size(), 0);
  struct Output {
    iceberg::PartitionValues values;
    std::unique_ptr<parquet::FileWriter> writer;
    std::string path;
  };
  std::map<std::string, Output> outputs;  // by partition path
  std::vector<iceberg::DataFile> files;
  std::vector<std::string> written;
  auto finish = [&](Output& out) -> Status {
    ASSIGN_OR_RAISE(auto file,
                    FinishDataFile(s, out.writer.get(), out.path, s.spec.spec_id(), out.values));
    out.writer.reset();
    files.push_back(std::move(file));
    return Status::OK();
  };
  auto write = [&]() -> Status {
    for (int32_t b = 0; b < static_cast<int32_t>(seeded.size()); ++b) {
      if (options.holds_bucket && !options.holds_bucket(s.descriptor.name, b)) {
        return Status::Unavailable("bucket " + std::to_string(b) +
                                   " has no replica on this server, the tiering owner, to seed "
                                   "the lake from (docs/cluster.md#the-lake)");
      }
      ASSIGN_OR_RAISE(auto snapshot, engine->OpenSnapshot({s.descriptor.name, b, std::nullopt}));
      for (const auto& o : snapshot->offsets()) {
        if (o.bucket == b) seeded[b] = o.next_offset;
      }
      while (true) {
        ASSIGN_OR_RAISE(auto rows, snapshot->Next());
        if (!rows) break;
        // Every seeded row stands at the offset before the seed's: its own is no longer known.
        ASSIGN_OR_RAISE(auto lake_batch,
                        internal::ToLakeBatch(s.schema, *rows, b, seeded[b] - 1, now_ms, 0));
        ASSIGN_OR_RAISE(auto parts, internal::SplitByPartition(s.schema, s.spec, *lake_batch));
        for (auto& part : parts) {
          Output& out = outputs[part.path];
          if (!out.writer) {
            out.values = std::move(part.values);
            ASSIGN_OR_RAISE(out.writer, OpenDataFile(options.fs.get(), s, part.path,
                                                     options.parquet, &written));
            out.path = written.back();
          }
          RETURN_NOT_OK(out.writer->Write(*part.batch));
          if (WrittenBytes(*out.writer) >= options.target_file_bytes) RETURN_NOT_OK(finish(out));
        }
      }
    }
    for (auto& [path, out] : outputs) {
      if (out.writer) RETURN_NOT_OK(finish(out));
    }
    return Status::OK();
  };
  Status st = write();
  bool committing = false;
  if (st.ok()) {
    auto live = s.table->LiveEntries();
    st = live.status();
    if (st.ok()) {
      std::vector<std::string> replaced;
      for (const auto& e : *live) replaced.push_back(e.data_file.file_path);
      const std::vector<int64_t> previous = s.tiered;
      s.tiered = seeded;
      committing = true;
      st = (replaced.empty() ? s.table->AppendFiles(files, s.Summary())
                             : s.table->OverwriteFiles(replaced, files, s.Summary()))
               .status();
      if (!st.ok()) s.tiered = previous;
    }
  }
  if (!st.ok()) {
    for (auto& [path, out] : outputs) out.writer.reset();
    if (!s.table->commit_outcome_unknown()) {
      for (const auto& path : written) (void)options.fs->Remove(path);
    }
    if (committing) s.index_stale = true;  // whether the snapshot landed is not known
    return st.WithContext("seeding the lake from a snapshot");
  }
  if (options.observer.on_commit) options.observer.on_commit(s.descriptor.name, "seed");
  spdlog::warn(
      "lake: '{}' was seeded from a snapshot of its rows at offsets {}: the log no "
      "longer held what the lake lacked",
      s.descriptor.name, OffsetsJson(seeded));
  // The key index follows the new files (and a compaction under way finds it rebuilt).
  return ReloadPrimaryKeyLake(options.fs.get(), s);
}

// Seeds the lake (SeedPrimaryKeyLake) when some bucket's tiered offset is below its log's start.
Status SeedWherePastTheLog(engine::Engine* engine, const LakeOptions& options, LakeTable& s) {
  ASSIGN_OR_RAISE(auto status, engine->DescribeTable(s.descriptor.name));
  for (const auto& bucket : status.buckets) {
    const auto b = static_cast<size_t>(bucket.bucket);
    if (b < s.tiered.size() && s.tiered[b] < bucket.earliest_offset) {
      return SeedPrimaryKeyLake(engine, options, s);
    }
  }
  return Status::OK();
}

// The last change of each key in a primary-key round: batch, row, and whether it removes the key.
struct Change {
  size_t batch;
  int64_t row;
  bool deleted;
};

// What a primary-key round read: the lake form of its batches, the last change of each key, and
// with lake.changelog the changelog lake table's batches.
struct PrimaryKeyChanges {
  std::vector<arrow::RecordBatchPtr> batches;
  std::unordered_map<std::string, Change> last;
  std::vector<arrow::RecordBatchPtr> changelog_batches;
};

// Takes in one changelog batch `read` of bucket `b`: the rows past each table's tiered offset.
Status CollectChanges(const LakeTable& s, const LakeTable* changelog_table, int32_t b,
                      const engine::DecodedBatch& read, PrimaryKeyChanges* out) {
  const int n = s.schema.log_schema->num_fields();
  if (read.batch->num_columns() != n + 1) {
    return Status::Corruption("changelog batch of '" + s.descriptor.name + "' has " +
                              std::to_string(read.batch->num_columns()) + " columns, not " +
                              std::to_string(n + 1));
  }
  // The rows of the batch at or past `tiered`, and the offset of the first.
  const int64_t num_rows = read.batch->num_rows();
  auto rows_from = [&](int64_t tiered) -> std::pair<arrow::RecordBatchPtr, int64_t> {
    const int64_t skip = std::clamp<int64_t>(tiered - read.base_offset, 0, num_rows);
    if (skip == 0) return {read.batch, read.base_offset};
    return {read.batch->Slice(skip, num_rows - skip), read.base_offset + skip};
  };
  if (changelog_table) {
    auto [rows, base] = rows_from(changelog_table->tiered[b]);
    if (rows->num_rows() > 0) {
      ASSIGN_OR_RAISE(auto lake_batch, internal::ToLakeBatch(changelog_table->schema, *rows, b,
                                                             base, read.append_time_ms));
      out->changelog_batches.push_back(std::move(lake_batch));
    }
  }
  auto [changelog_rows, base] = rows_from(s.tiered[b]);
  const arrow::RecordBatch& changelog = *changelog_rows;
  if (changelog.num_rows() == 0) return Status::OK();
  std::vector<arrow::Array> columns;
  for (int c = 0; c < n; ++c) columns.push_back(changelog.column(c));
  ASSIGN_OR_RAISE(auto rows, arrow::RecordBatch::Make(s.schema.log_schema, changelog.num_rows(),
                                                      std::move(columns)));
  ASSIGN_OR_RAISE(auto lake_batch,
                  internal::ToLakeBatch(s.schema, *rows, b, base, read.append_time_ms));
  const arrow::Array& change_types = changelog.column(n);
  for (int64_t r = 0; r < changelog.num_rows(); ++r) {
    const std::string_view change = change_types.GetView(r);
    if (change == "-U") continue;  // the row before an update: the +U that follows wins
    out->last[internal::EncodeLakeKey(*lake_batch, s.schema.key_columns, r)] =
        Change{out->batches.size(), r, change == "-D"};
  }
  out->batches.push_back(std::move(lake_batch));
  return Status::OK();
}

// A primary-key round's output: the rows current after it, by partition directory of the
// current spec, and the position deletes of the rows its keys had, by the partition (spec,
// directory) of the data files they name.
struct RoundPlan {
  struct Group {
    iceberg::PartitionValues values;
    std::vector<arrow::RecordBatchPtr> batches;
  };
  struct Deletes {
    internal::FilePartition partition;
    std::vector<std::pair<std::string, int64_t>> rows;
    std::set<std::string> targets;
  };
  std::map<std::string, Group> groups;
  std::map<std::pair<int32_t, std::string>, Deletes> deletes;
  std::vector<std::string> removed;  // keys a -D removes from the lake (a delete file does)
};

Result<RoundPlan> PlanRound(const LakeTable& s, const internal::KeyIndex& index,
                            PrimaryKeyChanges& changes) {
  RoundPlan plan;
  std::vector<std::vector<int32_t>> keep(changes.batches.size());
  for (const auto& [key, change] : changes.last) {
    if (auto at = index.Find(key)) {
      const auto& file = index.file(at->file);
      auto& d = plan.deletes[{file.partition.spec_id, file.partition.path}];
      d.partition = file.partition;
      d.rows.emplace_back(file.path, at->pos);
      d.targets.insert(file.path);
      if (change.deleted) plan.removed.push_back(key);
    }
    if (!change.deleted) keep[change.batch].push_back(static_cast<int32_t>(change.row));
  }
  for (size_t i = 0; i < changes.batches.size(); ++i) {
    if (keep[i].empty()) continue;
    std::sort(keep[i].begin(), keep[i].end());  // changelog order
    ASSIGN_OR_RAISE(auto rows, arrow::TakeRows(*changes.batches[i], keep[i]));
    ASSIGN_OR_RAISE(auto parts, internal::SplitByPartition(s.schema, s.spec, *rows));
    for (auto& part : parts) {
      auto& group = plan.groups[part.path];
      group.values = std::move(part.values);
      group.batches.push_back(std::move(part.batch));
    }
  }
  changes.batches.clear();
  return plan;
}

// The snapshot of `plan` is committed: the key index follows it (AddFile moves the updated keys).
void FollowCommit(LakeTable& s, RoundPlan& plan, const std::vector<iceberg::DataFile>& files,
                  const std::vector<std::string>& file_partition_paths,
                  const std::vector<iceberg::DataFile>& delete_files) {
  internal::KeyIndex& index = *s.index;
  for (const auto& key : plan.removed) index.Remove(key);
  size_t f = 0;
  for (auto& [path, group] : plan.groups) {
    std::vector<std::string> keys;
    for (const auto& batch : group.batches) {
      for (int64_t r = 0; r < batch->num_rows(); ++r) {
        keys.push_back(internal::EncodeLakeKey(*batch, s.schema.key_columns, r));
      }
    }
    index.AddFile(files[f].file_path,
                  {s.spec.spec_id(), files[f].partition, file_partition_paths[f]}, std::move(keys));
    ++f;
  }
  size_t d = 0;
  for (auto& [partition, group] : plan.deletes) {
    index.AddDeleteFile(delete_files[d++].file_path, std::move(group.targets));
  }
}

}  // namespace

Status ReloadPrimaryKeyLake(FileSystem* fs, LakeTable& s) {
  RETURN_NOT_OK(s.table->Refresh());
  RETURN_NOT_OK(s.LoadOffsets());
  ASSIGN_OR_RAISE(s.index, LoadKeyIndex(fs, s));
  s.index_stale = false;
  ++s.index_generation;
  return Status::OK();
}

Status TierPrimaryKeyRound(engine::Engine* engine, const LakeOptions& options, LakeTable& s) {
  if (s.index_stale) RETURN_NOT_OK(ReloadPrimaryKeyLake(options.fs.get(), s));
  RETURN_NOT_OK(SeedWherePastTheLog(engine, options, s));
  // With lake.changelog, the round reads from the lower of the two tables' offsets and hands
  // each table the rows past its own (they differ only after a crash between the two commits).
  LakeTable* changelog = s.changelog.get();
  OptionalMutexLock changelog_work(changelog ? &changelog->work : nullptr);
  std::vector<int64_t> from = s.tiered;
  if (changelog) {
    if (changelog->offsets_stale) RETURN_NOT_OK(ReloadOffsets(*changelog));
    from = s.FloorOffsets();
  }
  const int64_t started_ms = WallMs();
  PrimaryKeyChanges changes;
  auto on_batch = [&](int32_t b, const engine::DecodedBatch& read) {
    return CollectChanges(s, changelog, b, read, &changes);
  };
  const auto t0 = Clock::now();
  ASSIGN_OR_RAISE(RoundInput input, ReadSinceTiered(engine, options, s, from, on_batch));
  const auto t_read = Clock::now();
  // A table ahead of `from` keeps its offsets where the read stopped short of them.
  auto past = [&](const std::vector<int64_t>& tiered) {
    std::vector<int64_t> out = input.next;
    for (size_t b = 0; b < out.size(); ++b) out[b] = std::max(out[b], tiered[b]);
    return out;
  };
  Status changelog_error;
  if (changelog) {
    NoteHoles(*changelog, input.earliest);
    changelog_error =
        TierChangelog(options, *changelog, changes.changelog_batches, past(changelog->tiered));
    changes.changelog_batches.clear();
    changelog_work.Unlock();
  }
  std::vector<int64_t> next = past(s.tiered);
  const bool caught_up = input.caught_up;
  const Status read_error = input.read_error.ok() ? changelog_error : input.read_error;
  if (changes.batches.empty() && next == s.tiered) {
    return EndRound(engine, s, {}, caught_up, started_ms, read_error);
  }
  internal::KeyIndex& index = *s.index;
  ASSIGN_OR_RAISE(RoundPlan plan, PlanRound(s, index, changes));
  std::vector<iceberg::DataFile> files;
  std::vector<std::string> file_partition_paths;
  std::vector<iceberg::DataFile> delete_files;
  std::vector<std::string> written;
  bool committing = false;
  Clock::time_point t_files;
  auto commit = [&]() -> Status {
    for (auto& [path, group] : plan.groups) {
      ASSIGN_OR_RAISE(auto file,
                      WriteDataFile(options.fs.get(), s, path, group.values, group.batches,
                                    FreshFileOptions(options.parquet), &written));
      files.push_back(std::move(file));
      file_partition_paths.push_back(path);
    }
    for (auto& [partition, d] : plan.deletes) {
      ASSIGN_OR_RAISE(auto file,
                      WriteDeleteFile(options.fs.get(), s, d.partition, std::move(d.rows),
                                      FreshFileOptions(options.parquet), &written));
      delete_files.push_back(std::move(file));
    }
    std::vector<int64_t> previous = s.tiered;
    s.tiered = next;
    committing = true;
    t_files = Clock::now();
    auto committed = s.table->RowDelta(files, delete_files, s.Summary());
    if (!committed.ok()) s.tiered = previous;
    return committed.status();
  };
  const auto t_plan = Clock::now();
  Status st = commit();
  const auto t_commit = Clock::now();
  if (!st.ok()) {
    if (!s.table->commit_outcome_unknown()) {
      for (const auto& path : written) (void)options.fs->Remove(path);
    }
    // Whether the snapshot landed is not known for every failure: rebuild from what did.
    if (committing) s.index_stale = true;
    return st;
  }
  FollowCommit(s, plan, files, file_partition_paths, delete_files);
  spdlog::debug(
      "lake: round of '{}': read {} ms, plan {} ms, files {} ms, commit {} ms, index {} ms "
      "({} keys)",
      s.descriptor.name, Millis(t_read - t0), Millis(t_plan - t_read), Millis(t_files - t_plan),
      Millis(t_commit - t_files), Millis(Clock::now() - t_commit), changes.last.size());
  return EndRound(engine, s, s.FloorOffsets(), caught_up, started_ms, read_error);
}

}  // namespace oxbow::lake
