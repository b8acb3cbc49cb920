// File helpers shared by the iceberg module (not part of its face).
#pragma once

#include <cstdint>
#include <string>

#include "oxbow/common/file_system.h"

namespace oxbow::iceberg {

Result<std::string> ReadWholeFile(FileSystem* fs, const std::string& path);
// Creates or truncates `path`, writes `bytes` and, when `sync`, fsyncs the file.
Status WriteWholeFile(FileSystem* fs, const std::string& path, std::string_view bytes, bool sync);
// A random (version 4) UUID, "xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx".
std::string RandomUuid();
// A random positive 63-bit id.
int64_t RandomId();
int64_t NowMillis();

}  // namespace oxbow::iceberg
