// TextReader implementations (JSON Lines, CSV) and schema inference.
#include <algorithm>
#include <deque>
#include <limits>
#include <unordered_map>

#include "oxbow/arrow/builder.h"
#include "oxbow/text/scalar_text_internal.h"
#include "oxbow/text/text.h"

namespace oxbow::text {

using arrow::Array;
using arrow::ArrayBuilder;
using arrow::DataType;
using arrow::Field;
using arrow::RecordBatch;
using arrow::RecordBatchPtr;
using arrow::Schema;
using arrow::SchemaPtr;
using arrow::TypeId;

namespace {

// One parsed value. CSV gives kNull (empty unquoted field) or kString; JSON gives all kinds.
struct Cell {
  enum Kind : uint8_t { kNull, kBool, kNumber, kString };
  Kind kind = kNull;
  std::string_view text;  // number token or decoded string
  bool boolean = false;
};

std::string_view KindName(Cell::Kind kind) {
  switch (kind) {
    case Cell::kNull: return "null";
    case Cell::kBool: return "a bool";
    case Cell::kNumber: return "a number";
    case Cell::kString: return "a string";
  }
  return "?";
}

std::string LineContext(int64_t line) { return "line " + std::to_string(line); }

// Drops a UTF-8 byte order mark.
std::string_view SkipBom(std::string_view text) {
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);
  return text;
}

// Stable storage for unescaped strings of one row (deque elements never move).
class Scratch {
 public:
  void Reset() { used_ = 0; }
  std::string* Next() {
    if (used_ == pool_.size()) pool_.emplace_back();
    std::string* s = &pool_[used_++];
    s->clear();
    return s;
  }

 private:
  std::deque<std::string> pool_;
  size_t used_ = 0;
};

// ---- typed column builder ----

class ColumnBuilder {
 public:
  static Result<ColumnBuilder> Make(const Field& field) {
    ColumnBuilder b;
    b.field_ = &field;
    ASSIGN_OR_RAISE(b.builder_, ArrayBuilder::Make(field.type));
    return b;
  }

  Status Append(const Cell& cell) {
    const DataType& t = field_->type;
    bool textual = t.id() == TypeId::kString || t.id() == TypeId::kBinary ||
                   t.id() == TypeId::kFixedSizeBinary;
    if (cell.kind == Cell::kNull || (cell.kind == Cell::kString && cell.text.empty() && !textual)) {
      if (!field_->nullable) return Status::Invalid("null in a not-null column");
      return builder_->AppendNull();
    }
    switch (t.id()) {
      case TypeId::kBool: {
        if (cell.kind == Cell::kBool) return As<arrow::BooleanBuilder>()->Append(cell.boolean);
        if (cell.kind != Cell::kString) return Expected("a bool", cell);
        ASSIGN_OR_RAISE(bool v, internal::ParseBool(cell.text));
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
        if (cell.kind == Cell::kBool) return Expected("a number", cell);
        if (t.id() == TypeId::kFloat32) {
          ASSIGN_OR_RAISE(float v, internal::ParseFloat(cell.text));
          return As<arrow::FloatBuilder>()->Append(v);
        }
        ASSIGN_OR_RAISE(double v, internal::ParseDouble(cell.text));
        return As<arrow::DoubleBuilder>()->Append(v);
      }
      case TypeId::kString:
        // Numbers and bools are kept as their literal text.
        if (!internal::IsValidUtf8(cell.text)) return Status::Invalid("string is not valid UTF-8");
        return As<arrow::BinaryBuilder>()->Append(cell.text);
      case TypeId::kBinary:
      case TypeId::kFixedSizeBinary: {
        if (cell.kind != Cell::kString) return Expected("a base64 string", cell);
        ASSIGN_OR_RAISE(std::string bytes, internal::DecodeBase64(cell.text));
        if (t.id() == TypeId::kBinary) return As<arrow::BinaryBuilder>()->Append(bytes);
        return As<arrow::FixedSizeBinaryBuilder>()->Append(bytes);
      }
      case TypeId::kDate32: {
        if (cell.kind != Cell::kString) return Expected("a date string", cell);
        ASSIGN_OR_RAISE(int32_t days, internal::ParseDate(cell.text));
        return As<arrow::Int32Builder>()->Append(days);
      }
      case TypeId::kTimestamp: {
        int64_t v;
        if (cell.kind == Cell::kNumber) {
          ASSIGN_OR_RAISE(v, internal::ParseInt64(cell.text));
        } else if (cell.kind == Cell::kString) {
          ASSIGN_OR_RAISE(v, internal::ParseTimestamp(cell.text, t.unit()));
        } else {
          return Expected("a timestamp string", cell);
        }
        return As<arrow::Int64Builder>()->Append(v);
      }
      case TypeId::kDecimal128: {
        if (cell.kind == Cell::kBool) return Expected("a decimal", cell);
        ASSIGN_OR_RAISE(__int128 v, internal::ParseDecimal(cell.text, t.precision(), t.scale()));
        return As<arrow::FixedSizeBinaryBuilder>()->AppendDecimal(v);
      }
      case TypeId::kList:
      case TypeId::kStruct:
      case TypeId::kMap:
      case TypeId::kFixedSizeList: break;  // MakeBuilders refuses them
    }
    return Status::NotImplemented("cannot parse " + t.ToString());
  }

  Result<Array> Finish() { return builder_->Finish(); }
  const Field& field() const { return *field_; }

 private:
  template <typename B>
  B* As() {
    return static_cast<B*>(builder_.get());
  }

  Status Expected(std::string_view what, const Cell& cell) const {
    return Status::Invalid("expected " + std::string(what) + " for " + field_->type.ToString() +
                           ", got " + std::string(KindName(cell.kind)));
  }

  template <typename T>
  Status AppendSigned(const Cell& cell) {
    if (cell.kind == Cell::kBool) return Expected("an integer", cell);
    ASSIGN_OR_RAISE(int64_t v, internal::ParseInt64(cell.text));
    if (v < std::numeric_limits<T>::min() || v > std::numeric_limits<T>::max()) {
      return Status::Invalid(std::string(cell.text) + " is out of range for " +
                             field_->type.ToString());
    }
    return As<arrow::NumericBuilder<T>>()->Append(static_cast<T>(v));
  }

  template <typename T>
  Status AppendUnsigned(const Cell& cell) {
    if (cell.kind == Cell::kBool) return Expected("an integer", cell);
    ASSIGN_OR_RAISE(uint64_t v, internal::ParseUInt64(cell.text));
    if (v > std::numeric_limits<T>::max()) {
      return Status::Invalid(std::string(cell.text) + " is out of range for " +
                             field_->type.ToString());
    }
    return As<arrow::NumericBuilder<T>>()->Append(static_cast<T>(v));
  }

  const Field* field_ = nullptr;
  std::unique_ptr<ArrayBuilder> builder_;
};

Status NestedRefused(const Field& f) {
  return Status::NotImplemented("column " + Quote(f.name) + " has type " + f.type.ToString() +
                                ": the text formats do not read nested types yet");
}

Result<std::vector<ColumnBuilder>> MakeBuilders(const Schema& schema) {
  std::vector<ColumnBuilder> out;
  for (const auto& f : schema.fields()) {
    if (f.type.is_nested()) return NestedRefused(f);
    ASSIGN_OR_RAISE(auto b, ColumnBuilder::Make(f));
    out.push_back(std::move(b));
  }
  return out;
}

Result<RecordBatchPtr> FinishBatch(const SchemaPtr& schema, std::vector<ColumnBuilder>* builders,
                                   int64_t rows) {
  std::vector<Array> columns;
  for (auto& b : *builders) {
    ASSIGN_OR_RAISE(auto a, b.Finish());
    columns.push_back(std::move(a));
  }
  return RecordBatch::Make(schema, rows, std::move(columns));
}

// ---- JSON Lines ----

class JsonObjectParser {
 public:
  struct Member {
    std::string_view key;
    Cell value;
  };

  // Parses one line holding one flat JSON object.
  Status Parse(std::string_view line, std::vector<Member>* members) {
    s_ = line;
    i_ = 0;
    scratch_.Reset();
    members->clear();
    SkipSpace();
    if (!Consume('{')) return Error("expected '{' at the start of a JSON object");
    SkipSpace();
    if (Consume('}')) return End();
    while (true) {
      SkipSpace();
      if (Peek() != '"') return Error("expected a string key");
      Member m;
      RETURN_NOT_OK(ParseString(&m.key));
      SkipSpace();
      if (!Consume(':')) return Error("expected ':' after key");
      SkipSpace();
      RETURN_NOT_OK(ParseValue(m.key, &m.value));
      members->push_back(m);
      SkipSpace();
      if (Consume(',')) continue;
      if (Consume('}')) return End();
      return Error("expected ',' or '}'");
    }
  }

 private:
  char Peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  bool Consume(char c) {
    if (Peek() != c || i_ >= s_.size()) return false;
    ++i_;
    return true;
  }
  void SkipSpace() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\r')) ++i_;
  }
  Status Error(std::string_view what) const {
    return Status::Invalid(std::string(what) + " at character " + std::to_string(i_ + 1));
  }
  Status End() {
    SkipSpace();
    if (i_ != s_.size()) return Error("unexpected text after the JSON object");
    return Status::OK();
  }

  Status ParseValue(std::string_view key, Cell* cell) {
    char c = Peek();
    if (c == '"') {
      cell->kind = Cell::kString;
      return ParseString(&cell->text);
    }
    if (c == '{' || c == '[') {
      return Status::Invalid("key '" + std::string(key) +
                             "': nested objects and arrays are not supported");
    }
    auto word = [&](std::string_view w) {
      if (s_.substr(i_, w.size()) != w) return false;
      i_ += w.size();
      return true;
    };
    if (word("null")) {
      cell->kind = Cell::kNull;
      return Status::OK();
    }
    if (word("true") || word("false")) {
      cell->kind = Cell::kBool;
      cell->boolean = s_[i_ - 1] == 'e' && s_[i_ - 2] == 'u';
      return Status::OK();
    }
    size_t start = i_;
    if (word("NaN") || word("Infinity") || word("-Infinity")) {
      cell->kind = Cell::kNumber;
      cell->text = s_.substr(start, i_ - start);
      return Status::OK();
    }
    // -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
    auto digits = [&] {
      size_t from = i_;
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

  static int HexValue(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  Status ParseHex4(uint32_t* v) {
    if (i_ + 4 > s_.size()) return Error("truncated \\u escape");
    *v = 0;
    for (int k = 0; k < 4; ++k) {
      int h = HexValue(s_[i_ + k]);
      if (h < 0) return Error("bad \\u escape");
      *v = *v << 4 | static_cast<uint32_t>(h);
    }
    i_ += 4;
    return Status::OK();
  }

  static void AppendUtf8(uint32_t cp, std::string* out) {
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

  // At an opening quote; `*out` views the line when there are no escapes.
  Status ParseString(std::string_view* out) {
    ++i_;
    size_t start = i_;
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
      char c = s_[i_++];
      if (c == '"') break;
      if (static_cast<unsigned char>(c) < 0x20) return Error("control character in string");
      if (c != '\\') {
        buf->push_back(c);
        continue;
      }
      if (i_ >= s_.size()) return Error("unterminated string");
      char e = s_[i_++];
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

  std::string_view s_;
  size_t i_ = 0;
  Scratch scratch_;
};

// Splits text into lines (without "\n" or "\r\n"), skipping blank ones, counting line numbers.
class LineSplitter {
 public:
  explicit LineSplitter(std::string_view text) : text_(SkipBom(text)) {}
  // False at the end.
  bool Next(std::string_view* line, int64_t* line_number) {
    while (pos_ < text_.size()) {
      size_t end = text_.find('\n', pos_);
      if (end == std::string_view::npos) end = text_.size();
      std::string_view l = text_.substr(pos_, end - pos_);
      pos_ = end + 1;
      ++line_;
      if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
      if (l.find_first_not_of(" \t") == std::string_view::npos) continue;
      *line = l;
      *line_number = line_;
      return true;
    }
    return false;
  }

 private:
  std::string_view text_;
  size_t pos_ = 0;
  int64_t line_ = 0;
};

class JsonLinesReader : public TextReader {
 public:
  static Result<std::unique_ptr<TextReader>> Make(std::string_view text, SchemaPtr schema,
                                                  ReadOptions options) {
    auto r = std::unique_ptr<JsonLinesReader>(new JsonLinesReader(text, options));
    r->schema_ = std::move(schema);
    for (int i = 0; i < r->schema_->num_fields(); ++i) {
      r->index_.emplace(r->schema_->field(i).name, i);
    }
    return std::unique_ptr<TextReader>(std::move(r));
  }

  Result<RecordBatchPtr> Next() override {
    ASSIGN_OR_RAISE(auto builders, MakeBuilders(*schema_));
    const int n = schema_->num_fields();
    std::vector<int64_t> stamp(static_cast<size_t>(n), -1);
    int64_t rows = 0;
    std::string_view line;
    int64_t line_number;
    while (rows < std::max<int64_t>(options_.batch_rows, 1) && lines_.Next(&line, &line_number)) {
      RETURN_NOT_OK(parser_.Parse(line, &members_).WithContext(LineContext(line_number)));
      for (size_t m = 0; m < members_.size(); ++m) {
        const auto& [key, value] = members_[m];
        int c = static_cast<int>(m) < n && schema_->field(static_cast<int>(m)).name == key
                    ? static_cast<int>(m)
                    : Lookup(key);
        if (c < 0) {
          if (options_.ignore_unknown_fields) continue;
          return Status::Invalid(LineContext(line_number) + ": unknown field '" + std::string(key) +
                                 "' (the schema has " + FieldList() + ")");
        }
        if (stamp[c] == rows) {
          return Status::Invalid(LineContext(line_number) + ": duplicate key '" + std::string(key) +
                                 "'");
        }
        stamp[c] = rows;
        RETURN_NOT_OK(builders[c].Append(value).WithContext(LineContext(line_number) +
                                                            ", column '" + std::string(key) + "'"));
      }
      for (int c = 0; c < n; ++c) {
        if (stamp[c] != rows) {
          RETURN_NOT_OK(builders[c].Append(Cell{}).WithContext(
              LineContext(line_number) + ", column '" + schema_->field(c).name + "'"));
        }
      }
      ++rows;
    }
    if (rows == 0) return RecordBatchPtr();
    return FinishBatch(schema_, &builders, rows);
  }

 private:
  JsonLinesReader(std::string_view text, ReadOptions options) : options_(options), lines_(text) {}

  int Lookup(std::string_view key) const {
    auto it = index_.find(key);
    return it == index_.end() ? -1 : it->second;
  }
  std::string FieldList() const {
    std::string out;
    for (const auto& f : schema_->fields()) out += (out.empty() ? "" : ", ") + f.name;
    return out;
  }

  ReadOptions options_;
  LineSplitter lines_;
  JsonObjectParser parser_;
  std::vector<JsonObjectParser::Member> members_;
  std::unordered_map<std::string_view, int> index_;
};

// ---- CSV ----

class CsvTokenizer {
 public:
  explicit CsvTokenizer(std::string_view text) : text_(SkipBom(text)) {}

  // Reads the next record into `fields`; returns false at the end. `*line` gets the line the
  // record starts on. `allow_blank`: a blank line is a record of one null field.
  Result<bool> Next(std::vector<Cell>* fields, int64_t* line, bool allow_blank) {
    fields->clear();
    scratch_.Reset();
    while (true) {
      if (pos_ >= text_.size()) return false;
      if (text_[pos_] == '\n' || text_.substr(pos_, 2) == "\r\n") {
        size_t skip = text_[pos_] == '\n' ? 1 : 2;
        if (allow_blank) {
          *line = line_;
          pos_ += skip;
          ++line_;
          fields->push_back(Cell{});
          return true;
        }
        pos_ += skip;
        ++line_;
        continue;
      }
      break;
    }
    *line = line_;
    while (true) {
      Cell cell;
      if (pos_ < text_.size() && text_[pos_] == '"') {
        int64_t start_line = line_;
        ++pos_;
        size_t start = pos_;
        std::string* buf = nullptr;
        while (true) {
          size_t q = text_.find('"', pos_);
          if (q == std::string_view::npos) {
            return Status::Invalid(LineContext(start_line) + ": unterminated quoted field");
          }
          for (size_t k = pos_; k < q; ++k) line_ += text_[k] == '\n';
          if (q + 1 < text_.size() && text_[q + 1] == '"') {
            if (buf == nullptr) buf = scratch_.Next();
            buf->append(text_.substr(start, q + 1 - start));
            pos_ = start = q + 2;
            continue;
          }
          if (buf != nullptr) {
            buf->append(text_.substr(start, q - start));
            cell.text = *buf;
          } else {
            cell.text = text_.substr(start, q - start);
          }
          pos_ = q + 1;
          break;
        }
        cell.kind = Cell::kString;
        if (pos_ < text_.size() && text_[pos_] != ',' && text_[pos_] != '\n' &&
            text_.substr(pos_, 2) != "\r\n") {
          return Status::Invalid(LineContext(line_) +
                                 ": unexpected character after a quoted field");
        }
      } else {
        size_t end = pos_;
        while (end < text_.size() && text_[end] != ',' && text_[end] != '\n' &&
               text_.substr(end, 2) != "\r\n") {
          ++end;
        }
        cell.text = text_.substr(pos_, end - pos_);
        cell.kind = cell.text.empty() ? Cell::kNull : Cell::kString;
        pos_ = end;
      }
      fields->push_back(cell);
      if (pos_ < text_.size() && text_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < text_.size()) {
        pos_ += text_[pos_] == '\n' ? 1 : 2;
        ++line_;
      }
      return true;
    }
  }

 private:
  std::string_view text_;
  size_t pos_ = 0;
  int64_t line_ = 1;
  Scratch scratch_;
};

class CsvReader : public TextReader {
 public:
  static Result<std::unique_ptr<TextReader>> Make(std::string_view text, SchemaPtr schema,
                                                  ReadOptions options) {
    auto r = std::unique_ptr<CsvReader>(new CsvReader(text, options));
    r->schema_ = std::move(schema);
    std::vector<Cell> header;
    int64_t line;
    ASSIGN_OR_RAISE(bool any, r->tokenizer_.Next(&header, &line, false));
    if (!any) return Status::Invalid("CSV input is empty: a header row is required");
    std::vector<bool> present(static_cast<size_t>(r->schema_->num_fields()), false);
    for (const Cell& h : header) {
      int c = r->schema_->GetFieldIndex(h.text);
      if (c < 0 && !options.ignore_unknown_fields) {
        return Status::Invalid("CSV header column '" + std::string(h.text) +
                               "' is not in the schema");
      }
      if (c >= 0 && present[c]) {
        return Status::Invalid("CSV header names column '" + std::string(h.text) + "' twice");
      }
      if (c >= 0) present[c] = true;
      r->column_of_.push_back(c);
    }
    for (int c = 0; c < r->schema_->num_fields(); ++c) {
      if (!present[c] && !r->schema_->field(c).nullable) {
        return Status::Invalid("not-null column '" + r->schema_->field(c).name +
                               "' is missing from the CSV header");
      }
    }
    return std::unique_ptr<TextReader>(std::move(r));
  }

  Result<RecordBatchPtr> Next() override {
    ASSIGN_OR_RAISE(auto builders, MakeBuilders(*schema_));
    const int n = schema_->num_fields();
    const bool allow_blank = column_of_.size() == 1;
    std::vector<bool> filled(static_cast<size_t>(n));
    int64_t rows = 0;
    int64_t line;
    while (rows < std::max<int64_t>(options_.batch_rows, 1)) {
      ASSIGN_OR_RAISE(bool any, tokenizer_.Next(&fields_, &line, allow_blank));
      if (!any) break;
      if (fields_.size() != column_of_.size()) {
        return Status::Invalid(LineContext(line) + ": expected " +
                               std::to_string(column_of_.size()) + " fields, found " +
                               std::to_string(fields_.size()));
      }
      std::fill(filled.begin(), filled.end(), false);
      for (size_t k = 0; k < fields_.size(); ++k) {
        int c = column_of_[k];
        if (c < 0) continue;
        filled[c] = true;
        RETURN_NOT_OK(
            builders[c]
                .Append(fields_[k])
                .WithContext(LineContext(line) + ", column '" + schema_->field(c).name + "'"));
      }
      for (int c = 0; c < n; ++c) {
        if (!filled[c]) RETURN_NOT_OK(builders[c].Append(Cell{}));
      }
      ++rows;
    }
    if (rows == 0) return RecordBatchPtr();
    return FinishBatch(schema_, &builders, rows);
  }

 private:
  CsvReader(std::string_view text, ReadOptions options) : options_(options), tokenizer_(text) {}

  ReadOptions options_;
  CsvTokenizer tokenizer_;
  std::vector<int> column_of_;  // header position -> schema field, or -1 (skipped)
  std::vector<Cell> fields_;
};

// ---- inference ----

enum class Inferred : uint8_t { kUnknown, kInt, kDouble, kBool, kString };

Inferred Merge(Inferred a, Inferred b) {
  if (a == Inferred::kUnknown) return b;
  if (b == Inferred::kUnknown || a == b) return a;
  if ((a == Inferred::kInt && b == Inferred::kDouble) ||
      (a == Inferred::kDouble && b == Inferred::kInt)) {
    return Inferred::kDouble;
  }
  return Inferred::kString;
}

DataType ToType(Inferred k) {
  switch (k) {
    case Inferred::kInt: return DataType::Int64();
    case Inferred::kDouble: return DataType::Float64();
    case Inferred::kBool: return DataType::Bool();
    default: return DataType::String();
  }
}

// A CSV cell's narrowest type: int64, then double, then bool, then string.
Inferred ClassifyCsv(std::string_view text) {
  if (internal::ParseInt64(text).ok()) return Inferred::kInt;
  if (internal::ParseDouble(text).ok()) return Inferred::kDouble;
  if (internal::ParseBool(text).ok()) return Inferred::kBool;
  return Inferred::kString;
}

Inferred ClassifyJson(const Cell& cell) {
  switch (cell.kind) {
    case Cell::kNull: return Inferred::kUnknown;
    case Cell::kBool: return Inferred::kBool;
    case Cell::kString: return Inferred::kString;
    case Cell::kNumber:
      return internal::ParseInt64(cell.text).ok() ? Inferred::kInt : Inferred::kDouble;
  }
  return Inferred::kString;
}

Result<SchemaPtr> MakeInferredSchema(const std::vector<std::string>& names,
                                     const std::vector<Inferred>& kinds) {
  std::vector<Field> fields;
  for (size_t i = 0; i < names.size(); ++i) {
    fields.push_back(Field{names[i], ToType(kinds[i]), true, {}});
  }
  auto schema = std::make_shared<const Schema>(std::move(fields));
  RETURN_NOT_OK(schema->Validate());
  return SchemaPtr(schema);
}

Result<SchemaPtr> InferJson(std::string_view text, const ReadOptions& options) {
  LineSplitter lines(text);
  JsonObjectParser parser;
  std::vector<JsonObjectParser::Member> members;
  std::vector<std::string> names;
  std::vector<Inferred> kinds;
  std::unordered_map<std::string, size_t> index;
  std::string_view line;
  int64_t line_number, rows = 0;
  while ((options.infer_rows <= 0 || rows < options.infer_rows) &&
         lines.Next(&line, &line_number)) {
    RETURN_NOT_OK(parser.Parse(line, &members).WithContext(LineContext(line_number)));
    for (const auto& m : members) {
      auto [it, inserted] = index.emplace(std::string(m.key), names.size());
      if (inserted) {
        names.emplace_back(m.key);
        kinds.push_back(Inferred::kUnknown);
      }
      kinds[it->second] = Merge(kinds[it->second], ClassifyJson(m.value));
    }
    ++rows;
  }
  return MakeInferredSchema(names, kinds);
}

Result<SchemaPtr> InferCsv(std::string_view text, const ReadOptions& options) {
  CsvTokenizer tokenizer(text);
  std::vector<Cell> fields;
  int64_t line;
  ASSIGN_OR_RAISE(bool any, tokenizer.Next(&fields, &line, false));
  if (!any) return Status::Invalid("CSV input is empty: a header row is required");
  std::vector<std::string> names;
  for (const Cell& c : fields) names.emplace_back(c.text);
  std::vector<Inferred> kinds(names.size(), Inferred::kUnknown);
  int64_t rows = 0;
  while (options.infer_rows <= 0 || rows < options.infer_rows) {
    ASSIGN_OR_RAISE(any, tokenizer.Next(&fields, &line, names.size() == 1));
    if (!any) break;
    if (fields.size() != names.size()) {
      return Status::Invalid(LineContext(line) + ": expected " + std::to_string(names.size()) +
                             " fields, found " + std::to_string(fields.size()));
    }
    for (size_t k = 0; k < fields.size(); ++k) {
      if (fields[k].kind == Cell::kNull || fields[k].text.empty()) continue;
      kinds[k] = Merge(kinds[k], ClassifyCsv(fields[k].text));
    }
    ++rows;
  }
  return MakeInferredSchema(names, kinds);
}

}  // namespace

Result<std::vector<RecordBatchPtr>> TextReader::ReadAll() {
  std::vector<RecordBatchPtr> out;
  while (true) {
    ASSIGN_OR_RAISE(auto batch, Next());
    if (!batch) return out;
    out.push_back(std::move(batch));
  }
}

Result<std::unique_ptr<TextReader>> TextReader::Make(TextFormat format, std::string_view text,
                                                     SchemaPtr schema, ReadOptions options) {
  if (format == TextFormat::kTable) {
    return Status::NotImplemented("the table format is for display and cannot be read");
  }
  if (!schema) {
    ASSIGN_OR_RAISE(schema, InferSchema(format, text, options));
  } else {
    RETURN_NOT_OK(schema->Validate());
  }
  if (format == TextFormat::kJsonLines) {
    return JsonLinesReader::Make(text, std::move(schema), options);
  }
  return CsvReader::Make(text, std::move(schema), options);
}

Result<SchemaPtr> InferSchema(TextFormat format, std::string_view text,
                              const ReadOptions& options) {
  switch (format) {
    case TextFormat::kJsonLines: return InferJson(text, options);
    case TextFormat::kCsv: return InferCsv(text, options);
    case TextFormat::kTable: break;
  }
  return Status::NotImplemented("the table format is for display and cannot be read");
}

}  // namespace oxbow::text
