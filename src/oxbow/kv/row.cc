#include "oxbow/kv/row.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>

#include "oxbow/arrow/builder.h"
#include "oxbow/arrow/compute.h"

namespace oxbow::kv {

namespace {

using arrow::TypeId;

// Bytes per value of a fixed-width type (bool: 1); 0 for variable length.
int32_t FixedWidth(const arrow::DataType& type) {
  return type.id() == TypeId::kBool ? 1 : type.bit_width() / 8;
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
    case TypeId::kFixedSizeList: break;  // built by ColumnBuilder's nested nodes
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

// Nested values (docs/primary-keys.md, "Nested values"). Inside one, a non-null value is: fixed
// width, its bytes as in a row; string and binary, a LEB128 length then the bytes; struct, a
// null bitmap of its fields then each non-null field; list and map, a LEB128 item count, a null
// bitmap of the items, then each non-null item (a map's items are its key-value entries, encoded
// as structs); fixed_size_list, the null bitmap of its list_size() items then each non-null one.

void SetBit(std::string* out, size_t bitmap_at, uint64_t i) {
  char& byte = (*out)[bitmap_at + i / 8];
  byte = static_cast<char>(byte | (1 << (i % 8)));
}

bool BitSet(std::string_view bitmap, uint64_t i) {
  return (static_cast<uint8_t>(bitmap[i / 8]) & (1 << (i % 8))) != 0;
}

// Takes a null bitmap of `count` bits off the front of `in`.
Result<std::string_view> ReadBitmap(uint64_t count, std::string_view* in) {
  const uint64_t bytes = count / 8 + (count % 8 != 0);
  if (in->size() < bytes) return Status::Corruption("row value: truncated nested null bitmap");
  const std::string_view bitmap = in->substr(0, bytes);
  in->remove_prefix(bytes);
  return bitmap;
}

// Takes the bytes of a non-null scalar of `type` inside a nested value off the front of `in`.
Result<std::string_view> ReadScalar(const arrow::DataType& type, std::string_view* in) {
  uint64_t length = static_cast<uint64_t>(FixedWidth(type));
  if (length == 0) {
    ASSIGN_OR_RAISE(length, ReadVarint(in));
  }
  if (in->size() < length) return Status::Corruption("row value: truncated nested value");
  const std::string_view bytes = in->substr(0, length);
  in->remove_prefix(length);
  return bytes;
}

// Takes a list's or map's item count off the front of `in`: at most what an int32 offset holds
// and what the value's bytes can hold (each item takes at least a bitmap bit).
Result<uint64_t> ReadItemCount(std::string_view* in) {
  ASSIGN_OR_RAISE(uint64_t count, ReadVarint(in));
  if (count > static_cast<uint64_t>(std::numeric_limits<int32_t>::max()) ||
      count > 8 * static_cast<uint64_t>(in->size())) {
    return Status::Corruption("row value: a nested list of " + std::to_string(count) +
                              " items is longer than its value");
  }
  return count;
}

void AppendElement(const arrow::Array& array, int64_t i, std::string* out);

// `count` items of `items` from `first` on: their null bitmap, then each non-null item.
void AppendItems(const arrow::Array& items, int64_t first, int64_t count, std::string* out) {
  const size_t bitmap_at = out->size();
  out->append(static_cast<size_t>((count + 7) / 8), '\0');
  for (int64_t k = 0; k < count; ++k) {
    if (items.IsNull(first + k)) {
      SetBit(out, bitmap_at, static_cast<uint64_t>(k));
    } else {
      AppendElement(items, first + k, out);
    }
  }
}

// Appends the non-null element `i` of `array` as it is encoded inside a nested value.
void AppendElement(const arrow::Array& array, int64_t i, std::string* out) {
  switch (array.type().id()) {
    case TypeId::kString:
    case TypeId::kBinary: {
      const std::string_view bytes = array.GetView(i);
      AppendVarint(bytes.size(), out);
      out->append(bytes);
      return;
    }
    case TypeId::kStruct: {
      // A struct's children are indexed as the struct is, before its offset.
      const int64_t at = array.offset() + i;
      const size_t bitmap_at = out->size();
      out->append(static_cast<size_t>((array.num_children() + 7) / 8), '\0');
      for (int k = 0; k < array.num_children(); ++k) {
        const arrow::Array child = array.child(k);
        if (child.IsNull(at)) {
          SetBit(out, bitmap_at, static_cast<uint64_t>(k));
        } else {
          AppendElement(child, at, out);
        }
      }
      return;
    }
    case TypeId::kList:
    case TypeId::kMap: {
      const int32_t* offsets = array.raw_offsets();
      const int64_t count = offsets[i + 1] - offsets[i];
      AppendVarint(static_cast<uint64_t>(count), out);
      AppendItems(array.child(0), offsets[i], count, out);
      return;
    }
    case TypeId::kFixedSizeList: {
      const int64_t size = array.type().list_size();
      AppendItems(array.child(0), (array.offset() + i) * size, size, out);
      return;
    }
    default: {
      char bool_byte = 0;
      out->append(ValueView(array, i, &bool_byte));
    }
  }
}

// Checks the encoding of a non-null `type` value inside a nested value at the front of `in`
// and takes it off; Corruption naming the problem otherwise.
Status SkipElement(const arrow::DataType& type, std::string_view* in);

Status SkipItems(const arrow::DataType& type, uint64_t count, std::string_view* in) {
  ASSIGN_OR_RAISE(const std::string_view bitmap, ReadBitmap(count, in));
  for (uint64_t k = 0; k < count; ++k) {
    if (!BitSet(bitmap, k)) RETURN_NOT_OK(SkipElement(type, in));
  }
  return Status::OK();
}

Status SkipElement(const arrow::DataType& type, std::string_view* in) {
  switch (type.id()) {
    case TypeId::kStruct: {
      const auto fields = static_cast<uint64_t>(type.num_children());
      ASSIGN_OR_RAISE(const std::string_view bitmap, ReadBitmap(fields, in));
      for (uint64_t k = 0; k < fields; ++k) {
        if (!BitSet(bitmap, k))
          RETURN_NOT_OK(SkipElement(type.child(static_cast<int>(k)).type, in));
      }
      return Status::OK();
    }
    case TypeId::kList: {
      ASSIGN_OR_RAISE(const uint64_t count, ReadItemCount(in));
      return SkipItems(type.child(0).type, count, in);
    }
    case TypeId::kMap: {
      ASSIGN_OR_RAISE(const uint64_t count, ReadItemCount(in));
      ASSIGN_OR_RAISE(const std::string_view bitmap, ReadBitmap(count, in));
      for (uint64_t k = 0; k < count; ++k) {
        if (BitSet(bitmap, k)) return Status::Corruption("row value: a null map entry");
        RETURN_NOT_OK(SkipElement(type.child(0).type, in));
      }
      return Status::OK();
    }
    case TypeId::kFixedSizeList:
      return SkipItems(type.child(0).type, static_cast<uint64_t>(type.list_size()), in);
    default: return ReadScalar(type, in).status();
  }
}

// Checks a whole nested value of `type` (a Cell's bytes).
Status CheckNestedValue(const arrow::DataType& type, std::string_view value) {
  RETURN_NOT_OK(SkipElement(type, &value));
  if (!value.empty()) {
    return Status::Corruption("row value: a nested value has " + std::to_string(value.size()) +
                              " bytes after its end");
  }
  return Status::OK();
}

}  // namespace

namespace internal {

// Builds a column of any type from values in a Cell's byte form: scalars with an
// arrow::ArrayBuilder, nested ones as a tree of these (their values checked by CheckNestedValue
// first, so an append never stops half way).
class ColumnBuilder {
 public:
  static Result<std::unique_ptr<ColumnBuilder>> Make(const arrow::Field& field) {
    std::unique_ptr<ColumnBuilder> b(new ColumnBuilder(field));
    const arrow::DataType& type = field.type;
    if (!type.is_nested()) {
      ASSIGN_OR_RAISE(b->scalar_, arrow::ArrayBuilder::Make(type));
      return b;
    }
    // A map's builders are its entries' key and value.
    for (const arrow::Field& child :
         type.id() == TypeId::kMap ? type.child(0).type.children() : type.children()) {
      ASSIGN_OR_RAISE(auto builder, Make(child));
      b->children_.push_back(std::move(builder));
    }
    return b;
  }

  // A column's value (std::nullopt: null).
  Status Append(std::optional<std::string_view> value) {
    if (scalar_) return AppendToBuilder(scalar_.get(), value);
    if (!value) return AppendSlot(false);
    std::string_view in = *value;
    return AppendNested(&in);
  }

  // The column so far; the builder starts empty again.
  Result<arrow::Array> Finish() {
    const arrow::DataType& type = field_.type;
    if (scalar_) {
      ASSIGN_OR_RAISE(auto array, scalar_->Finish());
      ASSIGN_OR_RAISE(scalar_, arrow::ArrayBuilder::Make(type));
      return array;
    }
    std::vector<arrow::Array> children;
    for (auto& child : children_) {
      ASSIGN_OR_RAISE(auto array, child->Finish());
      children.push_back(std::move(array));
    }
    const auto length = static_cast<int64_t>(valid_.size());
    std::shared_ptr<Buffer> validity;
    if (nulls_ > 0) {
      ASSIGN_OR_RAISE(auto bits, MutableBuffer::Allocate(bit_util::BytesForBits(length)));
      std::memset(bits->mutable_data(), 0, static_cast<size_t>(bits->size()));
      for (int64_t i = 0; i < length; ++i) {
        if (valid_[static_cast<size_t>(i)]) bit_util::SetBit(bits->mutable_data(), i);
      }
      validity = std::move(bits);
    }
    const int64_t nulls = nulls_;
    std::vector<int32_t> offsets = std::move(offsets_);
    valid_.clear();
    nulls_ = 0;
    offsets_ = {0};
    if (type.id() == TypeId::kStruct || type.id() == TypeId::kFixedSizeList) {
      return arrow::Array::MakeNested(type, length, {std::move(validity)}, std::move(children),
                                      nulls);
    }
    ASSIGN_OR_RAISE(auto offsets_buffer,
                    Buffer::CopyFrom({reinterpret_cast<const char*>(offsets.data()),
                                      offsets.size() * sizeof(int32_t)}));
    if (type.id() == TypeId::kMap) {
      arrow::Array entries = arrow::Array::MakeNested(type.child(0).type, offsets.back(), {nullptr},
                                                      std::move(children), 0);
      children = {std::move(entries)};
    }
    return arrow::Array::MakeNested(type, length, {std::move(validity), std::move(offsets_buffer)},
                                    std::move(children), nulls);
  }

 private:
  explicit ColumnBuilder(arrow::Field field) : field_(std::move(field)) {}

  Status AppendNull() { return scalar_ ? scalar_->AppendNull() : AppendSlot(false); }

  // The slot of a field under a null parent: null, or an empty value when not nullable.
  Status AppendEmpty() {
    if (field_.nullable) return AppendNull();
    return scalar_ ? scalar_->AppendEmpty() : AppendSlot(true);
  }

  // A slot with no items (list, map) or empty children (struct, fixed_size_list).
  Status AppendSlot(bool valid) {
    valid_.push_back(valid);
    if (!valid) ++nulls_;
    switch (field_.type.id()) {
      case TypeId::kStruct:
        for (auto& child : children_) RETURN_NOT_OK(child->AppendEmpty());
        return Status::OK();
      case TypeId::kFixedSizeList:
        for (int32_t k = 0; k < field_.type.list_size(); ++k) {
          RETURN_NOT_OK(children_[0]->AppendEmpty());
        }
        return Status::OK();
      default: offsets_.push_back(offsets_.back()); return Status::OK();
    }
  }

  // A non-null element encoded inside a nested value, taken off the front of `in`.
  Status AppendElement(std::string_view* in) {
    if (!scalar_) return AppendNested(in);
    ASSIGN_OR_RAISE(const std::string_view bytes, ReadScalar(field_.type, in));
    return AppendToBuilder(scalar_.get(), bytes);
  }

  // The fields of a struct (or a map entry) into `children_`.
  Status AppendFields(std::string_view* in) {
    ASSIGN_OR_RAISE(const std::string_view bitmap, ReadBitmap(children_.size(), in));
    for (size_t k = 0; k < children_.size(); ++k) {
      RETURN_NOT_OK(BitSet(bitmap, k) ? children_[k]->AppendNull()
                                      : children_[k]->AppendElement(in));
    }
    return Status::OK();
  }

  // `count` items (null bitmap, then the non-null ones) into `children_[0]`.
  Status AppendItems(uint64_t count, std::string_view* in) {
    ASSIGN_OR_RAISE(const std::string_view bitmap, ReadBitmap(count, in));
    for (uint64_t k = 0; k < count; ++k) {
      RETURN_NOT_OK(BitSet(bitmap, k) ? children_[0]->AppendNull()
                                      : children_[0]->AppendElement(in));
    }
    return Status::OK();
  }

  Status AppendNested(std::string_view* in) {
    valid_.push_back(true);
    switch (field_.type.id()) {
      case TypeId::kStruct: return AppendFields(in);
      case TypeId::kFixedSizeList:
        return AppendItems(static_cast<uint64_t>(field_.type.list_size()), in);
      default: break;
    }
    ASSIGN_OR_RAISE(const uint64_t count, ReadItemCount(in));
    if (count > static_cast<uint64_t>(std::numeric_limits<int32_t>::max() - offsets_.back())) {
      return Status::Invalid("a batch of column " + Quote(field_.name) +
                             " holds more items than 32-bit offsets can");
    }
    offsets_.push_back(offsets_.back() + static_cast<int32_t>(count));
    if (field_.type.id() == TypeId::kList) return AppendItems(count, in);
    RETURN_NOT_OK(ReadBitmap(count, in).status());  // entries are never null (CheckNestedValue)
    for (uint64_t k = 0; k < count; ++k) RETURN_NOT_OK(AppendFields(in));
    return Status::OK();
  }

  const arrow::Field field_;
  std::unique_ptr<arrow::ArrayBuilder> scalar_;           // a scalar column's builder
  std::vector<std::unique_ptr<ColumnBuilder>> children_;  // a nested one's children
  std::vector<bool> valid_;                               // per nested slot
  int64_t nulls_ = 0;
  std::vector<int32_t> offsets_ = {0};  // list and map
};

}  // namespace internal

namespace {

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
    const arrow::Field& field = schema.field(static_cast<int>(i));
    uint64_t length = static_cast<uint64_t>(FixedWidth(field.type));
    if (length == 0) {
      ASSIGN_OR_RAISE(length, ReadVarint(&in));
    }
    if (in.size() < length) {
      return Status::Corruption("row value: column " + Quote(field.name) + " is truncated");
    }
    (*out)[i] = in.substr(0, length);
    in.remove_prefix(length);
    if (field.type.is_nested()) {
      if (Status st = CheckNestedValue(field.type, *(*out)[i]); !st.ok()) {
        return st.WithContext("column " + Quote(field.name));
      }
    }
  }
  if (!in.empty()) {
    return Status::Corruption("row value has " + std::to_string(in.size()) +
                              " bytes after its last column");
  }
  return Status::OK();
}

// `bytes` (a non-null value of type `from`) cast to `to` with arrow::Cast, the log's cast
// between schema versions (struct fields matched by the field ids in the types), in a Cell's
// byte form.
Result<std::string> CastValue(std::string_view bytes, const arrow::DataType& from,
                              const arrow::DataType& to) {
  ASSIGN_OR_RAISE(auto builder, internal::ColumnBuilder::Make(arrow::Field{"", from, true, {}}));
  RETURN_NOT_OK(builder->Append(bytes));
  ASSIGN_OR_RAISE(auto array, builder->Finish());
  ASSIGN_OR_RAISE(auto cast, arrow::Cast(array, to));
  return CellAt(cast, 0).bytes;
}

}  // namespace

Cell CellAt(const arrow::Array& column, int64_t row) {
  if (column.IsNull(row)) return Cell{};
  if (column.type().is_nested()) {
    Cell cell{false, {}};
    AppendElement(column, row, &cell.bytes);
    return cell;
  }
  char bool_byte = 0;
  return Cell{false, std::string(ValueView(column, row, &bool_byte))};
}

Status CheckKeyColumnType(const arrow::Field& field) {
  if (field.type.is_nested()) {
    return Status::Invalid("primary-key column " + Quote(field.name) + " has type " +
                           field.type.ToString() +
                           ", which cannot be a key (key columns must be scalar; nested types "
                           "can be value columns)");
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

namespace {

const catalog::ChildIds& ChildIdsOf(const catalog::SchemaVersion& version, int column) {
  static const catalog::ChildIds kNone;
  const auto i = static_cast<size_t>(column);
  return i < version.child_ids.size() ? version.child_ids[i] : kNone;
}

}  // namespace

Result<RowFormat> RowFormat::Make(std::vector<catalog::SchemaVersion> versions) {
  if (versions.empty()) return Status::Invalid("a row format needs a schema version");
  RowFormat f;
  const catalog::SchemaVersion& current = versions.back();
  for (int c = 0; c < current.schema->num_fields(); ++c) {
    f.current_types_.push_back(current.TypeWithIds(c));
  }
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
      // A nested column casts when its nested fields' ids differ too (one added, dropped or
      // renamed inside it).
      const bool cast =
          source >= 0 && (v.schema->field(source).type != current.schema->field(c).type ||
                          ChildIdsOf(v, source) != ChildIdsOf(current, c));
      out.source.push_back(source);
      out.cast_from.push_back(cast ? std::optional(v.TypeWithIds(source)) : std::nullopt);
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
    const auto& cast_from = version->cast_from[c];
    if (!value || !cast_from) {
      (*out)[c] = value;
      continue;
    }
    auto cast = CastValue(*value, *cast_from, current_types_[c]);
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
    ASSIGN_OR_RAISE(auto builder, internal::ColumnBuilder::Make(field));
    b.builders_.push_back(std::move(builder));
  }
  b.schema_ = std::move(schema);
  b.columns_ = std::move(columns);
  return b;
}

Status RowBatchBuilder::Append(const Row& row) {
  for (size_t i = 0; i < columns_.size(); ++i) {
    const Cell& cell = row[static_cast<size_t>(columns_[i])];
    RETURN_NOT_OK(builders_[i]->Append(ViewOf(cell)));
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
    RETURN_NOT_OK(builders_[i]->Append(view));
    if (view) bytes_ += static_cast<int64_t>(view->size());
  }
  ++rows_;
  return Status::OK();
}

Status RowBatchBuilder::AppendCell(int field, const Cell& cell) {
  bytes_ += static_cast<int64_t>(cell.bytes.size());
  return builders_[static_cast<size_t>(field)]->Append(ViewOf(cell));
}

Result<arrow::RecordBatchPtr> RowBatchBuilder::Finish() {
  std::vector<arrow::Array> arrays;
  for (auto& builder : builders_) {
    ASSIGN_OR_RAISE(auto array, builder->Finish());
    arrays.push_back(std::move(array));
  }
  const int64_t rows = arrays.empty() ? 0 : arrays[0].length();
  rows_ = 0;
  bytes_ = 0;
  return arrow::RecordBatch::Make(schema_, rows, std::move(arrays));
}

}  // namespace oxbow::kv
