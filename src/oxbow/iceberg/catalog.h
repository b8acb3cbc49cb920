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
#include <optional>
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

// A pointer as a PointerStore keeps it: {"location": ..., "version": N}. Parsing fails with
// Corruption naming `where` (the file or znode it was read from).
std::string PointerToJson(const MetadataPointer& pointer);
Result<MetadataPointer> PointerFromJson(std::string_view json, const std::string& where);

// Where a PointerCatalog keeps each table's current-metadata pointer: a small record replaced
// by compare-and-swap (a local file here; a ZooKeeper znode in cluster mode, docs/cluster.md).
class PointerStore {
 public:
  virtual ~PointerStore() = default;
  // The table's pointer as stored (its file may be gone); NotFound when there is none.
  virtual Result<MetadataPointer> Read(const TableIdentifier& table) = 0;
  // Stores `next` as the table's pointer provided the stored one is still `expected` (none:
  // std::nullopt). AlreadyExists when another writer changed it meanwhile.
  virtual Status Replace(const TableIdentifier& table,
                         const std::optional<MetadataPointer>& expected,
                         const MetadataPointer& next) = 0;
  // The tables of a namespace that have a pointer, sorted by name.
  virtual Result<std::vector<TableIdentifier>> List(const std::string& namespace_name) = 0;
};

// Pointers as files <dir>/<namespace>.<name>.json on `fs`, each replaced atomically (write,
// fsync, rename, fsync the directory). One process owns them (the data dir's lock); replacements
// within it are serialised.
class LocalPointerStore : public PointerStore {
 public:
  LocalPointerStore(std::shared_ptr<FileSystem> fs, std::string dir);

  Result<MetadataPointer> Read(const TableIdentifier& table) override;
  Status Replace(const TableIdentifier& table, const std::optional<MetadataPointer>& expected,
                 const MetadataPointer& next) override;
  Result<std::vector<TableIdentifier>> List(const std::string& namespace_name) override;

 private:
  std::string FileName(const TableIdentifier& table) const;
  Result<MetadataPointer> ReadLocked(const TableIdentifier& table);

  std::shared_ptr<FileSystem> fs_;
  std::string dir_;
  std::mutex mu_;
};

// A catalog for object stores, which have no rename: the table files (data, manifests and every
// metadata file) live in <warehouse>/<namespace>/<name> on `fs` (e.g. S3), each metadata file
// written once under a new name, <N>-<uuid>.metadata.json; the pointer to each table's current
// one is kept in a PointerStore. A swap is atomic because only the pointer makes a metadata
// file current: a crash before the pointer moves leaves an unreferenced object, never a
// half-published table. docs/storage.md, "Commits without rename".
class PointerCatalog : public Catalog {
 public:
  PointerCatalog(std::shared_ptr<FileSystem> fs, std::string warehouse,
                 std::shared_ptr<PointerStore> pointers);

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
  // The stored pointer (none when there is none) and whether its metadata file exists.
  Result<std::optional<MetadataPointer>> Stored(const TableIdentifier& table, bool* file_exists);

  std::shared_ptr<FileSystem> fs_;
  std::string warehouse_;
  std::shared_ptr<PointerStore> pointers_;
};

}  // namespace oxbow::iceberg
