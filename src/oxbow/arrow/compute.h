// Small kernels over arrays and batches: gather rows, cast between types.
#pragma once

#include <cstdint>
#include <vector>

#include "oxbow/arrow/record_batch.h"

namespace oxbow::arrow {

// A new array of `column`'s values at `rows`, in that order (values are copied; nested types
// take their children's values too).
Result<Array> TakeRows(const Array& column, const std::vector<int32_t>& rows);
// TakeRows over every column.
Result<RecordBatchPtr> TakeRows(const RecordBatch& batch, const std::vector<int32_t>& rows);

// Casts `column` to `to`. Supported: any type to itself (no copy); integers to a wider integer
// type that holds every value (int8/16/32 -> int32/int64, uint8/16 -> int32/int64, uint32 ->
// int64); the reverse, int32/int64 to a narrower integer type (int8/16/32, uint8/16/32),
// refusing a value that does not fit with Invalid; timestamps between units (to a coarser unit
// rounds toward negative infinity) and time zones (the instant is kept). Anything else is
// NotImplemented naming both types. Also the widenings of schema evolution: int8 -> int16,
// float -> double, decimal128 to a larger precision with the same scale; and back (a read in an
// earlier schema version): int16 -> int8 and decimal128 to a smaller precision refusing a value
// that does not fit, double -> float rounding to the nearest float (a finite value beyond
// float's range is refused). Nested columns of the same shape cast child by child, and a
// fixed_size_list casts to a list and back (a valid list of another length is refused). Structs
// whose fields all carry field ids (metadata kFieldIdKey), in the column's type and in `to`, cast
// field by id, at any depth (schema evolution): a field of `to` the column lacks is null, one
// `to` lacks is gone, a renamed one comes under `to`'s name.
Result<Array> Cast(const Array& column, const DataType& to);

// An array of `length` nulls of `type` (nested types too: empty lists, structs of nulls).
Result<Array> MakeNullArray(const DataType& type, int64_t length);

}  // namespace oxbow::arrow
