#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <nlohmann/json.hpp>
#include <random>

#include "oxbow/arrow/compute.h"
#include "oxbow/common/parse.h"
#include "oxbow/lake/tiering_internal.h"

namespace oxbow::lake {

using nlohmann::json;

namespace {

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

Result<double> ParseDeleteRatio(const std::string& text) {
  double value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || !(value > 0.0 && value <= 1.0)) {
    return Status::Invalid(std::string(kDeleteRatioProperty) + " must be a number in (0, 1], got " +
                           Quote(text));
  }
  return value;
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

iceberg::TableOptions LakeTableOptions() {
  iceberg::TableOptions options;
  options.commit_attempts = 1;
  return options;
}

Status ReloadOffsets(LakeTable& s) {
  RETURN_NOT_OK(s.table->Refresh());
  RETURN_NOT_OK(s.LoadOffsets());
  s.offsets_stale = false;
  return Status::OK();
}

namespace {

// Loads what the owner of `s`'s lake committed since.
Status FollowLake(const LakeOptions& options, iceberg::Catalog& catalog, LakeTable& s)
    OXBOW_REQUIRES(s.work) {
  auto current = catalog.CurrentMetadata(s.lake_id);
  if (current.status().IsNotFound()) return Status::OK();  // the owner has not created it yet
  RETURN_NOT_OK(current.status());
  if (s.table && s.table->metadata_file() == current->location) return Status::OK();
  std::unique_ptr<iceberg::IcebergTable> table;
  ASSIGN_OR_RAISE(table, iceberg::IcebergTable::Load(options.fs, s.access.catalog, s.lake_id));
  if (table->metadata().Property(internal::kTableIdProperty, "") !=
      std::to_string(s.descriptor.table_id)) {
    return Status::OK();  // a dropped table's, which the owner replaces
  }
  s.table = std::move(table);
  s.tiered.assign(static_cast<size_t>(s.descriptor.buckets), 0);
  return s.LoadOffsets();
}

}  // namespace

Status FollowRound(engine::Engine* engine, const LakeOptions& options, iceberg::Catalog& catalog,
                   LakeTable& s) {
  RETURN_NOT_OK(FollowLake(options, catalog, s));
  std::vector<int64_t> floor;
  if (s.changelog) {
    MutexLock changelog_work(s.changelog->work);
    RETURN_NOT_OK(FollowLake(options, catalog, *s.changelog));
    floor = s.FloorOffsets();
  } else {
    floor = s.FloorOffsets();
  }
  RETURN_NOT_OK(SetRetentionFloors(engine, s.descriptor.name, floor));
  ASSIGN_OR_RAISE(auto status, engine->DescribeTable(s.descriptor.name));
  const bool caught_up = std::all_of(status.buckets.begin(), status.buckets.end(), [&](auto& b) {
    return static_cast<size_t>(b.bucket) < floor.size() && b.next_offset <= floor[b.bucket];
  });
  if (caught_up) s.SetCaughtUp(WallMs());
  return Status::OK();
}

Result<bool> TieringService::OpenLakeTable(LakeTable& state,
                                           const iceberg::TableIdentifier& lake_id) {
  const catalog::TableDescriptor& descriptor = state.descriptor;
  state.lake_id = lake_id;
  state.location = catalog_->TableLocation(lake_id);
  auto loaded = iceberg::IcebergTable::Load(options_.fs, catalog_, lake_id, LakeTableOptions());
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
    ASSIGN_OR_RAISE(state.table,
                    iceberg::IcebergTable::Create(
                        options_.fs, catalog_, lake_id, state.schema.iceberg_schema, state.spec,
                        {{internal::kTableIdProperty, table_id}}, LakeTableOptions()));
    created = true;
  } else {
    return loaded.status();
  }
  state.tiered.assign(static_cast<size_t>(descriptor.buckets), 0);
  RETURN_NOT_OK(state.LoadOffsets());
  return created;
}

std::string LakeTable::Error() const {
  if (round_error.empty() || maintenance_error.empty()) return round_error + maintenance_error;
  return round_error + "; " + maintenance_error;
}

void LakeTable::NoteFailedCommit() {
  orphans_possible = true;
  if (changelog) {
    MutexLock changelog_work(changelog->work);
    changelog->orphans_possible = true;
  }
}

std::map<std::string, std::string> LakeTable::Summary() const {
  std::map<std::string, std::string> summary = {{internal::kTieredOffsetsKey, OffsetsJson(tiered)}};
  if (std::any_of(start.begin(), start.end(), [](int64_t o) { return o > 0; })) {
    summary[internal::kStartOffsetsKey] = OffsetsJson(start);
  }
  return summary;
}

Status LakeTable::LoadOffsets() {
  ASSIGN_OR_RAISE(tiered, internal::SummaryOffsets(*table, tiered.size()));
  ASSIGN_OR_RAISE(start,
                  internal::SummaryOffsets(*table, tiered.size(), internal::kStartOffsetsKey));
  return Status::OK();
}

std::vector<int64_t> LakeTable::FloorOffsets() const {
  std::vector<int64_t> floor = tiered;
  if (changelog) {
    for (size_t b = 0; b < floor.size() && b < changelog->tiered.size(); ++b) {
      floor[b] = std::min(floor[b], changelog->tiered[b]);
    }
  }
  return floor;
}

std::vector<std::optional<int64_t>> LakeTable::EarliestOffsets(
    const std::vector<std::optional<int64_t>>& known) const {
  // A bucket without a lake row gains its first only as tiering moves its offset up past
  // where the lake's copy starts (a bucket whose offsets all left the log has none to find).
  bool unknown_tiered = known.size() != tiered.size();
  for (size_t b = 0; b < known.size() && b < tiered.size(); ++b) {
    if (!known[b] && tiered[b] > (b < start.size() ? start[b] : 0)) unknown_tiered = true;
  }
  if (!unknown_tiered) return known;
  auto earliest = EarliestLakeOffsets(access, descriptor, known);
  if (!earliest.ok()) {
    // Left out of the status (describe_table still answers); read again at the next publish.
    spdlog::debug("lake: '{}': cannot read the earliest offsets: {}", descriptor.name,
                  earliest.status().message());
    return {};
  }
  return std::move(earliest).ValueOrDie();
}

void LakeTable::Publish(const std::string& error) {
  auto status = std::make_shared<LakeTableStatus>();
  status->enabled = enabled;
  status->tiered_offsets = tiered;
  status->start_offsets = start;
  status->error = error;
  if (table) {
    status->metadata_location = table->CurrentSnapshot() ? table->metadata_file() : "";
    status->snapshots = static_cast<int64_t>(table->metadata().snapshots.size());
    for (const auto& snapshot : table->metadata().snapshots) {
      if (snapshot.operation() == "append") {
        status->last_tiered_ms = std::max(status->last_tiered_ms, snapshot.timestamp_ms);
      }
    }
    if (const auto* snap = table->CurrentSnapshot()) {
      auto it = snap->summary.find("total-data-files");
      if (it != snap->summary.end()) {
        // Written by us, but read back from disk: a bad value is shown as 0, never thrown.
        auto files = ParseInt64(it->second);
        if (files.ok()) status->data_files = *files;
      }
    }
  }
  if (changelog) {
    MutexLock changelog_work(changelog->work);
    status->changelog = true;
    status->changelog_tiered_offsets = changelog->tiered;
    status->changelog_start_offsets = changelog->start;
    const iceberg::IcebergTable* t = changelog->table.get();
    if (t && t->CurrentSnapshot()) status->changelog_metadata_location = t->metadata_file();
  }
  std::shared_ptr<const LakeTableStatus> previous = Published().first;
  const bool log_table = descriptor.primary_key.empty() && !changelog_table;
  if (enabled && log_table && !status->metadata_location.empty()) {
    const bool same = previous && previous->metadata_location == status->metadata_location;
    status->earliest_offsets =
        same ? previous->earliest_offsets
             : EarliestOffsets(previous ? previous->earliest_offsets
                                        : std::vector<std::optional<int64_t>>{});
  }
  MutexLock lock(status_mu);
  if (published_) status->damaged_files = published_->damaged_files;
  published_ = std::move(status);
}

void LakeTable::PublishDamaged(const std::map<std::string, Clock::time_point>& live,
                               std::vector<DamagedDataFile> damaged) {
  MutexLock lock(status_mu);
  if (!published_) return;
  auto status = std::make_shared<LakeTableStatus>(*published_);
  auto& known = status->damaged_files;
  // Keep what is still live, add what is new.
  std::erase_if(known, [&](const DamagedDataFile& d) { return !live.count(d.path); });
  for (auto& d : damaged) {
    if (std::none_of(known.begin(), known.end(),
                     [&](const DamagedDataFile& k) { return k.path == d.path; })) {
      known.push_back(std::move(d));
    }
  }
  published_ = std::move(status);
}

void LakeTable::SetCaughtUp(int64_t ms) {
  MutexLock lock(status_mu);
  caught_up_ms_ = ms;
}

std::pair<std::shared_ptr<const LakeTableStatus>, int64_t> LakeTable::Published() const {
  MutexLock lock(status_mu);
  return {published_, caught_up_ms_};
}

}  // namespace oxbow::lake
