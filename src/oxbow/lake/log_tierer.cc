#include <spdlog/spdlog.h>

#include <algorithm>

#include "oxbow/lake/tiering_internal.h"

namespace oxbow::lake {

Status EndRound(engine::Engine* engine, LakeTable& s, const std::vector<int64_t>& floor,
                bool caught_up, int64_t started_ms, Status read_error) {
  RETURN_NOT_OK(SetRetentionFloors(engine, s.descriptor.name, floor));
  if (caught_up) s.SetCaughtUp(started_ms);
  return read_error;
}

namespace {

// Where tiering reads a bucket from `from` on: this server's replica (`local`), or in cluster
// mode, when it holds none, the bucket's leader. Unavailable when neither can be read.
Result<RemoteBucketRead> OpenBucketRead(engine::Engine* engine, const LakeOptions& options,
                                        const LakeTable& s, const engine::BucketStatus& local,
                                        int64_t from) {
  const int32_t b = local.bucket;
  if (options.holds_bucket && !options.holds_bucket(s.descriptor.name, b)) {
    if (options.read_remote_bucket) return options.read_remote_bucket(s.descriptor.name, b, from);
    return Status::Unavailable("bucket " + std::to_string(b) +
                               " has no replica on this server, the tiering owner "
                               "(docs/cluster.md#the-lake)");
  }
  RemoteBucketRead read{local.earliest_offset, local.next_offset, nullptr};
  from = std::max(from, local.earliest_offset);
  if (from >= local.next_offset) return read;
  engine::ReadRequest request;
  request.table = s.descriptor.name;
  request.bucket = b;
  request.from.kind = engine::StartPosition::Kind::kOffset;
  request.from.offset = from;
  request.to = local.next_offset;
  ASSIGN_OR_RAISE(read.cursor, engine->OpenRead(request));
  return read;
}

}  // namespace

Result<RoundInput> ReadSinceTiered(
    engine::Engine* engine, const LakeOptions& options, const LakeTable& s,
    const std::vector<int64_t>& from,
    const std::function<Status(int32_t, const engine::DecodedBatch&)>& on_batch) {
  ASSIGN_OR_RAISE(auto status, engine->DescribeTable(s.descriptor.name));
  RoundInput input;
  input.next = from;
  input.earliest.assign(from.size(), 0);
  std::vector<int64_t>& next = input.next;
  for (const auto& bucket : status.buckets) {
    const int32_t b = bucket.bucket;
    auto opened = OpenBucketRead(engine, options, s, bucket, next[b]);
    if (!opened.ok()) {
      input.caught_up = false;
      if (input.read_error.ok()) input.read_error = opened.status();
      continue;
    }
    RemoteBucketRead& read_from = *opened;
    input.earliest[b] = read_from.earliest_offset;
    if (next[b] < read_from.earliest_offset) {
      spdlog::warn("lake: '{}' bucket {}: offsets [{}, {}) left the log before reaching the lake",
                   s.descriptor.name, b, next[b], read_from.earliest_offset);
      next[b] = read_from.earliest_offset;
    }
    if (!read_from.cursor) continue;
    while (input.bytes < options.max_round_bytes) {
      auto next_batch = read_from.cursor->NextDecoded(Clock::now());
      if (!next_batch.ok()) {
        if (input.read_error.ok()) input.read_error = next_batch.status();
        break;
      }
      auto& read = *next_batch;
      if (!read) break;
      RETURN_NOT_OK(on_batch(b, *read));
      input.bytes += read->body_length;
      next[b] = read->next_offset;
    }
    if (next[b] < read_from.next_offset) input.caught_up = false;
  }
  return input;
}

void NoteHoles(LakeTable& t, const std::vector<int64_t>& earliest) {
  for (size_t b = 0; b < t.tiered.size() && b < earliest.size(); ++b) {
    if (t.tiered[b] < earliest[b]) t.start[b] = std::max(t.start[b], earliest[b]);
  }
}

Result<size_t> AppendRound(const LakeOptions& options, LakeTable& s,
                           const std::vector<arrow::RecordBatchPtr>& batches,
                           const std::vector<int64_t>& next, bool* committing, int64_t log_bytes) {
  struct Group {
    iceberg::PartitionValues values;
    std::vector<arrow::RecordBatchPtr> batches;
  };
  std::map<std::string, Group> groups;
  for (const auto& batch : batches) {
    ASSIGN_OR_RAISE(auto parts, internal::SplitByPartition(s.schema, s.spec, *batch));
    for (auto& part : parts) {
      auto& group = groups[part.path];
      group.values = std::move(part.values);
      group.batches.push_back(std::move(part.batch));
    }
  }
  std::vector<iceberg::DataFile> files;
  std::vector<std::string> written;
  parquet::WriterOptions file_options = FreshFileOptions(options.parquet);
  const bool fresh =
      s.fresh_codec != options.parquet.compression && log_bytes < options.target_file_bytes;
  if (fresh) file_options.compression = s.fresh_codec;
  auto commit = [&]() -> Status {
    for (auto& [path, group] : groups) {
      ASSIGN_OR_RAISE(auto file, WriteDataFile(options.fs.get(), s, path, group.values,
                                               group.batches, file_options, &written, fresh));
      files.push_back(std::move(file));
    }
    std::vector<int64_t> previous = s.tiered;
    s.tiered = next;
    if (committing) *committing = true;
    auto committed = s.table->AppendFiles(files, s.Summary());
    if (!committed.ok()) s.tiered = previous;
    return committed.status();
  };
  Status st = commit();
  if (!st.ok()) {
    if (!s.table->commit_outcome_unknown()) {
      for (const auto& path : written) (void)options.fs->Remove(path);
    }
    return st;
  }
  return files.size();
}

Status TierRound(engine::Engine* engine, const LakeOptions& options, LakeTable& s) {
  if (s.offsets_stale) RETURN_NOT_OK(ReloadOffsets(s));
  const int64_t started_ms = WallMs();
  const auto round_start = Clock::now();
  std::vector<arrow::RecordBatchPtr> batches;
  ASSIGN_OR_RAISE(
      RoundInput input,
      ReadSinceTiered(
          engine, options, s, s.tiered, [&](int32_t b, const engine::DecodedBatch& read) {
            ASSIGN_OR_RAISE(auto lake_batch,
                            internal::ToLakeBatch(s.schema, *read.batch, b, read.base_offset,
                                                  read.append_time_ms));
            batches.push_back(std::move(lake_batch));
            return Status::OK();
          }));
  std::vector<int64_t>& next = input.next;
  const bool caught_up = input.caught_up;
  const Status& read_error = input.read_error;
  if (batches.empty() && next == s.tiered) {
    return EndRound(engine, s, {}, caught_up, started_ms, read_error);
  }
  NoteHoles(s, input.earliest);
  const auto read_done = Clock::now();
  bool committing = false;
  auto appended = AppendRound(options, s, batches, next, &committing, input.bytes);
  // A commit that was tried and failed either lost to another writer or may have landed: the
  // next round starts from what the lake holds.
  if (!appended.ok()) {
    if (committing) s.offsets_stale = true;
    return appended.status();
  }
  const size_t files = *appended;
  spdlog::debug("lake: '{}' round: {} log bytes in {} files; read {} ms, write and commit {} ms",
                s.descriptor.name, input.bytes, files, Millis(read_done - round_start),
                Millis(Clock::now() - read_done));
  return EndRound(engine, s, next, caught_up, started_ms, read_error);
}

}  // namespace oxbow::lake
