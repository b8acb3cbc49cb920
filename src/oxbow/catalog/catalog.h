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

// The durable set of tables of one data dir, kept in <dir>/catalog.json. Every change is
// written to a temporary file, fsynced and renamed over the old one, so a crash leaves either
// the old or the new catalog.
class Catalog {
 public:
  static Result<std::unique_ptr<Catalog>> Open(std::shared_ptr<FileSystem> fs,
                                               const std::string& dir);

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
  Catalog(std::shared_ptr<FileSystem> fs, std::string dir)
      : fs_(std::move(fs)), dir_(std::move(dir)) {}
  Status Persist(const std::map<std::string, TableDescriptor>& tables) const;

  std::shared_ptr<FileSystem> fs_;
  std::string dir_;
  mutable std::mutex mu_;
  std::map<std::string, TableDescriptor> tables_;
  int64_t next_table_id_ = 1;
};

}  // namespace oxbow::catalog
