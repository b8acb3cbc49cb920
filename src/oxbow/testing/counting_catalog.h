// A lake catalog for tests that counts every call, to prove a path never touches the lake.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "oxbow/iceberg/catalog.h"

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

}  // namespace oxbow::testing
