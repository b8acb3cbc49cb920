#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <set>
#include <unordered_map>

#include "oxbow/arrow/compute.h"
#include "oxbow/common/parse.h"
#include "oxbow/iceberg/table.h"
#include "oxbow/kv/row.h"
#include "oxbow/lake/lake.h"
#include "oxbow/lake/lake_table_internal.h"
#include "oxbow/lake/pk_lake_internal.h"
#include "oxbow/parquet/reader.h"
#include "oxbow/parquet/verify.h"

namespace oxbow::lake {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

int64_t Millis(std::chrono::nanoseconds d) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

int64_t WallMs() { return Millis(std::chrono::system_clock::now().time_since_epoch()); }

// Lets each bucket's log drop what lies below `floor` (what the lake holds).
Status SetRetentionFloors(engine::Engine* engine, const std::string& table,
                          const std::vector<int64_t>& floor) {
  for (int32_t b = 0; b < static_cast<int32_t>(floor.size()); ++b) {
    RETURN_NOT_OK(engine->SetRetentionFloor(table, b, floor[b]));
  }
  return Status::OK();
}

std::string RandomName() {
  static thread_local std::mt19937_64 rng(std::random_device{}());
  char buf[33];
  std::snprintf(buf, sizeof(buf), "%016llx%016llx", static_cast<unsigned long long>(rng()),
                static_cast<unsigned long long>(rng()));
  return buf;
}

// lake.freshness: a positive duration ("1s", "500ms", "2m" or a plain number of milliseconds).
Result<int64_t> ParseFreshnessMs(std::string_view text) {
  auto ms = ParseDurationMs(text);
  if (!ms.ok() || *ms <= 0) {
    return Status::Invalid(std::string(kFreshnessProperty) +
                           " must be a positive duration such as \"1s\" or \"500ms\", got " +
                           Quote(text));
  }
  return ms;
}

// What tiering takes from a table's schema and properties. Building it runs every check of
// CheckTableIsTierable, so a table refused up front is exactly one tiering could not hold.
struct LakeForm {
  internal::LakeSchema schema;
  iceberg::PartitionSpec spec;
  std::optional<int64_t> freshness_ms;        // lake.freshness, when set
  double delete_ratio = kDefaultDeleteRatio;  // lake.compaction.delete-ratio
  std::optional<parquet::Codec> fresh_codec;  // lake.fresh-codec, when set
  // lake.changelog "true": the changelog lake table's schema (the table's columns, _change_type,
  // the system columns) and partition spec.
  std::optional<internal::LakeSchema> changelog_schema;
  iceberg::PartitionSpec changelog_spec;
};

Result<double> ParseDeleteRatio(const std::string& text) {
  double value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || !(value > 0.0 && value <= 1.0)) {
    return Status::Invalid(std::string(kDeleteRatioProperty) + " must be a number in (0, 1], got " +
                           Quote(text));
  }
  return value;
}

Result<LakeForm> MakeLakeForm(const catalog::TableDescriptor& table) {
  auto property = [&](const char* key) -> std::string {
    auto it = table.properties.find(key);
    return it == table.properties.end() ? "" : it->second;
  };
  LakeForm form;
  if (!property(kFreshnessProperty).empty()) {
    ASSIGN_OR_RAISE(form.freshness_ms, ParseFreshnessMs(property(kFreshnessProperty)));
  }
  if (!property(kDeleteRatioProperty).empty()) {
    ASSIGN_OR_RAISE(form.delete_ratio, ParseDeleteRatio(property(kDeleteRatioProperty)));
  }
  if (!property(kFreshCodecProperty).empty()) {
    auto codec = parquet::ParseCodec(property(kFreshCodecProperty));
    if (!codec.ok()) return codec.status().WithContext(kFreshCodecProperty);
    form.fresh_codec = *codec;
  }
  if (!table.primary_key.empty()) {
    // A primary-key put carries some columns only, so no batch check can refuse a value the
    // lake cannot hold (see MakeBatchCheck): the column type is refused instead.
    for (const auto& f : table.schema->fields()) {
      if (f.type.id() == arrow::TypeId::kTimestamp &&
          arrow::UnitsPerSecond(f.type.unit()) < arrow::UnitsPerSecond(arrow::TimeUnit::kMicro)) {
        return Status::Invalid("column " + Quote(f.name) + ": a primary-key table in the lake " +
                               "takes timestamps of microseconds or nanoseconds only, not " +
                               f.type.ToString());
      }
    }
  }
  ASSIGN_OR_RAISE(form.schema, internal::MakeLakeSchema(table.schema, table.primary_key));
  ASSIGN_OR_RAISE(form.spec, internal::ParsePartitionSpec(property(kPartitionProperty),
                                                          form.schema.iceberg_schema));
  if (property(kChangelogProperty) == "true") {
    if (table.primary_key.empty()) {
      return Status::Invalid(std::string(kChangelogProperty) +
                             " is for primary-key tables (a log table's lake holds every row)");
    }
    // The changelog's own columns: the table's, then _change_type (the engine refuses a column
    // of that name in a primary-key table). No identifier fields: a key repeats.
    std::vector<arrow::Field> fields = table.schema->fields();
    fields.push_back(
        arrow::Field{internal::kChangeTypeColumn, arrow::DataType::String(), false, {}});
    ASSIGN_OR_RAISE(form.changelog_schema,
                    internal::MakeLakeSchema(std::make_shared<const arrow::Schema>(fields)));
    ASSIGN_OR_RAISE(form.changelog_spec,
                    internal::ParsePartitionSpec(property(kPartitionProperty),
                                                 form.changelog_schema->iceberg_schema));
  }
  return form;
}

std::string OffsetsJson(const std::vector<int64_t>& offsets) { return json(offsets).dump(); }

}  // namespace

// The lake state of one table. `work` serializes rounds, maintenance commits and DropTable on the
// table (compaction rewrites files without it); `status_mu` guards what Describe reads.
class TableTiering {
 public:
  catalog::TableDescriptor descriptor;
  bool enabled = true;
  Status init_error;
  internal::LakeSchema schema;
  iceberg::PartitionSpec spec;
  std::string location;
  std::unique_ptr<iceberg::IcebergTable> table;
  std::vector<int64_t> tiered;
  // Per bucket, where the lake's copy of the log starts being whole: it holds every offset from
  // here to `tiered`. 0 unless offsets left the log before reaching the lake (NoteHoles).
  std::vector<int64_t> start;
  int64_t freshness_ms = 1000;
  double delete_ratio = kDefaultDeleteRatio;
  parquet::Codec fresh_codec = parquet::Codec::kZstd;  // of the files AppendRound writes
  // The fresh files (IsFreshFile) live at the previous scheduled compaction pass.
  std::set<std::string> fresh_seen;
  // The last compaction step left a partition with compaction_min_files small files or more:
  // the maintenance thread takes the next step at once instead of an interval later.
  std::atomic<bool> compaction_backlog{false};
  // A primary-key table's key-location index, equal to the committed snapshot; `index_stale`
  // after a commit whose outcome is unknown (the next round rebuilds it from the lake).
  std::optional<internal::KeyIndex> index;
  bool index_stale = false;
  // This is the changelog lake table of another (its schema has _change_type).
  bool changelog_table = false;
  // lake.changelog "true": the append-only lake table of the raw changelog (<name>$changelog),
  // tiered by this table's rounds on its own offsets. Its `work` is taken after this table's.
  std::unique_ptr<TableTiering> changelog;
  // After a commit whose outcome is unknown, the table and its offsets are read again.
  bool offsets_stale = false;
  uint64_t index_generation = 0;   // bumped by every rebuild (file ids change)
  Clock::time_point next_round{};  // the scheduler's, under TieringService::mu_
  bool queued = false;             // waiting for or running a round; under TieringService::mu_
  Clock::time_point next_maintenance{};  // the maintenance thread's
  bool dropped = false;
  iceberg::TableIdentifier lake_id;
  // A round or maintenance failed since the last sweep: its commit may have left files behind
  // (RemoveFailedCommitFiles).
  bool orphans_possible = false;
  // The last round's and the last maintenance's errors, published until they succeed again.
  std::string round_error;
  std::string maintenance_error;
  std::string Error() const {
    if (round_error.empty() || maintenance_error.empty()) return round_error + maintenance_error;
    return round_error + "; " + maintenance_error;
  }
  std::mutex work;
  std::mutex maintaining;  // one maintenance at a time (the thread's or RunOnce's)

  std::mutex status_mu;
  LakeTableStatus published;
  int64_t caught_up_ms = 0;  // wall time at which the lake last held everything durable

  std::map<std::string, std::string> Summary() const {
    std::map<std::string, std::string> summary = {
        {internal::kTieredOffsetsKey, OffsetsJson(tiered)}};
    if (std::any_of(start.begin(), start.end(), [](int64_t o) { return o > 0; })) {
      summary[internal::kStartOffsetsKey] = OffsetsJson(start);
    }
    return summary;
  }
  // Loads `tiered` and `start` from the current snapshot's summary.
  Status LoadOffsets() {
    ASSIGN_OR_RAISE(tiered, internal::SummaryOffsets(*table, tiered.size()));
    ASSIGN_OR_RAISE(start,
                    internal::SummaryOffsets(*table, tiered.size(), internal::kStartOffsetsKey));
    return Status::OK();
  }
  // The offsets below which both lake tables hold the log: the retention floors.
  std::vector<int64_t> FloorOffsets() const {
    std::vector<int64_t> floor = tiered;
    if (changelog) {
      for (size_t b = 0; b < floor.size() && b < changelog->tiered.size(); ++b) {
        floor[b] = std::min(floor[b], changelog->tiered[b]);
      }
    }
    return floor;
  }
  // Called with `work` held (or before the state is shared).
  void Publish(const std::string& error) {
    std::vector<int64_t> changelog_tiered;
    std::vector<int64_t> changelog_start;
    std::string changelog_location;
    if (changelog) {
      std::lock_guard<std::mutex> changelog_work(changelog->work);
      changelog_tiered = changelog->tiered;
      changelog_start = changelog->start;
      const iceberg::IcebergTable* t = changelog->table.get();
      if (t && t->CurrentSnapshot()) changelog_location = t->metadata_file();
    }
    std::lock_guard<std::mutex> lock(status_mu);
    published.enabled = enabled;
    published.tiered_offsets = tiered;
    published.start_offsets = start;
    published.error = error;
    if (table) {
      published.metadata_location = table->CurrentSnapshot() ? table->metadata_file() : "";
      published.snapshots = static_cast<int64_t>(table->metadata().snapshots.size());
      published.last_tiered_ms = 0;
      for (const auto& snapshot : table->metadata().snapshots) {
        if (snapshot.operation() == "append") {
          published.last_tiered_ms = std::max(published.last_tiered_ms, snapshot.timestamp_ms);
        }
      }
      published.data_files = 0;
      if (const auto* snap = table->CurrentSnapshot()) {
        auto it = snap->summary.find("total-data-files");
        if (it != snap->summary.end()) {
          // Written by us, but read back from disk: a bad value is shown as 0, never thrown.
          auto files = ParseInt64(it->second);
          if (files.ok()) published.data_files = *files;
        }
      }
    }
    published.changelog = changelog != nullptr;
    published.changelog_tiered_offsets = std::move(changelog_tiered);
    published.changelog_start_offsets = std::move(changelog_start);
    published.changelog_metadata_location = std::move(changelog_location);
  }
};

namespace {

// Logs a hold of a table's lock long enough to delay its rounds (ack → visible): declared right
// after the lock, so it ends first.
class HoldTimer {
 public:
  HoldTimer(const TableTiering& s, const char* what)
      : table_(s.descriptor.name), what_(what), since_(Clock::now()) {}
  ~HoldTimer() {
    const int64_t ms = Millis(Clock::now() - since_);
    if (ms >= kSlowHoldMs)
      spdlog::info("lake: '{}' held its table {} ms for {}", table_, ms, what_);
  }
  HoldTimer(const HoldTimer&) = delete;
  HoldTimer& operator=(const HoldTimer&) = delete;

 private:
  static constexpr int64_t kSlowHoldMs = 100;
  const std::string& table_;
  const char* what_;
  Clock::time_point since_;
};

// Removes the files of the table's directory that no retained snapshot references: data and
// delete files under data/, and under metadata/ the manifests, manifest lists and metadata files
// of commits that never became current (a crash between writing and publishing them), and the
// catalog's temporary files. Kept under metadata/: the current metadata file, those of
// metadata-log, version-hint.text and what the snapshots reference. Run when a table's tiering
// starts (the tiering service is its only writer, and no commit of it is under way).
Status RemoveOrphanFiles(FileSystem* fs, const iceberg::IcebergTable& table) {
  std::set<std::string> referenced = {iceberg::LocalPath(table.metadata_file())};
  for (const auto& entry : table.metadata().metadata_log) {
    referenced.insert(iceberg::LocalPath(entry.metadata_file));
  }
  for (const auto& snapshot : table.metadata().snapshots) {
    referenced.insert(iceberg::LocalPath(snapshot.manifest_list));
    ASSIGN_OR_RAISE(auto manifests, iceberg::ReadManifestList(fs, snapshot.manifest_list));
    for (const auto& m : manifests) {
      referenced.insert(iceberg::LocalPath(m.manifest_path));
      ASSIGN_OR_RAISE(auto entries, table.ReadEntries(m));
      for (const auto& e : entries) referenced.insert(iceberg::LocalPath(e.data_file.file_path));
    }
  }
  const std::string root = iceberg::LocalPath(table.location());
  for (const char* dir : {"/data", "/metadata"}) {
    auto files = fs->ListFilesRecursively(root + dir);
    if (files.status().IsNotFound()) continue;  // nothing written yet
    ASSIGN_OR_RAISE(auto paths, std::move(files));
    for (const auto& path : paths) {
      if (referenced.count(path) || path == root + "/metadata/version-hint.text") continue;
      spdlog::info("lake: removing orphan file {}", path);
      RETURN_NOT_OK(fs->Remove(path));
    }
  }
  return Status::OK();
}

// After a failed round or maintenance: removes the files its commit left behind (data files,
// manifests, metadata not made current), provided the catalog's current metadata is the one `s`
// holds; after a commit whose outcome is unknown the next round reloads first. Under s.work.
Status RemoveFailedCommitFiles(iceberg::Catalog& catalog, FileSystem* fs, TableTiering& s) {
  if (!s.orphans_possible || s.dropped || !s.table) return Status::OK();
  ASSIGN_OR_RAISE(auto current, catalog.CurrentMetadata(s.lake_id));
  if (current.version != s.table->version()) return Status::OK();
  RETURN_NOT_OK(RemoveOrphanFiles(fs, *s.table));
  s.orphans_possible = false;
  return Status::OK();
}

// A round's data file in a codec other than the final one ends in this, so compaction finds it
// without reading its footer (docs/lake.md, "Fresh files").
constexpr std::string_view kFreshFileSuffix = ".fresh.parquet";

bool IsFreshFile(const std::string& path) { return path.ends_with(kFreshFileSuffix); }

// Opens a new data file under <location>/data/<partition path>/ (its path goes to `written`),
// named as a fresh file when `fresh`.
Result<std::unique_ptr<parquet::FileWriter>> OpenDataFile(FileSystem* fs, const TableTiering& state,
                                                          const std::string& partition_path,
                                                          const parquet::WriterOptions& options,
                                                          std::vector<std::string>* written,
                                                          bool fresh = false) {
  std::string dir = state.location + "/data";
  if (!partition_path.empty()) dir += "/" + partition_path;
  RETURN_NOT_OK(fs->CreateDirs(dir));
  const std::string path =
      dir + "/" + RandomName() + (fresh ? std::string(kFreshFileSuffix) : ".parquet");
  written->push_back(path);
  return parquet::FileWriter::Open(state.schema.arrow_schema, *fs, path, options);
}

// Closes (fsyncs) the data file at `path` that OpenDataFile opened and describes it: a file of
// partition spec `spec_id` and tuple `partition`.
Result<iceberg::DataFile> FinishDataFile(const TableTiering& state, parquet::FileWriter* writer,
                                         const std::string& path, int32_t spec_id,
                                         iceberg::PartitionValues partition) {
  ASSIGN_OR_RAISE(auto metrics, writer->Close());
  ASSIGN_OR_RAISE(auto file,
                  internal::MakeDataFile(state.schema, path, std::move(partition), metrics));
  file.spec_id = spec_id;
  return file;
}

// Writes `batches` (one partition of the current spec) as one data file (a fresh one when
// `fresh`).
Result<iceberg::DataFile> WriteDataFile(FileSystem* fs, const TableTiering& state,
                                        const std::string& partition_path,
                                        iceberg::PartitionValues partition,
                                        const std::vector<arrow::RecordBatchPtr>& batches,
                                        const parquet::WriterOptions& options,
                                        std::vector<std::string>* written, bool fresh = false) {
  ASSIGN_OR_RAISE(auto writer, OpenDataFile(fs, state, partition_path, options, written, fresh));
  for (const auto& b : batches) RETURN_NOT_OK(writer->Write(*b));
  return FinishDataFile(state, writer.get(), written->back(), state.spec.spec_id(),
                        std::move(partition));
}

// The directory of `path` under <location>/data/: "" when unpartitioned.
std::string PartitionPathOf(const TableTiering& state, const std::string& path) {
  const std::string dir = path.substr(0, path.rfind('/'));
  const std::string data = state.location + "/data";
  return dir.size() > data.size() + 1 ? dir.substr(data.size() + 1) : "";
}

// Every row group of a lake data file in the current lake schema (matched by field id).
Result<std::vector<arrow::RecordBatchPtr>> ReadLakeFile(FileSystem* fs, const TableTiering& state,
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

// The keys of a lake data file's rows, in position order (only the key columns are read, found
// by field id: a file written before columns were added or dropped has them elsewhere).
Result<std::vector<std::string>> ReadKeys(FileSystem* fs, const TableTiering& state,
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

// Rebuilds a primary-key table's key index from its committed snapshot: the key columns of
// every live data file, less the rows its live position delete files remove.
Result<internal::KeyIndex> LoadKeyIndex(FileSystem* fs, const TableTiering& state) {
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

// After a commit whose outcome is unknown: the committed snapshot, its offsets and its index.
Status ReloadPrimaryKeyLake(FileSystem* fs, TableTiering& s) {
  RETURN_NOT_OK(s.table->Refresh());
  RETURN_NOT_OK(s.LoadOffsets());
  ASSIGN_OR_RAISE(s.index, LoadKeyIndex(fs, s));
  s.index_stale = false;
  ++s.index_generation;
  return Status::OK();
}

// After a commit of a table without a key index whose outcome is unknown: the committed snapshot
// and its offsets.
Status ReloadOffsets(TableTiering& s) {
  RETURN_NOT_OK(s.table->Refresh());
  RETURN_NOT_OK(s.LoadOffsets());
  s.offsets_stale = false;
  return Status::OK();
}

}  // namespace

Status CheckTableIsTierable(const catalog::TableDescriptor& table) {
  for (const auto& [key, value] : table.properties) {
    if (key.rfind("lake.", 0) != 0) continue;
    if (key != kEnabledProperty && key != kFreshnessProperty && key != kPartitionProperty &&
        key != kDeleteRatioProperty && key != kChangelogProperty && key != kFreshCodecProperty) {
      return Status::Invalid("unknown table property " + Quote(key) + " (the lake's are " +
                             kEnabledProperty + ", " + kFreshnessProperty + ", " +
                             kPartitionProperty + ", " + kDeleteRatioProperty + ", " +
                             kChangelogProperty + " and " + kFreshCodecProperty + ")");
    }
    if ((key == kEnabledProperty || key == kChangelogProperty) && value != "true" &&
        value != "false") {
      return Status::Invalid(key + R"( must be "true" or "false", got )" + Quote(value));
    }
  }
  auto changelog = table.properties.find(kChangelogProperty);
  if (changelog != table.properties.end() && changelog->second == "true" && !IsLakeEnabled(table)) {
    return Status::Invalid(std::string(kChangelogProperty) + R"( "true" needs )" +
                           kEnabledProperty + R"( "true")");
  }
  if (!IsLakeEnabled(table)) return Status::OK();
  Status st = MakeLakeForm(table).status();
  if (!st.ok()) return st.WithContext("table " + Quote(table.name) + " cannot go to the lake");
  return Status::OK();
}

Result<std::unique_ptr<TieringService>> TieringService::Start(engine::Engine* engine,
                                                              LakeOptions options) {
  if (!options.fs) options.fs = PosixFileSystem::Default();
  if (options.tiering_threads < 1) return Status::Invalid("lake: tiering_threads must be >= 1");
  if (options.warehouse.find("://") == std::string::npos) {
    options.warehouse = std::filesystem::absolute(options.warehouse).lexically_normal().string();
  }
  RETURN_NOT_OK(options.fs->CreateDirs(options.warehouse));
  std::unique_ptr<TieringService> service(new TieringService(engine, std::move(options)));
  service->catalog_ = service->options_.catalog;
  if (!service->catalog_) {
    service->catalog_ =
        std::make_shared<iceberg::FileCatalog>(service->options_.fs, service->options_.warehouse);
  }
  TieringService* s = service.get();
  for (int i = 0; i < s->options_.tiering_threads; ++i) {
    s->round_workers_.emplace_back([s] { s->RoundWorker(); });
  }
  s->maintenance_thread_ = std::thread([s] { s->MaintenanceLoop(); });
  s->scheduler_ = std::thread([s] { s->ScheduleLoop(); });
  if (s->options_.scrub_interval_ms > 0 && s->options_.scrub_bytes_per_second > 0) {
    s->scrub_thread_ = std::thread([s] { s->ScrubLoop(); });
  }
  return service;
}

TieringService::~TieringService() { Stop(); }

void TieringService::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  due_cv_.notify_all();
  if (scheduler_.joinable()) scheduler_.join();
  for (auto& worker : round_workers_) {
    if (worker.joinable()) worker.join();
  }
  if (maintenance_thread_.joinable()) maintenance_thread_.join();
  if (scrub_thread_.joinable()) scrub_thread_.join();
}

namespace {

// Producers come first: on a busy machine the lake lags rather than the produce path.
void LowerThreadPriority(int nice, const char* what) {
  if (setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), nice) != 0) {
    spdlog::warn("lake: cannot lower the priority of the {}", what);
  }
}

// Rounds start every freshness/4: a row waits up to freshness/4 for its round to start, plus
// the round, whose length grows with the bytes a period brings (about 4 ms per MB).
std::chrono::milliseconds RoundPeriod(const TableTiering& state) {
  return std::chrono::milliseconds(std::max<int64_t>(1, state.freshness_ms / 4));
}

// Whether the last maintenance pass left the table or its changelog lake table a backlog.
bool CompactionBacklog(const TableTiering& state) {
  return state.compaction_backlog || (state.changelog && state.changelog->compaction_backlog);
}

}  // namespace

std::vector<std::shared_ptr<TableTiering>> TieringService::TieredTables() {
  std::vector<std::shared_ptr<TableTiering>> out;
  for (const auto& descriptor : engine_->ListTables()) {
    auto found = StateFor(descriptor);  // fails only for a table dropped meanwhile
    if (!found.ok()) continue;
    // enabled and init_error are set before the state is shared and never change.
    if ((*found)->enabled && (*found)->init_error.ok()) out.push_back(std::move(*found));
  }
  return out;
}

void TieringService::ScheduleLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    lock.unlock();
    const auto now = Clock::now();
    auto tables = TieredTables();
    lock.lock();
    for (auto& state : tables) {
      if (state->queued || now < state->next_round) continue;
      state->next_round = now + RoundPeriod(*state);
      state->queued = true;
      due_.push_back(std::move(state));
      due_cv_.notify_one();
    }
    wake_.wait_for(lock, std::chrono::milliseconds(20), [this] { return stopping_; });
  }
}

void TieringService::RoundWorker() {
  if (options_.round_nice != 0) LowerThreadPriority(options_.round_nice, "tiering threads");
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    due_cv_.wait(lock, [this] { return stopping_ || !due_.empty(); });
    if (stopping_) return;
    std::shared_ptr<TableTiering> state = std::move(due_.front());
    due_.pop_front();
    lock.unlock();
    (void)Round(*state);  // errors are logged and published per table
    lock.lock();
    state->queued = false;
  }
}

void TieringService::MaintenanceLoop() {
  if (options_.maintenance_nice != 0) {
    LowerThreadPriority(options_.maintenance_nice, "maintenance thread");
  }
  const auto interval = std::chrono::milliseconds(options_.maintenance_interval_ms);
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    lock.unlock();
    for (const auto& state : TieredTables()) {
      const auto now = Clock::now();
      if (state->next_maintenance == Clock::time_point{}) {
        state->next_maintenance = now + interval;  // a table's first maintenance waits one interval
        continue;
      }
      // A backlog of small files gets its next step now (at this thread's low priority), so
      // compaction keeps up with a busy table; the other tables' passes come in between.
      const bool follow_up = now < state->next_maintenance && CompactionBacklog(*state);
      if (now < state->next_maintenance && !follow_up) continue;
      if (!follow_up) state->next_maintenance = now + interval;
      (void)Maintenance(*state, follow_up);  // errors are logged and published per table
    }
    lock.lock();
    wake_.wait_for(lock, std::chrono::milliseconds(100), [this] { return stopping_; });
  }
}

Status TieringService::RunOnce() {
  Status first;
  for (const auto& state : TieredTables()) {
    Status round = Round(*state);
    Status maintenance = Maintenance(*state, false);
    while (maintenance.ok() && CompactionBacklog(*state)) maintenance = Maintenance(*state, true);
    if (first.ok()) first = round.ok() ? maintenance : round;
  }
  return first;
}

void TieringService::ScrubLoop() {
  if (setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), 19) != 0) {
    spdlog::debug("lake: cannot lower the scrubber's priority");
  }
  const auto interval = std::chrono::milliseconds(options_.scrub_interval_ms);
  // When each data file was last verified; files that left every table are forgotten.
  std::map<std::string, Clock::time_point> verified;
  // Each table's live data files, listed again only when its metadata (or its changelog lake
  // table's) changed: a listing reads the manifest list and every manifest, on S3 by GETs.
  struct Listing {
    std::string metadata_files;
    std::vector<std::string> paths;
  };
  std::map<int64_t, Listing> listings;
  auto pause = [this](Clock::duration duration) {
    std::unique_lock<std::mutex> lock(mu_);
    return !wake_.wait_for(lock, duration, [this] { return stopping_; });
  };
  while (true) {
    std::map<std::string, Clock::time_point> live;
    std::map<int64_t, Listing> listed;
    for (const auto& descriptor : engine_->ListTables()) {
      auto found = StateFor(descriptor);
      if (!found.ok()) continue;
      const std::shared_ptr<TableTiering>& state = *found;
      std::vector<std::string> paths;
      {
        std::lock_guard<std::mutex> work(state->work);  // the table is one thread's at a time
        if (state->dropped || !state->enabled || !state->table) continue;
        TableTiering* changelog = state->changelog.get();
        std::unique_lock<std::mutex> changelog_work;
        if (changelog) changelog_work = std::unique_lock<std::mutex>(changelog->work);
        std::string metadata_files = state->table->metadata_file();
        if (changelog && changelog->table)
          metadata_files += "\n" + changelog->table->metadata_file();
        auto known = listings.find(descriptor.table_id);
        if (known != listings.end() && known->second.metadata_files == metadata_files) {
          paths = known->second.paths;
        } else {
          auto entries = state->table->LiveEntries();
          if (!entries.ok()) continue;
          for (const auto& e : *entries) paths.push_back(iceberg::LocalPath(e.data_file.file_path));
          // The changelog lake table's files are listed with the table's.
          bool complete = true;
          if (changelog && changelog->table) {
            auto changelog_entries = changelog->table->LiveEntries();
            complete = changelog_entries.ok();
            if (complete) {
              for (const auto& e : *changelog_entries) {
                paths.push_back(iceberg::LocalPath(e.data_file.file_path));
              }
            }
          }
          if (!complete) metadata_files.clear();  // listed again next pass
        }
        listed[descriptor.table_id] = Listing{std::move(metadata_files), paths};
      }
      std::vector<DamagedDataFile> damaged;
      for (const std::string& path : paths) {
        auto known = verified.find(path);
        if (known != verified.end() && Clock::now() - known->second < interval) {
          live[path] = known->second;
          continue;
        }
        auto report = parquet::VerifyFile(*options_.fs, path);
        live[path] = Clock::now();
        if (!report.ok()) continue;  // gone meanwhile (compaction, expiry) or unreadable now
        if (!report->ok()) {
          spdlog::warn("lake: table '{}': the scrubber found damage in data file {}: {}",
                       descriptor.name, path, report->problem.message());
          damaged.push_back({path, report->problem.message()});
        }
        if (!pause(std::chrono::microseconds(report->bytes_read * 1'000'000 /
                                             options_.scrub_bytes_per_second))) {
          return;
        }
      }
      std::lock_guard<std::mutex> lock(state->status_mu);
      auto& known = state->published.damaged_files;
      // Keep what is still live, add what is new.
      std::erase_if(known, [&](const DamagedDataFile& d) { return !live.count(d.path); });
      for (auto& d : damaged) {
        if (std::none_of(known.begin(), known.end(),
                         [&](const DamagedDataFile& k) { return k.path == d.path; })) {
          known.push_back(std::move(d));
        }
      }
    }
    verified = std::move(live);
    listings = std::move(listed);
    if (!pause(std::chrono::seconds(1))) return;
  }
}

Result<bool> TieringService::OpenLakeTable(TableTiering& state,
                                           const iceberg::TableIdentifier& lake_id) {
  const catalog::TableDescriptor& descriptor = state.descriptor;
  state.lake_id = lake_id;
  state.location = catalog_->TableLocation(lake_id);
  auto loaded = iceberg::IcebergTable::Load(options_.fs, catalog_, lake_id);
  const std::string table_id = std::to_string(descriptor.table_id);
  if (loaded.ok()) {
    auto props = (*loaded)->metadata().properties;
    if (props[internal::kTableIdProperty] != table_id) {
      // A lake left behind by a dropped table of the same name.
      RETURN_NOT_OK(options_.fs->RemoveAll(state.location));
      loaded = Status::NotFound("replaced");
    }
  }
  bool created = false;
  // The lake form of the table's current schema, with the lake's field ids (docs/lake.md,
  // "Schema evolution").
  auto follow_schema = [&](const iceberg::IcebergTable* lake) -> Status {
    if (state.changelog_table) {
      // The changelog lake table: the table's columns, _change_type, no identifier fields.
      catalog::TableDescriptor columns = descriptor;
      columns.primary_key.clear();
      ASSIGN_OR_RAISE(
          state.schema,
          internal::EvolvedLakeSchema(
              columns, lake ? &lake->schema() : nullptr, lake ? lake->metadata().last_column_id : 0,
              {arrow::Field{internal::kChangeTypeColumn, arrow::DataType::String(), false, {}}}));
    } else {
      ASSIGN_OR_RAISE(state.schema,
                      internal::EvolvedLakeSchema(descriptor, lake ? &lake->schema() : nullptr,
                                                  lake ? lake->metadata().last_column_id : 0));
    }
    auto partition = descriptor.properties.find(kPartitionProperty);
    ASSIGN_OR_RAISE(state.spec,
                    internal::ParsePartitionSpec(
                        partition == descriptor.properties.end() ? "" : partition->second,
                        state.schema.iceberg_schema));
    return Status::OK();
  };
  if (loaded.ok()) {
    state.table = std::move(loaded).ValueOrDie();
    RETURN_NOT_OK(follow_schema(state.table.get()));
    RETURN_NOT_OK(RemoveOrphanFiles(options_.fs.get(), *state.table));
    // The table's columns changed since the lake last followed them: the new schema becomes
    // current now, before any data file written in it (a no-op when it already is).
    const int32_t lake_schema_id = state.table->schema().schema_id();
    RETURN_NOT_OK(state.table->SetCurrentSchema(state.schema.iceberg_schema));
    if (lake_schema_id != state.table->schema().schema_id()) {
      spdlog::info("lake: '{}' now has schema {} (was {})", descriptor.name,
                   state.table->schema().schema_id(), lake_schema_id);
    }
    // Partition evolution: lake.partition changed (alter_table), so its spec becomes the
    // default one, with the field ids the lake's earlier specs gave (a no-op when it already
    // is). Files of earlier specs keep theirs.
    const int32_t lake_spec_id = state.table->spec().spec_id();
    ASSIGN_OR_RAISE(state.spec, state.table->SetDefaultSpec(state.spec));
    if (lake_spec_id != state.spec.spec_id()) {
      spdlog::info("lake: '{}' now has partition spec {} (was {})", descriptor.name,
                   state.spec.spec_id(), lake_spec_id);
    }
  } else if (loaded.status().IsNotFound()) {
    RETURN_NOT_OK(options_.fs->RemoveAll(state.location));  // files never committed
    RETURN_NOT_OK(follow_schema(nullptr));
    ASSIGN_OR_RAISE(state.table, iceberg::IcebergTable::Create(
                                     options_.fs, catalog_, lake_id, state.schema.iceberg_schema,
                                     state.spec, {{internal::kTableIdProperty, table_id}}));
    created = true;
  } else {
    return loaded.status();
  }
  state.tiered.assign(static_cast<size_t>(descriptor.buckets), 0);
  RETURN_NOT_OK(state.LoadOffsets());
  return created;
}

Result<std::shared_ptr<TableTiering>> TieringService::StateFor(
    const catalog::TableDescriptor& given) {
  std::lock_guard<std::mutex> creating(init_mu_);  // one thread creates a table's state
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = tables_.find(given.name);
    if (it != tables_.end() && it->second->descriptor.table_id == given.table_id &&
        it->second->descriptor.schema_id >= given.schema_id) {
      return it->second;
    }
  }
  // A new state is built from the engine's descriptor now: `given` may have been read before an
  // alter that AlterTable (holding init_mu_ while the engine changes) applied since, and a state
  // built from it would keep the old properties (a property change keeps the schema version).
  auto current = engine_->DescribeTable(given.name);
  if (!current.ok() || current->table.table_id != given.table_id) {
    return Status::NotFound("table '" + given.name + "' was dropped");
  }
  const catalog::TableDescriptor& descriptor = current->table;
  std::shared_ptr<TableTiering> stale;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (dropped_ids_.count(descriptor.table_id)) {
      return Status::NotFound("table '" + descriptor.name + "' was dropped");
    }
    auto it = tables_.find(descriptor.name);
    if (it != tables_.end() && it->second->descriptor.table_id == descriptor.table_id &&
        it->second->descriptor.schema_id >= descriptor.schema_id) {
      return it->second;
    }
    if (it != tables_.end() && it->second->descriptor.table_id == descriptor.table_id) {
      stale = it->second;  // built from a descriptor read before an alter
    }
  }
  if (stale) {
    std::lock_guard<std::mutex> work(stale->work);
    stale->dropped = true;
    if (stale->changelog) {
      std::lock_guard<std::mutex> changelog_work(stale->changelog->work);
      stale->changelog->dropped = true;
    }
  }
  auto state = std::make_shared<TableTiering>();
  state->descriptor = descriptor;
  state->enabled = IsLakeEnabled(descriptor);
  state->freshness_ms = options_.freshness_ms;
  state->caught_up_ms = WallMs();
  auto init = [&]() -> Status {
    if (!state->enabled) return Status::OK();
    ASSIGN_OR_RAISE(LakeForm form, MakeLakeForm(descriptor));
    state->schema = std::move(form.schema);
    state->spec = std::move(form.spec);
    if (form.freshness_ms) state->freshness_ms = *form.freshness_ms;
    state->delete_ratio = form.delete_ratio;
    state->fresh_codec = form.fresh_codec.value_or(options_.fresh_codec);
    const auto dot = descriptor.name.find('.');
    const iceberg::TableIdentifier lake_id{descriptor.name.substr(0, dot),
                                           descriptor.name.substr(dot + 1)};
    ASSIGN_OR_RAISE(const bool created, OpenLakeTable(*state, lake_id));
    // A new table has nothing to tier yet: its first round comes a period later, like every
    // later one (a lake loaded at startup starts at once, to catch up).
    if (created) state->next_round = Clock::now() + RoundPeriod(*state);
    if (form.changelog_schema) {
      auto changelog = std::make_unique<TableTiering>();
      changelog->descriptor = descriptor;
      changelog->descriptor.name += kChangelogSuffix;
      changelog->changelog_table = true;
      changelog->schema = std::move(*form.changelog_schema);
      changelog->spec = std::move(form.changelog_spec);
      changelog->freshness_ms = state->freshness_ms;
      changelog->fresh_codec = state->fresh_codec;
      RETURN_NOT_OK(
          OpenLakeTable(*changelog, {lake_id.namespace_name, lake_id.name + kChangelogSuffix})
              .status());
      state->changelog = std::move(changelog);
    }
    if (!descriptor.primary_key.empty()) {
      ASSIGN_OR_RAISE(state->index, LoadKeyIndex(options_.fs.get(), *state));
    }
    return SetRetentionFloors(engine_, descriptor.name, state->FloorOffsets());
  };
  state->init_error = init();
  if (!state->init_error.ok()) {
    spdlog::error("lake: table '{}' is not tiered: {}", descriptor.name,
                  state->init_error.message());
  }
  state->Publish(state->init_error.message());
  std::lock_guard<std::mutex> lock(mu_);
  tables_[descriptor.name] = state;
  return state;
}

namespace {

// The options of the files rounds write: row groups of at most 16 MiB, whose buffers the
// allocator reuses from round to round (a 128 MiB row group costs fresh pages, page faults and
// an munmap every round). Compaction rewrites them with `options` as they are.
parquet::WriterOptions FreshFileOptions(parquet::WriterOptions options) {
  options.row_group_bytes = std::min<int64_t>(options.row_group_bytes, int64_t{16} << 20);
  return options;
}

// What a round read from the log since the tiered offsets.
// Ends a round: the log's floors move to `floor` (none when the round tiered nothing), and a
// round that read every bucket to its end marks the table caught up as of its start.
Status EndRound(engine::Engine* engine, TableTiering& s, const std::vector<int64_t>& floor,
                bool caught_up, int64_t started_ms, Status read_error) {
  RETURN_NOT_OK(SetRetentionFloors(engine, s.descriptor.name, floor));
  if (caught_up) {
    std::lock_guard<std::mutex> lock(s.status_mu);
    s.caught_up_ms = started_ms;
  }
  return read_error;
}

struct RoundInput {
  std::vector<int64_t> next;      // per bucket, the offset after what was read
  std::vector<int64_t> earliest;  // per bucket, the log's first offset when the round read it
  bool caught_up = true;          // every bucket read to its end
  Status read_error;              // a bucket whose log cannot be read (damage) stops there
  int64_t bytes = 0;              // of the batches read
};

// Reads each bucket from `from` (its tiered offset) toward its end, up to max_round_bytes in all,
// handing every decoded batch to `on_batch` (its bucket, the batch).
Result<RoundInput> ReadSinceTiered(
    engine::Engine* engine, const LakeOptions& options, const TableTiering& s,
    const std::vector<int64_t>& from,
    const std::function<Status(int32_t, const engine::DecodedBatch&)>& on_batch) {
  ASSIGN_OR_RAISE(auto status, engine->DescribeTable(s.descriptor.name));
  RoundInput input;
  input.next = from;
  input.earliest.assign(from.size(), 0);
  std::vector<int64_t>& next = input.next;
  for (const auto& bucket : status.buckets) {
    const int32_t b = bucket.bucket;
    input.earliest[b] = bucket.earliest_offset;
    if (next[b] < bucket.earliest_offset) {
      spdlog::warn("lake: '{}' bucket {}: offsets [{}, {}) left the log before reaching the lake",
                   s.descriptor.name, b, next[b], bucket.earliest_offset);
      next[b] = bucket.earliest_offset;
    }
    if (next[b] >= bucket.next_offset) continue;
    engine::ReadRequest request;
    request.table = s.descriptor.name;
    request.bucket = b;
    request.from.kind = engine::StartPosition::Kind::kOffset;
    request.from.offset = next[b];
    request.to = bucket.next_offset;
    ASSIGN_OR_RAISE(auto cursor, engine->OpenRead(request));
    while (input.bytes < options.max_round_bytes) {
      auto next_batch = cursor->NextDecoded(Clock::now());
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
    if (next[b] < bucket.next_offset) input.caught_up = false;
  }
  return input;
}

// Offsets that left the log before reaching `t`'s lake (its tiered offset is below the log's
// first): the lake holds the log whole only from the log's first offset on, which the next
// commit records as the bucket's start (docs/lake.md, "Holes").
void NoteHoles(TableTiering& t, const std::vector<int64_t>& earliest) {
  for (size_t b = 0; b < t.tiered.size() && b < earliest.size(); ++b) {
    if (t.tiered[b] < earliest[b]) t.start[b] = std::max(t.start[b], earliest[b]);
  }
}

// Writes `batches` (lake form) as one data file per partition and appends them in one snapshot
// recording `next` as the tiered offsets, which `s.tiered` becomes. When that fails the written
// files are removed and `s.tiered` stays; `*committing` (if given) tells whether the commit was
// tried, whose outcome may then be unknown. The files are fresh ones (lake.fresh-codec) unless
// the round read `log_bytes` >= target_file_bytes: a file that size would not be compacted, so
// the round pays for the final codec once rather than for both. Returns the number of files.
Result<size_t> AppendRound(const LakeOptions& options, TableTiering& s,
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
    for (const auto& path : written) (void)options.fs->Remove(path);
    return st;
  }
  return files.size();
}

// Moves everything durable (up to max_round_bytes) from the log into one snapshot.
Status TierRound(engine::Engine* engine, const LakeOptions& options, TableTiering& s) {
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
  ASSIGN_OR_RAISE(const size_t files, AppendRound(options, s, batches, next, nullptr, input.bytes));
  spdlog::debug("lake: '{}' round: {} log bytes in {} files; read {} ms, write and commit {} ms",
                s.descriptor.name, input.bytes, files, Millis(read_done - round_start),
                Millis(Clock::now() - read_done));
  return EndRound(engine, s, next, caught_up, started_ms, read_error);
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
Result<bool> CompactPartitions(const LakeOptions& options, TableTiering& s, bool follow_up) {
  std::vector<iceberg::ManifestEntry> live;
  {
    std::lock_guard<std::mutex> work(s.work);
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
      added.push_back(std::move(file));
      out.writer.reset();
      out.rows = 0;
      return Status::OK();
    };
    // Streams row group by row group through the FileSystem seam, so memory holds about one
    // row group per input and output, not the inputs.
    auto rewrite = [&]() -> Status {
      for (const auto& input : inputs) {
        ASSIGN_OR_RAISE(auto reader,
                        parquet::FileReader::Open(*options.fs, iceberg::LocalPath(input)));
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
                ASSIGN_OR_RAISE(out.writer, OpenDataFile(options.fs.get(), s, part.path,
                                                         options.parquet, &written));
                out.path = written.back();
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
      std::lock_guard<std::mutex> work(s.work);
      if (s.dropped) return Status::Cancelled("table dropped");
      auto summary = s.Summary();
      summary["oxbow.compacted-files"] = std::to_string(inputs.size());
      return s.table->ReplaceFiles(inputs, added, summary).status();
    };
    const auto started = Clock::now();
    Status st = rewrite();
    const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
    const LakeObserver& observer = options.observer;
    if (!st.ok()) {
      for (const auto& path : written) (void)options.fs->Remove(path);
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

// Writes one position delete file of `partition` (that of the data files it names) under
// <location>/data/<partition path>/ (its path goes to `written`).
Result<iceberg::DataFile> WriteDeleteFile(FileSystem* fs, const TableTiering& state,
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

// Appends a round's changelog records (lake form, with _change_type) to the changelog lake table
// `c` as one data file per partition, its snapshot recording `next` as its own tiered offsets.
// The caller holds c.work.
Status TierChangelog(const LakeOptions& options, TableTiering& c,
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

// The bytes the row groups a writer closed so far hold (uncompressed): where a seed rolls files.
int64_t WrittenBytes(const parquet::FileWriter& writer) {
  int64_t bytes = 0;
  for (const auto& g : writer.metadata().row_groups) bytes += g.total_byte_size;
  return bytes;
}

// A primary-key lake that starts, or starts again, where the changelog no longer reaches (the
// lake was enabled late, or re-enabled, after retention dropped what it had not tiered): the
// current rows replace all the lake held, from one RocksDB snapshot per bucket, each
// consistent with a changelog offset, and rounds go on from those offsets. Deletes made while
// the lake was off cannot come back, and no key is missing (docs/lake.md, "Seeding").
Status SeedPrimaryKeyLake(engine::Engine* engine, const LakeOptions& options, TableTiering& s) {
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
    for (const auto& path : written) (void)options.fs->Remove(path);
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
Status SeedWherePastTheLog(engine::Engine* engine, const LakeOptions& options, TableTiering& s) {
  ASSIGN_OR_RAISE(auto status, engine->DescribeTable(s.descriptor.name));
  for (const auto& bucket : status.buckets) {
    const auto b = static_cast<size_t>(bucket.bucket);
    if (b < s.tiered.size() && s.tiered[b] < bucket.earliest_offset) {
      return SeedPrimaryKeyLake(engine, options, s);
    }
  }
  return Status::OK();
}

// A primary-key table's round: the changelog since the tiered offsets becomes data files of the
// rows current after it (the last change of each key; -D leaves none) plus position delete files
// removing the rows those keys had in earlier data files, in one snapshot (docs/lake.md).
Status TierPrimaryKeyRound(engine::Engine* engine, const LakeOptions& options, TableTiering& s) {
  if (s.index_stale) RETURN_NOT_OK(ReloadPrimaryKeyLake(options.fs.get(), s));
  RETURN_NOT_OK(SeedWherePastTheLog(engine, options, s));
  // With lake.changelog, the round reads from the lower of the two tables' offsets and hands
  // each table the rows past its own (they differ only after a crash between the two commits).
  TableTiering* changelog = s.changelog.get();
  std::unique_lock<std::mutex> changelog_work;
  std::vector<int64_t> from = s.tiered;
  std::vector<arrow::RecordBatchPtr> changelog_batches;  // lake form
  if (changelog) {
    changelog_work = std::unique_lock<std::mutex>(changelog->work);
    if (changelog->offsets_stale) RETURN_NOT_OK(ReloadOffsets(*changelog));
    from = s.FloorOffsets();
  }
  const int64_t started_ms = WallMs();
  std::vector<arrow::RecordBatchPtr> batches;  // lake form
  // The last change of each key in the round: batch, row, and whether it removes the key.
  struct Change {
    size_t batch;
    int64_t row;
    bool deleted;
  };
  std::unordered_map<std::string, Change> last;
  const int n = s.schema.log_schema->num_fields();
  auto on_batch = [&](int32_t b, const engine::DecodedBatch& read) -> Status {
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
    if (changelog) {
      auto [rows, base] = rows_from(changelog->tiered[b]);
      if (rows->num_rows() > 0) {
        ASSIGN_OR_RAISE(auto lake_batch, internal::ToLakeBatch(changelog->schema, *rows, b, base,
                                                               read.append_time_ms));
        changelog_batches.push_back(std::move(lake_batch));
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
      last[internal::EncodeLakeKey(*lake_batch, s.schema.key_columns, r)] =
          Change{batches.size(), r, change == "-D"};
    }
    batches.push_back(std::move(lake_batch));
    return Status::OK();
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
        TierChangelog(options, *changelog, changelog_batches, past(changelog->tiered));
    changelog_batches.clear();
    changelog_work.unlock();
  }
  std::vector<int64_t> next = past(s.tiered);
  const bool caught_up = input.caught_up;
  const Status read_error = input.read_error.ok() ? changelog_error : input.read_error;
  if (batches.empty() && next == s.tiered) {
    return EndRound(engine, s, {}, caught_up, started_ms, read_error);
  }
  internal::KeyIndex& index = *s.index;
  std::vector<std::vector<int32_t>> keep(batches.size());
  std::vector<std::string> removed;  // keys a -D removes from the lake (a delete file does)
  struct Deletes {
    internal::FilePartition partition;
    std::vector<std::pair<std::string, int64_t>> rows;
    std::set<std::string> targets;
  };
  // By the partition (spec, directory) of the data files they name.
  std::map<std::pair<int32_t, std::string>, Deletes> deletes;
  for (const auto& [key, change] : last) {
    if (auto at = index.Find(key)) {
      const auto& file = index.file(at->file);
      auto& d = deletes[{file.partition.spec_id, file.partition.path}];
      d.partition = file.partition;
      d.rows.emplace_back(file.path, at->pos);
      d.targets.insert(file.path);
      if (change.deleted) removed.push_back(key);
    }
    if (!change.deleted) keep[change.batch].push_back(static_cast<int32_t>(change.row));
  }
  struct Group {
    iceberg::PartitionValues values;
    std::vector<arrow::RecordBatchPtr> batches;
  };
  std::map<std::string, Group> groups;
  for (size_t i = 0; i < batches.size(); ++i) {
    if (keep[i].empty()) continue;
    std::sort(keep[i].begin(), keep[i].end());  // changelog order
    ASSIGN_OR_RAISE(auto rows, arrow::TakeRows(*batches[i], keep[i]));
    ASSIGN_OR_RAISE(auto parts, internal::SplitByPartition(s.schema, s.spec, *rows));
    for (auto& part : parts) {
      auto& group = groups[part.path];
      group.values = std::move(part.values);
      group.batches.push_back(std::move(part.batch));
    }
  }
  batches.clear();
  std::vector<iceberg::DataFile> files;
  std::vector<std::string> file_partition_paths;
  std::vector<iceberg::DataFile> delete_files;
  std::vector<std::string> written;
  bool committing = false;
  Clock::time_point t_files;
  auto commit = [&]() -> Status {
    for (auto& [path, group] : groups) {
      ASSIGN_OR_RAISE(auto file,
                      WriteDataFile(options.fs.get(), s, path, group.values, group.batches,
                                    FreshFileOptions(options.parquet), &written));
      files.push_back(std::move(file));
      file_partition_paths.push_back(path);
    }
    for (auto& [partition, d] : deletes) {
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
    for (const auto& path : written) (void)options.fs->Remove(path);
    // Whether the snapshot landed is not known for every failure: rebuild from what did.
    if (committing) s.index_stale = true;
    return st;
  }
  // The snapshot is committed: the index follows it (AddFile moves the updated keys).
  for (const auto& key : removed) index.Remove(key);
  size_t f = 0;
  for (auto& [path, group] : groups) {
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
  for (auto& [partition, group] : deletes) {
    index.AddDeleteFile(delete_files[d++].file_path, std::move(group.targets));
  }
  spdlog::debug(
      "lake: round of '{}': read {} ms, plan {} ms, files {} ms, commit {} ms, index {} ms "
      "({} keys)",
      s.descriptor.name, Millis(t_read - t0), Millis(t_plan - t_read), Millis(t_files - t_plan),
      Millis(t_commit - t_files), Millis(Clock::now() - t_commit), last.size());
  return EndRound(engine, s, s.FloorOffsets(), caught_up, started_ms, read_error);
}

// A primary-key table's compaction: in each partition (spec and directory; the output keeps the
// inputs' spec), the data files whose deleted
// fraction reaches lake.compaction.delete-ratio, and the small files once compaction_min_files of
// them gather, are rewritten with their live rows only (the key index says which are live), and
// the delete files that named only removed files are dropped, in one "replace" snapshot. Reading
// and writing the files happens without the table's lock, so rounds go on meanwhile; the lock is
// taken to plan, to commit, and a slice of keys at a time to pick the live rows and to settle
// the keys on the output. A row a round deleted or replaced after it was picked is deleted in
// the output by a position delete file of the same snapshot, so no round's delete is lost with
// the inputs. Returns whether a step left enough candidates for another (as CompactPartitions).
Result<bool> CompactPrimaryKey(const LakeOptions& options, TableTiering& s) {
  // Keys looked up per hold of the table's lock, so rounds wait for a slice, not a file.
  constexpr size_t kIndexSlice = 16384;
  struct Candidate {
    int32_t id;
    int64_t size;
    bool mostly_deleted;
  };
  std::map<std::pair<int32_t, std::string>, std::vector<Candidate>> by_dir;
  uint64_t generation = 0;
  {
    std::lock_guard<std::mutex> work(s.work);
    HoldTimer held(s, "planning compaction");
    if (s.dropped) return false;
    if (s.index_stale) RETURN_NOT_OK(ReloadPrimaryKeyLake(options.fs.get(), s));
    generation = s.index_generation;
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
        by_dir[{info.partition.spec_id, info.partition.path}].push_back(
            {*id, e.data_file.file_size_in_bytes, mostly_deleted});
      }
    }
  }
  bool backlog = false;
  for (auto& dir_candidates : by_dir) {
    const std::string& dir = dir_candidates.first.second;  // lambdas capture it (no binding)
    auto& candidates = dir_candidates.second;
    const int64_t small_files = static_cast<int64_t>(candidates.size());
    std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
      if (a.mostly_deleted != b.mostly_deleted) return a.mostly_deleted;
      return a.size < b.size;
    });
    // Mostly-deleted files first; then small files, smallest first, each no bigger than those
    // taken so far together (a big file waits for peers of its size instead of being rewritten
    // to absorb a few tiny ones, so a row is rewritten about log2(files) times, not every step).
    std::vector<int32_t> inputs;
    int64_t input_bytes = 0;
    int64_t merged = 0;
    int64_t merged_bytes = 0;
    for (const auto& c : candidates) {
      if (input_bytes >= options.compaction_step_bytes && !inputs.empty()) break;
      if (!c.mostly_deleted) {
        if (small_files < options.compaction_min_files) break;
        if (merged >= 2 && c.size > merged_bytes) break;
        ++merged;
        merged_bytes += c.size;
      }
      inputs.push_back(c.id);
      input_bytes += c.size;
    }
    if (merged == 1) inputs.pop_back();  // one small file alone is not worth a rewrite
    if (inputs.empty()) continue;
    // What the step leaves: a mostly-deleted file it did not take, or enough small files with
    // its output.
    const bool more =
        std::any_of(candidates.begin() + static_cast<std::ptrdiff_t>(inputs.size()),
                    candidates.end(), [](const Candidate& c) { return c.mostly_deleted; }) ||
        (small_files >= options.compaction_min_files &&
         small_files - static_cast<int64_t>(inputs.size()) + 1 >= options.compaction_min_files);
    const auto started = Clock::now();
    // Phase 1: watch the inputs (their rows that rounds change from now on are recorded), then
    // read them and their keys unlocked.
    std::vector<std::string> paths;
    internal::FilePartition partition;
    {
      std::lock_guard<std::mutex> work(s.work);
      if (s.dropped || s.index_generation != generation) return false;
      for (int32_t id : inputs) {
        paths.push_back(s.index->file(id).path);
        s.index->Watch(id);
      }
      partition = s.index->file(inputs.front()).partition;
    }
    // Ends the watch on every way out before the commit (which ends it itself).
    struct WatchGuard {
      TableTiering& s;
      const std::vector<int32_t>& inputs;
      uint64_t generation;
      bool watching = true;
      ~WatchGuard() {
        if (!watching) return;
        std::lock_guard<std::mutex> work(s.work);
        if (s.index_generation != generation) return;  // a rebuilt index watches nothing
        for (int32_t id : inputs) (void)s.index->Unwatch(id);
      }
    } watch{s, inputs, generation};
    struct Input {
      std::vector<arrow::RecordBatchPtr> row_groups;
      std::vector<std::string> keys;  // in position order
    };
    std::vector<Input> read(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      auto row_groups = ReadLakeFile(options.fs.get(), s, paths[i]);
      if (!row_groups.ok()) return row_groups.status().WithContext("compacting " + dir);
      read[i].row_groups = std::move(*row_groups);
      for (const auto& batch : read[i].row_groups) {
        for (int64_t r = 0; r < batch->num_rows(); ++r) {
          read[i].keys.push_back(internal::EncodeLakeKey(*batch, s.schema.key_columns, r));
        }
      }
    }
    // Phase 2: which rows are live, a slice at a time under the lock. A row a round changes
    // after its slice is checked is recorded by the watch and deleted at the commit.
    std::vector<std::vector<bool>> picked(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      const size_t rows = read[i].keys.size();
      picked[i].resize(rows);
      for (size_t from = 0; from < rows; from += kIndexSlice) {
        std::lock_guard<std::mutex> work(s.work);
        HoldTimer held(s, "picking the live rows to compact");
        if (s.dropped || s.index_generation != generation) return false;
        for (size_t pos = from; pos < std::min(rows, from + kIndexSlice); ++pos) {
          picked[i][pos] = s.index->Find(read[i].keys[pos]) ==
                           internal::RowLocation{inputs[i], static_cast<int64_t>(pos)};
        }
      }
    }
    // Phase 3, unlocked: write the live rows. `sources` maps an output position to its input
    // row, `moved` an input row to its output position (-1: not copied).
    std::vector<std::pair<size_t, int64_t>> sources;
    std::vector<std::vector<int64_t>> moved(inputs.size());
    std::vector<std::string> written;
    std::optional<iceberg::DataFile> added;
    auto write = [&]() -> Status {
      std::unique_ptr<parquet::FileWriter> writer;
      for (size_t i = 0; i < inputs.size(); ++i) {
        moved[i].assign(read[i].keys.size(), -1);
        int64_t pos = 0;
        for (const auto& batch : read[i].row_groups) {
          std::vector<int32_t> rows;
          for (int64_t r = 0; r < batch->num_rows(); ++r, ++pos) {
            if (!picked[i][static_cast<size_t>(pos)]) continue;
            rows.push_back(static_cast<int32_t>(r));
            moved[i][static_cast<size_t>(pos)] = static_cast<int64_t>(sources.size());
            sources.emplace_back(i, pos);
          }
          if (rows.empty()) continue;
          ASSIGN_OR_RAISE(auto live_rows, arrow::TakeRows(*batch, rows));
          if (!writer) {
            ASSIGN_OR_RAISE(writer,
                            OpenDataFile(options.fs.get(), s, dir, options.parquet, &written));
          }
          RETURN_NOT_OK(writer->Write(*live_rows));
        }
      }
      if (writer) {
        ASSIGN_OR_RAISE(added, FinishDataFile(s, writer.get(), written.back(), partition.spec_id,
                                              partition.values));
      }
      return Status::OK();
    };
    Status st = write();
    // Phase 4, locked: delete the copied rows that rounds changed meanwhile, then commit.
    std::unique_lock<std::mutex> work(s.work);
    std::optional<HoldTimer> held(std::in_place, s, "committing compaction");
    if (st.ok() && (s.dropped || s.index_stale || s.index_generation != generation)) {
      st = Status::Cancelled("the table changed under compaction");
    }
    std::vector<std::pair<std::string, int64_t>> stale;  // output rows changed since phase 2
    std::set<std::string> removed(paths.begin(), paths.end());
    std::vector<std::string> obsolete;
    std::optional<iceberg::DataFile> stale_file;
    if (st.ok()) {
      internal::KeyIndex& index = *s.index;
      for (size_t i = 0; i < inputs.size(); ++i) {
        for (int64_t pos : index.Unwatch(inputs[i])) {
          const int64_t out = moved[i][static_cast<size_t>(pos)];
          if (out >= 0) stale.emplace_back(added->file_path, out);
        }
      }
      watch.watching = false;
      obsolete = index.ObsoleteDeleteFiles(removed);
      auto commit = [&]() -> Status {
        std::vector<iceberg::DataFile> deletes;
        if (!stale.empty()) {
          ASSIGN_OR_RAISE(stale_file, WriteDeleteFile(options.fs.get(), s, partition, stale,
                                                      FreshFileOptions(options.parquet), &written));
          deletes.push_back(*stale_file);
        }
        std::vector<std::string> replaced(removed.begin(), removed.end());
        replaced.insert(replaced.end(), obsolete.begin(), obsolete.end());
        auto summary = s.Summary();
        summary["oxbow.compacted-files"] = std::to_string(inputs.size());
        std::vector<iceberg::DataFile> outputs;
        if (added) outputs.push_back(*added);
        return s.table->ReplaceFiles(replaced, outputs, summary, deletes).status();
      };
      st = commit();
      if (!st.ok()) s.index_stale = true;
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
    const LakeObserver& observer = options.observer;
    if (!st.ok()) {
      for (const auto& path : written) (void)options.fs->Remove(path);
      if (st.code() == StatusCode::kCancelled) return false;
      if (observer.on_compaction) observer.on_compaction(s.descriptor.name, seconds, false);
      return st.WithContext("compacting " + dir);
    }
    if (observer.on_compaction) observer.on_compaction(s.descriptor.name, seconds, true);
    if (observer.on_commit) observer.on_commit(s.descriptor.name, "compaction");
    backlog = backlog || more;
    // The output takes the inputs' place: their keys resolve to it now and are settled on it
    // a slice at a time below.
    internal::KeyIndex& index = *s.index;
    int32_t output = -1;
    if (added) {
      output = index.AddMovedFile(added->file_path, partition, static_cast<int64_t>(sources.size()),
                                  static_cast<int64_t>(stale.size()));
      for (size_t i = 0; i < inputs.size(); ++i) index.Move(inputs[i], output, std::move(moved[i]));
    } else {
      for (int32_t id : inputs) index.RemoveFile(id);
    }
    if (stale_file) index.AddDeleteFile(stale_file->file_path, {added->file_path});
    for (const auto& path : obsolete) index.RemoveDeleteFile(path);
    held.reset();
    work.unlock();
    spdlog::info(
        "lake: '{}' compacted {} data files ({} bytes) into {}, dropping {} delete files ({} rows "
        "changed meanwhile)",
        s.descriptor.name, inputs.size(), input_bytes, added ? 1 : 0, obsolete.size(),
        stale.size());
    if (!added) continue;
    // Phase 5: settle the keys on the output, a slice at a time under the lock.
    for (size_t from = 0; from < sources.size(); from += kIndexSlice) {
      std::lock_guard<std::mutex> settle(s.work);
      HoldTimer held_settle(s, "settling compacted keys");
      if (s.dropped || s.index_generation != generation) return false;
      for (size_t out = from; out < std::min(sources.size(), from + kIndexSlice); ++out) {
        const auto [i, pos] = sources[out];
        s.index->Settle(read[i].keys[static_cast<size_t>(pos)]);
      }
    }
    std::lock_guard<std::mutex> settled(s.work);
    if (s.dropped || s.index_generation != generation) return false;
    for (int32_t id : inputs) s.index->EndMove(id);
  }
  return backlog;
}

// CompactPartitions (CompactPrimaryKey for a primary-key table), then s.compaction_backlog for
// the maintenance thread. The flag changes only as a pass ends, so one pass running (another
// thread's) never reads as "no backlog"; a failed pass leaves none, so a failing step is not
// retried at once.
Status Compact(const LakeOptions& options, TableTiering& s, bool follow_up) {
  Result<bool> backlog =
      s.index ? CompactPrimaryKey(options, s) : CompactPartitions(options, s, follow_up);
  s.compaction_backlog = backlog.ok() && *backlog;
  return backlog.status();
}

// Compaction, manifest merging and snapshot expiry of one lake table.
Status MaintainTable(const LakeOptions& options, TableTiering& s, bool follow_up) {
  RETURN_NOT_OK(Compact(options, s, follow_up));
  std::lock_guard<std::mutex> work(s.work);
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
  return Status::OK();
}

// The table's maintenance, then its changelog lake table's.
Status Maintain(const LakeOptions& options, TableTiering& s, bool follow_up) {
  Status st = MaintainTable(options, s, follow_up);
  if (s.changelog) {
    Status changelog = MaintainTable(options, *s.changelog, follow_up);
    if (st.ok() && !changelog.ok()) st = changelog.WithContext("changelog table");
  }
  return st;
}

}  // namespace

namespace {

// Publishes `s`'s state; a stuck table is logged when its error changes, not every round.
void Report(TableTiering& s, const std::string& previous) {
  const std::string error = s.Error();
  if (!error.empty() && error != previous) {
    spdlog::warn("lake: table '{}': {}", s.descriptor.name, error);
  }
  s.Publish(error);
}

}  // namespace

Status TieringService::Round(TableTiering& s) {
  const auto asked = Clock::now();
  std::lock_guard<std::mutex> work(s.work);
  const int64_t waited = Millis(Clock::now() - asked);
  if (waited >= 100) {
    spdlog::info("lake: a round of '{}' waited {} ms for its table", s.descriptor.name, waited);
  }
  HoldTimer held(s, "a round");
  if (s.dropped) return Status::OK();
  {
    // A state built from a descriptor read before an alter: the next StateFor replaces it.
    auto current = engine_->DescribeTable(s.descriptor.name);
    if (current.ok() && current->table.schema_id != s.descriptor.schema_id) return Status::OK();
  }
  const std::string previous = s.Error();
  const int64_t version = s.table->version();
  const auto started = Clock::now();
  Status st = s.index ? TierPrimaryKeyRound(engine_, options_, s) : TierRound(engine_, options_, s);
  if (!st.ok() && engine_->DescribeTable(s.descriptor.name).status().IsNotFound()) {
    return Status::OK();  // dropped meanwhile
  }
  const LakeObserver& observer = options_.observer;
  const bool committed = s.table->version() != version;
  if ((committed || !st.ok()) && observer.on_round) {
    observer.on_round(s.descriptor.name,
                      std::chrono::duration<double>(Clock::now() - started).count(), st.ok());
  }
  if (committed && observer.on_commit) observer.on_commit(s.descriptor.name, "append");
  if (!st.ok()) {
    s.orphans_possible = true;
    if (s.changelog) s.changelog->orphans_possible = true;
  }
  s.round_error = st.ok() ? "" : "tiering: " + st.message();
  Report(s, previous);
  return st;
}

Status TieringService::Maintenance(TableTiering& s, bool follow_up) {
  std::lock_guard<std::mutex> maintaining(s.maintaining);
  Status swept;
  {
    std::lock_guard<std::mutex> work(s.work);
    swept = RemoveFailedCommitFiles(*catalog_, options_.fs.get(), s);
    if (s.changelog) {
      std::lock_guard<std::mutex> changelog_work(s.changelog->work);
      Status changelog = RemoveFailedCommitFiles(*catalog_, options_.fs.get(), *s.changelog);
      if (swept.ok()) swept = changelog;
    }
  }
  Status st = Maintain(options_, s, follow_up);
  if (st.ok() && !swept.ok()) st = swept.WithContext("removing files of failed commits");
  std::lock_guard<std::mutex> work(s.work);
  if (s.dropped) return Status::OK();
  if (!st.ok()) {
    s.orphans_possible = true;
    if (s.changelog) s.changelog->orphans_possible = true;
  }
  const std::string previous = s.Error();
  s.maintenance_error = st.ok() ? "" : "maintenance: " + st.message();
  Report(s, previous);
  return st;
}

Result<LakeTableStatus> TieringService::Describe(const std::string& table) {
  ASSIGN_OR_RAISE(auto status, engine_->DescribeTable(table));
  ASSIGN_OR_RAISE(auto state, StateFor(status.table));
  LakeTableStatus out;
  int64_t caught_up_ms;
  {
    std::lock_guard<std::mutex> lock(state->status_mu);
    out = state->published;
    caught_up_ms = state->caught_up_ms;
  }
  if (!out.enabled) return out;
  for (const auto& b : status.buckets) {
    // A lake that could not be set up has tiered nothing: all of the log is lag. With a
    // changelog lake table, the lag is the larger of the two tables'.
    const size_t i = static_cast<size_t>(b.bucket);
    int64_t tiered = i < out.tiered_offsets.size() ? out.tiered_offsets[i] : b.earliest_offset;
    if (out.changelog) {
      tiered =
          std::min(tiered, i < out.changelog_tiered_offsets.size() ? out.changelog_tiered_offsets[i]
                                                                   : b.earliest_offset);
    }
    out.lag_rows += std::max<int64_t>(0, b.next_offset - tiered);
  }
  out.lag_ms = out.lag_rows == 0 ? 0 : std::max<int64_t>(0, WallMs() - caught_up_ms);
  return out;
}

Result<catalog::TableDescriptor> TieringService::AlterTable(
    const std::string& name, const std::function<Result<catalog::TableDescriptor>()>& alter) {
  std::lock_guard<std::mutex> creating(init_mu_);  // no state is being created meanwhile
  std::shared_ptr<TableTiering> state;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = tables_.find(name);
    if (it != tables_.end()) state = it->second;
  }
  if (!state) return alter();
  // Waits for a round in progress; none starts until the engine's change is done.
  std::lock_guard<std::mutex> work(state->work);
  std::unique_lock<std::mutex> changelog_work;
  if (state->changelog) changelog_work = std::unique_lock<std::mutex>(state->changelog->work);
  ASSIGN_OR_RAISE(auto altered, alter());
  // The old state retires; the next StateFor builds the new one from the altered descriptor
  // (freshness, partitioning, enabled, columns), loading the same lake table.
  state->dropped = true;
  if (state->changelog) state->changelog->dropped = true;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = tables_.find(name);
  if (it != tables_.end() && it->second == state) tables_.erase(it);
  return altered;
}

Status TieringService::CheckPartitionSources(const catalog::TableDescriptor& before,
                                             const catalog::TableDescriptor& after) {
  const auto dot = before.name.find('.');
  auto loaded = iceberg::IcebergTable::Load(
      options_.fs, catalog_, {before.name.substr(0, dot), before.name.substr(dot + 1)});
  if (loaded.status().IsNotFound()) return Status::OK();
  ASSIGN_OR_RAISE(auto lake, std::move(loaded));
  if (lake->metadata().Property(internal::kTableIdProperty, "") !=
      std::to_string(before.table_id)) {
    return Status::OK();  // a lake left behind by a dropped table of the same name
  }
  auto ids = internal::LakeFieldIds(before, lake->schema());
  if (!ids.ok()) return Status::OK();  // tiering reports a lake that is no version of the table
  for (size_t i = 0; i < ids->size(); ++i) {
    const std::optional<int32_t> lake_id = (*ids)[i];
    if (!lake_id || std::find(after.field_ids.begin(), after.field_ids.end(),
                              before.field_ids[i]) != after.field_ids.end()) {
      continue;
    }
    for (const auto& spec : lake->metadata().partition_specs) {
      for (const auto& field : spec.fields()) {
        if (field.source_id != *lake_id) continue;
        return Status::Invalid(
            "column " + Quote(before.schema->field(static_cast<int>(i)).name) +
            " cannot be dropped: partition field " + Quote(field.name) + " of partition spec " +
            std::to_string(spec.spec_id()) +
            " of the lake uses it (Iceberg readers type the partition fields of every spec, "
            "earlier ones too, from the current schema)");
      }
    }
  }
  return Status::OK();
}

Status TieringService::DropTable(const catalog::TableDescriptor& table) {
  std::lock_guard<std::mutex> creating(init_mu_);  // no state is being created meanwhile
  std::shared_ptr<TableTiering> state;
  {
    std::lock_guard<std::mutex> lock(mu_);
    dropped_ids_.insert(table.table_id);
    auto it = tables_.find(table.name);
    if (it != tables_.end() && it->second->descriptor.table_id == table.table_id) {
      state = it->second;
      tables_.erase(it);
    }
  }
  if (!state) return Status::OK();
  // Waits for a maintenance pass in progress (compaction writes files without holding work),
  // then for a round.
  std::lock_guard<std::mutex> maintaining(state->maintaining);
  std::lock_guard<std::mutex> work(state->work);
  state->dropped = true;
  if (state->changelog) {
    std::lock_guard<std::mutex> changelog_work(state->changelog->work);
    state->changelog->dropped = true;
    RETURN_NOT_OK(options_.fs->RemoveAll(state->changelog->location)
                      .WithContext("cannot remove changelog lake table"));
  }
  if (state->location.empty()) return Status::OK();
  return options_.fs->RemoveAll(state->location).WithContext("cannot remove lake table");
}

}  // namespace oxbow::lake
