// TextWriter implementations: table, JSON Lines and CSV.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>

#include "oxbow/text/scalar_text_internal.h"
#include "oxbow/text/text.h"

namespace oxbow::text {

using arrow::Array;
using arrow::DataType;
using arrow::RecordBatch;
using arrow::SchemaPtr;
using arrow::TypeId;

namespace {

template <typename T>
void AppendInt(T v, std::string* out) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  out->append(buf, end);
}

__int128 DecimalValue(const Array& a, int64_t i) {
  __int128 v;
  std::memcpy(&v, a.GetView(i).data(), sizeof(v));
  return v;
}

void AppendHex(std::string_view bytes, std::string* out) {
  static constexpr char kHex[] = "0123456789abcdef";
  out->append("0x");
  for (char c : bytes) {
    auto b = static_cast<unsigned char>(c);
    out->push_back(kHex[b >> 4]);
    out->push_back(kHex[b & 15]);
  }
}

void AppendNestedJson(const Array& a, int64_t i, std::string* out);

// The text of a non-null value without JSON quoting (CSV and table cells); a nested value's
// text is its JSON form.
void AppendPlain(const Array& a, int64_t i, std::string* out) {
  const DataType& t = a.type();
  switch (t.id()) {
    case TypeId::kBool: out->append(a.BoolValue(i) ? "true" : "false"); break;
    case TypeId::kInt8: AppendInt(a.Value<int8_t>(i), out); break;
    case TypeId::kInt16: AppendInt(a.Value<int16_t>(i), out); break;
    case TypeId::kInt32: AppendInt(a.Value<int32_t>(i), out); break;
    case TypeId::kInt64: AppendInt(a.Value<int64_t>(i), out); break;
    case TypeId::kUInt8: AppendInt(a.Value<uint8_t>(i), out); break;
    case TypeId::kUInt16: AppendInt(a.Value<uint16_t>(i), out); break;
    case TypeId::kUInt32: AppendInt(a.Value<uint32_t>(i), out); break;
    case TypeId::kUInt64: AppendInt(a.Value<uint64_t>(i), out); break;
    case TypeId::kFloat32: internal::AppendFloat(a.Value<float>(i), out); break;
    case TypeId::kFloat64: internal::AppendDouble(a.Value<double>(i), out); break;
    case TypeId::kString: out->append(a.GetView(i)); break;
    case TypeId::kBinary:
    case TypeId::kFixedSizeBinary: internal::AppendBase64(a.GetView(i), out); break;
    case TypeId::kDate32: internal::AppendDate(a.Value<int32_t>(i), out); break;
    case TypeId::kTimestamp:
      internal::AppendTimestamp(a.Value<int64_t>(i), t.unit(), t.timezone(), out);
      break;
    case TypeId::kDecimal128: internal::AppendDecimal(DecimalValue(a, i), t.scale(), out); break;
    case TypeId::kList:
    case TypeId::kStruct:
    case TypeId::kMap:
    case TypeId::kFixedSizeList: AppendNestedJson(a, i, out); break;
  }
}

// The JSON form of value i, null included.
void AppendJsonValue(const Array& a, int64_t i, std::string* out) {
  if (a.IsNull(i)) {
    out->append("null");
    return;
  }
  const DataType& t = a.type();
  if (t.id() == TypeId::kString) {
    internal::AppendJsonString(a.GetView(i), out);
    return;
  }
  if (t.id() == TypeId::kBool || t.is_integer() || t.is_nested()) {
    AppendPlain(a, i, out);
    return;
  }
  if (t.is_floating()) {
    double v = t.id() == TypeId::kFloat32 ? a.Value<float>(i) : a.Value<double>(i);
    if (std::isfinite(v)) {
      AppendPlain(a, i, out);
      return;
    }
  }
  // Non-finite floats, decimals, dates, timestamps and base64 are JSON strings of ASCII text
  // that needs no escaping.
  out->push_back('"');
  AppendPlain(a, i, out);
  out->push_back('"');
}

// A list or fixed_size_list as a JSON array, a struct as an object, a map as an object whose
// keys are the text of the map's keys.
void AppendNestedJson(const Array& a, int64_t i, std::string* out) {
  const DataType& t = a.type();
  if (t.id() == TypeId::kStruct) {
    out->push_back('{');
    for (int k = 0; k < a.num_children(); ++k) {
      if (k > 0) out->push_back(',');
      internal::AppendJsonString(t.child(k).name, out);
      out->push_back(':');
      AppendJsonValue(a.child(k), a.offset() + i, out);
    }
    out->push_back('}');
    return;
  }
  int64_t start = 0;
  int64_t end = 0;
  if (t.id() == TypeId::kFixedSizeList) {
    start = (a.offset() + i) * t.list_size();
    end = start + t.list_size();
  } else {
    start = a.raw_offsets()[i];
    end = a.raw_offsets()[i + 1];
  }
  const Array child = a.child(0);
  if (t.id() != TypeId::kMap) {
    out->push_back('[');
    for (int64_t k = start; k < end; ++k) {
      if (k > start) out->push_back(',');
      AppendJsonValue(child, k, out);
    }
    out->push_back(']');
    return;
  }
  const Array keys = child.child(0);
  const Array values = child.child(1);
  out->push_back('{');
  std::string key;
  for (int64_t k = start; k < end; ++k) {
    if (k > start) out->push_back(',');
    key.clear();
    AppendJsonValue(keys, child.offset() + k, &key);
    if (key.empty() || key[0] != '"') {
      internal::AppendJsonString(key, out);  // a number, bool or nested key as a string
    } else {
      out->append(key);
    }
    out->push_back(':');
    AppendJsonValue(values, child.offset() + k, out);
  }
  out->push_back('}');
}

bool IsNumeric(const DataType& t) {
  return t.is_integer() || t.is_floating() || t.id() == TypeId::kDecimal128;
}

Status CheckBatch(const arrow::Schema& schema, const RecordBatch& batch) {
  if (batch.num_columns() != schema.num_fields()) {
    return Status::Invalid("batch has " + std::to_string(batch.num_columns()) +
                           " columns, the writer's schema " + std::to_string(schema.num_fields()));
  }
  for (int c = 0; c < schema.num_fields(); ++c) {
    if (batch.column(c).type() != schema.field(c).type) {
      return Status::Invalid("column '" + schema.field(c).name + "' has type " +
                             batch.column(c).type().ToString() + ", the writer's schema " +
                             schema.field(c).type.ToString());
    }
  }
  return Status::OK();
}

class JsonLinesWriter : public TextWriter {
 public:
  explicit JsonLinesWriter(SchemaPtr schema) : schema_(std::move(schema)) {
    for (const auto& f : schema_->fields()) {
      std::string key;
      internal::AppendJsonString(f.name, &key);
      key.push_back(':');
      keys_.push_back(std::move(key));
    }
  }

  Status Write(const RecordBatch& batch, std::string* out) override {
    RETURN_NOT_OK(CheckBatch(*schema_, batch));
    for (int64_t r = 0; r < batch.num_rows(); ++r) {
      out->push_back('{');
      for (int c = 0; c < batch.num_columns(); ++c) {
        if (c > 0) out->push_back(',');
        out->append(keys_[c]);
        AppendJsonValue(batch.column(c), r, out);
      }
      out->append("}\n");
    }
    return Status::OK();
  }

  Status Finish(std::string*) override { return Status::OK(); }

 private:
  SchemaPtr schema_;
  std::vector<std::string> keys_;
};

// RFC 4180: quote a field that holds a comma, quote, CR or LF, or that is empty (so that an
// empty string differs from a null, which is an empty unquoted field).
void AppendCsvField(std::string_view s, std::string* out) {
  if (!s.empty() && s.find_first_of(",\"\r\n") == std::string_view::npos) {
    out->append(s);
    return;
  }
  out->push_back('"');
  for (char c : s) {
    if (c == '"') out->push_back('"');
    out->push_back(c);
  }
  out->push_back('"');
}

class CsvWriter : public TextWriter {
 public:
  CsvWriter(SchemaPtr schema, WriteOptions options)
      : schema_(std::move(schema)), options_(options) {}

  Status Write(const RecordBatch& batch, std::string* out) override {
    RETURN_NOT_OK(CheckBatch(*schema_, batch));
    MaybeWriteHeader(out);
    std::string cell;
    for (int64_t r = 0; r < batch.num_rows(); ++r) {
      for (int c = 0; c < batch.num_columns(); ++c) {
        if (c > 0) out->push_back(',');
        const Array& a = batch.column(c);
        if (a.IsNull(r)) continue;
        cell.clear();
        AppendPlain(a, r, &cell);
        AppendCsvField(cell, out);
      }
      out->push_back('\n');
    }
    return Status::OK();
  }

  Status Finish(std::string* out) override {
    MaybeWriteHeader(out);
    return Status::OK();
  }

 private:
  void MaybeWriteHeader(std::string* out) {
    if (header_written_ || !options_.header) return;
    header_written_ = true;
    for (int c = 0; c < schema_->num_fields(); ++c) {
      if (c > 0) out->push_back(',');
      AppendCsvField(schema_->field(c).name, out);
    }
    out->push_back('\n');
  }

  SchemaPtr schema_;
  WriteOptions options_;
  bool header_written_ = false;
};

class TableWriter : public TextWriter {
 public:
  TableWriter(SchemaPtr schema, WriteOptions options)
      : schema_(std::move(schema)), options_(options) {
    widths_.assign(static_cast<size_t>(schema_->num_fields()), 0);
    for (int c = 0; c < schema_->num_fields(); ++c) {
      right_align_.push_back(IsNumeric(schema_->field(c).type));
      if (options_.header) widths_[c] = Width(Cut(schema_->field(c).name));
    }
  }

  Status Write(const RecordBatch& batch, std::string* out) override {
    RETURN_NOT_OK(CheckBatch(*schema_, batch));
    std::string cell;
    for (int64_t r = 0; r < batch.num_rows(); ++r) {
      std::vector<std::string> row;
      row.reserve(static_cast<size_t>(batch.num_columns()));
      for (int c = 0; c < batch.num_columns(); ++c) {
        row.push_back(Cut(CellText(batch.column(c), r)));
        widths_[c] = std::max(widths_[c], Width(row.back()));
      }
      rows_.push_back(std::move(row));
      if (static_cast<int64_t>(rows_.size()) >= std::max<int64_t>(options_.table_page_rows, 1)) {
        FlushPage(out);
      }
    }
    return Status::OK();
  }

  Status Finish(std::string* out) override {
    FlushPage(out);
    return Status::OK();
  }

 private:
  static std::string CellText(const Array& a, int64_t i) {
    if (a.IsNull(i)) return "null";
    std::string s;
    switch (a.type().id()) {
      case TypeId::kBinary:
      case TypeId::kFixedSizeBinary: AppendHex(a.GetView(i), &s); return s;
      case TypeId::kString: {
        // Control characters would break the layout: show them escaped.
        for (char c : a.GetView(i)) {
          if (c == '\n') {
            s.append("\\n");
          } else if (c == '\r') {
            s.append("\\r");
          } else if (c == '\t') {
            s.append("\\t");
          } else if (static_cast<unsigned char>(c) < 0x20) {
            s.push_back('?');
          } else {
            s.push_back(c);
          }
        }
        return s;
      }
      default: AppendPlain(a, i, &s); return s;
    }
  }

  static int64_t Width(const std::string& s) { return internal::CodePointCount(s); }

  std::string Cut(std::string s) const {
    if (options_.max_cell_width <= 0 || Width(s) <= options_.max_cell_width) return s;
    int64_t keep = std::max(options_.max_cell_width - 1, 0);
    size_t i = 0;
    for (int64_t n = 0; i < s.size(); ++i) {
      if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80 && n++ == keep) break;
    }
    s.resize(i);
    s.append("…");
    return s;
  }

  void AppendCell(int c, const std::string& text, std::string* out) const {
    auto pad = static_cast<size_t>(widths_[c] - Width(text));
    bool last = c + 1 == static_cast<int>(widths_.size());
    if (right_align_[c]) out->append(pad, ' ');
    out->append(text);
    if (!right_align_[c] && !last) out->append(pad, ' ');
    if (!last) out->append("  ");
  }

  void FlushPage(std::string* out) {
    if (schema_->num_fields() == 0) return;
    if (!header_done_ && options_.header) {
      for (int c = 0; c < schema_->num_fields(); ++c) {
        AppendCell(c, Cut(schema_->field(c).name), out);
      }
      out->push_back('\n');
      for (int c = 0; c < schema_->num_fields(); ++c) {
        AppendCell(c, std::string(static_cast<size_t>(widths_[c]), '-'), out);
      }
      out->push_back('\n');
    }
    header_done_ = true;
    for (const auto& row : rows_) {
      for (int c = 0; c < static_cast<int>(row.size()); ++c) AppendCell(c, row[c], out);
      out->push_back('\n');
    }
    rows_.clear();
  }

  SchemaPtr schema_;
  WriteOptions options_;
  std::vector<int64_t> widths_;
  std::vector<bool> right_align_;
  std::vector<std::vector<std::string>> rows_;
  bool header_done_ = false;
};

}  // namespace

Result<TextFormat> ParseTextFormat(std::string_view name) {
  if (name == "table") return TextFormat::kTable;
  if (name == "jsonl" || name == "json" || name == "ndjson") return TextFormat::kJsonLines;
  if (name == "csv") return TextFormat::kCsv;
  return Status::Invalid("unknown text format '" + std::string(name) +
                         "' (expected table, jsonl or csv)");
}

std::string_view TextFormatName(TextFormat format) {
  switch (format) {
    case TextFormat::kTable: return "table";
    case TextFormat::kJsonLines: return "jsonl";
    case TextFormat::kCsv: return "csv";
  }
  return "?";
}

Result<std::unique_ptr<TextWriter>> TextWriter::Make(TextFormat format, SchemaPtr schema,
                                                     WriteOptions options) {
  if (!schema) return Status::Invalid("TextWriter needs a schema");
  switch (format) {
    case TextFormat::kTable:
      return std::unique_ptr<TextWriter>(new TableWriter(std::move(schema), options));
    case TextFormat::kJsonLines:
      return std::unique_ptr<TextWriter>(new JsonLinesWriter(std::move(schema)));
    case TextFormat::kCsv:
      return std::unique_ptr<TextWriter>(new CsvWriter(std::move(schema), options));
  }
  return Status::Invalid("unknown text format");
}

Result<std::string> FormatBatch(TextFormat format, const RecordBatch& batch,
                                const WriteOptions& options) {
  ASSIGN_OR_RAISE(auto writer, TextWriter::Make(format, batch.schema(), options));
  std::string out;
  RETURN_NOT_OK(writer->Write(batch, &out));
  RETURN_NOT_OK(writer->Finish(&out));
  return out;
}

}  // namespace oxbow::text
