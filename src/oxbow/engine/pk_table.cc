#include <spdlog/spdlog.h>

#include <algorithm>
#include <deque>
#include <limits>
#include <map>
#include <mutex>
#include <unordered_map>

#include "oxbow/arrow/compression.h"
#include "oxbow/arrow/compute.h"
#include "oxbow/common/parallel.h"
#include "oxbow/engine/bucketing_internal.h"
#include "oxbow/engine/pk_table_internal.h"
#include "oxbow/kv/merge.h"
#include "oxbow/kv/row.h"

namespace oxbow::engine::internal {

namespace {

// How long a read on a new leader waits for the high watermark to cover the changelog it
// inherited (its followers' next fetch) before it answers Unavailable.
constexpr auto kInheritedCommitWait = std::chrono::seconds(5);

// The size at which a KV snapshot's SST file ends and the next begins.
constexpr int64_t kKvSnapshotFileBytes = int64_t{64} << 20;

// Rows per snapshot or replay batch, and the bytes that end a snapshot batch early.
constexpr int64_t kSnapshotBatchRows = 65536;
constexpr int64_t kSnapshotBatchBytes = int64_t{8} << 20;

constexpr std::string_view kInsert = "+I";
constexpr std::string_view kUpdateBefore = "-U";
constexpr std::string_view kUpdateAfter = "+U";
constexpr std::string_view kDelete = "-D";

kv::Cell ChangeCell(std::string_view change) { return kv::Cell{false, std::string(change)}; }

std::vector<int> IndicesOf(const arrow::Schema& schema, const std::vector<std::string>& names) {
  std::vector<int> out;
  for (const auto& name : names) out.push_back(schema.GetFieldIndex(name));
  return out;
}

// changelog.compression: how changelog batches are compressed, each buffer (so each column) on
// its own, as Arrow IPC body compression does. Default: lz4.
Result<arrow::ipc::WriteOptions> ChangelogWriteOptions(const catalog::TableDescriptor& table) {
  arrow::ipc::WriteOptions options;
  options.codec = arrow::Codec::kLz4Frame;
  for (const auto& [key, value] : table.properties) {
    if (key.rfind("changelog.", 0) != 0 || key == "changelog.image") continue;
    if (key != "changelog.compression") {
      return Status::Invalid("table property " + Quote(key) +
                             " is unknown (known: changelog.image, changelog.compression)");
    }
    auto codec = arrow::ParseCodec(value);
    if (!codec.ok()) {
      return Status::Invalid("changelog.compression " + Quote(value) +
                             " is unknown (known: lz4, zstd, none)");
    }
    options.codec = *codec;
  }
  return options;
}

arrow::SchemaPtr ChangelogSchema(const arrow::Schema& table) {
  std::vector<arrow::Field> fields = table.fields();
  fields.push_back(arrow::Field{kChangeTypeColumn, arrow::DataType::String(), false, {}});
  return std::make_shared<arrow::Schema>(std::move(fields));
}

// The output columns of a projection (all when unset) and their schema.
Result<std::pair<std::vector<int>, arrow::SchemaPtr>> Project(
    const catalog::TableDescriptor& table, const std::optional<std::vector<std::string>>& columns) {
  std::vector<int> indices;
  if (!columns) {
    for (int i = 0; i < table.schema->num_fields(); ++i) indices.push_back(i);
    return std::pair<std::vector<int>, arrow::SchemaPtr>(std::move(indices), table.schema);
  }
  ASSIGN_OR_RAISE(indices, ColumnIndices(table.name, *table.schema, *columns));
  std::vector<arrow::Field> fields;
  for (int i : indices) fields.push_back(table.schema->field(i));
  return std::pair<std::vector<int>, arrow::SchemaPtr>(
      std::move(indices), std::make_shared<arrow::Schema>(std::move(fields)));
}

// One bucket's rows that a leader wrote but whose changelog is not committed yet (above the
// high watermark): puts read them before the store, and they reach the store once committed,
// so the store never holds a row a failover may take back. Always empty outside cluster mode.
struct PendingRows {
  struct Batch {
    int64_t next_offset = 0;  // the changelog end that writing `writes` brings the rows to
    std::vector<kv::KeyWrite> writes;
  };
  std::deque<Batch> batches;
  // Each key's newest pending value (nullopt: deleted), with the next_offset of its batch.
  std::unordered_map<std::string, std::pair<int64_t, std::optional<std::string>>> latest;
};

class PrimaryKeyTable : public Table, public std::enable_shared_from_this<PrimaryKeyTable> {
 public:
  PrimaryKeyTable(catalog::TableDescriptor descriptor, std::shared_ptr<LogTable> changelog,
                  kv::TableStore* store, kv::MergeRules rules, kv::RowFormat format,
                  arrow::ipc::WriteOptions changelog_options, bool replicated,
                  KvSnapshotStore snapshots, std::string scratch_dir)
      : replicated_(replicated),
        snapshots_(std::move(snapshots)),
        scratch_dir_(std::move(scratch_dir)),
        descriptor_(std::move(descriptor)),
        changelog_(std::move(changelog)),
        store_(store),
        rules_(std::move(rules)),
        format_(std::move(format)),
        changelog_options_(changelog_options),
        key_columns_(IndicesOf(*descriptor_.schema, descriptor_.primary_key)),
        bucket_mu_(static_cast<size_t>(descriptor_.buckets)),
        pending_(static_cast<size_t>(descriptor_.buckets)),
        inherited_end_(static_cast<size_t>(descriptor_.buckets), 0) {}

  const catalog::TableDescriptor& descriptor() const override { return descriptor_; }
  const arrow::SchemaPtr& read_schema() const override { return changelog_->read_schema(); }
  const std::vector<std::unique_ptr<log::BucketLog>>& logs() const override {
    return changelog_->logs();
  }
  std::vector<BucketStatus> Buckets() const override { return changelog_->Buckets(); }
  // Waits for the puts in progress (each holds its bucket's mutex until its rows are in the
  // store), so a table reopened on the same changelog and store (an alter) replays none twice.
  Status Close() override {
    std::vector<std::unique_lock<std::mutex>> puts;
    for (auto& mu : bucket_mu_) puts.emplace_back(mu);
    store_->SetFlushGuard(nullptr);
    return changelog_->Close();
  }

  // The store's flush guard: the changelog is durable up to every row in the store. Close()
  // removes it; a table dropped without one leaves a guard that does nothing.
  void GuardStoreFlushes() {
    store_->SetFlushGuard([weak = weak_from_this()] {
      const auto table = weak.lock();
      if (!table) return Status::OK();
      for (const auto& log : table->logs()) {
        RETURN_NOT_OK(log->WaitDurable(log->next_offset()));
      }
      return Status::OK();
    });
  }

  Result<std::unique_ptr<PutSession>> StartPut(const arrow::SchemaPtr& client_schema,
                                               PutOp op) override;
  Result<std::unique_ptr<ReadCursor>> OpenRead(const ReadRequest& request) override {
    return changelog_->OpenRead(request);
  }
  Result<std::unique_ptr<SnapshotReader>> OpenSnapshot(const SnapshotRequest& request) override;
  Result<arrow::RecordBatchPtr> Lookup(const LookupRequest& request) override;
  Result<std::vector<int32_t>> BucketsOf(const arrow::RecordBatch& batch) const override;
  Status PrepareToLead(int32_t bucket) override;
  Status ApplyReplicated(int32_t bucket) override;
  Result<std::optional<KvSnapshotRef>> UploadKvSnapshot(int32_t bucket,
                                                        int64_t after_offset) override;
  Result<bool> RestoreKvSnapshot(int32_t bucket, const KvSnapshotRef& snapshot) override;
  Status DropBucketData(int32_t bucket) override;

  // Brings every bucket's rows up to the end of its changelog (outside cluster mode).
  Status Recover();
  // Adds changes whose changelog ends at `next_offset` to the bucket's rows: into the store
  // when committed (below the high watermark) and nothing is pending before them, else pending.
  // Requires the bucket's mutex.
  Status CommitOrHold(int32_t bucket, std::vector<kv::KeyWrite> writes, int64_t next_offset);
  // Moves the pending rows the high watermark covers now into the store. Requires the bucket's
  // mutex.
  Status FlushCommitted(int32_t bucket);
  // The newest pending value of `key` (nullopt inside: deleted), or null when none is pending.
  // Requires the bucket's mutex.
  const std::optional<std::string>* FindPending(int32_t bucket, const std::string& key) const {
    const auto& latest = pending_[static_cast<size_t>(bucket)].latest;
    if (latest.empty()) return nullptr;  // always, outside cluster mode: no hashing on the put path
    auto it = latest.find(key);
    return it == latest.end() ? nullptr : &it->second.second;
  }

  const kv::MergeRules& rules() const { return rules_; }
  // How rows are stored: written in the current schema version, read from any.
  const kv::RowFormat& format() const { return format_; }
  const arrow::ipc::WriteOptions& changelog_options() const { return changelog_options_; }
  const std::vector<int>& key_columns() const { return key_columns_; }
  kv::TableStore& store() { return *store_; }
  LogTable& changelog() { return *changelog_; }
  std::mutex& bucket_mutex(int32_t bucket) { return bucket_mu_[static_cast<size_t>(bucket)]; }
  const arrow::SchemaPtr& changelog_schema() const { return changelog_->read_schema(); }

  // The store key of row `row` of `batch`: bucket prefix, then the key columns (`columns`,
  // indices into the batch, in primary-key order).
  static std::string KeyOf(int32_t bucket, const arrow::RecordBatch& batch,
                           const std::vector<int>& columns, int64_t row) {
    std::string key = kv::BucketPrefix(bucket);
    for (int c : columns) kv::AppendKeyPart(batch.column(c), row, &key);
    return key;
  }

  // The buckets of the rows of `batch`, whose bucket-key columns are `columns`.
  std::vector<int32_t> BucketsOf(const arrow::RecordBatch& batch,
                                 const std::vector<int>& columns) const {
    if (descriptor_.buckets == 1) return std::vector<int32_t>(batch.num_rows(), 0);
    return ComputeBuckets(batch, columns, descriptor_.buckets);
  }

  std::string BucketName(int32_t bucket) const {
    return "table " + Quote(descriptor_.name) + " bucket " + std::to_string(bucket);
  }

 private:
  // Replays the bucket's changelog from where its rows are up to `to` through CommitOrHold,
  // read past the high watermark. Returns the rows replayed. Requires the bucket's mutex.
  Result<int64_t> Replay(int32_t bucket, int64_t to);
  // Flushes what is committed in each bucket of `buckets` (lookups and snapshots read the store).
  Status FlushCommitted(const std::vector<int32_t>& buckets);
  // The rows the leaders of the keys' buckets that are not here found (LookupRequest::remote),
  // by the store key of their `key_names` columns (the primary key, or the bucket key of a
  // prefix lookup).
  Result<std::unordered_map<std::string, std::vector<kv::Row>>> LookupRemote(
      const LookupRequest& request, const std::vector<int32_t>& buckets,
      const std::vector<std::string>& key_names);

  const bool replicated_;
  const KvSnapshotStore snapshots_;
  const std::string scratch_dir_;  // local: snapshots being written or read, one dir per bucket
  const catalog::TableDescriptor descriptor_;
  std::shared_ptr<LogTable> changelog_;
  kv::TableStore* store_;
  const kv::MergeRules rules_;
  const kv::RowFormat format_;
  const arrow::ipc::WriteOptions changelog_options_;
  const std::vector<int> key_columns_;  // primary-key columns in the schema, in key order
  std::vector<std::mutex> bucket_mu_;   // one writer per bucket at a time
  std::vector<PendingRows> pending_;    // by bucket, under its mutex
  // By bucket, under its mutex: the changelog end when this server became its leader. Reads
  // wait until it is committed, so a new leader never answers without an acknowledged write.
  std::vector<int64_t> inherited_end_;
};

// One bucket's share of a put batch: the changelog rows it produces and the final state of
// every key it touched.
struct BucketChanges {
  int32_t bucket = 0;
  std::vector<int64_t> rows;                                      // rows of the input batch
  std::unordered_map<std::string, std::optional<kv::Row>> state;  // key -> row, or deleted
  std::vector<std::string> key_order;                             // keys in first-touch order
  std::optional<kv::RowBatchBuilder> changelog;
};

class PrimaryKeyPutSession : public PutSession {
 public:
  PrimaryKeyPutSession(std::shared_ptr<PrimaryKeyTable> table, arrow::SchemaPtr client_schema,
                       PutOp op, std::vector<int> table_index, std::vector<int> key_in_client,
                       std::vector<int> bucket_key_in_client)
      : table_(std::move(table)),
        client_schema_(std::move(client_schema)),
        op_(op),
        table_index_(std::move(table_index)),
        key_in_client_(std::move(key_in_client)),
        bucket_key_in_client_(std::move(bucket_key_in_client)) {
    const auto& schema = *table_->descriptor().schema;
    given_.assign(static_cast<size_t>(schema.num_fields()), false);
    for (int t : table_index_) given_[static_cast<size_t>(t)] = true;
    partial_ = std::count(given_.begin(), given_.end(), true) < schema.num_fields();
  }

  Result<std::vector<AppendedRange>> Append(const arrow::ipc::RawMessage& message) override {
    ASSIGN_OR_RAISE(auto batch, arrow::ipc::DecodeRecordBatch(client_schema_, message));
    return Append(*batch);
  }

  Result<std::vector<AppendedRange>> Append(const arrow::RecordBatch& batch) override {
    RETURN_NOT_OK(Check(batch));
    if (batch.num_rows() == 0) return std::vector<AppendedRange>{};
    const std::vector<int32_t> buckets = table_->BucketsOf(batch, bucket_key_in_client_);
    std::map<int32_t, BucketChanges> changes;
    for (int64_t r = 0; r < batch.num_rows(); ++r) {
      auto& c = changes[buckets[static_cast<size_t>(r)]];
      c.bucket = buckets[static_cast<size_t>(r)];
      c.rows.push_back(r);
    }
    // Buckets are locked in ascending order (std::map), so writers never deadlock. The work of
    // each bucket then runs in parallel, under the locks this thread holds.
    std::vector<std::unique_lock<std::mutex>> locks;
    std::vector<BucketChanges*> touched;
    for (auto& [bucket, c] : changes) {
      locks.emplace_back(table_->bucket_mutex(bucket));
      touched.push_back(&c);
    }
    std::vector<Status> resolved(touched.size());
    ParallelFor(touched.size(), [&](size_t i) { resolved[i] = Resolve(batch, touched[i]); });
    for (const Status& st : resolved) RETURN_NOT_OK(st);
    // Everything is checked: each bucket appends its changelog, then applies its rows.
    std::vector<std::optional<AppendedRange>> ranges(touched.size());
    std::vector<Status> written(touched.size());
    ParallelFor(touched.size(), [&](size_t i) { written[i] = Write(*touched[i], &ranges[i]); });
    std::vector<AppendedRange> out;
    for (size_t i = 0; i < touched.size(); ++i) {
      RETURN_NOT_OK(written[i].WithContext(table_->BucketName(touched[i]->bucket)));
      if (ranges[i]) out.push_back(*ranges[i]);
    }
    return out;
  }

 private:
  Status Check(const arrow::RecordBatch& batch) const {
    const auto& desc = table_->descriptor();
    for (size_t c = 0; c < table_index_.size(); ++c) {
      const arrow::Field& field = desc.schema->field(table_index_[c]);
      if (!field.nullable && batch.column(static_cast<int>(c)).null_count() > 0) {
        return Status::Invalid("field " + Quote(field.name) + " of table " + Quote(desc.name) +
                               " is not nullable but the batch has " +
                               std::to_string(batch.column(static_cast<int>(c)).null_count()) +
                               " nulls");
      }
      if (Status st = batch.column(static_cast<int>(c)).CheckNestedNulls(); !st.ok()) {
        return st.WithContext("field " + Quote(field.name) + " of table " + Quote(desc.name));
      }
    }
    RETURN_NOT_OK(CheckUtf8(desc.name, *client_schema_, batch));
    if (op_ == PutOp::kUpsert && table_->rules().engine == kv::MergeEngine::kVersioned) {
      const auto version =
          std::find(table_index_.begin(), table_index_.end(), table_->rules().version_column);
      if (batch.column(static_cast<int>(version - table_index_.begin())).null_count() > 0) {
        return Status::Invalid(
            "version column " + Quote(desc.schema->field(table_->rules().version_column).name) +
            " of table " + Quote(desc.name) + " has nulls; every write needs a version");
      }
    }
    return Status::OK();
  }

  // The row the batch's row `r` writes, in table order (columns it does not carry are null).
  kv::Row UpdateRow(const arrow::RecordBatch& batch, int64_t r) const {
    kv::Row row(given_.size());
    for (size_t c = 0; c < table_index_.size(); ++c) {
      row[static_cast<size_t>(table_index_[c])] = kv::CellAt(batch.column(static_cast<int>(c)), r);
    }
    return row;
  }

  // Works out the changelog of one bucket's rows, reading the old rows it needs.
  Status Resolve(const arrow::RecordBatch& batch, BucketChanges* c) {
    const auto& desc = table_->descriptor();
    const arrow::Schema& schema = *desc.schema;
    std::vector<int> all(static_cast<size_t>(schema.num_fields()));
    for (int i = 0; i < schema.num_fields(); ++i) all[static_cast<size_t>(i)] = i;
    ASSIGN_OR_RAISE(auto builder, kv::RowBatchBuilder::Make(table_->changelog_schema(), all));
    c->changelog.emplace(std::move(builder));
    const int change_field = schema.num_fields();

    std::vector<std::string> keys;
    keys.reserve(c->rows.size());
    for (int64_t r : c->rows)
      keys.push_back(PrimaryKeyTable::KeyOf(c->bucket, batch, key_in_client_, r));
    const bool reads = op_ == PutOp::kDelete || partial_ || table_->rules().upsert_reads_old_row();
    std::unordered_map<std::string, std::optional<kv::Row>> stored;  // the rows before the batch
    if (reads) {
      std::vector<std::string> distinct;
      for (const auto& k : keys) {
        if (!stored.emplace(k, std::nullopt).second) continue;
        // A row pending commit is newer than the store's.
        if (const auto* pending = table_->FindPending(c->bucket, k)) {
          if (*pending) {
            auto row = table_->format().Decode(**pending);
            if (!row.ok()) return row.status().WithContext(table_->BucketName(c->bucket));
            stored[k] = std::move(row).ValueOrDie();
          }
          continue;
        }
        distinct.push_back(k);
      }
      RETURN_NOT_OK(
          table_->store().MultiGetEach(distinct, [&](size_t i, std::string_view value) -> Status {
            auto row = table_->format().Decode(value);
            if (!row.ok()) return row.status().WithContext(table_->BucketName(c->bucket));
            stored[distinct[i]] = std::move(row).ValueOrDie();
            return Status::OK();
          }));
    }
    auto emit = [&](const kv::Row& row, std::string_view change) -> Status {
      RETURN_NOT_OK(c->changelog->Append(row));
      return c->changelog->AppendCell(change_field, ChangeCell(change));
    };
    for (size_t i = 0; i < c->rows.size(); ++i) {
      const std::string& key = keys[i];
      // The key's current row: an earlier write of this batch, else the store's.
      const kv::Row* old = nullptr;
      const auto current = c->state.find(key);
      if (current != c->state.end()) {
        old = current->second ? &*current->second : nullptr;
      } else if (auto s = stored.find(key); s != stored.end() && s->second) {
        old = &*s->second;
      }
      auto set_state = [&](std::optional<kv::Row> row) {
        if (current == c->state.end()) c->key_order.push_back(key);
        c->state[key] = std::move(row);
      };
      if (op_ == PutOp::kDelete) {
        if (old == nullptr) continue;  // a delete of a missing key emits nothing
        RETURN_NOT_OK(emit(*old, kDelete));
        set_state(std::nullopt);
        continue;
      }
      kv::Row update = UpdateRow(batch, c->rows[i]);
      std::optional<kv::Row> merged;
      if (reads) {
        ASSIGN_OR_RAISE(merged, kv::Merge(table_->rules(), schema, old, std::move(update), given_));
        if (!merged) continue;  // the merge engine ignores the write
      } else {
        merged = std::move(update);
      }
      for (int f = 0; f < schema.num_fields(); ++f) {
        if ((*merged)[static_cast<size_t>(f)].null && !schema.field(f).nullable) {
          return Status::Invalid("a partial update of table " + Quote(desc.name) +
                                 " inserts a new key but leaves column " +
                                 Quote(schema.field(f).name) +
                                 " null, which is not nullable; write it too");
        }
      }
      if (!reads) {
        RETURN_NOT_OK(emit(*merged, kUpdateAfter));
      } else if (old == nullptr) {
        RETURN_NOT_OK(emit(*merged, kInsert));
      } else {
        if (table_->rules().full_image) RETURN_NOT_OK(emit(*old, kUpdateBefore));
        RETURN_NOT_OK(emit(*merged, kUpdateAfter));
      }
      set_state(std::move(merged));
    }
    return Status::OK();
  }

  // Appends one bucket's changelog and applies its rows, setting `range` to where they went;
  // nothing when the batch changed none.
  Status Write(BucketChanges& c, std::optional<AppendedRange>* range) {
    if (c.changelog->rows() == 0) return Status::OK();
    const int64_t rows = c.changelog->rows();
    ASSIGN_OR_RAISE(auto records, c.changelog->Finish());
    ASSIGN_OR_RAISE(auto appended, table_->changelog().AppendToBucket(c.bucket, *records,
                                                                      table_->changelog_options()));
    // Under --flush fsync the rows are acknowledged once their changelog is durable. Under
    // --flush interval once it is written: the store's flush guard keeps its files from ever
    // being ahead of the durable changelog that recovery replays (docs/primary-keys.md).
    log::BucketLog& log = *table_->logs()[c.bucket];
    if (log.flush_policy() == log::FlushPolicy::kEveryAppend) {
      RETURN_NOT_OK(log.WaitDurable(appended.next_offset));
    }
    RETURN_NOT_OK(Apply(c, appended.next_offset));
    range->emplace(AppendedRange{c.bucket, appended.base_offset, rows});
    return Status::OK();
  }

  Status Apply(const BucketChanges& c, int64_t next_offset) {
    std::vector<kv::KeyWrite> writes;
    writes.reserve(c.key_order.size());
    for (const auto& key : c.key_order) {
      const auto& row = c.state.at(key);
      kv::KeyWrite w{key, std::nullopt};
      if (row) {
        w.value.emplace();
        table_->format().Encode(*row, &*w.value);
      }
      writes.push_back(std::move(w));
    }
    return table_->CommitOrHold(c.bucket, std::move(writes), next_offset);
  }

  std::shared_ptr<PrimaryKeyTable> table_;
  arrow::SchemaPtr client_schema_;
  PutOp op_;
  std::vector<int> table_index_;           // client column -> table column
  std::vector<int> key_in_client_;         // primary-key columns in the client schema, key order
  std::vector<int> bucket_key_in_client_;  // bucket-key columns in the client schema
  std::vector<bool> given_;                // table columns the client writes
  bool partial_ = false;
};

Result<std::unique_ptr<PutSession>> PrimaryKeyTable::StartPut(const arrow::SchemaPtr& client_schema,
                                                              PutOp op) {
  const auto& schema = *descriptor_.schema;
  std::vector<int> table_index;
  for (const auto& field : client_schema->fields()) {
    const int t = schema.GetFieldIndex(field.name);
    if (t < 0) {
      return Status::Invalid("schema mismatch for table " + Quote(descriptor_.name) +
                             ": unexpected field " + Quote(field.name));
    }
    if (schema.field(t).type != field.type) {
      return Status::Invalid("schema mismatch for table " + Quote(descriptor_.name) + ": field " +
                             Quote(field.name) + " has type " + field.type.ToString() +
                             " but the table has " + schema.field(t).type.ToString());
    }
    if (std::count(table_index.begin(), table_index.end(), t)) {
      return Status::Invalid("schema mismatch for table " + Quote(descriptor_.name) + ": field " +
                             Quote(field.name) + " appears twice");
    }
    table_index.push_back(t);
  }
  auto in_client = [&](const std::vector<std::string>& names) -> Result<std::vector<int>> {
    std::vector<int> out;
    for (const auto& name : names) {
      const int c = client_schema->GetFieldIndex(name);
      if (c < 0) {
        return Status::Invalid(std::string(op == PutOp::kDelete ? "a delete" : "a write") +
                               " to table " + Quote(descriptor_.name) +
                               " must carry the whole primary key, but primary-key column " +
                               Quote(name) + " is missing");
      }
      out.push_back(c);
    }
    return out;
  };
  ASSIGN_OR_RAISE(auto key_in_client, in_client(descriptor_.primary_key));
  ASSIGN_OR_RAISE(auto bucket_key_in_client, in_client(descriptor_.bucket_key));
  if (op == PutOp::kUpsert && rules_.engine == kv::MergeEngine::kVersioned &&
      client_schema->GetFieldIndex(schema.field(rules_.version_column).name) < 0) {
    return Status::Invalid("a partial update of versioned table " + Quote(descriptor_.name) +
                           " must carry the version column " +
                           Quote(schema.field(rules_.version_column).name));
  }
  return std::unique_ptr<PutSession>(
      new PrimaryKeyPutSession(shared_from_this(), client_schema, op, std::move(table_index),
                               std::move(key_in_client), std::move(bucket_key_in_client)));
}

class PrimaryKeySnapshotReader : public SnapshotReader {
 public:
  PrimaryKeySnapshotReader(std::shared_ptr<PrimaryKeyTable> table,
                           std::unique_ptr<kv::TableStore::View> view, std::vector<int32_t> buckets,
                           arrow::SchemaPtr schema, kv::RowBatchBuilder builder)
      : table_(std::move(table)),
        view_(std::move(view)),
        buckets_(std::move(buckets)),
        schema_(std::move(schema)),
        builder_(std::move(builder)) {}

  Status ReadOffsets() {
    for (int32_t b : buckets_) {
      ASSIGN_OR_RAISE(auto applied, view_->AppliedOffset(b));
      offsets_.push_back({b, applied.value_or(0)});
    }
    return Status::OK();
  }

  const arrow::SchemaPtr& schema() const override { return schema_; }
  const std::vector<SnapshotOffset>& offsets() const override { return offsets_; }

  Result<arrow::RecordBatchPtr> Next() override {
    while (next_bucket_ < buckets_.size()) {
      const std::string prefix = kv::BucketPrefix(buckets_[next_bucket_]);
      Status decode_error;
      bool full = false;
      RETURN_NOT_OK(view_->Scan(prefix, resume_, [&](std::string_view key, std::string_view value) {
        decode_error = builder_.AppendEncoded(value, table_->format());
        if (!decode_error.ok()) return false;
        if (builder_.rows() >= kSnapshotBatchRows || builder_.bytes() >= kSnapshotBatchBytes) {
          // Resume right after this key: the key with a zero byte appended.
          resume_.assign(key);
          resume_.push_back('\0');
          full = true;
          return false;
        }
        return true;
      }));
      RETURN_NOT_OK(decode_error.WithContext(table_->BucketName(buckets_[next_bucket_])));
      if (!full) {
        ++next_bucket_;
        resume_.clear();
      }
      if (builder_.rows() > 0 && (full || next_bucket_ == buckets_.size())) {
        return builder_.Finish();
      }
    }
    return arrow::RecordBatchPtr();
  }

 private:
  std::shared_ptr<PrimaryKeyTable> table_;
  std::unique_ptr<kv::TableStore::View> view_;
  std::vector<int32_t> buckets_;
  arrow::SchemaPtr schema_;
  kv::RowBatchBuilder builder_;
  std::vector<SnapshotOffset> offsets_;
  size_t next_bucket_ = 0;
  std::string resume_;
};

Result<std::unique_ptr<SnapshotReader>> PrimaryKeyTable::OpenSnapshot(
    const SnapshotRequest& request) {
  std::vector<int32_t> buckets;
  if (request.bucket) {
    if (*request.bucket < 0 || *request.bucket >= descriptor_.buckets) {
      return Status::OutOfRange("bucket " + std::to_string(*request.bucket) +
                                " does not exist: " + Quote(descriptor_.name) + " has " +
                                std::to_string(descriptor_.buckets) + " buckets");
    }
    buckets.push_back(*request.bucket);
  } else {
    for (int32_t b = 0; b < descriptor_.buckets; ++b) buckets.push_back(b);
  }
  ASSIGN_OR_RAISE(auto projection, Project(descriptor_, request.columns));
  ASSIGN_OR_RAISE(auto builder, kv::RowBatchBuilder::Make(projection.second, projection.first));
  RETURN_NOT_OK(FlushCommitted(buckets));
  auto reader = std::make_unique<PrimaryKeySnapshotReader>(shared_from_this(), store_->NewView(),
                                                           std::move(buckets), projection.second,
                                                           std::move(builder));
  RETURN_NOT_OK(reader->ReadOffsets());
  return std::unique_ptr<SnapshotReader>(std::move(reader));
}

Result<arrow::RecordBatchPtr> PrimaryKeyTable::Lookup(const LookupRequest& request) {
  const arrow::Schema& schema = *descriptor_.schema;
  const arrow::RecordBatch& keys = *request.keys;
  const std::vector<std::string>& wanted =
      request.prefix ? descriptor_.bucket_key : descriptor_.primary_key;
  // A prefix that is the whole primary key matches one key at most: a lookup.
  const bool scans_prefixes = request.prefix && HasKeyPrefixes(descriptor_);
  if (request.prefix && !scans_prefixes) {
    if (descriptor_.bucket_key != descriptor_.primary_key) {
      return Status::Invalid("a prefix lookup of table " + Quote(descriptor_.name) +
                             " needs a bucket key that is a prefix of the primary key");
    }
  }
  if (keys.num_columns() != static_cast<int>(wanted.size())) {
    std::string names;
    for (const auto& n : wanted) names += (names.empty() ? "" : ", ") + n;
    return Status::Invalid(std::string(request.prefix ? "a prefix" : "a") + " lookup of table " +
                           Quote(descriptor_.name) + " takes exactly the columns " + names);
  }
  std::vector<int> key_columns;  // in the keys batch, in key order
  for (const auto& name : wanted) {
    const int c = keys.schema()->GetFieldIndex(name);
    if (c < 0) {
      return Status::Invalid("lookup of table " + Quote(descriptor_.name) +
                             " is missing key column " + Quote(name));
    }
    const arrow::DataType& type = schema.field(schema.GetFieldIndex(name)).type;
    if (keys.column(c).type() != type) {
      return Status::Invalid("lookup key column " + Quote(name) + " has type " +
                             keys.column(c).type().ToString() + " but the table has " +
                             type.ToString());
    }
    if (keys.column(c).null_count() > 0) {
      return Status::Invalid("lookup key column " + Quote(name) + " has nulls");
    }
    key_columns.push_back(c);
  }
  std::vector<int> bucket_columns;
  for (const auto& name : descriptor_.bucket_key) {
    bucket_columns.push_back(keys.schema()->GetFieldIndex(name));
  }
  ASSIGN_OR_RAISE(auto projection, Project(descriptor_, request.columns));
  ASSIGN_OR_RAISE(auto builder, kv::RowBatchBuilder::Make(projection.second, projection.first));
  const std::vector<int32_t> buckets = BucketsOf(keys, bucket_columns);
  auto is_local = [&](int32_t b) { return !request.is_local || request.is_local(b); };
  // The rows other servers found, by the store key (full) or key prefix (prefix) they answer.
  ASSIGN_OR_RAISE(auto remote, LookupRemote(request, buckets, wanted));
  std::vector<int32_t> local;
  for (int32_t b : buckets) {
    if (is_local(b) && std::find(local.begin(), local.end(), b) == local.end()) local.push_back(b);
  }
  RETURN_NOT_OK(FlushCommitted(local));
  auto append_remote = [&](const std::string& key) -> Status {
    auto it = remote.find(key);
    if (it == remote.end()) return Status::OK();
    for (const auto& row : it->second) RETURN_NOT_OK(builder.Append(row));
    return Status::OK();
  };
  if (scans_prefixes) {
    auto view = store_->NewView();
    for (int64_t r = 0; r < keys.num_rows(); ++r) {
      const int32_t b = buckets[static_cast<size_t>(r)];
      const std::string prefix = KeyOf(b, keys, key_columns, r);
      if (!is_local(b)) {
        RETURN_NOT_OK(append_remote(prefix));
        continue;
      }
      Status error;
      RETURN_NOT_OK(view->Scan(prefix, {}, [&](std::string_view, std::string_view value) {
        error = builder.AppendEncoded(value, format_);
        return error.ok();
      }));
      RETURN_NOT_OK(error);
    }
    return builder.Finish();
  }
  std::vector<std::string> encoded(static_cast<size_t>(keys.num_rows()));
  std::vector<std::string> local_keys;
  for (int64_t r = 0; r < keys.num_rows(); ++r) {
    const int32_t b = buckets[static_cast<size_t>(r)];
    encoded[static_cast<size_t>(r)] = KeyOf(b, keys, key_columns, r);
    if (is_local(b)) local_keys.push_back(encoded[static_cast<size_t>(r)]);
  }
  std::vector<std::optional<std::string>> values(local_keys.size());
  // Many keys are read in pieces on several cores: RocksDB's reads run concurrently.
  constexpr size_t kKeysPerPiece = 256;
  const size_t pieces = (local_keys.size() + kKeysPerPiece - 1) / kKeysPerPiece;
  std::vector<Status> read(pieces);
  ParallelFor(pieces, [&](size_t p) {
    const size_t first = p * kKeysPerPiece;
    const auto piece = std::span<const std::string>(local_keys)
                           .subspan(first, std::min(kKeysPerPiece, local_keys.size() - first));
    read[p] = store_->MultiGetEach(piece, [&](size_t i, std::string_view value) {
      values[first + i].emplace(value);
      return Status::OK();
    });
  });
  for (const Status& st : read) RETURN_NOT_OK(st);
  size_t next_local = 0;
  for (int64_t r = 0; r < keys.num_rows(); ++r) {
    if (!is_local(buckets[static_cast<size_t>(r)])) {
      RETURN_NOT_OK(append_remote(encoded[static_cast<size_t>(r)]));
      continue;
    }
    const auto& value = values[next_local++];
    if (value) RETURN_NOT_OK(builder.AppendEncoded(*value, format_));
  }
  return builder.Finish();
}

Result<std::unordered_map<std::string, std::vector<kv::Row>>> PrimaryKeyTable::LookupRemote(
    const LookupRequest& request, const std::vector<int32_t>& buckets,
    const std::vector<std::string>& key_names) {
  std::unordered_map<std::string, std::vector<kv::Row>> found_rows;
  if (!request.is_local) return found_rows;
  std::map<int32_t, std::vector<int32_t>> rows_by_bucket;
  for (size_t r = 0; r < buckets.size(); ++r) {
    if (!request.is_local(buckets[r])) {
      rows_by_bucket[buckets[r]].push_back(static_cast<int32_t>(r));
    }
  }
  const arrow::Schema& schema = *descriptor_.schema;
  for (const auto& [bucket, rows] : rows_by_bucket) {
    ASSIGN_OR_RAISE(auto keys, arrow::TakeRows(*request.keys, rows));
    ASSIGN_OR_RAISE(auto found, request.remote(bucket, keys));
    // Every column of the table, by name, in the table's order.
    std::vector<int> columns;
    for (const auto& field : schema.fields()) {
      const int c = found->schema()->GetFieldIndex(field.name);
      if (c < 0 || found->column(c).type() != field.type) {
        return Status::Invalid("the leader of " + BucketName(bucket) +
                               " answered a lookup without column " + Quote(field.name) +
                               " of the table's schema (is its schema newer?)");
      }
      columns.push_back(c);
    }
    std::vector<int> key_columns;
    for (const auto& name : key_names) {
      key_columns.push_back(columns[static_cast<size_t>(schema.GetFieldIndex(name))]);
    }
    for (int64_t r = 0; r < found->num_rows(); ++r) {
      kv::Row row(columns.size());
      for (size_t f = 0; f < columns.size(); ++f) {
        row[f] = kv::CellAt(found->column(columns[f]), r);
      }
      found_rows[KeyOf(bucket, *found, key_columns, r)].push_back(std::move(row));
    }
  }
  return found_rows;
}

Status PrimaryKeyTable::CommitOrHold(int32_t bucket, std::vector<kv::KeyWrite> writes,
                                     int64_t next_offset) {
  PendingRows& pending = pending_[static_cast<size_t>(bucket)];
  if (pending.batches.empty() && next_offset <= logs()[bucket]->high_watermark()) {
    return store_->Write(bucket, writes, next_offset);
  }
  for (const auto& w : writes) pending.latest[w.key] = {next_offset, w.value};
  pending.batches.push_back({next_offset, std::move(writes)});
  return FlushCommitted(bucket);
}

Status PrimaryKeyTable::FlushCommitted(int32_t bucket) {
  PendingRows& pending = pending_[static_cast<size_t>(bucket)];
  const int64_t committed = logs()[bucket]->high_watermark();
  size_t n = 0;
  std::vector<kv::KeyWrite> writes;
  for (; n < pending.batches.size() && pending.batches[n].next_offset <= committed; ++n) {
    const auto& batch = pending.batches[n].writes;
    writes.insert(writes.end(), batch.begin(), batch.end());
  }
  if (n == 0) return Status::OK();
  RETURN_NOT_OK(store_->Write(bucket, writes, pending.batches[n - 1].next_offset));
  for (; n > 0; --n) {
    const PendingRows::Batch& batch = pending.batches.front();
    for (const auto& w : batch.writes) {
      auto it = pending.latest.find(w.key);
      if (it != pending.latest.end() && it->second.first == batch.next_offset) {
        pending.latest.erase(it);
      }
    }
    pending.batches.pop_front();
  }
  return Status::OK();
}

Status PrimaryKeyTable::FlushCommitted(const std::vector<int32_t>& buckets) {
  if (!replicated_) return Status::OK();
  for (int32_t b : buckets) {
    std::unique_lock lock(bucket_mutex(b));
    const int64_t inherited = inherited_end_[static_cast<size_t>(b)];
    log::BucketLog& log = *logs()[b];
    if (log.visible_offset() < inherited) {
      lock.unlock();
      auto reached =
          log.WaitForData(inherited - 1, std::chrono::steady_clock::now() + kInheritedCommitWait);
      if (!reached.ok() || *reached < inherited) {
        return Status::Unavailable(
            BucketName(b) + " has a new leader whose followers have not confirmed the changes " +
            "it inherited yet (its high watermark is below " + std::to_string(inherited) +
            "); read again in a moment");
      }
      lock.lock();
    }
    RETURN_NOT_OK(FlushCommitted(b).WithContext(BucketName(b)));
  }
  return Status::OK();
}

Result<int64_t> PrimaryKeyTable::Replay(int32_t bucket, int64_t to) {
  const arrow::Schema& schema = *descriptor_.schema;
  const int change_column = schema.num_fields();
  log::BucketLog& log = *logs()[bucket];
  ASSIGN_OR_RAISE(auto applied, store_->AppliedOffset(bucket));
  const int64_t from = applied.value_or(0);
  if (from >= to) {
    if (from > to && !replicated_) {
      return Status::Corruption(BucketName(bucket) + ": its rows are at changelog offset " +
                                std::to_string(from) + " but the changelog ends at " +
                                std::to_string(to));
    }
    return 0;
  }
  if (from < log.earliest_offset()) {
    return Status::Corruption(
        BucketName(bucket) + ": its rows are at changelog offset " + std::to_string(from) +
        " but the changelog starts at " + std::to_string(log.earliest_offset()) +
        ", so they cannot be rebuilt; restore the data dir's kv-checkpoints or drop the table");
  }
  ReadRequest request;
  request.table = descriptor_.name;
  request.bucket = bucket;
  request.from = {StartPosition::Kind::kOffset, from, 0};
  request.to = to;
  request.limit = log::ReadLimit::kWritten;
  ASSIGN_OR_RAISE(auto cursor, changelog_->OpenRead(request));
  int64_t replayed = 0;
  while (true) {
    ASSIGN_OR_RAISE(auto next, cursor->NextDecoded(std::chrono::steady_clock::now()));
    if (!next) break;
    const arrow::RecordBatch& batch = *next->batch;
    const arrow::Array& change = batch.column(change_column);
    std::vector<kv::KeyWrite> writes;
    for (int64_t r = 0; r < batch.num_rows(); ++r) {
      const std::string_view type = change.GetView(r);
      if (type == kUpdateBefore) continue;
      kv::KeyWrite w{KeyOf(bucket, batch, key_columns_, r), std::nullopt};
      if (type != kDelete) {
        kv::Row row(static_cast<size_t>(schema.num_fields()));
        for (int f = 0; f < schema.num_fields(); ++f) {
          row[static_cast<size_t>(f)] = kv::CellAt(batch.column(f), r);
        }
        w.value.emplace();
        format_.Encode(row, &*w.value);
      }
      writes.push_back(std::move(w));
    }
    RETURN_NOT_OK(CommitOrHold(bucket, std::move(writes), next->next_offset));
    replayed += batch.num_rows();
  }
  return replayed;
}

Status PrimaryKeyTable::Recover() {
  if (replicated_) return Status::OK();
  for (int32_t b = 0; b < descriptor_.buckets; ++b) {
    std::lock_guard lock(bucket_mutex(b));
    ASSIGN_OR_RAISE(auto applied, store_->AppliedOffset(b));
    ASSIGN_OR_RAISE(int64_t replayed, Replay(b, logs()[b]->visible_offset()));
    if (replayed > 0) {
      spdlog::info("table '{}' bucket {}: replayed {} changelog records from offset {}",
                   descriptor_.name, b, replayed, applied.value_or(0));
    }
  }
  return Status::OK();
}

Status PrimaryKeyTable::PrepareToLead(int32_t bucket) {
  std::lock_guard lock(bucket_mutex(bucket));
  pending_[static_cast<size_t>(bucket)] = {};
  // The committed part goes to the store, the rest of this replica's changelog (which is now
  // the bucket's) waits in pending for the high watermark.
  const log::BucketLog& log = *logs()[bucket];
  inherited_end_[static_cast<size_t>(bucket)] = log.next_offset();
  ASSIGN_OR_RAISE(int64_t replayed, Replay(bucket, log.next_offset()));
  if (replayed > 0) {
    spdlog::info("{}: leading; {} changelog records replayed, {} of them pending commit",
                 BucketName(bucket), replayed,
                 pending_[static_cast<size_t>(bucket)].batches.size());
  }
  return Status::OK();
}

Status PrimaryKeyTable::ApplyReplicated(int32_t bucket) {
  std::lock_guard lock(bucket_mutex(bucket));
  // A follower's rows are the committed changelog only; rows pending under an earlier
  // leadership may have been truncated away.
  pending_[static_cast<size_t>(bucket)] = {};
  const log::BucketLog& log = *logs()[bucket];
  return Replay(bucket, std::min(log.high_watermark(), log.next_offset())).status();
}

Result<std::optional<KvSnapshotRef>> PrimaryKeyTable::UploadKvSnapshot(int32_t bucket,
                                                                       int64_t after_offset) {
  if (!snapshots_.fs) return Status::Invalid("no KV snapshot store is configured");
  // A leader's rows wait in pending until a put or a read moves them: an idle one's too.
  RETURN_NOT_OK(FlushCommitted(std::vector<int32_t>{bucket}));
  ASSIGN_OR_RAISE(auto applied, store_->AppliedOffset(bucket));
  if (applied.value_or(0) <= after_offset) return std::optional<KvSnapshotRef>();
  FileSystem& local = *PosixFileSystem::Default();
  const std::string dir = JoinPath(scratch_dir_, "upload-" + std::to_string(bucket));
  RETURN_NOT_OK(local.RemoveAll(dir));
  RETURN_NOT_OK(local.CreateDirs(dir));
  // The dump reads one consistent moment of the store; puts go on meanwhile.
  auto dump = store_->DumpBucket(bucket, dir, kKvSnapshotFileBytes);
  // Under --flush interval the rows may be ahead of the durable changelog: never upload them so.
  if (dump.ok()) {
    if (Status durable = logs()[bucket]->WaitDurable(dump->applied_offset); !durable.ok()) {
      dump = durable;
    }
  }
  Result<KvSnapshotRef> uploaded =
      dump.ok()
          ? internal::UploadKvSnapshot(snapshots_, descriptor_.table_id, bucket, *dump,
                                       dump->applied_offset > 0
                                           ? logs()[bucket]->LeaderEpochAt(dump->applied_offset - 1)
                                           : -1)
          : Result<KvSnapshotRef>(dump.status());
  (void)local.RemoveAll(dir);
  if (!uploaded.ok()) return uploaded.status().WithContext(BucketName(bucket));
  spdlog::info("{}: KV snapshot of {} rows at offset {} uploaded to {}", BucketName(bucket),
               dump->rows, uploaded->offset, uploaded->path);
  return std::optional<KvSnapshotRef>(std::move(uploaded).ValueOrDie());
}

Result<bool> PrimaryKeyTable::RestoreKvSnapshot(int32_t bucket, const KvSnapshotRef& snapshot) {
  if (!snapshots_.fs) return false;
  std::lock_guard lock(bucket_mutex(bucket));
  log::BucketLog& log = *logs()[bucket];
  ASSIGN_OR_RAISE(auto applied, store_->AppliedOffset(bucket));
  // Far behind: the changelog up to the snapshot is not here. Or the rows are behind the start
  // of the changelog here (its leader's retention went past them) and the snapshot is within it.
  const bool far_behind = log.next_offset() < snapshot.offset;
  const bool stranded = applied.value_or(0) < log.earliest_offset() &&
                        snapshot.offset >= log.earliest_offset() &&
                        snapshot.offset > applied.value_or(0);
  if (!far_behind && !stranded) return false;
  const auto started = std::chrono::steady_clock::now();
  const std::string dir = JoinPath(scratch_dir_, "restore-" + std::to_string(bucket));
  auto files = DownloadKvSnapshot(snapshots_, snapshot, dir);
  const auto downloaded = std::chrono::steady_clock::now();
  Status restored =
      files.ok() ? store_->RestoreBucket(bucket, *files, snapshot.offset) : files.status();
  (void)PosixFileSystem::Default()->RemoveAll(dir);
  RETURN_NOT_OK(
      restored.WithContext(BucketName(bucket) + ": restoring the KV snapshot at " + snapshot.path));
  pending_[static_cast<size_t>(bucket)] = {};
  // The changelog below the snapshot is not needed here any more: fetching goes on from it.
  if (far_behind) {
    RETURN_NOT_OK(log.ResetTo(snapshot.offset));
    // The epoch the changelog before the snapshot ended in: a follower comparing epochs with
    // this replica once it leads finds where they agree (KIP-101).
    if (snapshot.leader_epoch >= 0) {
      RETURN_NOT_OK(log.AssignLeaderEpoch(snapshot.leader_epoch, snapshot.offset));
    }
  }
  auto ms = [](auto duration) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(duration).count();
  };
  spdlog::info("{}: restored from the KV snapshot at offset {} ({}) in {} ms ({} ms downloading)",
               BucketName(bucket), snapshot.offset, snapshot.path,
               ms(std::chrono::steady_clock::now() - started), ms(downloaded - started));
  return true;
}

Status PrimaryKeyTable::DropBucketData(int32_t bucket) {
  std::lock_guard lock(bucket_mutex(bucket));
  pending_[static_cast<size_t>(bucket)] = {};
  inherited_end_[static_cast<size_t>(bucket)] = 0;
  RETURN_NOT_OK(store_->RestoreBucket(bucket, {}, 0).WithContext(BucketName(bucket)));
  return logs()[bucket]->ResetTo(0);
}

Result<std::vector<int32_t>> PrimaryKeyTable::BucketsOf(const arrow::RecordBatch& batch) const {
  std::vector<int> columns;
  for (const auto& name : descriptor_.bucket_key) {
    const int c = batch.schema()->GetFieldIndex(name);
    if (c < 0) {
      return Status::Invalid("a batch for table " + Quote(descriptor_.name) +
                             " must carry the bucket-key column " + Quote(name));
    }
    columns.push_back(c);
  }
  return BucketsOf(batch, columns);
}

}  // namespace

bool HasKeyPrefixes(const catalog::TableDescriptor& descriptor) {
  return descriptor.bucket_key.size() < descriptor.primary_key.size() &&
         std::equal(descriptor.bucket_key.begin(), descriptor.bucket_key.end(),
                    descriptor.primary_key.begin());
}

kv::KeyAccess KeyAccessOf(const catalog::TableDescriptor& descriptor) {
  return HasKeyPrefixes(descriptor) ? kv::KeyAccess::kPrefix : kv::KeyAccess::kWholeKey;
}

Status CheckPrimaryKeyTable(const catalog::TableDescriptor& descriptor) {
  const arrow::Schema& schema = *descriptor.schema;
  if (schema.GetFieldIndex(kChangeTypeColumn) >= 0) {
    return Status::Invalid("column name " + Quote(kChangeTypeColumn) +
                           " is reserved in primary-key tables (their changelog adds it)");
  }
  for (const auto& name : descriptor.primary_key) {
    RETURN_NOT_OK(kv::CheckKeyColumnType(schema.field(schema.GetFieldIndex(name))));
  }
  RETURN_NOT_OK(ChangelogWriteOptions(descriptor).status());
  return kv::ParseMergeRules(schema, IndicesOf(schema, descriptor.primary_key),
                             descriptor.properties)
      .status();
}

Result<std::shared_ptr<Table>> OpenPrimaryKeyTable(const catalog::TableDescriptor& descriptor,
                                                   LogTableOptions changelog, kv::TableStore* store,
                                                   bool replicated, KvSnapshotStore snapshots) {
  RETURN_NOT_OK(CheckPrimaryKeyTable(descriptor));
  ASSIGN_OR_RAISE(
      auto rules,
      kv::ParseMergeRules(*descriptor.schema, IndicesOf(*descriptor.schema, descriptor.primary_key),
                          descriptor.properties));
  // The changelog's versions: each of the table's plus _change_type, whose field id no column
  // ever gets.
  constexpr int32_t kChangeTypeFieldId = std::numeric_limits<int32_t>::max();
  catalog::TableDescriptor log_descriptor = descriptor;
  log_descriptor.schema = ChangelogSchema(*descriptor.schema);
  log_descriptor.field_ids.push_back(kChangeTypeFieldId);
  for (auto& version : log_descriptor.previous_schemas) {
    version.schema = ChangelogSchema(*version.schema);
    version.field_ids.push_back(kChangeTypeFieldId);
  }
  const std::string scratch_dir = JoinPath(changelog.dir, "kv-snapshots");
  ASSIGN_OR_RAISE(auto log, OpenLogTable(log_descriptor, std::move(changelog)));
  ASSIGN_OR_RAISE(auto changelog_options, ChangelogWriteOptions(descriptor));
  std::vector<catalog::SchemaVersion> versions = descriptor.previous_schemas;
  versions.push_back(descriptor.CurrentSchema());
  ASSIGN_OR_RAISE(auto format, kv::RowFormat::Make(std::move(versions)));
  auto table = std::make_shared<PrimaryKeyTable>(
      descriptor, std::move(log), store, std::move(rules), std::move(format), changelog_options,
      replicated, std::move(snapshots), scratch_dir);
  RETURN_NOT_OK(table->Recover());
  table->GuardStoreFlushes();
  return std::shared_ptr<Table>(std::move(table));
}

}  // namespace oxbow::engine::internal
