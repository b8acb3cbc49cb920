#include <algorithm>
#include <cctype>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>

#include "oxbow/arrow/builder.h"
#include "oxbow/catalog/descriptor.h"
#include "oxbow/iceberg/avro.h"
#include "oxbow/kafka/avro_values_internal.h"
#include "oxbow/kafka/kafka.h"

namespace oxbow::kafka::internal {
namespace {

using arrow::TypeId;
using nlohmann::json;

bool IsAvroName(const std::string& name) {
  if (name.empty() || !(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_')) {
    return false;
  }
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

}  // namespace

Result<json> AvroType(const arrow::Field& field) {
  const arrow::DataType& t = field.type;
  switch (t.id()) {
    case TypeId::kBool: return json("boolean");
    case TypeId::kInt8:
    case TypeId::kInt16:
    case TypeId::kInt32:
    case TypeId::kUInt8:
    case TypeId::kUInt16: return json("int");
    case TypeId::kInt64:
    case TypeId::kUInt32:
    case TypeId::kUInt64: return json("long");
    case TypeId::kFloat32: return json("float");
    case TypeId::kFloat64: return json("double");
    case TypeId::kString: return json("string");
    case TypeId::kBinary: return json("bytes");
    case TypeId::kDate32: return json{{"type", "int"}, {"logicalType", "date"}};
    case TypeId::kTimestamp: {
      const bool utc = !t.timezone().empty();
      switch (t.unit()) {
        case arrow::TimeUnit::kSecond: return json("long");
        case arrow::TimeUnit::kMilli:
          return json{{"type", "long"},
                      {"logicalType", utc ? "timestamp-millis" : "local-timestamp-millis"}};
        case arrow::TimeUnit::kMicro:
          return json{{"type", "long"},
                      {"logicalType", utc ? "timestamp-micros" : "local-timestamp-micros"}};
        case arrow::TimeUnit::kNano:
          return json{{"type", "long"},
                      {"logicalType", utc ? "timestamp-nanos" : "local-timestamp-nanos"}};
      }
      break;
    }
    case TypeId::kDecimal128:
      return json{{"type", "bytes"},
                  {"logicalType", "decimal"},
                  {"precision", t.precision()},
                  {"scale", t.scale()}};
    case TypeId::kFixedSizeBinary:
      return json{{"type", "fixed"}, {"name", field.name + "_fixed"}, {"size", t.byte_width()}};
    case TypeId::kList:
    case TypeId::kStruct:
    case TypeId::kMap:
    case TypeId::kFixedSizeList:
      return Status::Invalid("column " + Quote(field.name) + " has type " + t.ToString() +
                             ": nested types have no Avro form yet");
  }
  return Status::Invalid("column " + Quote(field.name) + " has no Avro form");
}

namespace {

template <typename T>
Status AppendInteger(arrow::ArrayBuilder& b, int64_t v, const arrow::Field& field) {
  if (v < static_cast<int64_t>(std::numeric_limits<T>::min()) ||
      v > static_cast<int64_t>(std::numeric_limits<T>::max())) {
    return Status::Invalid("column " + Quote(field.name) + ": " + std::to_string(v) +
                           " is out of range for " + field.type.ToString());
  }
  return static_cast<arrow::NumericBuilder<T>&>(b).Append(static_cast<T>(v));
}

Status DecodeColumn(const arrow::Field& field, iceberg::AvroDecoder& d, arrow::ArrayBuilder& b) {
  if (field.nullable) {
    ASSIGN_OR_RAISE(int64_t branch, d.ReadLong());
    if (branch == 0) return b.AppendNull();
    if (branch != 1) {
      return Status::Invalid("column " + Quote(field.name) + ": union branch " +
                             std::to_string(branch) + " of [\"null\", ...]");
    }
  }
  switch (field.type.id()) {
    case TypeId::kBool: {
      ASSIGN_OR_RAISE(bool v, d.ReadBoolean());
      return static_cast<arrow::BooleanBuilder&>(b).Append(v);
    }
    case TypeId::kInt8:
    case TypeId::kInt16:
    case TypeId::kInt32:
    case TypeId::kUInt8:
    case TypeId::kUInt16:
    case TypeId::kDate32: {
      ASSIGN_OR_RAISE(int32_t v, d.ReadInt());
      switch (field.type.id()) {
        case TypeId::kInt8: return AppendInteger<int8_t>(b, v, field);
        case TypeId::kInt16: return AppendInteger<int16_t>(b, v, field);
        case TypeId::kUInt8: return AppendInteger<uint8_t>(b, v, field);
        case TypeId::kUInt16: return AppendInteger<uint16_t>(b, v, field);
        default: return AppendInteger<int32_t>(b, v, field);
      }
    }
    case TypeId::kInt64:
    case TypeId::kUInt32:
    case TypeId::kUInt64:
    case TypeId::kTimestamp: {
      ASSIGN_OR_RAISE(int64_t v, d.ReadLong());
      if (field.type.id() == TypeId::kUInt32) return AppendInteger<uint32_t>(b, v, field);
      if (field.type.id() == TypeId::kUInt64) {
        if (v < 0) {
          return Status::Invalid("column " + Quote(field.name) + ": " + std::to_string(v) +
                                 " is negative");
        }
        return static_cast<arrow::UInt64Builder&>(b).Append(static_cast<uint64_t>(v));
      }
      return static_cast<arrow::Int64Builder&>(b).Append(v);
    }
    case TypeId::kFloat32: {
      ASSIGN_OR_RAISE(float v, d.ReadFloat());
      return static_cast<arrow::FloatBuilder&>(b).Append(v);
    }
    case TypeId::kFloat64: {
      ASSIGN_OR_RAISE(double v, d.ReadDouble());
      return static_cast<arrow::DoubleBuilder&>(b).Append(v);
    }
    case TypeId::kString:
    case TypeId::kBinary: {
      ASSIGN_OR_RAISE(std::string_view v, d.ReadBytes());
      return static_cast<arrow::BinaryBuilder&>(b).Append(v);
    }
    case TypeId::kDecimal128: {
      // Big-endian two's complement, 1 to 16 bytes.
      ASSIGN_OR_RAISE(std::string_view v, d.ReadBytes());
      if (v.empty() || v.size() > 16) {
        return Status::Invalid("column " + Quote(field.name) + ": a decimal of " +
                               std::to_string(v.size()) + " bytes (1-16 expected)");
      }
      unsigned __int128 u =
          (static_cast<uint8_t>(v[0]) & 0x80) ? ~static_cast<unsigned __int128>(0) : 0;
      for (char c : v) u = (u << 8) | static_cast<uint8_t>(c);
      return static_cast<arrow::FixedSizeBinaryBuilder&>(b).AppendDecimal(static_cast<__int128>(u));
    }
    case TypeId::kFixedSizeBinary: {
      ASSIGN_OR_RAISE(std::string_view v, d.ReadFixed(field.type.byte_width()));
      return static_cast<arrow::FixedSizeBinaryBuilder&>(b).Append(v);
    }
    case TypeId::kList:
    case TypeId::kStruct:
    case TypeId::kMap:
    case TypeId::kFixedSizeList: break;  // RowSchema refuses them first
  }
  return Status::Invalid("column " + Quote(field.name) + " has no Avro form");
}

Status EncodeColumn(const arrow::Field& field, const arrow::Array& a, int64_t i, std::string* out) {
  if (field.nullable) {
    if (a.IsNull(i)) {
      iceberg::AppendAvroLong(out, 0);
      return Status::OK();
    }
    iceberg::AppendAvroLong(out, 1);
  }
  switch (field.type.id()) {
    case TypeId::kBool: out->push_back(a.BoolValue(i) ? 1 : 0); return Status::OK();
    case TypeId::kInt8: iceberg::AppendAvroLong(out, a.Value<int8_t>(i)); return Status::OK();
    case TypeId::kInt16: iceberg::AppendAvroLong(out, a.Value<int16_t>(i)); return Status::OK();
    case TypeId::kInt32:
    case TypeId::kDate32: iceberg::AppendAvroLong(out, a.Value<int32_t>(i)); return Status::OK();
    case TypeId::kUInt8: iceberg::AppendAvroLong(out, a.Value<uint8_t>(i)); return Status::OK();
    case TypeId::kUInt16: iceberg::AppendAvroLong(out, a.Value<uint16_t>(i)); return Status::OK();
    case TypeId::kUInt32: iceberg::AppendAvroLong(out, a.Value<uint32_t>(i)); return Status::OK();
    case TypeId::kInt64:
    case TypeId::kTimestamp: iceberg::AppendAvroLong(out, a.Value<int64_t>(i)); return Status::OK();
    case TypeId::kUInt64: {
      const uint64_t v = a.Value<uint64_t>(i);
      if (v > static_cast<uint64_t>(INT64_MAX)) {
        return Status::Invalid("column " + Quote(field.name) + ": " + std::to_string(v) +
                               " does not fit Avro's long");
      }
      iceberg::AppendAvroLong(out, static_cast<int64_t>(v));
      return Status::OK();
    }
    case TypeId::kFloat32: iceberg::AppendAvroFloat(out, a.Value<float>(i)); return Status::OK();
    case TypeId::kFloat64: iceberg::AppendAvroDouble(out, a.Value<double>(i)); return Status::OK();
    case TypeId::kString:
    case TypeId::kBinary: iceberg::AppendAvroBytes(out, a.GetView(i)); return Status::OK();
    case TypeId::kDecimal128: {
      __int128 v;
      std::memcpy(&v, a.GetView(i).data(), sizeof(v));
      // The shortest big-endian two's complement form.
      std::string bytes;
      for (int k = 15; k >= 0; --k) bytes.push_back(static_cast<char>(v >> (8 * k)));
      size_t skip = 0;
      while (skip < 15 && ((bytes[skip] == 0 && !(bytes[skip + 1] & 0x80)) ||
                           (bytes[skip] == '\xff' && (bytes[skip + 1] & 0x80)))) {
        ++skip;
      }
      iceberg::AppendAvroBytes(out, std::string_view(bytes).substr(skip));
      return Status::OK();
    }
    case TypeId::kFixedSizeBinary: out->append(a.GetView(i)); return Status::OK();
    case TypeId::kList:
    case TypeId::kStruct:
    case TypeId::kMap:
    case TypeId::kFixedSizeList: break;
  }
  return Status::Invalid("column " + Quote(field.name) + " has type " + field.type.ToString() +
                         ": nested types have no Avro form yet");
}

}  // namespace

Result<std::string> RowSchema(const arrow::Schema& schema) {
  json fields = json::array();
  for (const arrow::Field& f : schema.fields()) {
    if (!IsAvroName(f.name)) {
      return Status::Invalid("column " + Quote(f.name) +
                             " is no Avro name ([A-Za-z_][A-Za-z0-9_]*)");
    }
    ASSIGN_OR_RAISE(json type, AvroType(f));
    json out = {{"name", f.name}, {"type", f.nullable ? json::array({"null", type}) : type}};
    if (f.nullable) out["default"] = nullptr;  // what a reader without the column reads
    fields.push_back(std::move(out));
  }
  return json{{"type", "record"}, {"name", "row"}, {"fields", std::move(fields)}}.dump();
}

Result<arrow::RecordBatchPtr> AvroToRows(const std::vector<std::string_view>& values,
                                         const arrow::SchemaPtr& schema, size_t first_record) {
  RETURN_NOT_OK(RowSchema(*schema).status());
  std::vector<std::unique_ptr<arrow::ArrayBuilder>> builders;
  for (const arrow::Field& f : schema->fields()) {
    ASSIGN_OR_RAISE(auto b, arrow::ArrayBuilder::Make(f.type));
    builders.push_back(std::move(b));
  }
  for (size_t r = 0; r < values.size(); ++r) {
    iceberg::AvroDecoder decoder(values[r]);
    for (int c = 0; c < schema->num_fields(); ++c) {
      Status st = DecodeColumn(schema->field(c), decoder, *builders[c]);
      if (!st.ok()) return st.WithContext("record " + std::to_string(first_record + r));
    }
    if (decoder.remaining() != 0) {
      return Status::Invalid("record " + std::to_string(first_record + r) + ": " +
                             std::to_string(decoder.remaining()) +
                             " bytes after the Avro datum (a Confluent header? values are plain "
                             "datums)");
    }
  }
  std::vector<arrow::Array> columns;
  for (auto& b : builders) {
    ASSIGN_OR_RAISE(auto array, b->Finish());
    columns.push_back(std::move(array));
  }
  return arrow::RecordBatch::Make(schema, static_cast<int64_t>(values.size()), std::move(columns));
}

Status AppendAvroRow(const arrow::RecordBatch& batch, int64_t row, std::string* out) {
  const arrow::Schema& schema = *batch.schema();
  for (int c = 0; c < schema.num_fields(); ++c) {
    RETURN_NOT_OK(EncodeColumn(schema.field(c), batch.column(c), row, out));
  }
  return Status::OK();
}

}  // namespace oxbow::kafka::internal

namespace oxbow::kafka {
namespace {

using nlohmann::json;

// The Arrow type of an Avro type as RowSchema writes it (its inverse: int is int32, long
// int64, a timestamp-millis timestamp[ms, UTC], a local-timestamp-millis one without a zone, and
// so on); nullopt for a type without a column form.
std::optional<arrow::DataType> ArrowTypeOf(const json& avro) {
  using arrow::DataType;
  using arrow::TimeUnit;
  if (avro.is_string()) {
    static const std::map<std::string, DataType> kPrimitives = {
        {"boolean", DataType::Bool()},   {"int", DataType::Int32()},
        {"long", DataType::Int64()},     {"float", DataType::Float32()},
        {"double", DataType::Float64()}, {"string", DataType::String()},
        {"bytes", DataType::Binary()}};
    auto it = kPrimitives.find(avro.get<std::string>());
    if (it == kPrimitives.end()) return std::nullopt;
    return it->second;
  }
  if (!avro.is_object() || !avro.contains("type") || !avro["type"].is_string()) {
    return std::nullopt;
  }
  const std::string type = avro["type"].get<std::string>();
  const std::string logical = avro.value("logicalType", "");
  if (type == "fixed" && logical.empty() && avro.contains("size") &&
      avro["size"].is_number_integer()) {
    return DataType::FixedSizeBinary(avro["size"].get<int32_t>());
  }
  if (type == "bytes" && logical == "decimal" && avro.contains("precision")) {
    return DataType::Decimal128(avro["precision"].get<int32_t>(), avro.value("scale", 0));
  }
  if (type == "int" && logical == "date") return DataType::Date32();
  static const std::map<std::string, std::pair<TimeUnit, bool>> kTimestamps = {
      {"timestamp-millis", {TimeUnit::kMilli, true}},
      {"timestamp-micros", {TimeUnit::kMicro, true}},
      {"timestamp-nanos", {TimeUnit::kNano, true}},
      {"local-timestamp-millis", {TimeUnit::kMilli, false}},
      {"local-timestamp-micros", {TimeUnit::kMicro, false}},
      {"local-timestamp-nanos", {TimeUnit::kNano, false}}};
  if (auto it = kTimestamps.find(logical); type == "long" && it != kTimestamps.end()) {
    return DataType::Timestamp(it->second.first, it->second.second ? "UTC" : "");
  }
  if (logical.empty()) return ArrowTypeOf(json(type));  // {"type": "long"}
  return std::nullopt;
}

Result<std::vector<catalog::SchemaChange>> ChangesToRecord(const arrow::Schema& schema,
                                                           std::string_view avro) {
  using Op = catalog::SchemaChange::Op;
  const json record = json::parse(avro, nullptr, /*allow_exceptions=*/false);
  if (!record.is_object() || record.value("type", json()) != "record" ||
      !record.contains("fields") || !record["fields"].is_array()) {
    return Status::Invalid("the schema is no Avro record");
  }
  const json& fields = record["fields"];
  auto named = [&](const std::string& name) {
    return std::find_if(fields.begin(), fields.end(),
                        [&](const json& f) { return f.value("name", json()) == name; });
  };
  std::vector<catalog::SchemaChange> changes;
  for (const arrow::Field& column : schema.fields()) {
    if (named(column.name) != fields.end()) continue;
    catalog::SchemaChange drop;
    drop.op = Op::kDropColumn;
    drop.path = {column.name};
    drop.name = column.name;
    changes.push_back(std::move(drop));
  }
  std::string previous;  // the field before, which a new column follows
  for (const json& field : fields) {
    const std::string name = field.value("name", "");
    const std::string where = "field " + Quote(name);
    json type = field.value("type", json());
    const bool nullable = type.is_array();
    if (nullable) {
      if (type.size() != 2 || type[0] != "null") {
        return Status::Invalid(where + ": a union has a column form only as [\"null\", type]");
      }
      type = json(type[1]);
    }
    auto arrow_type = ArrowTypeOf(type);
    const int index = schema.GetFieldIndex(name);
    catalog::SchemaChange change;
    change.path = {name};
    change.name = name;
    if (index < 0) {
      if (!nullable) {
        return Status::Invalid(where +
                               " is new, and a new column is nullable: its type must be "
                               "[\"null\", type]");
      }
      if (!arrow_type)
        return Status::Invalid(where + ": type " + type.dump() + " has no column form");
      change.op = Op::kAddColumn;
      change.type = *arrow_type;
      change.after = previous;
      change.first = previous.empty();
      changes.push_back(std::move(change));
    } else {
      const arrow::Field& column = schema.field(index);
      ASSIGN_OR_RAISE(json now, internal::AvroType(column));
      if (now != type) {
        if (!arrow_type || !catalog::IsWidening(column.type, *arrow_type)) {
          return Status::Invalid(where + ": column " + Quote(name) + " is " +
                                 column.type.ToString() + " (Avro " + now.dump() + "), and " +
                                 type.dump() + " is no widening of it");
        }
        change.op = Op::kWidenType;
        change.type = *arrow_type;
        changes.push_back(change);
      }
      if (nullable && !column.nullable) {
        change.op = Op::kMakeOptional;
        changes.push_back(std::move(change));
      } else if (!nullable && column.nullable) {
        return Status::Invalid(where + " is required, and column " + Quote(name) +
                               " is nullable: a column cannot become required");
      }
    }
    previous = name;
  }
  return changes;
}

}  // namespace

Result<std::string> AvroSchemaOf(const arrow::Schema& schema) {
  return internal::RowSchema(schema);
}

Result<std::vector<catalog::SchemaChange>> ChangesToAvro(const arrow::Schema& schema,
                                                         std::string_view avro) {
  try {
    return ChangesToRecord(schema, avro);
  } catch (const nlohmann::json::exception& e) {  // an attribute of an unexpected JSON type
    return Status::Invalid(std::string("the schema is no Avro record of columns: ") + e.what());
  }
}

}  // namespace oxbow::kafka
