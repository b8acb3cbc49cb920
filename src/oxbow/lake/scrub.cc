#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <unistd.h>

#include <map>
#include <set>

#include "oxbow/lake/tiering_internal.h"
#include "oxbow/parquet/verify.h"

namespace oxbow::lake {

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

Status RemoveFailedCommitFiles(iceberg::Catalog& catalog, FileSystem* fs, LakeTable& s) {
  if (!s.orphans_possible || s.dropped || !s.table) return Status::OK();
  ASSIGN_OR_RAISE(auto current, catalog.CurrentMetadata(s.lake_id));
  if (current.version != s.table->version()) return Status::OK();
  RETURN_NOT_OK(RemoveOrphanFiles(fs, *s.table));
  s.orphans_possible = false;
  return Status::OK();
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
    const auto until = Clock::now() + duration;
    MutexLock lock(mu_);
    while (!stopping_ && Clock::now() < until) wake_.WaitFor(mu_, until - Clock::now());
    return !stopping_;
  };
  while (true) {
    std::map<std::string, Clock::time_point> live;
    std::map<int64_t, Listing> listed;
    for (const auto& descriptor : engine_->ListTables()) {
      auto found = StateFor(descriptor);
      if (!found.ok()) continue;
      const std::shared_ptr<LakeTable>& state = *found;
      std::vector<std::string> paths;
      {
        MutexLock work(state->work);  // the table is one thread's at a time
        if (state->dropped || !state->enabled || !state->owner || !state->table) continue;
        LakeTable* changelog = state->changelog.get();
        OptionalMutexLock changelog_work(changelog ? &changelog->work : nullptr);
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
      state->PublishDamaged(live, std::move(damaged));
    }
    verified = std::move(live);
    listings = std::move(listed);
    if (!pause(std::chrono::seconds(1))) return;
  }
}

}  // namespace oxbow::lake
