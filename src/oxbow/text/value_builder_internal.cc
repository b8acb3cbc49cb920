#include "oxbow/text/value_builder_internal.h"

#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#include "oxbow/arrow/builder.h"
#include "oxbow/common/bit_util.h"
#include "oxbow/text/scalar_text_internal.h"

namespace oxbow::text::internal {

using arrow::Array;
using arrow::ArrayBuilder;
using arrow::DataType;
using arrow::Field;
using arrow::TypeId;

std::string_view KindName(Cell::Kind kind) {
  switch (kind) {
    case Cell::kNull: return "null";
    case Cell::kBool: return "a bool";
    case Cell::kNumber: return "a number";
    case Cell::kString: return "a string";
    case Cell::kJson: return "a JSON object or array";
  }
  return "?";
}

std::string* Scratch::Next() {
  if (used_ == pool_.size()) pool_.emplace_back();
  std::string* s = &pool_[used_++];
  s->clear();
  return s;
}

// ---- JsonCursor ----

namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | cp >> 6));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | cp >> 12));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | cp >> 18));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

}  // namespace

void JsonCursor::Reset(std::string_view text) {
  s_ = text;
  i_ = 0;
  scratch_.Reset();
}

void JsonCursor::SkipSpace() {
  while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\r')) ++i_;
}

bool JsonCursor::Consume(char c) {
  if (i_ >= s_.size() || s_[i_] != c) return false;
  ++i_;
  return true;
}

bool JsonCursor::ConsumeWord(std::string_view word) {
  if (s_.substr(i_, word.size()) != word) return false;
  i_ += word.size();
  return true;
}

Status JsonCursor::Error(std::string_view what) const {
  return Status::Invalid(std::string(what) + " at character " + std::to_string(i_ + 1));
}

Status JsonCursor::ExpectEnd(std::string_view what) {
  SkipSpace();
  if (i_ != s_.size()) return Error("unexpected text after the " + std::string(what));
  return Status::OK();
}

Status JsonCursor::ParseKey(std::string_view* key) {
  if (Peek() != '"') return Error("expected a string key");
  RETURN_NOT_OK(ParseString(key));
  SkipSpace();
  if (!Consume(':')) return Error("expected ':' after key");
  SkipSpace();
  return Status::OK();
}

Status JsonCursor::ParseValue(Cell* cell) {
  const char c = Peek();
  if (c == '"') {
    cell->kind = Cell::kString;
    return ParseString(&cell->text);
  }
  const size_t start = i_;
  if (c == '{' || c == '[') {
    RETURN_NOT_OK(SkipNested());
    cell->kind = Cell::kJson;
    cell->text = s_.substr(start, i_ - start);
    return Status::OK();
  }
  if (ConsumeWord("null")) {
    cell->kind = Cell::kNull;
    return Status::OK();
  }
  if (ConsumeWord("true") || ConsumeWord("false")) {
    cell->kind = Cell::kBool;
    cell->boolean = s_[start] == 't';
    return Status::OK();
  }
  if (ConsumeWord("NaN") || ConsumeWord("Infinity") || ConsumeWord("-Infinity")) {
    cell->kind = Cell::kNumber;
    cell->text = s_.substr(start, i_ - start);
    return Status::OK();
  }
  // -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
  auto digits = [&] {
    const size_t from = i_;
    while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') ++i_;
    return i_ > from;
  };
  Consume('-');
  if (!digits()) return Error("expected a JSON value");
  if (Consume('.') && !digits()) return Error("expected digits after '.'");
  if (Peek() == 'e' || Peek() == 'E') {
    ++i_;
    if (Peek() == '+' || Peek() == '-') ++i_;
    if (!digits()) return Error("expected digits in the exponent");
  }
  cell->kind = Cell::kNumber;
  cell->text = s_.substr(start, i_ - start);
  return Status::OK();
}

Status JsonCursor::SkipNested() {
  std::string closers;  // the brackets still open, innermost last
  do {
    const char c = s_[i_];
    if (c == '"') {
      std::string_view ignored;
      RETURN_NOT_OK(ParseString(&ignored));
      continue;
    }
    if (c == '{' || c == '[') {
      closers.push_back(c == '{' ? '}' : ']');
    } else if (c == '}' || c == ']') {
      if (c != closers.back()) return Error(std::string("unexpected '") + c + "'");
      closers.pop_back();
    }
    ++i_;
  } while (!closers.empty() && i_ < s_.size());
  if (!closers.empty())
    return Error("unterminated JSON " + std::string(closers.front() == '}' ? "object" : "array"));
  return Status::OK();
}

Status JsonCursor::ParseHex4(uint32_t* v) {
  if (i_ + 4 > s_.size()) return Error("truncated \\u escape");
  *v = 0;
  for (int k = 0; k < 4; ++k) {
    const int h = HexValue(s_[i_ + k]);
    if (h < 0) return Error("bad \\u escape");
    *v = *v << 4 | static_cast<uint32_t>(h);
  }
  i_ += 4;
  return Status::OK();
}

Status JsonCursor::ParseString(std::string_view* out) {
  ++i_;
  const size_t start = i_;
  while (i_ < s_.size() && s_[i_] != '"' && s_[i_] != '\\') {
    if (static_cast<unsigned char>(s_[i_]) < 0x20) return Error("control character in string");
    ++i_;
  }
  if (i_ >= s_.size()) return Error("unterminated string");
  if (s_[i_] == '"') {
    *out = s_.substr(start, i_ - start);
    ++i_;
    return Status::OK();
  }
  std::string* buf = scratch_.Next();
  buf->assign(s_.substr(start, i_ - start));
  while (true) {
    if (i_ >= s_.size()) return Error("unterminated string");
    const char c = s_[i_++];
    if (c == '"') break;
    if (static_cast<unsigned char>(c) < 0x20) return Error("control character in string");
    if (c != '\\') {
      buf->push_back(c);
      continue;
    }
    if (i_ >= s_.size()) return Error("unterminated string");
    const char e = s_[i_++];
    switch (e) {
      case '"': buf->push_back('"'); break;
      case '\\': buf->push_back('\\'); break;
      case '/': buf->push_back('/'); break;
      case 'b': buf->push_back('\b'); break;
      case 'f': buf->push_back('\f'); break;
      case 'n': buf->push_back('\n'); break;
      case 'r': buf->push_back('\r'); break;
      case 't': buf->push_back('\t'); break;
      case 'u': {
        uint32_t cp = 0;
        RETURN_NOT_OK(ParseHex4(&cp));
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          uint32_t lo = 0;
          if (s_.substr(i_, 2) != "\\u") return Error("unpaired surrogate in \\u escape");
          i_ += 2;
          RETURN_NOT_OK(ParseHex4(&lo));
          if (lo < 0xDC00 || lo > 0xDFFF) return Error("unpaired surrogate in \\u escape");
          cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
          return Error("unpaired surrogate in \\u escape");
        }
        AppendUtf8(cp, buf);
        break;
      }
      default: return Error("bad escape '\\" + std::string(1, e) + "'");
    }
  }
  *out = *buf;
  return Status::OK();
}

// ---- builders ----

Status ValueBuilder::Expected(std::string_view what, Cell::Kind got) const {
  return Status::Invalid("expected " + std::string(what) + " for " + field_.type.ToString() +
                         ", got " + std::string(KindName(got)));
}

namespace {

class ScalarBuilder : public ValueBuilder {
 public:
  ScalarBuilder(const Field& field, std::unique_ptr<ArrayBuilder> builder)
      : ValueBuilder(field), builder_(std::move(builder)) {}

  Status Append(const Cell& cell) override {
    const DataType& t = field_.type;
    const bool textual = t.id() == TypeId::kString || t.id() == TypeId::kBinary ||
                         t.id() == TypeId::kFixedSizeBinary;
    if (cell.kind == Cell::kNull || (cell.kind == Cell::kString && cell.text.empty() && !textual)) {
      if (!field_.nullable) return Status::Invalid("null in a not-null column");
      return builder_->AppendNull();
    }
    if (cell.kind == Cell::kJson) return Expected("a scalar", cell.kind);
    switch (t.id()) {
      case TypeId::kBool: {
        if (cell.kind == Cell::kBool) return As<arrow::BooleanBuilder>()->Append(cell.boolean);
        if (cell.kind != Cell::kString) return Expected("a bool", cell.kind);
        ASSIGN_OR_RAISE(bool v, ParseBool(cell.text));
        return As<arrow::BooleanBuilder>()->Append(v);
      }
      case TypeId::kInt8: return AppendSigned<int8_t>(cell);
      case TypeId::kInt16: return AppendSigned<int16_t>(cell);
      case TypeId::kInt32: return AppendSigned<int32_t>(cell);
      case TypeId::kInt64: return AppendSigned<int64_t>(cell);
      case TypeId::kUInt8: return AppendUnsigned<uint8_t>(cell);
      case TypeId::kUInt16: return AppendUnsigned<uint16_t>(cell);
      case TypeId::kUInt32: return AppendUnsigned<uint32_t>(cell);
      case TypeId::kUInt64: return AppendUnsigned<uint64_t>(cell);
      case TypeId::kFloat32:
      case TypeId::kFloat64: {
        if (cell.kind == Cell::kBool) return Expected("a number", cell.kind);
        if (t.id() == TypeId::kFloat32) {
          ASSIGN_OR_RAISE(float v, ParseFloat(cell.text));
          return As<arrow::FloatBuilder>()->Append(v);
        }
        ASSIGN_OR_RAISE(double v, ParseDouble(cell.text));
        return As<arrow::DoubleBuilder>()->Append(v);
      }
      case TypeId::kString:
        // Numbers and bools are kept as their literal text.
        if (!IsValidUtf8(cell.text)) return Status::Invalid("string is not valid UTF-8");
        return As<arrow::BinaryBuilder>()->Append(cell.text);
      case TypeId::kBinary:
      case TypeId::kFixedSizeBinary: {
        if (cell.kind != Cell::kString) return Expected("a base64 string", cell.kind);
        ASSIGN_OR_RAISE(std::string bytes, DecodeBase64(cell.text));
        if (t.id() == TypeId::kBinary) return As<arrow::BinaryBuilder>()->Append(bytes);
        return As<arrow::FixedSizeBinaryBuilder>()->Append(bytes);
      }
      case TypeId::kDate32: {
        if (cell.kind != Cell::kString) return Expected("a date string", cell.kind);
        ASSIGN_OR_RAISE(int32_t days, ParseDate(cell.text));
        return As<arrow::Int32Builder>()->Append(days);
      }
      case TypeId::kTimestamp: {
        int64_t v;
        if (cell.kind == Cell::kNumber) {
          ASSIGN_OR_RAISE(v, ParseInt64(cell.text));
        } else if (cell.kind == Cell::kString) {
          ASSIGN_OR_RAISE(v, ParseTimestamp(cell.text, t.unit()));
        } else {
          return Expected("a timestamp string", cell.kind);
        }
        return As<arrow::Int64Builder>()->Append(v);
      }
      case TypeId::kDecimal128: {
        if (cell.kind == Cell::kBool) return Expected("a decimal", cell.kind);
        ASSIGN_OR_RAISE(__int128 v, ParseDecimal(cell.text, t.precision(), t.scale()));
        return As<arrow::FixedSizeBinaryBuilder>()->AppendDecimal(v);
      }
      case TypeId::kList:
      case TypeId::kStruct:
      case TypeId::kMap:
      case TypeId::kFixedSizeList: break;  // NestedBuilder's
    }
    return Status::NotImplemented("cannot parse " + t.ToString());
  }

  Status AppendJson(JsonCursor* json) override {
    Cell cell;
    RETURN_NOT_OK(json->ParseValue(&cell));
    return Append(cell);
  }

  Status AppendEmpty() override {
    return field_.nullable ? builder_->AppendNull() : builder_->AppendEmpty();
  }

  Result<Array> Finish() override { return builder_->Finish(); }

 private:
  template <typename B>
  B* As() {
    return static_cast<B*>(builder_.get());
  }

  template <typename T>
  Status AppendSigned(const Cell& cell) {
    if (cell.kind == Cell::kBool) return Expected("an integer", cell.kind);
    ASSIGN_OR_RAISE(int64_t v, ParseInt64(cell.text));
    if (v < std::numeric_limits<T>::min() || v > std::numeric_limits<T>::max()) {
      return Status::Invalid(std::string(cell.text) + " is out of range for " +
                             field_.type.ToString());
    }
    return As<arrow::NumericBuilder<T>>()->Append(static_cast<T>(v));
  }

  template <typename T>
  Status AppendUnsigned(const Cell& cell) {
    if (cell.kind == Cell::kBool) return Expected("an integer", cell.kind);
    ASSIGN_OR_RAISE(uint64_t v, ParseUInt64(cell.text));
    if (v > std::numeric_limits<T>::max()) {
      return Status::Invalid(std::string(cell.text) + " is out of range for " +
                             field_.type.ToString());
    }
    return As<arrow::NumericBuilder<T>>()->Append(static_cast<T>(v));
  }

  std::unique_ptr<ArrayBuilder> builder_;
};

// list and fixed_size_list from a JSON array, struct from an object with the fields' names as
// keys (missing ones null), map from an object whose keys are the text of the map's keys (the
// JSON the writers give) or from an array of [key, value] pairs.
class NestedBuilder : public ValueBuilder {
 public:
  explicit NestedBuilder(const Field& field) : ValueBuilder(field) {}

  Status Init() {
    const DataType& t = field_.type;
    const std::vector<Field>& fields =
        t.id() == TypeId::kMap ? t.child(0).type.children() : t.children();
    for (const Field& child : fields) {
      ASSIGN_OR_RAISE(auto builder, ValueBuilder::Make(child));
      children_.push_back(std::move(builder));
    }
    return Status::OK();
  }

  Status Append(const Cell& cell) override {
    if (cell.kind == Cell::kNull || (cell.kind == Cell::kString && cell.text.empty())) {
      return AppendNull();
    }
    if (cell.kind != Cell::kJson && cell.kind != Cell::kString) {
      return Expected(field_.type.id() == TypeId::kStruct || field_.type.id() == TypeId::kMap
                          ? "a JSON object"
                          : "a JSON array",
                      cell.kind);
    }
    JsonCursor json;
    json.Reset(cell.text);
    json.SkipSpace();
    RETURN_NOT_OK(AppendJson(&json));
    return json.ExpectEnd("JSON value");
  }

  Status AppendJson(JsonCursor* json) override {
    if (json->ConsumeWord("null")) return AppendNull();
    switch (field_.type.id()) {
      case TypeId::kStruct: return AppendStruct(json);
      case TypeId::kMap: return AppendMap(json);
      default: return AppendList(json);
    }
  }

  Status AppendEmpty() override { return AppendSlot(!field_.nullable); }

  Result<Array> Finish() override {
    std::vector<Array> children;
    for (auto& child : children_) {
      ASSIGN_OR_RAISE(auto array, child->Finish());
      children.push_back(std::move(array));
    }
    const DataType& t = field_.type;
    std::shared_ptr<Buffer> validity;
    if (null_count_ > 0) {
      ASSIGN_OR_RAISE(auto bits, MutableBuffer::Allocate(bit_util::BytesForBits(length_)));
      std::memset(bits->mutable_data(), 0, static_cast<size_t>(bits->size()));
      for (int64_t i = 0; i < length_; ++i) {
        if (valid_[static_cast<size_t>(i)]) bit_util::SetBit(bits->mutable_data(), i);
      }
      validity = std::move(bits);
    }
    if (t.id() == TypeId::kStruct || t.id() == TypeId::kFixedSizeList) {
      return Array::MakeNested(t, length_, {validity}, std::move(children), null_count_);
    }
    ASSIGN_OR_RAISE(auto offsets, Buffer::CopyFrom({reinterpret_cast<const char*>(offsets_.data()),
                                                    offsets_.size() * sizeof(int32_t)}));
    if (t.id() == TypeId::kMap) {
      Array entries =
          Array::MakeNested(t.child(0).type, offsets_.back(), {nullptr}, std::move(children), 0);
      children = {std::move(entries)};
    }
    return Array::MakeNested(t, length_, {validity, std::move(offsets)}, std::move(children),
                             null_count_);
  }

 private:
  Status AppendNull() {
    if (!field_.nullable) return Status::Invalid("null in a not-null column");
    return AppendSlot(false);
  }

  // A slot with no items (list, map), empty children (struct) or list_size() empty items.
  Status AppendSlot(bool valid) {
    const DataType& t = field_.type;
    if (t.id() == TypeId::kStruct) {
      for (auto& child : children_) RETURN_NOT_OK(child->AppendEmpty());
    } else if (t.id() == TypeId::kFixedSizeList) {
      for (int32_t k = 0; k < t.list_size(); ++k) RETURN_NOT_OK(children_[0]->AppendEmpty());
    } else {
      offsets_.push_back(offsets_.back());
    }
    return Close(valid);
  }

  Status Close(bool valid) {
    valid_.push_back(valid);
    if (!valid) ++null_count_;
    ++length_;
    return Status::OK();
  }

  Status AppendList(JsonCursor* json) {
    if (!json->Consume('[')) return json->Error("expected a JSON array for " + Type());
    int64_t items = 0;
    RETURN_NOT_OK(json->ForEachItem(']', [&] {
      return children_[0]->AppendJson(json).WithContext("item " + std::to_string(items++));
    }));
    const DataType& t = field_.type;
    if (t.id() == TypeId::kFixedSizeList) {
      if (items != t.list_size()) {
        return Status::Invalid("expected " + std::to_string(t.list_size()) + " items for " +
                               Type() + ", got " + std::to_string(items));
      }
    } else {
      RETURN_NOT_OK(PushOffset(items));
    }
    return Close(true);
  }

  Status AppendStruct(JsonCursor* json) {
    if (!json->Consume('{')) return json->Error("expected a JSON object for " + Type());
    const DataType& t = field_.type;
    std::vector<bool> seen(children_.size(), false);
    RETURN_NOT_OK(json->ForEachItem('}', [&]() -> Status {
      std::string_view key;
      RETURN_NOT_OK(json->ParseKey(&key));
      size_t k = 0;
      while (k < children_.size() && t.child(static_cast<int>(k)).name != key) ++k;
      if (k == children_.size()) {
        return Status::Invalid("field '" + std::string(key) + "' is not in " + Type());
      }
      if (seen[k]) return Status::Invalid("duplicate field '" + std::string(key) + "'");
      seen[k] = true;
      return children_[k]->AppendJson(json).WithContext("field '" + std::string(key) + "'");
    }));
    for (size_t k = 0; k < children_.size(); ++k) {
      if (!seen[k]) {
        RETURN_NOT_OK(children_[k]->Append(Cell{}).WithContext(
            "field '" + t.child(static_cast<int>(k)).name + "'"));
      }
    }
    return Close(true);
  }

  // An object keyed by the keys' text, or [[key, value], ...] (json.dumps of pyarrow's
  // to_pylist() of a map).
  Status AppendMap(JsonCursor* json) {
    int64_t entries = 0;
    if (json->Consume('{')) {
      RETURN_NOT_OK(json->ForEachItem('}', [&]() -> Status {
        Cell key{Cell::kString, {}, false};
        RETURN_NOT_OK(json->ParseKey(&key.text));
        const std::string quoted = "'" + std::string(key.text) + "'";
        RETURN_NOT_OK(children_[0]->Append(key).WithContext("map key " + quoted));
        ++entries;
        return children_[1]->AppendJson(json).WithContext("map value of " + quoted);
      }));
    } else if (json->Consume('[')) {
      RETURN_NOT_OK(json->ForEachItem(']', [&]() -> Status {
        const std::string where = "map entry " + std::to_string(entries++);
        if (!json->Consume('[')) return json->Error("expected a [key, value] array");
        json->SkipSpace();
        RETURN_NOT_OK(children_[0]->AppendJson(json).WithContext(where + " key"));
        json->SkipSpace();
        if (!json->Consume(',')) return json->Error("expected ',' after the map key");
        json->SkipSpace();
        RETURN_NOT_OK(children_[1]->AppendJson(json).WithContext(where + " value"));
        json->SkipSpace();
        if (!json->Consume(']')) return json->Error("expected ']' after the map value");
        return Status::OK();
      }));
    } else {
      return json->Error("expected a JSON object for " + Type());
    }
    RETURN_NOT_OK(PushOffset(entries));
    return Close(true);
  }

  Status PushOffset(int64_t items) {
    const int64_t end = offsets_.back() + items;
    if (end > std::numeric_limits<int32_t>::max()) {
      return Status::Invalid(Type() + " holds more than 2^31-1 items in one batch");
    }
    offsets_.push_back(static_cast<int32_t>(end));
    return Status::OK();
  }

  std::string Type() const { return field_.type.ToString(); }

  std::vector<std::unique_ptr<ValueBuilder>> children_;
  std::vector<int32_t> offsets_ = {0};
  std::vector<bool> valid_;
  int64_t length_ = 0;
  int64_t null_count_ = 0;
};

}  // namespace

Result<std::unique_ptr<ValueBuilder>> ValueBuilder::Make(const Field& field) {
  if (field.type.is_nested()) {
    auto builder = std::make_unique<NestedBuilder>(field);
    RETURN_NOT_OK(builder->Init());
    return std::unique_ptr<ValueBuilder>(std::move(builder));
  }
  ASSIGN_OR_RAISE(auto builder, ArrayBuilder::Make(field.type));
  return std::unique_ptr<ValueBuilder>(std::make_unique<ScalarBuilder>(field, std::move(builder)));
}

}  // namespace oxbow::text::internal
