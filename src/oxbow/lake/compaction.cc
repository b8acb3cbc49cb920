#include <spdlog/spdlog.h>

#include <algorithm>
#include <optional>
#include <set>

#include "oxbow/arrow/compute.h"
#include "oxbow/lake/tiering_internal.h"
#include "oxbow/parquet/reader.h"

namespace oxbow::lake {

namespace {

// Rewrites `inputs` (small files of one partition) into files of `rows_per_file` rows in the
// current spec and commits them in their place (the outputs go to `added`, every file written to
// `written`). Streams row group by row group through the FileSystem seam, so memory holds about
// one row group per input and output, not the inputs. Cancelled when the table was dropped.
Status RewriteFiles(const LakeOptions& options, LakeTable& s,
                    const std::vector<std::string>& inputs, int64_t rows_per_file,
                    std::vector<iceberg::DataFile>* added, std::vector<std::string>* written)
    OXBOW_EXCLUDES(s.work) {
  // One output per partition of the current spec (one unless the inputs are of another spec).
  struct Output {
    std::unique_ptr<parquet::FileWriter> writer;
    std::string path;
    iceberg::PartitionValues values;
    int64_t rows = 0;
  };
  std::map<std::string, Output> outputs;  // by partition directory
  auto finish = [&](Output& out) -> Status {
    ASSIGN_OR_RAISE(auto file,
                    FinishDataFile(s, out.writer.get(), out.path, s.spec.spec_id(), out.values));
    added->push_back(std::move(file));
    out.writer.reset();
    out.rows = 0;
    return Status::OK();
  };
  for (const auto& input : inputs) {
    ASSIGN_OR_RAISE(auto reader, parquet::FileReader::Open(*options.fs, iceberg::LocalPath(input)));
    std::vector<int> all(static_cast<size_t>(reader->schema()->num_fields()));
    for (size_t c = 0; c < all.size(); ++c) all[c] = static_cast<int>(c);
    for (int g = 0; g < reader->num_row_groups(); ++g) {
      ASSIGN_OR_RAISE(auto b, reader->ReadRowGroup(g, all));
      // Files of earlier schemas are rewritten in the current one (matched by field id).
      ASSIGN_OR_RAISE(auto batch, internal::ToLakeSchema(s.schema, *reader->schema(), *b));
      ASSIGN_OR_RAISE(auto parts, internal::SplitByPartition(s.schema, s.spec, *batch));
      for (auto& part : parts) {
        Output& out = outputs[part.path];
        // Outputs close at rows_per_file exactly, not at an input row group's end: a
        // compacted input's row group holds up to 128 MiB, so whole ones could make as
        // many outputs as inputs, step after step.
        for (int64_t done = 0; done < part.batch->num_rows();) {
          if (!out.writer) {
            ASSIGN_OR_RAISE(out.writer,
                            OpenDataFile(options.fs.get(), s, part.path, options.parquet, written));
            out.path = written->back();
            out.values = part.values;
          }
          const int64_t n = std::min(part.batch->num_rows() - done, rows_per_file - out.rows);
          RETURN_NOT_OK(out.writer->Write(*part.batch->Slice(done, n)));
          out.rows += n;
          done += n;
          if (out.rows >= rows_per_file) RETURN_NOT_OK(finish(out));
        }
      }
    }
  }
  for (auto& output : outputs) {
    if (output.second.writer) RETURN_NOT_OK(finish(output.second));
  }
  MutexLock work(s.work);
  if (s.dropped) return Status::Cancelled("table dropped");
  auto summary = s.Summary();
  summary["oxbow.compacted-files"] = std::to_string(inputs.size());
  return s.table->ReplaceFiles(inputs, *added, summary).status();
}

// Merges the small files of each partition (spec and tuple) into files near the target size,
// written in the current spec: files of an earlier spec (partition evolution) have their rows
// split by the current one. Fresh files (IsFreshFile) count as small whatever their size, and a
// partition whose fresh files were all live at the previous pass too (no round added one since)
// has them rewritten even when it holds fewer than compaction_min_files, so none stays in the
// fresh codec (docs/lake.md, "Fresh files"). A `follow_up` pass (one taken at once after a step
// that left a backlog) leaves that rule to the scheduled passes. Returns whether a step left
// enough small files for another. Holds the table's lock only to list the live files and to
// commit, so rounds go on meanwhile (only compaction removes live files, so its inputs stay live
// while it rewrites them).
Result<bool> CompactPartitions(const LakeOptions& options, LakeTable& s, bool follow_up)
    OXBOW_REQUIRES(s.maintaining) {
  std::vector<iceberg::ManifestEntry> live;
  {
    MutexLock work(s.work);
    if (s.dropped) return false;
    ASSIGN_OR_RAISE(live, s.table->LiveEntries());
  }
  // By spec and partition directory (a spec's tuples have directories of their own).
  std::map<std::pair<int32_t, std::string>, std::vector<const iceberg::ManifestEntry*>> small;
  std::set<std::string> fresh_live;
  // The final files' bytes per row: a fresh input counts as its rows at that rate, so outputs
  // reach the target size in the final codec (none yet: as its own size).
  int64_t final_bytes = 0;
  int64_t final_rows = 0;
  for (const auto& e : live) {
    const std::string& path = e.data_file.file_path;
    const bool fresh = IsFreshFile(path);
    if (fresh) {
      fresh_live.insert(path);
    } else {
      final_bytes += e.data_file.file_size_in_bytes;
      final_rows += e.data_file.record_count;
    }
    if (!fresh && e.data_file.file_size_in_bytes * 4 >= options.target_file_bytes * 3) continue;
    small[{e.data_file.spec_id.value_or(0), path.substr(0, path.rfind('/'))}].push_back(&e);
  }
  std::set<std::string> fresh_before;
  if (!follow_up) {
    fresh_before.swap(s.fresh_seen);
    s.fresh_seen = fresh_live;
  }
  bool backlog = false;
  for (auto& group : small) {
    const std::string& dir = group.first.second;
    auto& entries = group.second;
    const bool enough = static_cast<int>(entries.size()) >= options.compaction_min_files;
    // Fewer small files than that: only fresh files, once their partition went quiet.
    bool quiet = false;
    if (!enough) {
      if (follow_up) continue;
      std::erase_if(entries, [](const auto* e) { return !IsFreshFile(e->data_file.file_path); });
      quiet = !entries.empty() && std::all_of(entries.begin(), entries.end(), [&](const auto* e) {
        return fresh_before.count(e->data_file.file_path) > 0;
      });
      if (!quiet) continue;
    }
    std::sort(entries.begin(), entries.end(), [](const auto* a, const auto* b) {
      return a->data_file.file_size_in_bytes < b->data_file.file_size_in_bytes;
    });
    // The smallest files, up to the step's budget, so one step stays short.
    std::vector<std::string> inputs;
    int64_t input_bytes = 0;
    int64_t input_rows = 0;
    double output_bytes = 0;  // what the inputs come to in the final codec
    for (const auto* e : entries) {
      if (input_bytes >= options.compaction_step_bytes && inputs.size() >= 2) break;
      const iceberg::DataFile& f = e->data_file;
      inputs.push_back(f.file_path);
      input_bytes += f.file_size_in_bytes;
      input_rows += f.record_count;
      output_bytes += IsFreshFile(f.file_path) && final_rows > 0
                          ? static_cast<double>(f.record_count) * final_bytes / final_rows
                          : static_cast<double>(f.file_size_in_bytes);
    }
    // Merging one file gains nothing, unless it is fresh.
    if (inputs.size() < 2 && !IsFreshFile(inputs.front())) continue;
    // What the step leaves: the files it does not take, and at most one small output.
    const bool more = enough && static_cast<int>(entries.size() - inputs.size()) + 1 >=
                                    options.compaction_min_files;
    const int64_t rows_per_file = std::max<int64_t>(
        1, static_cast<int64_t>(static_cast<double>(input_rows) * options.target_file_bytes /
                                std::max(1.0, output_bytes)));
    std::vector<iceberg::DataFile> added;
    std::vector<std::string> written;
    const auto started = Clock::now();
    Status st = RewriteFiles(options, s, inputs, rows_per_file, &added, &written);
    const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
    const LakeObserver& observer = options.observer;
    if (!st.ok()) {
      if (!s.table->commit_outcome_unknown()) {
        for (const auto& path : written) (void)options.fs->Remove(path);
      }
      if (st.code() == StatusCode::kCancelled) return false;  // dropped meanwhile
      if (observer.on_compaction) observer.on_compaction(s.descriptor.name, seconds, false);
      return st.WithContext("compacting " + dir);
    }
    if (observer.on_compaction) observer.on_compaction(s.descriptor.name, seconds, true);
    if (observer.on_commit) observer.on_commit(s.descriptor.name, "compaction");
    spdlog::info("lake: '{}' compacted {} files ({} bytes) into {}", s.descriptor.name,
                 inputs.size(), input_bytes, added.size());
    backlog = backlog || more;
  }
  return backlog;
}

// A primary-key table's compaction: in each partition (spec and directory; the output keeps the
// inputs' spec), the data files whose deleted fraction reaches lake.compaction.delete-ratio, and
// the small files once compaction_min_files of them gather, are rewritten with their live rows
// only (the key index says which are live), and the delete files that named only removed files
// are dropped, in one "replace" snapshot. Reading and writing the files happens without the
// table's lock, so rounds go on meanwhile; the lock is taken to plan, to commit, and a slice of
// keys at a time to pick the live rows and to settle the keys on the output. A row a round
// deleted or replaced after it was picked is deleted in the output by a position delete file of
// the same snapshot, so no round's delete is lost with the inputs.

// Keys looked up per hold of the table's lock, so rounds wait for a slice, not a file.
constexpr size_t kIndexSlice = 16384;

// A data file worth rewriting: mostly deleted, or small.
struct Candidate {
  int32_t id;
  int64_t size;
  bool mostly_deleted;
};

// The candidates of each partition directory (spec id, path), and the index generation they
// were found in. None when the table was dropped.
struct CompactionPlan {
  std::map<std::pair<int32_t, std::string>, std::vector<Candidate>> by_dir;
  uint64_t generation = 0;
};

Result<std::optional<CompactionPlan>> PlanPrimaryKeyCompaction(const LakeOptions& options,
                                                               LakeTable& s)
    OXBOW_EXCLUDES(s.work) {
  MutexLock work(s.work);
  HoldTimer held(s, "planning compaction");
  if (s.dropped) return std::optional<CompactionPlan>();
  if (s.index_stale) RETURN_NOT_OK(ReloadPrimaryKeyLake(options.fs.get(), s));
  CompactionPlan plan;
  plan.generation = s.index_generation;
  const internal::KeyIndex& index = *s.index;
  ASSIGN_OR_RAISE(auto live, s.table->LiveEntries());
  for (const auto& e : live) {
    if (e.data_file.content != iceberg::FileContent::kData) continue;
    auto id = index.FileId(e.data_file.file_path);
    if (!id) return Status::Corruption(e.data_file.file_path + " is not in the key index");
    const auto& info = index.file(*id);
    const bool mostly_deleted =
        info.rows == 0 || static_cast<double>(info.deleted) >= s.delete_ratio * info.rows;
    const bool small = e.data_file.file_size_in_bytes * 4 < options.target_file_bytes * 3;
    if (mostly_deleted || small) {
      plan.by_dir[{info.partition.spec_id, info.partition.path}].push_back(
          {*id, e.data_file.file_size_in_bytes, mostly_deleted});
    }
  }
  return std::optional<CompactionPlan>(std::move(plan));
}

// The files one step rewrites, and whether it leaves enough candidates for another.
struct StepInputs {
  std::vector<int32_t> ids;
  int64_t bytes = 0;
  bool more = false;
};

// Mostly-deleted files first; then small files, smallest first, each no bigger than those taken
// so far together (a big file waits for peers of its size instead of being rewritten to absorb a
// few tiny ones, so a row is rewritten about log2(files) times, not every step).
StepInputs ChooseInputs(const LakeOptions& options, std::vector<Candidate>& candidates) {
  const int64_t small_files = static_cast<int64_t>(candidates.size());
  std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
    if (a.mostly_deleted != b.mostly_deleted) return a.mostly_deleted;
    return a.size < b.size;
  });
  StepInputs step;
  int64_t merged = 0;
  int64_t merged_bytes = 0;
  for (const auto& c : candidates) {
    if (step.bytes >= options.compaction_step_bytes && !step.ids.empty()) break;
    if (!c.mostly_deleted) {
      if (small_files < options.compaction_min_files) break;
      if (merged >= 2 && c.size > merged_bytes) break;
      ++merged;
      merged_bytes += c.size;
    }
    step.ids.push_back(c.id);
    step.bytes += c.size;
  }
  if (merged == 1) step.ids.pop_back();  // one small file alone is not worth a rewrite
  // What the step leaves: a mostly-deleted file it did not take, or enough small files with its
  // output.
  step.more =
      std::any_of(candidates.begin() + static_cast<std::ptrdiff_t>(step.ids.size()),
                  candidates.end(), [](const Candidate& c) { return c.mostly_deleted; }) ||
      (small_files >= options.compaction_min_files &&
       small_files - static_cast<int64_t>(step.ids.size()) + 1 >= options.compaction_min_files);
  return step;
}

// One step of a primary-key table's compaction: the inputs of one partition directory rewritten
// into one file, a method a phase. A phase returning false found the table dropped or its index
// rebuilt, and the step ends there.
class CompactionJob {
 public:
  CompactionJob(const LakeOptions& options, LakeTable& s, uint64_t generation, std::string dir,
                StepInputs inputs)
      : options_(options),
        s_(s),
        generation_(generation),
        dir_(std::move(dir)),
        inputs_(std::move(inputs.ids)),
        input_bytes_(inputs.bytes) {}
  // Ends the watch on every way out before the commit (which ends it itself).
  ~CompactionJob() OXBOW_EXCLUDES(s_.work) {
    if (!watching_) return;
    MutexLock work(s_.work);
    if (s_.index_generation != generation_) return;  // a rebuilt index watches nothing
    for (int32_t id : inputs_) (void)s_.index->Unwatch(id);
  }
  CompactionJob(const CompactionJob&) = delete;
  CompactionJob& operator=(const CompactionJob&) = delete;

  // The phases in turn: false when the step ended early without an error.
  Result<bool> Run() OXBOW_EXCLUDES(s_.work) {
    const auto started = Clock::now();
    if (!Watch()) return false;
    RETURN_NOT_OK(ReadInputs());
    if (!PickLiveRows()) return false;
    Status written = WriteLiveRows();
    ASSIGN_OR_RAISE(const bool committed, Commit(std::move(written), started));
    if (!committed) return false;
    return SettleKeys();
  }

 private:
  struct Input {
    std::vector<arrow::RecordBatchPtr> row_groups;
    std::vector<std::string> keys;  // in position order
  };

  // Phase 1, locked: watch the inputs (their rows that rounds change from now on are recorded).
  bool Watch() OXBOW_EXCLUDES(s_.work) {
    MutexLock work(s_.work);
    if (s_.dropped || s_.index_generation != generation_) return false;
    for (int32_t id : inputs_) {
      paths_.push_back(s_.index->file(id).path);
      s_.index->Watch(id);
    }
    watching_ = true;
    partition_ = s_.index->file(inputs_.front()).partition;
    return true;
  }

  // Phase 1, unlocked: read the inputs and their keys.
  Status ReadInputs() {
    read_.resize(inputs_.size());
    for (size_t i = 0; i < inputs_.size(); ++i) {
      auto row_groups = ReadLakeFile(options_.fs.get(), s_, paths_[i]);
      if (!row_groups.ok()) return row_groups.status().WithContext("compacting " + dir_);
      read_[i].row_groups = std::move(*row_groups);
      for (const auto& batch : read_[i].row_groups) {
        for (int64_t r = 0; r < batch->num_rows(); ++r) {
          read_[i].keys.push_back(internal::EncodeLakeKey(*batch, s_.schema.key_columns, r));
        }
      }
    }
    return Status::OK();
  }

  // Phase 2: which rows are live, a slice at a time under the lock. A row a round changes after
  // its slice is checked is recorded by the watch and deleted at the commit.
  bool PickLiveRows() OXBOW_EXCLUDES(s_.work) {
    picked_.resize(inputs_.size());
    for (size_t i = 0; i < inputs_.size(); ++i) {
      const size_t rows = read_[i].keys.size();
      picked_[i].resize(rows);
      for (size_t from = 0; from < rows; from += kIndexSlice) {
        MutexLock work(s_.work);
        HoldTimer held(s_, "picking the live rows to compact");
        if (s_.dropped || s_.index_generation != generation_) return false;
        for (size_t pos = from; pos < std::min(rows, from + kIndexSlice); ++pos) {
          picked_[i][pos] = s_.index->Find(read_[i].keys[pos]) ==
                            internal::RowLocation{inputs_[i], static_cast<int64_t>(pos)};
        }
      }
    }
    return true;
  }

  // Phase 3, unlocked: write the live rows. `sources_` maps an output position to its input row,
  // `moved_` an input row to its output position (-1: not copied).
  Status WriteLiveRows() {
    moved_.resize(inputs_.size());
    std::unique_ptr<parquet::FileWriter> writer;
    for (size_t i = 0; i < inputs_.size(); ++i) {
      moved_[i].assign(read_[i].keys.size(), -1);
      int64_t pos = 0;
      for (const auto& batch : read_[i].row_groups) {
        std::vector<int32_t> rows;
        for (int64_t r = 0; r < batch->num_rows(); ++r, ++pos) {
          if (!picked_[i][static_cast<size_t>(pos)]) continue;
          rows.push_back(static_cast<int32_t>(r));
          moved_[i][static_cast<size_t>(pos)] = static_cast<int64_t>(sources_.size());
          sources_.emplace_back(i, pos);
        }
        if (rows.empty()) continue;
        ASSIGN_OR_RAISE(auto live_rows, arrow::TakeRows(*batch, rows));
        if (!writer) {
          ASSIGN_OR_RAISE(writer,
                          OpenDataFile(options_.fs.get(), s_, dir_, options_.parquet, &written_));
        }
        RETURN_NOT_OK(writer->Write(*live_rows));
      }
    }
    if (writer) {
      ASSIGN_OR_RAISE(added_, FinishDataFile(s_, writer.get(), written_.back(), partition_.spec_id,
                                             partition_.values));
    }
    return Status::OK();
  }

  // Phase 4, locked: delete the copied rows that rounds changed meanwhile, commit, and move the
  // inputs' keys to the output in the index. `st` is how phase 3 went. False when cancelled.
  Result<bool> Commit(Status st, Clock::time_point started) OXBOW_EXCLUDES(s_.work) {
    {
      MutexLock work(s_.work);
      HoldTimer held(s_, "committing compaction");
      if (st.ok() && (s_.dropped || s_.index_stale || s_.index_generation != generation_)) {
        st = Status::Cancelled("the table changed under compaction");
      }
      if (st.ok()) {
        st = ReplaceInputs();
        if (!st.ok()) s_.index_stale = true;
      }
      const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
      const LakeObserver& observer = options_.observer;
      if (!st.ok()) {
        if (!s_.table->commit_outcome_unknown()) {
          for (const auto& path : written_) (void)options_.fs->Remove(path);
        }
        if (st.code() == StatusCode::kCancelled) return false;
        if (observer.on_compaction) observer.on_compaction(s_.descriptor.name, seconds, false);
        return st.WithContext("compacting " + dir_);
      }
      if (observer.on_compaction) observer.on_compaction(s_.descriptor.name, seconds, true);
      if (observer.on_commit) observer.on_commit(s_.descriptor.name, "compaction");
      MoveKeys();
    }
    spdlog::info(
        "lake: '{}' compacted {} data files ({} bytes) into {}, dropping {} delete files ({} rows "
        "changed meanwhile)",
        s_.descriptor.name, inputs_.size(), input_bytes_, added_ ? 1 : 0, obsolete_.size(),
        stale_.size());
    return true;
  }

  // The "replace" snapshot: the output (with a delete file of its rows changed since phase 2)
  // in place of the inputs and the delete files that named only them.
  Status ReplaceInputs() OXBOW_REQUIRES(s_.work) {
    internal::KeyIndex& index = *s_.index;
    for (size_t i = 0; i < inputs_.size(); ++i) {
      for (int64_t pos : index.Unwatch(inputs_[i])) {
        const int64_t out = moved_[i][static_cast<size_t>(pos)];
        if (out >= 0) stale_.emplace_back(added_->file_path, out);
      }
    }
    watching_ = false;
    const std::set<std::string> removed(paths_.begin(), paths_.end());
    obsolete_ = index.ObsoleteDeleteFiles(removed);
    std::vector<iceberg::DataFile> deletes;
    if (!stale_.empty()) {
      ASSIGN_OR_RAISE(stale_file_, WriteDeleteFile(options_.fs.get(), s_, partition_, stale_,
                                                   FreshFileOptions(options_.parquet), &written_));
      deletes.push_back(*stale_file_);
    }
    std::vector<std::string> replaced(removed.begin(), removed.end());
    replaced.insert(replaced.end(), obsolete_.begin(), obsolete_.end());
    auto summary = s_.Summary();
    summary["oxbow.compacted-files"] = std::to_string(inputs_.size());
    std::vector<iceberg::DataFile> outputs;
    if (added_) outputs.push_back(*added_);
    return s_.table->ReplaceFiles(replaced, outputs, summary, deletes).status();
  }

  // The output takes the inputs' place: their keys resolve to it now and are settled on it a
  // slice at a time in phase 5.
  void MoveKeys() OXBOW_REQUIRES(s_.work) {
    internal::KeyIndex& index = *s_.index;
    if (added_) {
      const int32_t output =
          index.AddMovedFile(added_->file_path, partition_, static_cast<int64_t>(sources_.size()),
                             static_cast<int64_t>(stale_.size()));
      for (size_t i = 0; i < inputs_.size(); ++i)
        index.Move(inputs_[i], output, std::move(moved_[i]));
    } else {
      for (int32_t id : inputs_) index.RemoveFile(id);
    }
    if (stale_file_) index.AddDeleteFile(stale_file_->file_path, {added_->file_path});
    for (const auto& path : obsolete_) index.RemoveDeleteFile(path);
  }

  // Phase 5: settle the keys on the output, a slice at a time under the lock.
  bool SettleKeys() OXBOW_EXCLUDES(s_.work) {
    if (!added_) return true;
    for (size_t from = 0; from < sources_.size(); from += kIndexSlice) {
      MutexLock settle(s_.work);
      HoldTimer held(s_, "settling compacted keys");
      if (s_.dropped || s_.index_generation != generation_) return false;
      for (size_t out = from; out < std::min(sources_.size(), from + kIndexSlice); ++out) {
        const auto [i, pos] = sources_[out];
        s_.index->Settle(read_[i].keys[static_cast<size_t>(pos)]);
      }
    }
    MutexLock settled(s_.work);
    if (s_.dropped || s_.index_generation != generation_) return false;
    for (int32_t id : inputs_) s_.index->EndMove(id);
    return true;
  }

  const LakeOptions& options_;
  LakeTable& s_;
  const uint64_t generation_;
  const std::string dir_;
  const std::vector<int32_t> inputs_;
  const int64_t input_bytes_;
  std::vector<std::string> paths_;
  internal::FilePartition partition_;
  bool watching_ = false;
  std::vector<Input> read_;
  std::vector<std::vector<bool>> picked_;
  std::vector<std::pair<size_t, int64_t>> sources_;
  std::vector<std::vector<int64_t>> moved_;
  std::vector<std::string> written_;
  std::optional<iceberg::DataFile> added_;
  std::vector<std::pair<std::string, int64_t>> stale_;  // output rows changed since phase 2
  std::vector<std::string> obsolete_;
  std::optional<iceberg::DataFile> stale_file_;
};

// Returns whether a step left enough candidates for another (as CompactPartitions).
Result<bool> CompactPrimaryKey(const LakeOptions& options, LakeTable& s) {
  ASSIGN_OR_RAISE(std::optional<CompactionPlan> plan, PlanPrimaryKeyCompaction(options, s));
  if (!plan) return false;
  bool backlog = false;
  for (auto& [dir, candidates] : plan->by_dir) {
    StepInputs inputs = ChooseInputs(options, candidates);
    if (inputs.ids.empty()) continue;
    const bool more = inputs.more;
    CompactionJob job(options, s, plan->generation, dir.second, std::move(inputs));
    ASSIGN_OR_RAISE(const bool done, job.Run());
    if (!done) return false;
    backlog = backlog || more;
  }
  return backlog;
}

// CompactPartitions (CompactPrimaryKey for a primary-key table), then s.compaction_backlog for
// the maintenance thread. The flag changes only as a pass ends, so one pass running (another
// thread's) never reads as "no backlog"; a failed pass leaves none, so a failing step is not
// retried at once.
Status Compact(const LakeOptions& options, LakeTable& s, bool follow_up)
    OXBOW_REQUIRES(s.maintaining) {
  Result<bool> backlog =
      s.index ? CompactPrimaryKey(options, s) : CompactPartitions(options, s, follow_up);
  s.compaction_backlog = backlog.ok() && *backlog;
  return backlog.status();
}

// Compaction, manifest merging and snapshot expiry of one lake table.
Status MaintainTable(const LakeOptions& options, LakeTable& s, bool follow_up)
    OXBOW_REQUIRES(s.maintaining) {
  RETURN_NOT_OK(Compact(options, s, follow_up));
  MutexLock work(s.work);
  HoldTimer held(s, "manifest merging and snapshot expiry");
  if (s.dropped || s.table->CurrentSnapshot() == nullptr) return Status::OK();
  const LakeObserver& observer = options.observer;
  ASSIGN_OR_RAISE(auto rewritten, s.table->RewriteManifests(options.max_manifests, s.Summary()));
  if (rewritten && observer.on_commit) observer.on_commit(s.descriptor.name, "rewrite_manifests");
  iceberg::ExpireOptions expire;
  expire.retain_last = options.retain_snapshots;
  expire.older_than_ms = WallMs() - options.snapshot_max_age_ms;
  ASSIGN_OR_RAISE(auto expired, s.table->ExpireSnapshots(expire));
  if (expired.expired_snapshots > 0 && observer.on_commit) {
    observer.on_commit(s.descriptor.name, "expire_snapshots");
  }
  // Expiry deleted the files only older metadata reaches: Describe names the new metadata now,
  // not when the pass ends. (A changelog lake table's status is its table's.)
  if ((rewritten || expired.expired_snapshots > 0) && !s.changelog_table) s.Publish(s.Error());
  return Status::OK();
}

}  // namespace

Status Maintain(const LakeOptions& options, LakeTable& s, bool follow_up) {
  Status st = MaintainTable(options, s, follow_up);
  if (LakeTable* changelog_table = s.changelog.get()) {
    // Only ever taken here: the changelog lake table is maintained with its table.
    MutexLock changelog_maintaining(changelog_table->maintaining);
    Status changelog = MaintainTable(options, *changelog_table, follow_up);
    if (st.ok() && !changelog.ok()) st = changelog.WithContext("changelog table");
  }
  return st;
}

}  // namespace oxbow::lake
