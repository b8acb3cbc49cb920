// Integers from text, without exceptions: for metadata read back from disk, table properties
// and command-line arguments, where a bad value must be an error the caller reports, never a
// throw (a throw on a background thread terminates the server).
#pragma once

#include <cstdint>
#include <string_view>

#include "oxbow/common/status.h"

namespace oxbow {

// The whole of `text` as a base-10 integer: an optional '-' then digits; no spaces, no '+', no
// other trailing characters. Invalid naming the (quoted, bounded) text otherwise, or when the
// value does not fit.
Result<int64_t> ParseInt64(std::string_view text);
// As ParseInt64, for int32_t.
Result<int32_t> ParseInt32(std::string_view text);
// A duration in milliseconds: a non-negative integer with an optional unit, "ms" (the default),
// "s", "m" (or "min"), "h" or "d" ("90s", "10m", "1h", "5000"). Invalid naming the text otherwise,
// or when it overflows.
Result<int64_t> ParseDurationMs(std::string_view text);

}  // namespace oxbow
