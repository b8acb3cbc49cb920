// TextReader implementations (JSON Lines, CSV) and schema inference.
#include <algorithm>
#include <unordered_map>

#include "oxbow/text/scalar_text_internal.h"
#include "oxbow/text/text.h"
#include "oxbow/text/value_builder_internal.h"

namespace oxbow::text {

using arrow::Array;
using arrow::DataType;
using arrow::Field;
using arrow::RecordBatch;
using arrow::RecordBatchPtr;
using arrow::Schema;
using arrow::SchemaPtr;
using arrow::TypeId;
using internal::Cell;

namespace {

std::string LineContext(int64_t line) { return "line " + std::to_string(line); }

// Drops a UTF-8 byte order mark.
std::string_view SkipBom(std::string_view text) {
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);
  return text;
}

using Builders = std::vector<std::unique_ptr<internal::ValueBuilder>>;

Result<Builders> MakeBuilders(const Schema& schema) {
  Builders out;
  for (const auto& f : schema.fields()) {
    ASSIGN_OR_RAISE(auto b, internal::ValueBuilder::Make(f));
    out.push_back(std::move(b));
  }
  return out;
}

Result<RecordBatchPtr> FinishBatch(const SchemaPtr& schema, Builders* builders, int64_t rows) {
  std::vector<Array> columns;
  for (auto& b : *builders) {
    ASSIGN_OR_RAISE(auto a, b->Finish());
    columns.push_back(std::move(a));
  }
  return RecordBatch::Make(schema, rows, std::move(columns));
}

// ---- JSON Lines ----

// Parses one line holding one JSON object; nested values are kept as their raw text.
class JsonObjectParser {
 public:
  struct Member {
    std::string_view key;
    Cell value;
  };

  Status Parse(std::string_view line, std::vector<Member>* members) {
    json_.Reset(line);
    members->clear();
    json_.SkipSpace();
    if (!json_.Consume('{')) return json_.Error("expected '{' at the start of a JSON object");
    RETURN_NOT_OK(json_.ForEachItem('}', [&]() -> Status {
      Member m;
      RETURN_NOT_OK(json_.ParseKey(&m.key));
      RETURN_NOT_OK(json_.ParseValue(&m.value));
      members->push_back(m);
      return Status::OK();
    }));
    return json_.ExpectEnd("JSON object");
  }

 private:
  internal::JsonCursor json_;
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
        RETURN_NOT_OK(builders[c]->Append(value).WithContext(
            LineContext(line_number) + ", column '" + std::string(key) + "'"));
      }
      for (int c = 0; c < n; ++c) {
        if (stamp[c] != rows) {
          RETURN_NOT_OK(builders[c]->Append(Cell{}).WithContext(
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
  internal::Scratch scratch_;
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
                ->Append(fields_[k])
                .WithContext(LineContext(line) + ", column '" + schema_->field(c).name + "'"));
      }
      for (int c = 0; c < n; ++c) {
        if (!filled[c]) RETURN_NOT_OK(builders[c]->Append(Cell{}));
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
    case Cell::kJson: break;  // InferJson refuses nested values
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
      if (m.value.kind == Cell::kJson) {
        return Status::Invalid(LineContext(line_number) + ": key '" + std::string(m.key) +
                               "' holds a JSON object or array; inference reads flat values "
                               "only, so give the schema");
      }
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
