// The durable catalog of all tables in a data dir.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "oxbow/catalog/descriptor.h"
#include "oxbow/common/file_system.h"
#include "oxbow/common/status.h"

namespace oxbow::catalog {

// Where a catalog keeps a copy of catalog.json outside its data dir (the warehouse), from which
// a lost data dir is rebuilt (docs/operations.md#recovering-a-lost-data-dir). fs null: nowhere.
struct CatalogCopy {
  std::shared_ptr<FileSystem> fs;
  std::string path;
};

// The durable set of tables of one data dir, kept in <dir>/catalog.json. Every change is
// written to a temporary file, fsynced and renamed over the old one, so a crash leaves either
// the old or the new catalog. With a `copy`, each change is first written there (a change whose
// copy fails is refused), and Open writes it once.
class Catalog {
 public:
  static Result<std::unique_ptr<Catalog>> Open(std::shared_ptr<FileSystem> fs,
                                               const std::string& dir, CatalogCopy copy = {});
  // Writes `copy`'s catalog as <dir>/catalog.json, once it parses (a lost data dir's rebuild).
  static Status RestoreFromCopy(const CatalogCopy& copy, FileSystem& fs, const std::string& dir);

  // Assigns the id and creation time. AlreadyExists unless `if_not_exists`, in which case the
  // existing table is returned.
  Result<TableDescriptor> Create(TableDescriptor table, bool if_not_exists);
  // Adds `table` as it is, id and creation time included (a copy of a table kept elsewhere).
  // AlreadyExists when the name or the id is taken.
  Status Adopt(const TableDescriptor& table);
  Status Drop(const std::string& name);
  // Replaces the descriptor of the existing table of the same name and id (an alter).
  Status Replace(const TableDescriptor& table);
  Result<TableDescriptor> Get(const std::string& name) const;
  std::vector<TableDescriptor> List() const;

 private:
  Catalog(std::shared_ptr<FileSystem> fs, std::string dir, CatalogCopy copy)
      : fs_(std::move(fs)), dir_(std::move(dir)), copy_(std::move(copy)) {}
  Status Load(std::string_view content, const std::string& path);
  Status Persist(const std::map<std::string, TableDescriptor>& tables) const;

  std::shared_ptr<FileSystem> fs_;
  std::string dir_;
  CatalogCopy copy_;
  mutable std::mutex mu_;
  std::map<std::string, TableDescriptor> tables_;
  int64_t next_table_id_ = 1;
};

}  // namespace oxbow::catalog
