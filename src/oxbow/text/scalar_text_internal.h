// Text forms of single values, shared by the writers and readers (internal to the text module).
// docs/text-formats.md describes every mapping.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "oxbow/arrow/type.h"
#include "oxbow/common/status.h"

namespace oxbow::text::internal {

// --- formatting (each appends to `out`) ---

// Shortest text that reads back to the same value; integral values get ".0"; non-finite values
// are "NaN", "Infinity", "-Infinity".
void AppendDouble(double v, std::string* out);
void AppendFloat(float v, std::string* out);
// The unscaled value with a decimal point inserted `scale` digits from the right: "-123.45".
// A negative scale appends zeros.
void AppendDecimal(__int128 unscaled, int32_t scale, std::string* out);
// "YYYY-MM-DD" (proleptic Gregorian; years outside 0..9999 get a sign and more digits).
void AppendDate(int64_t days_since_epoch, std::string* out);
// ISO-8601 "YYYY-MM-DDTHH:MM:SS" plus 3/6/9 fraction digits for ms/us/ns. With a timezone: a
// fixed offset "+HH:MM" shows local time with that suffix; anything else shows UTC with "Z".
void AppendTimestamp(int64_t value, arrow::TimeUnit unit, const std::string& timezone,
                     std::string* out);
// RFC 4648 base64 with padding.
void AppendBase64(std::string_view bytes, std::string* out);
// A JSON string literal (with quotes); invalid UTF-8 bytes become U+FFFD.
void AppendJsonString(std::string_view s, std::string* out);

// --- parsing ---

Result<int64_t> ParseInt64(std::string_view text);
Result<uint64_t> ParseUInt64(std::string_view text);
// Also accepts NaN/Infinity/-Infinity (any case, "inf" too) and a leading '+'.
Result<double> ParseDouble(std::string_view text);
Result<float> ParseFloat(std::string_view text);
// true/false, any case.
Result<bool> ParseBool(std::string_view text);
// "-123.45", "1.5e3": exact; fails when the value needs more fractional digits than `scale`
// or more digits than `precision`.
Result<__int128> ParseDecimal(std::string_view text, int32_t precision, int32_t scale);
// "YYYY-MM-DD" to days since the epoch.
Result<int32_t> ParseDate(std::string_view text);
// "YYYY-MM-DD[(T| )HH:MM[:SS[.fraction]]][Z|+HH:MM|-HH:MM|+HHMM|+HH]" to a count of `unit`
// since the epoch in UTC. Without an offset the text is taken as UTC. Fraction digits beyond
// the unit must be zeros.
Result<int64_t> ParseTimestamp(std::string_view text, arrow::TimeUnit unit);
// RFC 4648 base64; padding optional.
Result<std::string> DecodeBase64(std::string_view text);

// True when `s` is well-formed UTF-8.
bool IsValidUtf8(std::string_view s);

// Number of Unicode code points in UTF-8 text (continuation bytes are not counted).
int64_t CodePointCount(std::string_view s);

}  // namespace oxbow::text::internal
