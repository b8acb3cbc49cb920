#include <charconv>

#include "oxbow/parquet/schema_internal.h"

namespace oxbow::parquet::internal {

using arrow::DataType;
using arrow::TimeUnit;
using arrow::TypeId;

int32_t DecimalByteWidth(int32_t precision) {
  __int128 max_decimal = 1;
  for (int i = 0; i < precision; ++i) max_decimal *= 10;
  max_decimal -= 1;
  for (int32_t bytes = 1; bytes < 16; ++bytes) {
    const __int128 max_signed = (static_cast<__int128>(1) << (8 * bytes - 1)) - 1;
    if (max_signed >= max_decimal) return bytes;
  }
  return 16;
}

namespace {

LogicalType IntegerType(int bits, bool is_signed) {
  LogicalType t;
  t.kind = LogicalType::kInteger;
  t.bit_width = static_cast<int8_t>(bits);
  t.is_signed = is_signed;
  return t;
}

}  // namespace

Result<std::optional<int32_t>> FieldIdOf(const arrow::Field& field) {
  auto id = arrow::FindMetadata(field.metadata, kFieldIdKey);
  if (!id) return std::optional<int32_t>();
  int32_t v = 0;
  auto [ptr, ec] = std::from_chars(id->data(), id->data() + id->size(), v);
  if (ec != std::errc() || ptr != id->data() + id->size()) {
    return Status::Invalid("field '" + field.name + "': PARQUET:field_id '" + *id +
                           "' is not an integer");
  }
  return std::optional<int32_t>(v);
}

Result<SchemaElement> FieldToSchemaElement(const arrow::Field& field) {
  SchemaElement e;
  e.name = field.name;
  e.repetition_type = field.nullable ? Repetition::kOptional : Repetition::kRequired;
  ASSIGN_OR_RAISE(e.field_id, FieldIdOf(field));
  const DataType& type = field.type;
  auto set_int = [&](PhysicalType p, int bits, bool is_signed, ConvertedType c) {
    e.type = p;
    e.logical_type = IntegerType(bits, is_signed);
    e.converted_type = c;
  };
  switch (type.id()) {
    case TypeId::kBool: e.type = PhysicalType::kBoolean; break;
    case TypeId::kInt8: set_int(PhysicalType::kInt32, 8, true, ConvertedType::kInt8); break;
    case TypeId::kInt16: set_int(PhysicalType::kInt32, 16, true, ConvertedType::kInt16); break;
    case TypeId::kInt32: e.type = PhysicalType::kInt32; break;
    case TypeId::kInt64: e.type = PhysicalType::kInt64; break;
    case TypeId::kUInt8: set_int(PhysicalType::kInt32, 8, false, ConvertedType::kUint8); break;
    case TypeId::kUInt16: set_int(PhysicalType::kInt32, 16, false, ConvertedType::kUint16); break;
    case TypeId::kUInt32: set_int(PhysicalType::kInt32, 32, false, ConvertedType::kUint32); break;
    case TypeId::kUInt64: set_int(PhysicalType::kInt64, 64, false, ConvertedType::kUint64); break;
    case TypeId::kFloat32: e.type = PhysicalType::kFloat; break;
    case TypeId::kFloat64: e.type = PhysicalType::kDouble; break;
    case TypeId::kString:
      e.type = PhysicalType::kByteArray;
      e.logical_type = LogicalType{.kind = LogicalType::kString};
      e.converted_type = ConvertedType::kUtf8;
      break;
    case TypeId::kBinary: e.type = PhysicalType::kByteArray; break;
    case TypeId::kDate32:
      e.type = PhysicalType::kInt32;
      e.logical_type = LogicalType{.kind = LogicalType::kDate};
      e.converted_type = ConvertedType::kDate;
      break;
    case TypeId::kTimestamp: {
      e.type = PhysicalType::kInt64;
      LogicalType t{.kind = LogicalType::kTimestamp};
      t.is_adjusted_to_utc = !type.timezone().empty();
      switch (type.unit()) {
        case TimeUnit::kSecond:  // stored as milliseconds, as pyarrow does
        case TimeUnit::kMilli:
          t.unit = LogicalTimeUnit::kMillis;
          e.converted_type = ConvertedType::kTimestampMillis;
          break;
        case TimeUnit::kMicro:
          t.unit = LogicalTimeUnit::kMicros;
          e.converted_type = ConvertedType::kTimestampMicros;
          break;
        case TimeUnit::kNano: t.unit = LogicalTimeUnit::kNanos; break;
      }
      e.logical_type = t;
      break;
    }
    case TypeId::kDecimal128: {
      const int32_t p = type.precision();
      if (p <= 9) {
        e.type = PhysicalType::kInt32;
      } else if (p <= 18) {
        e.type = PhysicalType::kInt64;
      } else {
        e.type = PhysicalType::kFixedLenByteArray;
        e.type_length = DecimalByteWidth(p);
      }
      LogicalType t{.kind = LogicalType::kDecimal};
      t.precision = p;
      t.scale = type.scale();
      e.logical_type = t;
      e.converted_type = ConvertedType::kDecimal;
      e.precision = p;
      e.scale = type.scale();
      break;
    }
    case TypeId::kFixedSizeBinary:
      e.type = PhysicalType::kFixedLenByteArray;
      e.type_length = type.byte_width();
      break;
    case TypeId::kList:
    case TypeId::kStruct:
    case TypeId::kMap:
    case TypeId::kFixedSizeList:
      return Status::Invalid("field " + Quote(field.name) + " has type " + type.ToString() +
                             ", not a leaf type");
  }
  return e;
}

namespace {

Status Unsupported(const SchemaElement& e, const std::string& what) {
  return Status::NotImplemented("column '" + e.name + "': " + what + " is not supported");
}

Status BadLogicalType(const SchemaElement& e, const LogicalType& lt, PhysicalType p) {
  return Status::NotImplemented("column '" + e.name + "': logical type " + lt.ToString() +
                                " on physical type " + std::string(PhysicalTypeName(p)) +
                                " is not supported");
}

// The column's logical type: its LogicalType, else its legacy ConvertedType read as
// LogicalTypes.md maps it, else none.
Result<LogicalType> LogicalTypeOf(const SchemaElement& e) {
  LogicalType lt;
  if (e.logical_type) return *e.logical_type;
  if (!e.converted_type) return lt;
  switch (*e.converted_type) {
    case ConvertedType::kUtf8: lt.kind = LogicalType::kString; break;
    case ConvertedType::kEnum: lt.kind = LogicalType::kEnum; break;
    case ConvertedType::kJson: lt.kind = LogicalType::kJson; break;
    case ConvertedType::kBson: lt.kind = LogicalType::kBson; break;
    case ConvertedType::kDate: lt.kind = LogicalType::kDate; break;
    case ConvertedType::kDecimal:
      lt.kind = LogicalType::kDecimal;
      lt.precision = e.precision.value_or(0);
      lt.scale = e.scale.value_or(0);
      break;
    case ConvertedType::kTimestampMillis:
    case ConvertedType::kTimestampMicros:
      lt.kind = LogicalType::kTimestamp;
      lt.is_adjusted_to_utc = true;
      lt.unit = *e.converted_type == ConvertedType::kTimestampMillis ? LogicalTimeUnit::kMillis
                                                                     : LogicalTimeUnit::kMicros;
      break;
    case ConvertedType::kTimeMillis:
    case ConvertedType::kTimeMicros: lt.kind = LogicalType::kTime; break;
    case ConvertedType::kInt8: lt = IntegerType(8, true); break;
    case ConvertedType::kInt16: lt = IntegerType(16, true); break;
    case ConvertedType::kInt32: lt = IntegerType(32, true); break;
    case ConvertedType::kInt64: lt = IntegerType(64, true); break;
    case ConvertedType::kUint8: lt = IntegerType(8, false); break;
    case ConvertedType::kUint16: lt = IntegerType(16, false); break;
    case ConvertedType::kUint32: lt = IntegerType(32, false); break;
    case ConvertedType::kUint64: lt = IntegerType(64, false); break;
    case ConvertedType::kInterval: return Unsupported(e, "INTERVAL");
    default:
      return Unsupported(e,
                         "converted type " + std::to_string(static_cast<int>(*e.converted_type)));
  }
  return lt;
}

Result<DataType> DecimalTypeOf(const SchemaElement& e, const LogicalType& lt, PhysicalType p) {
  if (lt.precision < 1 || lt.precision > 38 || lt.scale < 0 || lt.scale > lt.precision) {
    return Status::Corruption("column '" + e.name + "': bad decimal precision " +
                              std::to_string(lt.precision) + " / scale " +
                              std::to_string(lt.scale));
  }
  if (p != PhysicalType::kInt32 && p != PhysicalType::kInt64 && p != PhysicalType::kByteArray &&
      p != PhysicalType::kFixedLenByteArray) {
    return BadLogicalType(e, lt, p);
  }
  if (p == PhysicalType::kFixedLenByteArray &&
      (!e.type_length || *e.type_length < 1 || *e.type_length > 16)) {
    return Unsupported(e, "a decimal FIXED_LEN_BYTE_ARRAY wider than 16 bytes");
  }
  return DataType::Decimal128(lt.precision, lt.scale);
}

// The Arrow type of a leaf of physical type `p` annotated with `lt` (not a decimal).
Result<DataType> ArrowTypeOf(const SchemaElement& e, const LogicalType& lt, PhysicalType p) {
  const auto bad = [&]() { return BadLogicalType(e, lt, p); };
  DataType type;
  switch (p) {
    case PhysicalType::kBoolean:
      if (lt.kind != LogicalType::kNone) return bad();
      type = DataType::Bool();
      break;
    case PhysicalType::kInt32:
      if (lt.kind == LogicalType::kNone) {
        type = DataType::Int32();
      } else if (lt.kind == LogicalType::kDate) {
        type = DataType::Date32();
      } else if (lt.kind == LogicalType::kInteger) {
        switch (lt.bit_width) {
          case 8: type = lt.is_signed ? DataType::Int8() : DataType::UInt8(); break;
          case 16: type = lt.is_signed ? DataType::Int16() : DataType::UInt16(); break;
          case 32: type = lt.is_signed ? DataType::Int32() : DataType::UInt32(); break;
          default: return bad();
        }
      } else {
        return bad();
      }
      break;
    case PhysicalType::kInt64:
      if (lt.kind == LogicalType::kNone) {
        type = DataType::Int64();
      } else if (lt.kind == LogicalType::kInteger && lt.bit_width == 64) {
        type = lt.is_signed ? DataType::Int64() : DataType::UInt64();
      } else if (lt.kind == LogicalType::kTimestamp) {
        const TimeUnit unit = lt.unit == LogicalTimeUnit::kMillis   ? TimeUnit::kMilli
                              : lt.unit == LogicalTimeUnit::kMicros ? TimeUnit::kMicro
                                                                    : TimeUnit::kNano;
        type = DataType::Timestamp(unit, lt.is_adjusted_to_utc ? "UTC" : "");
      } else {
        return bad();
      }
      break;
    case PhysicalType::kInt96:
      // Legacy timestamps (nanoseconds of the day, Julian day), read as pyarrow does.
      type = DataType::Timestamp(TimeUnit::kNano);
      break;
    case PhysicalType::kFloat:
      if (lt.kind != LogicalType::kNone) return bad();
      type = DataType::Float32();
      break;
    case PhysicalType::kDouble:
      if (lt.kind != LogicalType::kNone) return bad();
      type = DataType::Float64();
      break;
    case PhysicalType::kByteArray:
      if (lt.kind == LogicalType::kString || lt.kind == LogicalType::kEnum ||
          lt.kind == LogicalType::kJson) {
        type = DataType::String();
      } else if (lt.kind == LogicalType::kNone || lt.kind == LogicalType::kBson) {
        type = DataType::Binary();
      } else {
        return bad();
      }
      break;
    case PhysicalType::kFixedLenByteArray:
      if (!e.type_length || *e.type_length < 0) {
        return Status::Corruption("column '" + e.name +
                                  "': FIXED_LEN_BYTE_ARRAY without a valid type_length");
      }
      if (lt.kind != LogicalType::kNone && lt.kind != LogicalType::kUuid &&
          lt.kind != LogicalType::kFloat16) {
        return bad();
      }
      type = DataType::FixedSizeBinary(*e.type_length);
      break;
    default:
      return Status::Corruption("column '" + e.name + "': unknown physical type " +
                                std::to_string(static_cast<int>(p)));
  }
  return type;
}

}  // namespace

Result<arrow::Field> SchemaElementToField(const SchemaElement& e) {
  arrow::Field field;
  field.name = e.name;
  if (!e.type) return Unsupported(e, "a group (nested) column");
  if (e.repetition_type == Repetition::kRepeated) return Unsupported(e, "a repeated column");
  field.nullable = e.repetition_type != Repetition::kRequired;
  if (e.field_id) {
    field.metadata.emplace_back(std::string(kFieldIdKey), std::to_string(*e.field_id));
  }
  ASSIGN_OR_RAISE(const LogicalType lt, LogicalTypeOf(e));
  ASSIGN_OR_RAISE(field.type, lt.kind == LogicalType::kDecimal ? DecimalTypeOf(e, lt, *e.type)
                                                               : ArrowTypeOf(e, lt, *e.type));
  return field;
}

}  // namespace oxbow::parquet::internal
