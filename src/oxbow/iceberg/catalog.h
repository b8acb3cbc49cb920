// Catalog: which metadata file is a table's current one, and the atomic swap that commits a new
// one. Every commit of an IcebergTable goes through it (docs/iceberg.md, "Catalogs").
//
// FileCatalog is the file-system ("Hadoop") catalog: no service, the pointer is the newest
// <location>/metadata/v<N>.metadata.json, and a swap publishes v<N+1> with a rename that refuses
// to replace, so of two writers racing for the same version exactly one wins.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "oxbow/common/file_system.h"

namespace oxbow::iceberg {

// A table's name in a catalog: "shop.orders" is {"shop", "orders"}.
struct TableIdentifier {
  std::string namespace_name;  // may be empty: the table sits at the catalog's root
  std::string name;

  std::string ToString() const;
  bool operator==(const TableIdentifier&) const = default;
};

// A table's current metadata file as its catalog records it.
struct MetadataPointer {
  // The file, as written into metadata-log and handed to readers (a path or file:// URI).
  std::string location;
  // 1 for the table's first metadata, +1 per commit; 0 for "no metadata yet".
  int64_t version = 0;
};

class Catalog {
 public:
  virtual ~Catalog() = default;

  // Where the table's data and metadata files live.
  virtual std::string TableLocation(const TableIdentifier& table) const = 0;
  // The table's current metadata file; NotFound when the table has none.
  virtual Result<MetadataPointer> CurrentMetadata(const TableIdentifier& table) = 0;
  // Stores `metadata_json` and makes it the table's current metadata, provided `base` is still
  // the current one (a default MetadataPointer when creating the table). When another writer
  // got there first: AlreadyExists, and the table is as that writer left it.
  virtual Result<MetadataPointer> SwapMetadata(const TableIdentifier& table,
                                               const MetadataPointer& base,
                                               std::string_view metadata_json) = 0;
  // Whether the table has metadata.
  virtual Result<bool> TableExists(const TableIdentifier& table) = 0;
  // The tables of a namespace that have metadata, sorted by name.
  virtual Result<std::vector<TableIdentifier>> ListTables(const std::string& namespace_name) = 0;
};

struct FileCatalogOptions {
  // fsync each metadata file and the metadata directory before a swap counts. Default: true.
  bool sync = true;
};

class FileCatalog : public Catalog {
 public:
  // Tables live in <warehouse>/<namespace>/<name> (<warehouse>/<name> for an empty namespace);
  // `warehouse` is a local path or file:// URI, kept as given in every location the catalog
  // hands out ("" is the current directory).
  FileCatalog(std::shared_ptr<FileSystem> fs, std::string warehouse,
              FileCatalogOptions options = {});

  std::string TableLocation(const TableIdentifier& table) const override;
  // The newest version: version-hint.text, then probing v<N+1>, v<N+2>, ... since the hint is
  // written after the publish and may lag; the directory is listed when the hint is missing.
  Result<MetadataPointer> CurrentMetadata(const TableIdentifier& table) override;
  // Writes metadata/.v<N+1>.metadata.json.<uuid>.tmp, publishes it as v<N+1>.metadata.json
  // with FileSystem::RenameNoReplace, syncs the directory, then replaces version-hint.text.
  Result<MetadataPointer> SwapMetadata(const TableIdentifier& table, const MetadataPointer& base,
                                       std::string_view metadata_json) override;
  Result<bool> TableExists(const TableIdentifier& table) override;
  Result<std::vector<TableIdentifier>> ListTables(const std::string& namespace_name) override;

 private:
  std::string MetadataDir(const TableIdentifier& table) const;  // file-system path
  MetadataPointer Pointer(const TableIdentifier& table, int64_t version) const;

  std::shared_ptr<FileSystem> fs_;
  std::string warehouse_;
  FileCatalogOptions options_;
};

// A catalog for object stores, which have no rename: the table files (data, manifests and every
// metadata file) live in <warehouse>/<namespace>/<name> on `fs` (e.g. S3), each metadata file
// written once under a new name, <N>-<uuid>.metadata.json; the pointer to each table's current
// one is a small local file, <pointer_dir>/<namespace>.<name>.json, replaced atomically (write,
// fsync, rename, fsync the directory) on `local_fs`. A swap is atomic because only the pointer
// makes a metadata file current: a crash before the rename leaves an unreferenced object, never
// a half-published table. One process owns the pointers (the data dir's lock); swaps within it
// are serialised. docs/storage.md, "Commits without rename".
class LocalPointerCatalog : public Catalog {
 public:
  LocalPointerCatalog(std::shared_ptr<FileSystem> fs, std::string warehouse,
                      std::shared_ptr<FileSystem> local_fs, std::string pointer_dir);

  std::string TableLocation(const TableIdentifier& table) const override;
  // The pointer's metadata file; NotFound when there is no pointer or its file is gone (the
  // table's files were removed).
  Result<MetadataPointer> CurrentMetadata(const TableIdentifier& table) override;
  // Writes <location>/metadata/<N>-<uuid>.metadata.json (durable once the store acknowledges
  // it), then replaces the pointer.
  Result<MetadataPointer> SwapMetadata(const TableIdentifier& table, const MetadataPointer& base,
                                       std::string_view metadata_json) override;
  Result<bool> TableExists(const TableIdentifier& table) override;
  Result<std::vector<TableIdentifier>> ListTables(const std::string& namespace_name) override;

 private:
  std::string PointerName(const TableIdentifier& table) const;
  Result<MetadataPointer> CurrentLocked(const TableIdentifier& table);

  std::shared_ptr<FileSystem> fs_;
  std::string warehouse_;
  std::shared_ptr<FileSystem> local_fs_;
  std::string pointer_dir_;
  std::mutex mu_;
};

}  // namespace oxbow::iceberg
