// Input files of CLI commands (internal to the cli module).
#pragma once

#include <memory>
#include <string>

#include "oxbow/common/buffer.h"
#include "oxbow/common/status.h"

namespace oxbow::cli {

// "standard input" for "-", else the path in quotes, for messages.
std::string DisplayName(const std::string& path);

// The bytes of `path` ("-" is stdin): memory-mapped when it is a regular file, read through
// when it is a pipe or a device.
Result<std::shared_ptr<Buffer>> ReadInput(const std::string& path);

}  // namespace oxbow::cli
