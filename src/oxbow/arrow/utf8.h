// UTF-8 validation of `string` values: the Arrow format requires them to be valid UTF-8, and
// readers such as DuckDB refuse a whole Parquet file over one bad value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "oxbow/arrow/array.h"
#include "oxbow/common/status.h"

namespace oxbow::arrow {

// True when no byte of [data, data + size) is 0x80 or above. Reads 16 bytes per step.
bool IsAscii(const uint8_t* data, size_t size);

// The length of the longest prefix of `text` that is well-formed UTF-8 (Unicode 15, table 3-7);
// text.size() when all of it is. Overlong forms, surrogates (U+D800..U+DFFF), code points above
// U+10FFFF, stray continuation bytes and truncated sequences end the prefix.
size_t ValidUtf8Prefix(std::string_view text);
inline bool IsValidUtf8(std::string_view text) { return ValidUtf8Prefix(text) == text.size(); }

// Checks every non-null value of a string array (whose offsets are valid); Invalid naming the
// first bad row. All-ASCII data is settled by one pass of IsAscii over the values; other data
// by one pass of ValidUtf8Prefix over them all plus a look at each value's first byte, and
// value by value only when that fails.
Status ValidateUtf8(const Array& strings);

// ValidateUtf8 on a string array, or on every string array under a nested one (its child arrays
// whole); OK for other types. The error names the child that holds the bad value.
Status ValidateUtf8Tree(const Array& array);

}  // namespace oxbow::arrow
