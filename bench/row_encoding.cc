#include "row_encoding.h"

#include <cstring>

namespace oxbow::bench {
namespace {

using arrow::TypeId;

void AppendVarint(uint64_t value, std::string* out) {
  while (value >= 0x80) {
    out->push_back(static_cast<char>((value & 0x7F) | 0x80));
    value >>= 7;
  }
  out->push_back(static_cast<char>(value));
}

void AppendZigzag(int64_t value, std::string* out) {
  AppendVarint((static_cast<uint64_t>(value) << 1) ^ static_cast<uint64_t>(value >> 63), out);
}

template <typename T>
void AppendLittleEndian(T value, std::string* out) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));  // x86-64 and aarch64 Linux are little-endian
  out->append(bytes, sizeof(T));
}

void AppendValue(const arrow::Array& column, int64_t row, std::string* out) {
  switch (column.type().id()) {
    case TypeId::kBool: out->push_back(column.BoolValue(row) ? 1 : 0); break;
    case TypeId::kInt8: AppendZigzag(column.Value<int8_t>(row), out); break;
    case TypeId::kInt16: AppendZigzag(column.Value<int16_t>(row), out); break;
    case TypeId::kInt32:
    case TypeId::kDate32: AppendZigzag(column.Value<int32_t>(row), out); break;
    case TypeId::kInt64:
    case TypeId::kTimestamp: AppendZigzag(column.Value<int64_t>(row), out); break;
    case TypeId::kUInt8: AppendVarint(column.Value<uint8_t>(row), out); break;
    case TypeId::kUInt16: AppendVarint(column.Value<uint16_t>(row), out); break;
    case TypeId::kUInt32: AppendVarint(column.Value<uint32_t>(row), out); break;
    case TypeId::kUInt64: AppendVarint(column.Value<uint64_t>(row), out); break;
    case TypeId::kFloat32: AppendLittleEndian(column.Value<float>(row), out); break;
    case TypeId::kFloat64: AppendLittleEndian(column.Value<double>(row), out); break;
    case TypeId::kString:
    case TypeId::kBinary: {
      std::string_view bytes = column.GetView(row);
      AppendVarint(bytes.size(), out);
      out->append(bytes);
      break;
    }
    case TypeId::kDecimal128:
    case TypeId::kFixedSizeBinary: out->append(column.GetView(row)); break;
    case TypeId::kList:
    case TypeId::kStruct:
    case TypeId::kMap:
    case TypeId::kFixedSizeList: break;  // the benchmarks' schemas are flat
  }
}

}  // namespace

void AppendEncodedRow(const arrow::RecordBatch& batch, int64_t row, std::string* out) {
  const size_t bitmap_at = out->size();
  out->append((batch.num_columns() + 7) / 8, '\0');
  for (int c = 0; c < batch.num_columns(); ++c) {
    const arrow::Array& column = batch.column(c);
    if (column.IsNull(row)) {
      (*out)[bitmap_at + c / 8] = static_cast<char>((*out)[bitmap_at + c / 8] | (1 << (c % 8)));
    } else {
      AppendValue(column, row, out);
    }
  }
}

}  // namespace oxbow::bench
