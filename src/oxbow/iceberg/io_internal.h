// File helpers shared by the iceberg module (not part of its face).
#pragma once

#include <cstdint>
#include <string>

#include "oxbow/common/file_system.h"

namespace oxbow::iceberg {

Result<std::string> ReadWholeFile(FileSystem* fs, const std::string& path);
// Creates or truncates `path`, writes `bytes` and, when `sync`, fsyncs the file.
Status WriteWholeFile(FileSystem* fs, const std::string& path, std::string_view bytes, bool sync);
// Moves `from` to `to` only if `to` does not exist; AlreadyExists otherwise (and `from` stays).
// On a PosixFileSystem this is renameat2(RENAME_NOREPLACE), falling back to link(2) + unlink
// where the file system lacks it; both are atomic. FileSystem (common/) has no such call, so
// for any other implementation (test fault injectors) it checks then renames, which is only
// atomic against writers in this process. See docs/iceberg.md.
Status RenameNoReplace(FileSystem* fs, const std::string& from, const std::string& to);
// A random (version 4) UUID, "xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx".
std::string RandomUuid();
// A random positive 63-bit id.
int64_t RandomId();
int64_t NowMillis();

}  // namespace oxbow::iceberg
