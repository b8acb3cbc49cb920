// `oxbow selfcheck`: round-trips a batch of every supported type through Oxbow's IPC writer and
// reader (stream and file, every codec) and through the JSON Lines and CSV text forms.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>

#include "oxbow/arrow/builder.h"
#include "oxbow/arrow/ipc.h"
#include "oxbow/cli/commands.h"
#include "oxbow/text/text.h"

namespace oxbow::cli {

namespace ipc = arrow::ipc;
using arrow::Array;
using arrow::DataType;
using arrow::Field;
using arrow::RecordBatch;
using arrow::RecordBatchPtr;
using arrow::SchemaPtr;
using arrow::TimeUnit;

namespace {

std::vector<DataType> AllTypes() {
  return {DataType::Bool(),
          DataType::Int8(),
          DataType::Int16(),
          DataType::Int32(),
          DataType::Int64(),
          DataType::UInt8(),
          DataType::UInt16(),
          DataType::UInt32(),
          DataType::UInt64(),
          DataType::Float32(),
          DataType::Float64(),
          DataType::String(),
          DataType::Binary(),
          DataType::Date32(),
          DataType::Timestamp(TimeUnit::kSecond),
          DataType::Timestamp(TimeUnit::kMilli, "UTC"),
          DataType::Timestamp(TimeUnit::kMicro, "+05:30"),
          DataType::Timestamp(TimeUnit::kNano),
          DataType::Decimal128(9, 2),
          DataType::Decimal128(38, 10),
          DataType::FixedSizeBinary(4)};
}

// A deterministic pseudo-random value stream (xorshift), so a failure is reproducible.
class Rng {
 public:
  uint64_t Next() {
    state_ ^= state_ << 13;
    state_ ^= state_ >> 7;
    state_ ^= state_ << 17;
    return state_;
  }

 private:
  uint64_t state_ = 0x9E3779B97F4A7C15ull;
};

// Appends row `i` of a column of type `t`: every 7th row is null, rows 0 and 1 are the
// type's extremes, the rest pseudo-random.
Status AppendValue(arrow::ArrayBuilder* b, const DataType& t, int64_t i, Rng& rng) {
  if (i % 7 == 3) return b->AppendNull();
  const uint64_t r = rng.Next();
  auto num = [&](auto lo, auto hi, auto* typed) {
    using T = decltype(lo);
    T v = i == 0 ? lo : i == 1 ? hi : static_cast<T>(r);
    return typed->Append(v);
  };
  switch (t.id()) {
    case arrow::TypeId::kBool: return static_cast<arrow::BooleanBuilder*>(b)->Append(r & 1);
    case arrow::TypeId::kInt8: return num(INT8_MIN, INT8_MAX, static_cast<arrow::Int8Builder*>(b));
    case arrow::TypeId::kInt16:
      return num(INT16_MIN, INT16_MAX, static_cast<arrow::Int16Builder*>(b));
    case arrow::TypeId::kInt32:
      return num(INT32_MIN, INT32_MAX, static_cast<arrow::Int32Builder*>(b));
    case arrow::TypeId::kDate32:
      return static_cast<arrow::Int32Builder*>(b)->Append(static_cast<int32_t>(r % 100000) - 30000);
    case arrow::TypeId::kInt64:
      return num(INT64_MIN, INT64_MAX, static_cast<arrow::Int64Builder*>(b));
    case arrow::TypeId::kTimestamp: {
      // Within years 0001..9999 whatever the unit (ns covers 1677..2262 only).
      static constexpr int64_t kPerSecond[] = {1, 1000, 1000000, 1000000000};
      const int64_t per = kPerSecond[static_cast<int>(t.unit())];
      const int64_t range =
          std::min<int64_t>(int64_t{250000000000} * std::min<int64_t>(per, 1000000), INT64_MAX / 2);
      return static_cast<arrow::Int64Builder*>(b)->Append(
          static_cast<int64_t>(r % static_cast<uint64_t>(2 * range)) - range);
    }
    case arrow::TypeId::kUInt8:
      return num(uint8_t{0}, UINT8_MAX, static_cast<arrow::UInt8Builder*>(b));
    case arrow::TypeId::kUInt16:
      return num(uint16_t{0}, UINT16_MAX, static_cast<arrow::UInt16Builder*>(b));
    case arrow::TypeId::kUInt32:
      return num(uint32_t{0}, UINT32_MAX, static_cast<arrow::UInt32Builder*>(b));
    case arrow::TypeId::kUInt64:
      return num(uint64_t{0}, UINT64_MAX, static_cast<arrow::UInt64Builder*>(b));
    case arrow::TypeId::kFloat32: {
      float v = i == 0   ? -std::numeric_limits<float>::infinity()
                : i == 1 ? std::numeric_limits<float>::quiet_NaN()
                         : static_cast<float>(static_cast<int64_t>(r)) / 1e9f;
      return static_cast<arrow::FloatBuilder*>(b)->Append(v);
    }
    case arrow::TypeId::kFloat64: {
      double v = i == 0   ? std::numeric_limits<double>::infinity()
                 : i == 1 ? std::numeric_limits<double>::quiet_NaN()
                          : static_cast<double>(static_cast<int64_t>(r)) / 1e9;
      return static_cast<arrow::DoubleBuilder*>(b)->Append(v);
    }
    case arrow::TypeId::kString: {
      static const char* kWords[] = {"", "oxbow", "h\xC3\xA9llo, \"world\"", "line\nbreak",
                                     "\xE2\x9C\x93 \xF0\x9F\x8C\x8A"};
      return static_cast<arrow::BinaryBuilder*>(b)->Append(kWords[r % 5]);
    }
    case arrow::TypeId::kBinary: {
      std::string bytes(static_cast<size_t>(r % 9), '\0');
      for (auto& c : bytes) c = static_cast<char>(rng.Next());
      return static_cast<arrow::BinaryBuilder*>(b)->Append(bytes);
    }
    case arrow::TypeId::kFixedSizeBinary: {
      std::string bytes(static_cast<size_t>(t.byte_width()), '\0');
      for (auto& c : bytes) c = static_cast<char>(rng.Next());
      return static_cast<arrow::FixedSizeBinaryBuilder*>(b)->Append(bytes);
    }
    case arrow::TypeId::kDecimal128: {
      __int128 max = 1;
      for (int k = 0; k < t.precision(); ++k) max *= 10;
      --max;
      __int128 v = i == 0 ? -max : i == 1 ? max : static_cast<__int128>(r % 1000000007) - 500;
      return static_cast<arrow::FixedSizeBinaryBuilder*>(b)->AppendDecimal(v);
    }
    case arrow::TypeId::kList:
    case arrow::TypeId::kStruct:
    case arrow::TypeId::kMap:
    case arrow::TypeId::kFixedSizeList: break;  // the self-check's types are flat
  }
  return Status::NotImplemented(t.ToString());
}

Result<std::vector<RecordBatchPtr>> MakeBatches(int64_t rows_per_batch, int num_batches) {
  std::vector<Field> fields;
  int n = 0;
  for (const auto& t : AllTypes()) {
    fields.push_back({"c" + std::to_string(n++) + "_" + t.ToString(),
                      t,
                      true,
                      {{"selfcheck", std::to_string(n)}}});
  }
  fields.push_back({"id", DataType::Int64(), false, {}});
  auto schema = std::make_shared<const arrow::Schema>(std::move(fields),
                                                      arrow::KeyValueMetadata{{"oxbow", "1"}});
  Rng rng;
  std::vector<RecordBatchPtr> batches;
  for (int k = 0; k < num_batches; ++k) {
    std::vector<Array> columns;
    for (const auto& f : schema->fields()) {
      ASSIGN_OR_RAISE(auto b, arrow::ArrayBuilder::Make(f.type));
      for (int64_t i = 0; i < rows_per_batch; ++i) {
        if (f.name == "id") {
          RETURN_NOT_OK(static_cast<arrow::Int64Builder*>(b.get())->Append(k * rows_per_batch + i));
        } else {
          RETURN_NOT_OK(AppendValue(b.get(), f.type, i, rng));
        }
      }
      ASSIGN_OR_RAISE(auto a, b->Finish());
      columns.push_back(std::move(a));
    }
    ASSIGN_OR_RAISE(auto batch, RecordBatch::Make(schema, rows_per_batch, std::move(columns)));
    RETURN_NOT_OK(batch->Validate());
    batches.push_back(std::move(batch));
  }
  // An empty batch and a sliced one (offsets not at zero).
  batches.push_back(batches[0]->Slice(0, 0));
  batches.push_back(batches[0]->Slice(5, rows_per_batch - 11));
  return batches;
}

// Names the first column and row where two batch lists differ.
Status Compare(const std::vector<RecordBatchPtr>& want, const std::vector<RecordBatchPtr>& got) {
  if (want.size() != got.size()) {
    return Status::Invalid(std::to_string(got.size()) + " batches instead of " +
                           std::to_string(want.size()));
  }
  for (size_t b = 0; b < want.size(); ++b) {
    if (!want[b]->schema()->Equals(*got[b]->schema(), /*check_metadata=*/true)) {
      return Status::Invalid("batch " + std::to_string(b) + ": schema differs:\n" +
                             text::FormatSchema(*got[b]->schema()));
    }
    if (want[b]->num_rows() != got[b]->num_rows()) {
      return Status::Invalid("batch " + std::to_string(b) + ": " +
                             std::to_string(got[b]->num_rows()) + " rows instead of " +
                             std::to_string(want[b]->num_rows()));
    }
    for (int c = 0; c < want[b]->num_columns(); ++c) {
      const Array& w = want[b]->column(c);
      const Array& g = got[b]->column(c);
      if (w.Equals(g)) continue;
      for (int64_t i = 0; i < w.length(); ++i) {
        if (!w.Slice(i, 1).Equals(g.Slice(i, 1))) {
          return Status::Invalid("batch " + std::to_string(b) + ", column '" +
                                 want[b]->schema()->field(c).name + "', row " + std::to_string(i) +
                                 " differs");
        }
      }
      return Status::Invalid("batch " + std::to_string(b) + ", column '" +
                             want[b]->schema()->field(c).name + "' differs");
    }
  }
  return Status::OK();
}

Status IpcRoundTrip(const std::vector<RecordBatchPtr>& batches, bool file_format,
                    arrow::Codec codec, int64_t* bytes) {
  auto sink = std::make_shared<ipc::StringSink>();
  ipc::WriteOptions options;
  options.codec = codec;
  RETURN_NOT_OK(ipc::WriteAll(sink, batches[0]->schema(), batches, file_format, options));
  *bytes = static_cast<int64_t>(sink->data().size());
  ASSIGN_OR_RAISE(auto table, ipc::ReadAll(Buffer::FromString(sink->Take())));
  if (!table.schema->Equals(*batches[0]->schema(), /*check_metadata=*/true)) {
    return Status::Invalid("schema differs after the round trip:\n" +
                           text::FormatSchema(*table.schema));
  }
  return Compare(batches, table.batches);
}

// JSON Lines and CSV drop field metadata; compare values under the written schema.
Status TextRoundTrip(const std::vector<RecordBatchPtr>& batches, text::TextFormat format) {
  ASSIGN_OR_RAISE(auto writer, text::TextWriter::Make(format, batches[0]->schema()));
  std::string text;
  std::vector<RecordBatchPtr> nonempty;
  for (const auto& b : batches) {
    RETURN_NOT_OK(writer->Write(*b, &text));
    if (b->num_rows() > 0) nonempty.push_back(b);
  }
  RETURN_NOT_OK(writer->Finish(&text));
  text::ReadOptions options;
  options.batch_rows = nonempty[0]->num_rows();
  ASSIGN_OR_RAISE(auto reader, text::TextReader::Make(format, text, batches[0]->schema(), options));
  ASSIGN_OR_RAISE(auto got, reader->ReadAll());
  // The reader re-batches rows; compare as one row sequence.
  int64_t want_rows = 0, got_rows = 0;
  for (const auto& b : nonempty) want_rows += b->num_rows();
  for (const auto& b : got) got_rows += b->num_rows();
  if (want_rows != got_rows) {
    return Status::Invalid(std::to_string(got_rows) + " rows instead of " +
                           std::to_string(want_rows));
  }
  std::string again;
  ASSIGN_OR_RAISE(auto rewriter, text::TextWriter::Make(format, batches[0]->schema()));
  for (const auto& b : got) RETURN_NOT_OK(rewriter->Write(*b, &again));
  RETURN_NOT_OK(rewriter->Finish(&again));
  if (again != text) return Status::Invalid("text differs after parsing it back");
  return Status::OK();
}

Status RunSelfcheck() {
  auto start = std::chrono::steady_clock::now();
  ASSIGN_OR_RAISE(auto batches, MakeBatches(/*rows_per_batch=*/500, /*num_batches=*/3));
  int64_t rows = 0;
  for (const auto& b : batches) rows += b->num_rows();
  std::printf("oxbow selfcheck: %d columns (%zu types, with nulls), %zu batches, %lld rows\n",
              batches[0]->num_columns(), AllTypes().size(), batches.size(),
              static_cast<long long>(rows));
  int checks = 0;
  for (bool file_format : {false, true}) {
    for (auto codec : {arrow::Codec::kNone, arrow::Codec::kLz4Frame, arrow::Codec::kZstd}) {
      const std::string what = std::string("ipc ") + (file_format ? "file" : "stream") + " " +
                               std::string(arrow::CodecName(codec));
      int64_t bytes = 0;
      RETURN_NOT_OK(IpcRoundTrip(batches, file_format, codec, &bytes).WithContext(what));
      std::printf("  %-18s ok  (%lld bytes)\n", what.c_str(), static_cast<long long>(bytes));
      ++checks;
    }
  }
  for (auto format : {text::TextFormat::kJsonLines, text::TextFormat::kCsv}) {
    const std::string what = "text " + std::string(text::TextFormatName(format));
    RETURN_NOT_OK(TextRoundTrip(batches, format).WithContext(what));
    std::printf("  %-18s ok\n", what.c_str());
    ++checks;
  }
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                  start)
                .count();
  std::printf("all %d round trips ok in %lld ms\n", checks, static_cast<long long>(ms));
  return Status::OK();
}

}  // namespace

void RegisterSelfcheckCommand(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand(
      "selfcheck",
      "Round-trip every supported type through the IPC writer/reader and the text formats");
  SetAction(cmd, [] { return RunSelfcheck(); });
}

}  // namespace oxbow::cli
