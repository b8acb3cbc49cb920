// The compact schema syntax of the CLI: "id int64 not null, name string, ts timestamp[us, tz=UTC]".
#pragma once

#include <string_view>

#include "oxbow/arrow/schema.h"
#include "oxbow/common/status.h"

namespace oxbow::cli {

// Fields are separated by commas outside brackets; each is "name type" plus an optional
// "not null" (or "null").
Result<arrow::SchemaPtr> ParseCompactSchema(std::string_view text);

}  // namespace oxbow::cli
