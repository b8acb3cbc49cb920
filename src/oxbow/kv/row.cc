#include "oxbow/kv/row.h"

#include <algorithm>
#include <cstring>
#include <optional>

#include "oxbow/arrow/builder.h"
#include "oxbow/arrow/compute.h"

namespace oxbow::kv {

namespace {

using arrow::TypeId;

// Bytes per value of a fixed-width type (bool: 1); 0 for variable length.
int32_t FixedWidth(const arrow::DataType& type) {
  switch (type.id()) {
    case TypeId::kBool: return 1;
    case TypeId::kString:
    case TypeId::kBinary: return 0;
    case TypeId::kDecimal128:
    case TypeId::kFixedSizeBinary: return type.byte_width();
    default: return type.bit_width() / 8;
  }
}

void AppendVarint(uint64_t v, std::string* out) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

Result<uint64_t> ReadVarint(std::string_view* in) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (in->empty()) return Status::Corruption("row value: truncated varint");
    const auto byte = static_cast<uint8_t>(in->front());
    in->remove_prefix(1);
    v |= static_cast<uint64_t>(byte & 0x7F) << shift;
    if (!(byte & 0x80)) return v;
  }
  return Status::Corruption("row value: varint longer than 10 bytes");
}

// Big-endian bytes of `v`, `width` bytes long.
void AppendBigEndian(uint64_t v, int width, std::string* out) {
  for (int i = width - 1; i >= 0; --i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

template <typename T>
T Load(std::string_view bytes) {
  T v{};
  std::memcpy(&v, bytes.data(), sizeof(T));
  return v;
}

template <typename T>
Status AppendNumber(arrow::ArrayBuilder* builder, std::string_view bytes) {
  return static_cast<arrow::NumericBuilder<T>*>(builder)->Append(Load<T>(bytes));
}

// Appends a value (std::nullopt: null) in the byte form of a Cell.
Status AppendToBuilder(arrow::ArrayBuilder* builder, std::optional<std::string_view> value) {
  if (!value) return builder->AppendNull();
  const std::string_view bytes = *value;
  switch (builder->type().id()) {
    case TypeId::kBool: return static_cast<arrow::BooleanBuilder*>(builder)->Append(bytes[0] != 0);
    case TypeId::kInt8: return AppendNumber<int8_t>(builder, bytes);
    case TypeId::kInt16: return AppendNumber<int16_t>(builder, bytes);
    case TypeId::kInt32:
    case TypeId::kDate32: return AppendNumber<int32_t>(builder, bytes);
    case TypeId::kInt64:
    case TypeId::kTimestamp: return AppendNumber<int64_t>(builder, bytes);
    case TypeId::kUInt8: return AppendNumber<uint8_t>(builder, bytes);
    case TypeId::kUInt16: return AppendNumber<uint16_t>(builder, bytes);
    case TypeId::kUInt32: return AppendNumber<uint32_t>(builder, bytes);
    case TypeId::kUInt64: return AppendNumber<uint64_t>(builder, bytes);
    case TypeId::kFloat32: return AppendNumber<float>(builder, bytes);
    case TypeId::kFloat64: return AppendNumber<double>(builder, bytes);
    case TypeId::kString:
    case TypeId::kBinary: return static_cast<arrow::BinaryBuilder*>(builder)->Append(bytes);
    case TypeId::kDecimal128:
    case TypeId::kFixedSizeBinary:
      return static_cast<arrow::FixedSizeBinaryBuilder*>(builder)->Append(bytes);
    case TypeId::kList:
    case TypeId::kStruct:
    case TypeId::kMap:
    case TypeId::kFixedSizeList: break;  // refused in primary-key tables (CheckPrimaryKeyTable)
  }
  return Status::Internal("no builder for " + builder->type().ToString());
}

std::optional<std::string_view> ViewOf(const Cell& cell) {
  if (cell.null) return std::nullopt;
  return std::string_view(cell.bytes);
}

// The bytes of the non-null value at `row` as a Cell holds them; a bool's byte goes to
// `bool_byte`, which the view then points at.
std::string_view ValueView(const arrow::Array& column, int64_t row, char* bool_byte) {
  const arrow::DataType& type = column.type();
  switch (type.id()) {
    case TypeId::kBool:
      *bool_byte = column.BoolValue(row) ? 1 : 0;
      return std::string_view(bool_byte, 1);
    case TypeId::kString:
    case TypeId::kBinary:
    case TypeId::kDecimal128:
    case TypeId::kFixedSizeBinary: return column.GetView(row);
    default: {
      const int32_t width = FixedWidth(type);
      const char* base =
          reinterpret_cast<const char*>(column.buffer(1)->data()) + (column.offset() + row) * width;
      return std::string_view(base, static_cast<size_t>(width));
    }
  }
}

// The first byte of a tagged value. An untagged value starts with its LEB128 column count,
// which is at least 1 (a table has a column), so it never starts with 00.
constexpr char kVersionTag = 0;

// Splits the null bitmap and values of `schema`'s first `columns` columns off `in` (std::nullopt:
// null), viewing `in`; the value must end there.
Status SplitColumns(std::string_view in, const arrow::Schema& schema, size_t columns,
                    std::vector<std::optional<std::string_view>>* out) {
  const size_t bitmap_bytes = (columns + 7) / 8;
  if (in.size() < bitmap_bytes) return Status::Corruption("row value: truncated null bitmap");
  const std::string_view bitmap = in.substr(0, bitmap_bytes);
  in.remove_prefix(bitmap_bytes);
  out->assign(columns, std::nullopt);
  for (size_t i = 0; i < columns; ++i) {
    if (static_cast<uint8_t>(bitmap[i / 8]) & (1 << (i % 8))) continue;
    uint64_t length = static_cast<uint64_t>(FixedWidth(schema.field(static_cast<int>(i)).type));
    if (length == 0) {
      ASSIGN_OR_RAISE(length, ReadVarint(&in));
    }
    if (in.size() < length) {
      return Status::Corruption("row value: column " +
                                Quote(schema.field(static_cast<int>(i)).name) + " is truncated");
    }
    (*out)[i] = in.substr(0, length);
    in.remove_prefix(length);
  }
  if (!in.empty()) {
    return Status::Corruption("row value has " + std::to_string(in.size()) +
                              " bytes after its last column");
  }
  return Status::OK();
}

// `bytes` (a non-null value of type `from`) cast to `to` with arrow::Cast, the log's cast
// between schema versions, in a Cell's byte form.
Result<std::string> CastValue(std::string_view bytes, const arrow::DataType& from,
                              const arrow::DataType& to) {
  ASSIGN_OR_RAISE(auto builder, arrow::ArrayBuilder::Make(from));
  RETURN_NOT_OK(AppendToBuilder(builder.get(), bytes));
  ASSIGN_OR_RAISE(auto array, builder->Finish());
  ASSIGN_OR_RAISE(auto cast, arrow::Cast(array, to));
  char bool_byte = 0;
  return std::string(ValueView(cast, 0, &bool_byte));
}

}  // namespace

Cell CellAt(const arrow::Array& column, int64_t row) {
  if (column.IsNull(row)) return Cell{};
  char bool_byte = 0;
  return Cell{false, std::string(ValueView(column, row, &bool_byte))};
}

Status CheckKeyColumnType(const arrow::Field& field) {
  if (field.type.is_nested()) {
    return Status::Invalid("primary-key column " + Quote(field.name) + " has type " +
                           field.type.ToString() + ", which cannot be a key");
  }
  if (field.type.is_floating()) {
    return Status::Invalid("primary-key column " + Quote(field.name) + " has type " +
                           field.type.ToString() +
                           ", which cannot be a key (NaN and -0.0 make float keys ambiguous)");
  }
  return Status::OK();
}

void AppendKeyPart(const arrow::Array& column, int64_t row, std::string* out) {
  const arrow::DataType& type = column.type();
  char bool_byte = 0;
  const std::string_view bytes = ValueView(column, row, &bool_byte);
  switch (type.id()) {
    case TypeId::kBool: out->push_back(bytes[0]); return;
    case TypeId::kInt8:
    case TypeId::kInt16:
    case TypeId::kInt32:
    case TypeId::kInt64:
    case TypeId::kDate32:
    case TypeId::kTimestamp: {
      const int width = FixedWidth(type);
      int64_t v = 0;
      switch (width) {
        case 1: v = Load<int8_t>(bytes); break;
        case 2: v = Load<int16_t>(bytes); break;
        case 4: v = Load<int32_t>(bytes); break;
        default: v = Load<int64_t>(bytes); break;
      }
      // Flipping the sign bit orders negative before positive as unsigned bytes.
      const uint64_t sign = uint64_t{1} << (8 * width - 1);
      AppendBigEndian(
          (static_cast<uint64_t>(v) ^ sign) & (width == 8 ? ~uint64_t{0} : (sign << 1) - 1), width,
          out);
      return;
    }
    case TypeId::kUInt8:
    case TypeId::kUInt16:
    case TypeId::kUInt32:
    case TypeId::kUInt64: {
      uint64_t v = 0;
      std::memcpy(&v, bytes.data(), bytes.size());
      AppendBigEndian(v, static_cast<int>(bytes.size()), out);
      return;
    }
    case TypeId::kDecimal128: {
      const auto v = Load<__int128>(bytes);
      const auto u = static_cast<unsigned __int128>(v) ^ (static_cast<unsigned __int128>(1) << 127);
      AppendBigEndian(static_cast<uint64_t>(u >> 64), 8, out);
      AppendBigEndian(static_cast<uint64_t>(u), 8, out);
      return;
    }
    case TypeId::kFixedSizeBinary: out->append(bytes); return;
    case TypeId::kString:
    case TypeId::kBinary:
      // 0x00 is escaped as 0x00 0xFF and the value ends with 0x00 0x01, so a value sorts
      // before every longer value it prefixes and the next column cannot bleed into it.
      for (char c : bytes) {
        out->push_back(c);
        if (c == 0) out->push_back(static_cast<char>(0xFF));
      }
      out->push_back(0);
      out->push_back(1);
      return;
    case TypeId::kFloat32:
    case TypeId::kFloat64:
    case TypeId::kList:
    case TypeId::kStruct:
    case TypeId::kMap:
    case TypeId::kFixedSizeList: break;  // refused by CheckKeyColumnType
  }
}

Result<RowFormat> RowFormat::Make(std::vector<catalog::SchemaVersion> versions) {
  if (versions.empty()) return Status::Invalid("a row format needs a schema version");
  RowFormat f;
  const catalog::SchemaVersion& current = versions.back();
  for (auto& v : versions) {
    Version out;
    const int fields = v.schema->num_fields();
    if (static_cast<int>(v.field_ids.size()) != fields) {
      return Status::Invalid("schema version " + std::to_string(v.schema_id) + " has " +
                             std::to_string(fields) + " columns but " +
                             std::to_string(v.field_ids.size()) + " field ids");
    }
    out.as_current = v.field_ids == current.field_ids;
    for (int c = 0; c < current.schema->num_fields(); ++c) {
      const auto found = std::find(v.field_ids.begin(), v.field_ids.end(),
                                   current.field_ids[static_cast<size_t>(c)]);
      const int source =
          found == v.field_ids.end() ? -1 : static_cast<int>(found - v.field_ids.begin());
      const bool cast =
          source >= 0 && v.schema->field(source).type != current.schema->field(c).type;
      out.source.push_back(source);
      out.cast.push_back(cast);
      if (cast) out.as_current = false;
    }
    out.version = std::move(v);
    f.versions_.push_back(std::move(out));
  }
  return f;
}

void RowFormat::Encode(const Row& row, std::string* out) const {
  const catalog::SchemaVersion& current = versions_.back().version;
  out->push_back(kVersionTag);
  AppendVarint(static_cast<uint32_t>(current.schema_id), out);
  const size_t bitmap_at = out->size();
  out->append((row.size() + 7) / 8, '\0');
  for (size_t i = 0; i < row.size(); ++i) {
    if (row[i].null) {
      (*out)[bitmap_at + i / 8] = static_cast<char>((*out)[bitmap_at + i / 8] | (1 << (i % 8)));
      continue;
    }
    if (FixedWidth(current.schema->field(static_cast<int>(i)).type) == 0) {
      AppendVarint(row[i].bytes.size(), out);
    }
    out->append(row[i].bytes);
  }
}

Status RowFormat::DecodeViews(std::string_view in,
                              std::vector<std::optional<std::string_view>>* out,
                              Scratch* scratch) const {
  if (in.empty()) return Status::Corruption("row value is empty");
  const Version* version = nullptr;
  if (in.front() == kVersionTag) {
    in.remove_prefix(1);
    ASSIGN_OR_RAISE(uint64_t id, ReadVarint(&in));
    for (const auto& v : versions_) {
      if (static_cast<uint64_t>(v.version.schema_id) == id) version = &v;
    }
    if (version == nullptr) {
      return Status::Corruption("row value has schema version " + std::to_string(id) +
                                ", which the table does not have");
    }
  } else {
    // The first format: rows were written in versions that only added columns at the end, so
    // the oldest version with as many columns has the columns the row was written with.
    ASSIGN_OR_RAISE(uint64_t columns, ReadVarint(&in));
    for (const auto& v : versions_) {
      if (static_cast<uint64_t>(v.version.schema->num_fields()) == columns) {
        version = &v;
        break;
      }
    }
    if (version == nullptr) {
      return Status::Corruption("row value has " + std::to_string(columns) +
                                " columns, and no schema version of the table has that many");
    }
  }
  const arrow::Schema& stored = *version->version.schema;
  const size_t stored_columns = static_cast<size_t>(stored.num_fields());
  if (version->as_current) return SplitColumns(in, stored, stored_columns, out);
  RETURN_NOT_OK(SplitColumns(in, stored, stored_columns, &scratch->stored));
  const arrow::Schema& current = schema();
  out->assign(static_cast<size_t>(current.num_fields()), std::nullopt);
  scratch->cast.clear();
  scratch->cast.reserve(out->size());  // views into it stay valid while it grows
  for (size_t c = 0; c < out->size(); ++c) {
    const int source = version->source[c];
    if (source < 0) continue;
    const auto& value = scratch->stored[static_cast<size_t>(source)];
    if (!value || !version->cast[c]) {
      (*out)[c] = value;
      continue;
    }
    auto cast =
        CastValue(*value, stored.field(source).type, current.field(static_cast<int>(c)).type);
    if (!cast.ok()) {
      return Status::Corruption("row value of schema version " +
                                std::to_string(version->version.schema_id) + ": column " +
                                Quote(current.field(static_cast<int>(c)).name) + ": " +
                                cast.status().message());
    }
    scratch->cast.push_back(std::move(cast).ValueOrDie());
    (*out)[c] = std::string_view(scratch->cast.back());
  }
  return Status::OK();
}

Result<Row> RowFormat::Decode(std::string_view in) const {
  std::vector<std::optional<std::string_view>> values;
  Scratch scratch;
  RETURN_NOT_OK(DecodeViews(in, &values, &scratch));
  Row row(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i]) row[i] = Cell{false, std::string(*values[i])};
  }
  return row;
}

Result<RowBatchBuilder> RowBatchBuilder::Make(arrow::SchemaPtr schema, std::vector<int> columns) {
  RowBatchBuilder b;
  for (const auto& field : schema->fields()) {
    ASSIGN_OR_RAISE(auto builder, arrow::ArrayBuilder::Make(field.type));
    b.builders_.push_back(std::move(builder));
  }
  b.schema_ = std::move(schema);
  b.columns_ = std::move(columns);
  return b;
}

Status RowBatchBuilder::Append(const Row& row) {
  for (size_t i = 0; i < columns_.size(); ++i) {
    const Cell& cell = row[static_cast<size_t>(columns_[i])];
    RETURN_NOT_OK(AppendToBuilder(builders_[i].get(), ViewOf(cell)));
    bytes_ += static_cast<int64_t>(cell.bytes.size());
  }
  ++rows_;
  return Status::OK();
}

Status RowBatchBuilder::AppendEncoded(std::string_view value, const RowFormat& format) {
  // Every column is checked before any is appended, so a corrupt value appends nothing.
  RETURN_NOT_OK(format.DecodeViews(value, &views_, &scratch_));
  for (size_t i = 0; i < columns_.size(); ++i) {
    const auto& view = views_[static_cast<size_t>(columns_[i])];
    RETURN_NOT_OK(AppendToBuilder(builders_[i].get(), view));
    if (view) bytes_ += static_cast<int64_t>(view->size());
  }
  ++rows_;
  return Status::OK();
}

Status RowBatchBuilder::AppendCell(int field, const Cell& cell) {
  bytes_ += static_cast<int64_t>(cell.bytes.size());
  return AppendToBuilder(builders_[static_cast<size_t>(field)].get(), ViewOf(cell));
}

Result<arrow::RecordBatchPtr> RowBatchBuilder::Finish() {
  std::vector<arrow::Array> arrays;
  for (auto& builder : builders_) {
    ASSIGN_OR_RAISE(auto array, builder->Finish());
    arrays.push_back(std::move(array));
    ASSIGN_OR_RAISE(builder, arrow::ArrayBuilder::Make(arrays.back().type()));
  }
  const int64_t rows = arrays.empty() ? 0 : arrays[0].length();
  rows_ = 0;
  bytes_ = 0;
  return arrow::RecordBatch::Make(schema_, rows, std::move(arrays));
}

}  // namespace oxbow::kv
