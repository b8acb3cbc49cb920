#include "oxbow/testing/every_type.h"

#include <random>
#include <string>
#include <vector>

#include "oxbow/arrow/builder.h"

namespace oxbow::testing {

arrow::SchemaPtr EveryTypeSchema(bool nullable) {
  using arrow::DataType;
  using arrow::TimeUnit;
  std::vector<arrow::Field> f = {
      {"b", DataType::Bool()},
      {"i8", DataType::Int8()},
      {"i16", DataType::Int16()},
      {"i32", DataType::Int32()},
      {"i64", DataType::Int64()},
      {"u8", DataType::UInt8()},
      {"u16", DataType::UInt16()},
      {"u32", DataType::UInt32()},
      {"u64", DataType::UInt64()},
      {"f32", DataType::Float32()},
      {"f64", DataType::Float64()},
      {"s", DataType::String()},
      {"bin", DataType::Binary()},
      {"d", DataType::Date32()},
      {"ts_ms", DataType::Timestamp(TimeUnit::kMilli)},
      {"ts_us_utc", DataType::Timestamp(TimeUnit::kMicro, "UTC")},
      {"ts_ns", DataType::Timestamp(TimeUnit::kNano)},
      {"dec9", DataType::Decimal128(9, 2)},
      {"dec18", DataType::Decimal128(18, 3)},
      {"dec38", DataType::Decimal128(38, 10)},
      {"fsb", DataType::FixedSizeBinary(5)},
  };
  int id = 1;
  for (auto& field : f) {
    field.nullable = nullable;
    field.metadata.emplace_back("PARQUET:field_id", std::to_string(id++));
  }
  return std::make_shared<arrow::Schema>(std::move(f));
}

arrow::RecordBatchPtr RandomBatch(const arrow::SchemaPtr& schema, int64_t rows, uint32_t seed,
                                  int64_t distinct) {
  using arrow::TypeId;
  std::mt19937_64 rng(seed);
  std::vector<arrow::Array> columns;
  for (const auto& field : schema->fields()) {
    auto builder = arrow::ArrayBuilder::Make(field.type).ValueOrDie();
    for (int64_t r = 0; r < rows; ++r) {
      if (field.nullable && rng() % 7 == 0) {
        (void)builder->AppendNull();
        continue;
      }
      const uint64_t x = rng() % static_cast<uint64_t>(distinct);
      const int64_t sx = static_cast<int64_t>(x) - distinct / 2;
      Status st;
      switch (field.type.id()) {
        case TypeId::kBool:
          st = static_cast<arrow::BooleanBuilder*>(builder.get())->Append(x & 1);
          break;
        case TypeId::kInt8:
          st = static_cast<arrow::Int8Builder*>(builder.get())->Append(static_cast<int8_t>(sx));
          break;
        case TypeId::kInt16:
          st = static_cast<arrow::Int16Builder*>(builder.get())
                   ->Append(static_cast<int16_t>(sx * 31));
          break;
        case TypeId::kInt32:
        case TypeId::kDate32:
          st = static_cast<arrow::Int32Builder*>(builder.get())
                   ->Append(static_cast<int32_t>(sx * 1001));
          break;
        case TypeId::kInt64:
        case TypeId::kTimestamp:
          st = static_cast<arrow::Int64Builder*>(builder.get())->Append(sx * 1000003);
          break;
        case TypeId::kUInt8:
          st = static_cast<arrow::UInt8Builder*>(builder.get())
                   ->Append(static_cast<uint8_t>(x + 200));
          break;
        case TypeId::kUInt16:
          st = static_cast<arrow::UInt16Builder*>(builder.get())
                   ->Append(static_cast<uint16_t>(x * 60));
          break;
        case TypeId::kUInt32:
          st = static_cast<arrow::UInt32Builder*>(builder.get())
                   ->Append(static_cast<uint32_t>(x * 4000000));
          break;
        case TypeId::kUInt64:
          st = static_cast<arrow::UInt64Builder*>(builder.get())->Append(x * 18000000000000000ull);
          break;
        case TypeId::kFloat32:
          st = static_cast<arrow::FloatBuilder*>(builder.get())->Append(static_cast<float>(sx) / 4);
          break;
        case TypeId::kFloat64:
          st = static_cast<arrow::DoubleBuilder*>(builder.get())
                   ->Append(static_cast<double>(sx) / 8);
          break;
        case TypeId::kString:
        case TypeId::kBinary: {
          std::string value = "v";  // appended piecewise: see GCC bug 105329 (-Wrestrict)
          value += std::to_string(x);
          value.append(x % 5, 'z');
          st = static_cast<arrow::BinaryBuilder*>(builder.get())->Append(value);
          break;
        }
        case TypeId::kDecimal128: {
          __int128 v = sx;
          if (field.type.precision() > 18)
            v = v * static_cast<__int128>(1000000000000000000LL) * 1000;
          st = static_cast<arrow::FixedSizeBinaryBuilder*>(builder.get())->AppendDecimal(v);
          break;
        }
        case TypeId::kFixedSizeBinary: {
          std::string s(static_cast<size_t>(field.type.byte_width()), 'a');
          for (size_t i = 0; i < s.size(); ++i) s[i] = static_cast<char>((x >> (i * 2)) * 37 + i);
          st = static_cast<arrow::FixedSizeBinaryBuilder*>(builder.get())->Append(s);
          break;
        }
        case TypeId::kList:
        case TypeId::kStruct:
        case TypeId::kMap:
        case TypeId::kFixedSizeList: break;  // no builder: ArrayBuilder::Make refused above
      }
      (void)st;
    }
    columns.push_back(builder->Finish().ValueOrDie());
  }
  return arrow::RecordBatch::Make(schema, rows, std::move(columns)).ValueOrDie();
}

}  // namespace oxbow::testing
