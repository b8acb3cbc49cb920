// The rows of the primary-key benchmarks: which key each upsert and lookup names, and each
// upsert's value. kv_bench, server_bench's upsert and lookup, pk_bench.py's keys and
// bench/FlussBench.java all follow these definitions, so every side writes the same keys.
#pragma once

#include <cstdint>
#include <string>

namespace oxbow::bench {

uint64_t SplitMix64(uint64_t x);

// `bytes` long: 'k' padding, then 16 hex digits of index * golden ratio mod 2^64 (distinct for
// distinct indices, and scattered).
std::string KeyOf(uint64_t index, int64_t bytes);

// `bytes` printable bytes: byte j is 33 + (byte j % 8 of SplitMix64(row * 65536 + j / 8)) % 94.
std::string ValueOf(uint64_t row, int64_t bytes);

// Upsert `row` names key KeyOf(UpsertKeyIndex(row, keyspace)); lookup `j` names
// KeyOf(LookupKeyIndex(j, keyspace)).
inline uint64_t UpsertKeyIndex(uint64_t row, uint64_t keyspace) {
  return SplitMix64(row) % keyspace;
}
inline uint64_t LookupKeyIndex(uint64_t lookup, uint64_t keyspace) {
  return SplitMix64(lookup + (uint64_t{1} << 40)) % keyspace;
}

}  // namespace oxbow::bench
