// A compact binary row encoding: what the Kafka side of bench/vs_kafka.py sends as one record
// per row (Kafka has no columns, so each row travels as one opaque value).
//
// A row is a null bitmap of ceil(columns / 8) bytes (bit i, least significant first: column i is
// null), then each non-null value in column order:
//   - signed integers, date32 and timestamps: zigzag LEB128 varint (Avro's int/long);
//   - unsigned integers: LEB128 varint;
//   - float and double: 4 or 8 bytes little-endian;
//   - bool: one byte, 0 or 1;
//   - string and binary: a LEB128 varint length, then the bytes;
//   - decimal128 and fixed_size_binary: the value's bytes as stored (16 or byte_width).
// There is no schema in the row: reader and writer agree on it beforehand, as with Avro.
#pragma once

#include <string>

#include "oxbow/arrow/record_batch.h"

namespace oxbow::bench {

// Appends row `row` of `batch` to `out`.
void AppendEncodedRow(const arrow::RecordBatch& batch, int64_t row, std::string* out);

}  // namespace oxbow::bench
