// Fuzzes the JSON Lines and CSV readers: any input must give batches or an error, never a crash.
// The first byte picks the format and whether the schema is inferred or fixed (every type,
// nested ones too).
#include <cstddef>
#include <cstdint>
#include <string>

#include "oxbow/text/text.h"

namespace {

using oxbow::arrow::DataType;
using oxbow::arrow::Field;
using oxbow::arrow::Schema;
using oxbow::arrow::TimeUnit;

const oxbow::arrow::SchemaPtr& EveryTypeSchema() {
  static const auto schema = std::make_shared<const Schema>(std::vector<Field>{
      {"b", DataType::Bool()},
      {"i8", DataType::Int8()},
      {"i64", DataType::Int64()},
      {"u64", DataType::UInt64()},
      {"f32", DataType::Float32()},
      {"f64", DataType::Float64()},
      {"s", DataType::String()},
      {"bin", DataType::Binary()},
      {"d", DataType::Date32()},
      {"ts", DataType::Timestamp(TimeUnit::kNano, "+01:00")},
      {"dec", DataType::Decimal128(38, 10)},
      {"fsb", DataType::FixedSizeBinary(3)},
      {"nn", DataType::Int32(), false},
      {"l", DataType::List({"item", DataType::Int64()})},
      {"st", DataType::Struct(
                 {{"a", DataType::Int32(), false},
                  {"m", DataType::Map(DataType::Int32(),
                                      DataType::FixedSizeList({"item", DataType::String()}, 2))}})},
  });
  return schema;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const auto format =
      (data[0] & 1) ? oxbow::text::TextFormat::kCsv : oxbow::text::TextFormat::kJsonLines;
  const bool infer = (data[0] & 2) != 0;
  std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  oxbow::text::ReadOptions options;
  options.batch_rows = 1 + (data[0] >> 4);
  options.infer_rows = (data[0] >> 2) & 3;
  options.ignore_unknown_fields = (data[0] & 8) != 0;
  auto reader =
      oxbow::text::TextReader::Make(format, text, infer ? nullptr : EveryTypeSchema(), options);
  if (!reader.ok()) return 0;
  auto writer = oxbow::text::TextWriter::Make(format, (*reader)->schema());
  if (!writer.ok()) __builtin_trap();
  std::string out;
  while (true) {
    auto batch = (*reader)->Next();
    if (!batch.ok() || !*batch) break;
    if (!(*batch)->Validate().ok()) __builtin_trap();
    if (!(*writer)->Write(**batch, &out).ok()) __builtin_trap();
  }
  return 0;
}
