// A lake for tests that counts every call its catalog and file system see, to prove that a path
// never touches the lake.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "oxbow/common/fault_injection_file_system.h"
#include "oxbow/iceberg/catalog.h"
#include "oxbow/lake/lake.h"

namespace oxbow::testing {

// Forwards to `base`, counting the calls.
class CountingCatalog : public iceberg::Catalog {
 public:
  explicit CountingCatalog(std::shared_ptr<iceberg::Catalog> base) : base_(std::move(base)) {}
  std::string TableLocation(const iceberg::TableIdentifier& table) const override {
    ++calls;
    return base_->TableLocation(table);
  }
  Result<iceberg::MetadataPointer> CurrentMetadata(const iceberg::TableIdentifier& table) override {
    ++calls;
    return base_->CurrentMetadata(table);
  }
  Result<iceberg::MetadataPointer> SwapMetadata(const iceberg::TableIdentifier& table,
                                                const iceberg::MetadataPointer& base,
                                                std::string_view metadata_json) override {
    ++calls;
    return base_->SwapMetadata(table, base, metadata_json);
  }
  Result<bool> TableExists(const iceberg::TableIdentifier& table) override {
    ++calls;
    return base_->TableExists(table);
  }
  Result<std::vector<iceberg::TableIdentifier>> ListTables(
      const std::string& namespace_name) override {
    ++calls;
    return base_->ListTables(namespace_name);
  }
  mutable std::atomic<int64_t> calls{0};

 private:
  std::shared_ptr<iceberg::Catalog> base_;
};

// A warehouse under `warehouse` whose catalog and file system count calls. Its options tier
// each table once when a node opens and then not for hours, so a test sees only its own calls.
struct CountingLake {
  explicit CountingLake(const std::string& warehouse)
      : catalog(std::make_shared<CountingCatalog>(
            std::make_shared<iceberg::FileCatalog>(fs, warehouse))) {
    options.warehouse = warehouse;
    options.fs = fs;
    options.catalog = catalog;
    options.freshness_ms = 4 * 3600 * 1000;
    options.maintenance_interval_ms = 3600 * 1000;
    options.scrub_interval_ms = 0;
  }
  // Catalog calls plus file reads, writes and syncs since the last Reset.
  int64_t Calls() const {
    const auto io = fs->counters();
    return catalog->calls + io.reads + io.writes + io.file_syncs + io.dir_syncs;
  }
  void Reset() {
    catalog->calls = 0;
    fs->ResetCounters();
  }
  // Whether tiering has created lake table `table`.
  bool HasTable(const iceberg::TableIdentifier& table) {
    auto exists = catalog->TableExists(table);
    return exists.ok() && *exists;
  }

  std::shared_ptr<FaultInjectionFileSystem> fs =
      std::make_shared<FaultInjectionFileSystem>(PosixFileSystem::Default());
  std::shared_ptr<CountingCatalog> catalog;
  lake::LakeOptions options;
};

}  // namespace oxbow::testing
