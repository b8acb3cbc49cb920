// What UTF-8 validation costs the put path (arrow::ValidateUtf8, run on every string column of
// every DoPut batch): MB/s over the string columns of the 20-column dataset, whose values are
// ASCII (the fast path), and over the same values with multibyte characters mixed in (the full
// validator). MB/s are 10^6 bytes per CPU second; `dataset_MBps` relates the time to the whole
// batches a put carries. docs/bench.md.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "datagen.h"
#include "oxbow/arrow/builder.h"
#include "oxbow/arrow/utf8.h"

namespace oxbow::bench {
namespace {

constexpr int64_t kBatches = 16;
constexpr int64_t kRows = 65536;

struct Dataset {
  std::vector<arrow::Array> strings;  // every string column of every batch
  int64_t string_bytes = 0;           // their values' bytes
  int64_t batch_bytes = 0;            // every buffer of every column: what the puts carry
};

template <typename T>
T OrDie(Result<T> result) {
  if (!result.ok()) {
    std::fprintf(stderr, "utf8_bench: %s\n", result.status().ToString().c_str());
    std::exit(1);
  }
  return std::move(result).ValueOrDie();
}

int64_t ValueBytes(const arrow::Array& strings) {
  const int32_t* offsets = strings.raw_offsets();
  return offsets[strings.length()] - offsets[0];
}

// The dataset's strings with every third character replaced by a 2-, 3- or 4-byte one in turn
// (é, €, 日, 🚀), so that no value is ASCII-only for long.
Result<arrow::Array> WithMultibyte(const arrow::Array& strings) {
  static const char* const kWide[] = {"\u00e9", "\u20ac", "\u65e5", "\U0001F680"};
  arrow::BinaryBuilder builder(arrow::DataType::String());
  std::string value;
  for (int64_t row = 0; row < strings.length(); ++row) {
    if (strings.IsNull(row)) {
      RETURN_NOT_OK(builder.AppendNull());
      continue;
    }
    value.clear();
    const std::string_view ascii = strings.GetView(row);
    for (size_t i = 0; i < ascii.size(); ++i) {
      if (i % 3 == 0) {
        value += kWide[(row + i) % 4];
      } else {
        value += ascii[i];
      }
    }
    RETURN_NOT_OK(builder.Append(value));
  }
  return builder.Finish();
}

Dataset MakeDataset(bool multibyte) {
  Dataset d;
  for (int64_t b = 0; b < kBatches; ++b) {
    auto batch = OrDie(MakeBenchBatch(b, kRows));
    for (int c = 0; c < batch->num_columns(); ++c) {
      arrow::Array column = batch->column(c);
      if (column.type().id() == arrow::TypeId::kString) {
        if (multibyte) column = OrDie(WithMultibyte(column));
        d.strings.push_back(column);
        d.string_bytes += ValueBytes(column);
      }
      for (const auto& buffer : column.data()->buffers)
        d.batch_bytes += buffer ? buffer->size() : 0;
    }
  }
  return d;
}

// MB (10^6 bytes) per second of CPU time when each iteration covers `bytes`.
benchmark::Counter MegabytesPerSecond(int64_t bytes) {
  return benchmark::Counter(static_cast<double>(bytes) / 1e6,
                            benchmark::Counter::kIsIterationInvariantRate);
}

void ValidateDataset(benchmark::State& state, const Dataset& d) {
  for (auto _ : state) {
    for (const auto& strings : d.strings) {
      Status st = arrow::ValidateUtf8(strings);
      if (!st.ok()) state.SkipWithError(st.message().c_str());
      benchmark::DoNotOptimize(st);
    }
  }
  state.counters["string_MBps"] = MegabytesPerSecond(d.string_bytes);
  state.counters["dataset_MBps"] = MegabytesPerSecond(d.batch_bytes);
  state.counters["string_MB"] = static_cast<double>(d.string_bytes) / 1e6;
  state.counters["dataset_MB"] = static_cast<double>(d.batch_bytes) / 1e6;
}

void BM_ValidateDatasetAscii(benchmark::State& state) {
  static const Dataset d = MakeDataset(/*multibyte=*/false);
  ValidateDataset(state, d);
}
BENCHMARK(BM_ValidateDatasetAscii)->Unit(benchmark::kMillisecond);

void BM_ValidateDatasetMultibyte(benchmark::State& state) {
  static const Dataset d = MakeDataset(/*multibyte=*/true);
  ValidateDataset(state, d);
}
BENCHMARK(BM_ValidateDatasetMultibyte)->Unit(benchmark::kMillisecond);

// The two loops on one 64 MiB buffer: the ASCII scan, and the full validator on Japanese text
// (3-byte characters only, so its ASCII skip never helps).
void BM_IsAscii(benchmark::State& state) {
  static const std::string text(64 << 20, 'a');
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        arrow::IsAscii(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
  }
  state.counters["MBps"] = MegabytesPerSecond(static_cast<int64_t>(text.size()));
}
BENCHMARK(BM_IsAscii)->Unit(benchmark::kMillisecond);

void BM_ValidUtf8PrefixThreeByte(benchmark::State& state) {
  static const std::string text = [] {
    std::string s;
    while (s.size() < (64 << 20)) s += "\u65e5\u672c\u8a9e";
    return s;
  }();
  for (auto _ : state) benchmark::DoNotOptimize(arrow::ValidUtf8Prefix(text));
  state.counters["MBps"] = MegabytesPerSecond(static_cast<int64_t>(text.size()));
}
BENCHMARK(BM_ValidUtf8PrefixThreeByte)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace oxbow::bench

BENCHMARK_MAIN();
