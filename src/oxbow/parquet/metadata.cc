#include "oxbow/parquet/metadata.h"

#include "oxbow/parquet/thrift_internal.h"

namespace oxbow::parquet {

using thrift::CompactReader;
using thrift::CompactWriter;
using thrift::CType;

std::string_view PhysicalTypeName(PhysicalType t) {
  switch (t) {
    case PhysicalType::kBoolean: return "BOOLEAN";
    case PhysicalType::kInt32: return "INT32";
    case PhysicalType::kInt64: return "INT64";
    case PhysicalType::kInt96: return "INT96";
    case PhysicalType::kFloat: return "FLOAT";
    case PhysicalType::kDouble: return "DOUBLE";
    case PhysicalType::kByteArray: return "BYTE_ARRAY";
    case PhysicalType::kFixedLenByteArray: return "FIXED_LEN_BYTE_ARRAY";
  }
  return "UNKNOWN_TYPE";
}

std::string_view EncodingName(Encoding e) {
  switch (e) {
    case Encoding::kPlain: return "PLAIN";
    case Encoding::kPlainDictionary: return "PLAIN_DICTIONARY";
    case Encoding::kRle: return "RLE";
    case Encoding::kBitPacked: return "BIT_PACKED";
    case Encoding::kDeltaBinaryPacked: return "DELTA_BINARY_PACKED";
    case Encoding::kDeltaLengthByteArray: return "DELTA_LENGTH_BYTE_ARRAY";
    case Encoding::kDeltaByteArray: return "DELTA_BYTE_ARRAY";
    case Encoding::kRleDictionary: return "RLE_DICTIONARY";
    case Encoding::kByteStreamSplit: return "BYTE_STREAM_SPLIT";
  }
  return "UNKNOWN_ENCODING";
}

std::string_view CodecName(Codec c) {
  switch (c) {
    case Codec::kUncompressed: return "UNCOMPRESSED";
    case Codec::kSnappy: return "SNAPPY";
    case Codec::kGzip: return "GZIP";
    case Codec::kLzo: return "LZO";
    case Codec::kBrotli: return "BROTLI";
    case Codec::kLz4: return "LZ4";
    case Codec::kZstd: return "ZSTD";
    case Codec::kLz4Raw: return "LZ4_RAW";
  }
  return "UNKNOWN_CODEC";
}

std::string LogicalType::ToString() const {
  static const char* kUnits[] = {"?", "MILLIS", "MICROS", "NANOS"};
  const char* unit_name = kUnits[static_cast<int>(unit) & 3];
  switch (kind) {
    case kNone: return "NONE";
    case kString: return "STRING";
    case kMap: return "MAP";
    case kList: return "LIST";
    case kEnum: return "ENUM";
    case kDecimal:
      return "DECIMAL(" + std::to_string(precision) + "," + std::to_string(scale) + ")";
    case kDate: return "DATE";
    case kTime:
      return std::string("TIME(") + unit_name + "," + (is_adjusted_to_utc ? "true" : "false") + ")";
    case kTimestamp:
      return std::string("TIMESTAMP(") + unit_name + "," + (is_adjusted_to_utc ? "true" : "false") +
             ")";
    case kInteger:
      return "INTEGER(" + std::to_string(bit_width) + "," + (is_signed ? "true" : "false") + ")";
    case kUnknown: return "UNKNOWN";
    case kJson: return "JSON";
    case kBson: return "BSON";
    case kUuid: return "UUID";
    case kFloat16: return "FLOAT16";
  }
  return "LOGICAL_TYPE(" + std::to_string(kind) + ")";
}

namespace {

// ---------------------------------------------------------------------------------------------
// Serialization

void WriteStatistics(CompactWriter& w, const Statistics& s) {
  if (s.max) w.FieldBinary(1, *s.max);
  if (s.min) w.FieldBinary(2, *s.min);
  if (s.null_count) w.FieldI64(3, *s.null_count);
  if (s.distinct_count) w.FieldI64(4, *s.distinct_count);
  if (s.max_value) w.FieldBinary(5, *s.max_value);
  if (s.min_value) w.FieldBinary(6, *s.min_value);
  if (s.is_max_value_exact) w.FieldBool(7, *s.is_max_value_exact);
  if (s.is_min_value_exact) w.FieldBool(8, *s.is_min_value_exact);
  if (s.nan_count) w.FieldI64(9, *s.nan_count);
  w.EndStruct();
}

void WriteEmptyStructField(CompactWriter& w, int16_t id) {
  w.FieldStruct(id);
  w.EndStruct();
}

void WriteLogicalType(CompactWriter& w, const LogicalType& t) {
  switch (t.kind) {
    case LogicalType::kDecimal:
      w.FieldStruct(LogicalType::kDecimal);
      w.FieldI32(1, t.scale);
      w.FieldI32(2, t.precision);
      w.EndStruct();
      break;
    case LogicalType::kTime:
    case LogicalType::kTimestamp:
      w.FieldStruct(t.kind);
      w.FieldBool(1, t.is_adjusted_to_utc);
      w.FieldStruct(2);
      WriteEmptyStructField(w, static_cast<int16_t>(t.unit));
      w.EndStruct();
      w.EndStruct();
      break;
    case LogicalType::kInteger:
      w.FieldStruct(LogicalType::kInteger);
      w.FieldI8(1, t.bit_width);
      w.FieldBool(2, t.is_signed);
      w.EndStruct();
      break;
    default: WriteEmptyStructField(w, t.kind); break;
  }
  w.EndStruct();
}

void WriteSchemaElement(CompactWriter& w, const SchemaElement& e) {
  w.BeginStruct();
  if (e.type) w.FieldI32(1, static_cast<int32_t>(*e.type));
  if (e.type_length) w.FieldI32(2, *e.type_length);
  if (e.repetition_type) w.FieldI32(3, static_cast<int32_t>(*e.repetition_type));
  w.FieldBinary(4, e.name);
  if (e.num_children) w.FieldI32(5, *e.num_children);
  if (e.converted_type) w.FieldI32(6, static_cast<int32_t>(*e.converted_type));
  if (e.scale) w.FieldI32(7, *e.scale);
  if (e.precision) w.FieldI32(8, *e.precision);
  if (e.field_id) w.FieldI32(9, *e.field_id);
  if (e.logical_type && e.logical_type->kind != LogicalType::kNone) {
    w.FieldStruct(10);
    WriteLogicalType(w, *e.logical_type);
  }
  w.EndStruct();
}

void WriteKeyValues(CompactWriter& w, int16_t id, const std::vector<KeyValue>& kvs) {
  w.FieldList(id, CType::kStruct, static_cast<int64_t>(kvs.size()));
  for (const auto& kv : kvs) {
    w.BeginStruct();
    w.FieldBinary(1, kv.key);
    if (kv.value) w.FieldBinary(2, *kv.value);
    w.EndStruct();
  }
}

void WriteColumnMetaData(CompactWriter& w, const ColumnMetaData& m) {
  w.FieldI32(1, static_cast<int32_t>(m.type));
  w.FieldList(2, CType::kI32, static_cast<int64_t>(m.encodings.size()));
  for (Encoding e : m.encodings) w.ElementI32(static_cast<int32_t>(e));
  w.FieldList(3, CType::kBinary, static_cast<int64_t>(m.path_in_schema.size()));
  for (const auto& p : m.path_in_schema) w.ElementBinary(p);
  w.FieldI32(4, static_cast<int32_t>(m.codec));
  w.FieldI64(5, m.num_values);
  w.FieldI64(6, m.total_uncompressed_size);
  w.FieldI64(7, m.total_compressed_size);
  if (!m.key_value_metadata.empty()) WriteKeyValues(w, 8, m.key_value_metadata);
  w.FieldI64(9, m.data_page_offset);
  if (m.index_page_offset) w.FieldI64(10, *m.index_page_offset);
  if (m.dictionary_page_offset) w.FieldI64(11, *m.dictionary_page_offset);
  if (m.statistics) {
    w.FieldStruct(12);
    WriteStatistics(w, *m.statistics);
  }
  if (!m.encoding_stats.empty()) {
    w.FieldList(13, CType::kStruct, static_cast<int64_t>(m.encoding_stats.size()));
    for (const auto& s : m.encoding_stats) {
      w.BeginStruct();
      w.FieldI32(1, static_cast<int32_t>(s.page_type));
      w.FieldI32(2, static_cast<int32_t>(s.encoding));
      w.FieldI32(3, s.count);
      w.EndStruct();
    }
  }
  w.EndStruct();
}

void WriteRowGroup(CompactWriter& w, const RowGroup& g) {
  w.BeginStruct();
  w.FieldList(1, CType::kStruct, static_cast<int64_t>(g.columns.size()));
  for (const auto& c : g.columns) {
    w.BeginStruct();
    if (c.file_path) w.FieldBinary(1, *c.file_path);
    w.FieldI64(2, c.file_offset);
    if (c.meta_data) {
      w.FieldStruct(3);
      WriteColumnMetaData(w, *c.meta_data);
    }
    w.EndStruct();
  }
  w.FieldI64(2, g.total_byte_size);
  w.FieldI64(3, g.num_rows);
  if (g.file_offset) w.FieldI64(5, *g.file_offset);
  if (g.total_compressed_size) w.FieldI64(6, *g.total_compressed_size);
  if (g.ordinal) w.FieldI16(7, *g.ordinal);
  w.EndStruct();
}

}  // namespace

void SerializeFileMetaData(const FileMetaData& m, std::string* out) {
  CompactWriter w(out);
  w.BeginStruct();
  w.FieldI32(1, m.version);
  w.FieldList(2, CType::kStruct, static_cast<int64_t>(m.schema.size()));
  for (const auto& e : m.schema) WriteSchemaElement(w, e);
  w.FieldI64(3, m.num_rows);
  w.FieldList(4, CType::kStruct, static_cast<int64_t>(m.row_groups.size()));
  for (const auto& g : m.row_groups) WriteRowGroup(w, g);
  if (!m.key_value_metadata.empty()) WriteKeyValues(w, 5, m.key_value_metadata);
  if (m.created_by) w.FieldBinary(6, *m.created_by);
  if (!m.column_orders.empty()) {
    w.FieldList(7, CType::kStruct, static_cast<int64_t>(m.column_orders.size()));
    for (int16_t order : m.column_orders) {
      w.BeginStruct();
      WriteEmptyStructField(w, order);
      w.EndStruct();
    }
  }
  w.EndStruct();
}

void SerializePageHeader(const PageHeader& h, std::string* out) {
  CompactWriter w(out);
  w.BeginStruct();
  w.FieldI32(1, static_cast<int32_t>(h.type));
  w.FieldI32(2, h.uncompressed_page_size);
  w.FieldI32(3, h.compressed_page_size);
  if (h.crc) w.FieldI32(4, *h.crc);
  if (h.data_page_header) {
    const auto& d = *h.data_page_header;
    w.FieldStruct(5);
    w.FieldI32(1, d.num_values);
    w.FieldI32(2, static_cast<int32_t>(d.encoding));
    w.FieldI32(3, static_cast<int32_t>(d.definition_level_encoding));
    w.FieldI32(4, static_cast<int32_t>(d.repetition_level_encoding));
    if (d.statistics) {
      w.FieldStruct(5);
      WriteStatistics(w, *d.statistics);
    }
    w.EndStruct();
  }
  if (h.dictionary_page_header) {
    const auto& d = *h.dictionary_page_header;
    w.FieldStruct(7);
    w.FieldI32(1, d.num_values);
    w.FieldI32(2, static_cast<int32_t>(d.encoding));
    if (d.is_sorted) w.FieldBool(3, *d.is_sorted);
    w.EndStruct();
  }
  if (h.data_page_header_v2) {
    const auto& d = *h.data_page_header_v2;
    w.FieldStruct(8);
    w.FieldI32(1, d.num_values);
    w.FieldI32(2, d.num_nulls);
    w.FieldI32(3, d.num_rows);
    w.FieldI32(4, static_cast<int32_t>(d.encoding));
    w.FieldI32(5, d.definition_levels_byte_length);
    w.FieldI32(6, d.repetition_levels_byte_length);
    w.FieldBool(7, d.is_compressed);
    if (d.statistics) {
      w.FieldStruct(8);
      WriteStatistics(w, *d.statistics);
    }
    w.EndStruct();
  }
  w.EndStruct();
}

// -----------------------------------------------------------------------------------------------
// Parsing

namespace {

// Field loop helper: calls `on_field(id, type)` for each field; on_field returns Status and
// must consume the value (or call r.Skip(type)).
template <typename F>
Status ReadStruct(CompactReader& r, F&& on_field) {
  RETURN_NOT_OK(r.BeginStruct());
  while (true) {
    int16_t id = 0;
    CType type;
    RETURN_NOT_OK(r.ReadFieldHeader(&id, &type));
    if (type == CType::kStop) break;
    RETURN_NOT_OK(on_field(id, type));
  }
  return r.EndStruct();
}

Status Missing(std::string_view structure, std::string_view field) {
  return Status::Corruption("parquet metadata: " + std::string(structure) +
                            " lacks required field " + std::string(field));
}

// Typed field readers: a field whose wire type differs from the spec is skipped.
Status I32(CompactReader& r, CType t, int32_t* v, bool* seen = nullptr) {
  if (t != CType::kI32 && t != CType::kI16 && t != CType::kByte) return r.Skip(t);
  if (seen) *seen = true;
  if (t == CType::kByte) {
    int8_t b;
    RETURN_NOT_OK(r.ReadI8(&b));
    *v = b;
    return Status::OK();
  }
  return r.ReadI32(v);
}

Status I64(CompactReader& r, CType t, int64_t* v, bool* seen = nullptr) {
  if (t == CType::kI32 || t == CType::kI16 || t == CType::kI64) {
    if (seen) *seen = true;
    return r.ReadI64(v);
  }
  return r.Skip(t);
}

// An i32 field holding one of the spec's enum values, stored as read (0 when the field is
// skipped for its wire type); unknown values are refused where they are used.
template <typename E>
Status Enum32(CompactReader& r, CType t, E* e, bool* seen = nullptr) {
  int32_t v = 0;
  Status st = I32(r, t, &v, seen);
  *e = static_cast<E>(v);
  return st;
}

template <typename T>
Status OptI32(CompactReader& r, CType t, std::optional<T>* v) {
  int32_t x = 0;
  bool seen = false;
  RETURN_NOT_OK(I32(r, t, &x, &seen));
  if (seen) *v = static_cast<T>(x);
  return Status::OK();
}

Status OptI64(CompactReader& r, CType t, std::optional<int64_t>* v) {
  int64_t x = 0;
  bool seen = false;
  RETURN_NOT_OK(I64(r, t, &x, &seen));
  if (seen) *v = x;
  return Status::OK();
}

Status OptBinary(CompactReader& r, CType t, std::optional<std::string>* v) {
  if (t != CType::kBinary) return r.Skip(t);
  std::string s;
  RETURN_NOT_OK(r.ReadString(&s));
  *v = std::move(s);
  return Status::OK();
}

Status OptBool(CompactReader& r, CType t, std::optional<bool>* v) {
  if (!thrift::IsBool(t)) return r.Skip(t);
  *v = r.FieldBoolValue(t);
  return Status::OK();
}

Status ParseStatistics(CompactReader& r, Statistics* s) {
  return ReadStruct(r, [&](int16_t id, CType t) -> Status {
    switch (id) {
      case 1: return OptBinary(r, t, &s->max);
      case 2: return OptBinary(r, t, &s->min);
      case 3: return OptI64(r, t, &s->null_count);
      case 4: return OptI64(r, t, &s->distinct_count);
      case 5: return OptBinary(r, t, &s->max_value);
      case 6: return OptBinary(r, t, &s->min_value);
      case 7: return OptBool(r, t, &s->is_max_value_exact);
      case 8: return OptBool(r, t, &s->is_min_value_exact);
      case 9: return OptI64(r, t, &s->nan_count);
      default: return r.Skip(t);
    }
  });
}

Status ParseOptStatistics(CompactReader& r, CType t, std::optional<Statistics>* s) {
  if (t != CType::kStruct) return r.Skip(t);
  s->emplace();
  return ParseStatistics(r, &**s);
}

// Reads a union: the id of its (first) set member, whose struct body `on_member` consumes.
template <typename F>
Status ReadUnion(CompactReader& r, int16_t* member, F&& on_member) {
  *member = 0;
  return ReadStruct(r, [&](int16_t id, CType t) -> Status {
    if (t != CType::kStruct || *member != 0) return r.Skip(t);
    *member = id;
    return on_member(id);
  });
}

Status ParseLogicalType(CompactReader& r, LogicalType* lt) {
  int16_t member = 0;
  RETURN_NOT_OK(ReadUnion(r, &member, [&](int16_t id) -> Status {
    switch (id) {
      case LogicalType::kDecimal:
        return ReadStruct(r, [&](int16_t f, CType t) -> Status {
          if (f == 1) return I32(r, t, &lt->scale);
          if (f == 2) return I32(r, t, &lt->precision);
          return r.Skip(t);
        });
      case LogicalType::kTime:
      case LogicalType::kTimestamp:
        return ReadStruct(r, [&](int16_t f, CType t) -> Status {
          if (f == 1 && thrift::IsBool(t)) {
            lt->is_adjusted_to_utc = r.FieldBoolValue(t);
            return Status::OK();
          }
          if (f == 2 && t == CType::kStruct) {
            int16_t unit = 0;
            RETURN_NOT_OK(ReadUnion(r, &unit, [&](int16_t) { return r.Skip(CType::kStruct); }));
            if (unit < 1 || unit > 3) {
              return Status::Corruption("parquet metadata: unknown time unit " +
                                        std::to_string(unit));
            }
            lt->unit = static_cast<LogicalTimeUnit>(unit);
            return Status::OK();
          }
          return r.Skip(t);
        });
      case LogicalType::kInteger:
        return ReadStruct(r, [&](int16_t f, CType t) -> Status {
          if (f == 1) {
            int32_t w = 0;
            RETURN_NOT_OK(I32(r, t, &w));
            lt->bit_width = static_cast<int8_t>(w);
            return Status::OK();
          }
          if (f == 2 && thrift::IsBool(t)) {
            lt->is_signed = r.FieldBoolValue(t);
            return Status::OK();
          }
          return r.Skip(t);
        });
      default: return r.Skip(CType::kStruct);
    }
  }));
  lt->kind = member;
  return Status::OK();
}

Status ParseSchemaElement(CompactReader& r, SchemaElement* e) {
  bool has_name = false;
  RETURN_NOT_OK(ReadStruct(r, [&](int16_t id, CType t) -> Status {
    switch (id) {
      case 1: return OptI32(r, t, &e->type);
      case 2: return OptI32(r, t, &e->type_length);
      case 3: return OptI32(r, t, &e->repetition_type);
      case 4:
        if (t != CType::kBinary) return r.Skip(t);
        has_name = true;
        return r.ReadString(&e->name);
      case 5: return OptI32(r, t, &e->num_children);
      case 6: return OptI32(r, t, &e->converted_type);
      case 7: return OptI32(r, t, &e->scale);
      case 8: return OptI32(r, t, &e->precision);
      case 9: return OptI32(r, t, &e->field_id);
      case 10:
        if (t != CType::kStruct) return r.Skip(t);
        e->logical_type.emplace();
        return ParseLogicalType(r, &*e->logical_type);
      default: return r.Skip(t);
    }
  }));
  if (!has_name) return Missing("SchemaElement", "name");
  return Status::OK();
}

template <typename T, typename F>
Status ReadList(CompactReader& r, CType t, CType expected, std::vector<T>* out, F&& read_one) {
  if (t != CType::kList && t != CType::kSet) return r.Skip(t);
  CType elem;
  int32_t n;
  RETURN_NOT_OK(r.ReadListHeader(&elem, &n));
  if (elem != expected && !(expected == CType::kI32 && elem == CType::kI16)) {
    for (int32_t i = 0; i < n; ++i) RETURN_NOT_OK(r.Skip(elem));
    return Status::OK();
  }
  // The list grows as its elements parse: a header claiming millions of (one-byte, invalid)
  // elements costs no more memory than the elements actually read.
  constexpr int32_t kMaxReserve = 4096;
  out->clear();
  out->reserve(static_cast<size_t>(std::min(n, kMaxReserve)));
  for (int32_t i = 0; i < n; ++i) RETURN_NOT_OK(read_one(&out->emplace_back()));
  return Status::OK();
}

Status ParseKeyValues(CompactReader& r, CType t, std::vector<KeyValue>* out) {
  return ReadList(r, t, CType::kStruct, out, [&](KeyValue* kv) {
    bool has_key = false;
    RETURN_NOT_OK(ReadStruct(r, [&](int16_t id, CType ft) -> Status {
      if (id == 1 && ft == CType::kBinary) {
        has_key = true;
        return r.ReadString(&kv->key);
      }
      if (id == 2) return OptBinary(r, ft, &kv->value);
      return r.Skip(ft);
    }));
    return has_key ? Status::OK() : Missing("KeyValue", "key");
  });
}

Status ParseColumnMetaData(CompactReader& r, ColumnMetaData* m) {
  uint32_t seen = 0;
  RETURN_NOT_OK(ReadStruct(r, [&](int16_t id, CType t) -> Status {
    bool ok = false;
    Status st;
    switch (id) {
      case 1: st = Enum32(r, t, &m->type, &ok); break;
      case 2:
        ok = true;
        st = ReadList(r, t, CType::kI32, &m->encodings, [&](Encoding* e) {
          int32_t v;
          RETURN_NOT_OK(r.ReadI32(&v));
          *e = static_cast<Encoding>(v);
          return Status::OK();
        });
        break;
      case 3:
        ok = true;
        st = ReadList(r, t, CType::kBinary, &m->path_in_schema,
                      [&](std::string* s) { return r.ReadString(s); });
        break;
      case 4: st = Enum32(r, t, &m->codec, &ok); break;
      case 5: st = I64(r, t, &m->num_values, &ok); break;
      case 6: st = I64(r, t, &m->total_uncompressed_size, &ok); break;
      case 7: st = I64(r, t, &m->total_compressed_size, &ok); break;
      case 8: st = ParseKeyValues(r, t, &m->key_value_metadata); break;
      case 9: st = I64(r, t, &m->data_page_offset, &ok); break;
      case 10: st = OptI64(r, t, &m->index_page_offset); break;
      case 11: st = OptI64(r, t, &m->dictionary_page_offset); break;
      case 12: st = ParseOptStatistics(r, t, &m->statistics); break;
      case 13:
        st = ReadList(r, t, CType::kStruct, &m->encoding_stats, [&](PageEncodingStats* s) {
          return ReadStruct(r, [&](int16_t f, CType ft) -> Status {
            switch (f) {
              case 1: RETURN_NOT_OK(Enum32(r, ft, &s->page_type)); break;
              case 2: RETURN_NOT_OK(Enum32(r, ft, &s->encoding)); break;
              case 3: return I32(r, ft, &s->count);
              default: return r.Skip(ft);
            }
            return Status::OK();
          });
        });
        break;
      default: return r.Skip(t);
    }
    if (ok && id < 32) seen |= 1u << id;
    return st;
  }));
  static constexpr struct {
    int id;
    const char* name;
  } kRequired[] = {{1, "type"},
                   {4, "codec"},
                   {5, "num_values"},
                   {6, "total_uncompressed_size"},
                   {7, "total_compressed_size"},
                   {9, "data_page_offset"}};
  for (const auto& f : kRequired) {
    if (!(seen & (1u << f.id))) return Missing("ColumnMetaData", f.name);
  }
  return Status::OK();
}

Status ParseRowGroup(CompactReader& r, RowGroup* g) {
  bool has_rows = false, has_columns = false;
  RETURN_NOT_OK(ReadStruct(r, [&](int16_t id, CType t) -> Status {
    switch (id) {
      case 1:
        has_columns = true;
        return ReadList(r, t, CType::kStruct, &g->columns, [&](ColumnChunk* c) {
          return ReadStruct(r, [&](int16_t f, CType ft) -> Status {
            switch (f) {
              case 1: return OptBinary(r, ft, &c->file_path);
              case 2: return I64(r, ft, &c->file_offset);
              case 3:
                if (ft != CType::kStruct) return r.Skip(ft);
                c->meta_data.emplace();
                return ParseColumnMetaData(r, &*c->meta_data);
              default: return r.Skip(ft);
            }
          });
        });
      case 2: return I64(r, t, &g->total_byte_size);
      case 3: return I64(r, t, &g->num_rows, &has_rows);
      case 5: return OptI64(r, t, &g->file_offset);
      case 6: return OptI64(r, t, &g->total_compressed_size);
      case 7: return OptI32(r, t, &g->ordinal);
      default: return r.Skip(t);
    }
  }));
  if (!has_columns) return Missing("RowGroup", "columns");
  if (!has_rows) return Missing("RowGroup", "num_rows");
  return Status::OK();
}

}  // namespace

Status ParseFileMetaData(const uint8_t* data, size_t size, FileMetaData* m) {
  CompactReader r(data, size);
  bool has_schema = false, has_rows = false, has_groups = false;
  RETURN_NOT_OK(ReadStruct(r, [&](int16_t id, CType t) -> Status {
    switch (id) {
      case 1: return I32(r, t, &m->version);
      case 2:
        has_schema = true;
        return ReadList(r, t, CType::kStruct, &m->schema,
                        [&](SchemaElement* e) { return ParseSchemaElement(r, e); });
      case 3: return I64(r, t, &m->num_rows, &has_rows);
      case 4:
        has_groups = true;
        return ReadList(r, t, CType::kStruct, &m->row_groups,
                        [&](RowGroup* g) { return ParseRowGroup(r, g); });
      case 5: return ParseKeyValues(r, t, &m->key_value_metadata);
      case 6: return OptBinary(r, t, &m->created_by);
      case 7:
        return ReadList(r, t, CType::kStruct, &m->column_orders, [&](int16_t* order) {
          return ReadUnion(r, order, [&](int16_t) { return r.Skip(CType::kStruct); });
        });
      default: return r.Skip(t);
    }
  }));
  if (!has_schema) return Missing("FileMetaData", "schema");
  if (!has_rows) return Missing("FileMetaData", "num_rows");
  if (!has_groups) return Missing("FileMetaData", "row_groups");
  return Status::OK();
}

Status ParsePageHeader(const uint8_t* data, size_t size, PageHeader* h, size_t* consumed) {
  CompactReader r(data, size);
  uint32_t seen = 0;
  RETURN_NOT_OK(ReadStruct(r, [&](int16_t id, CType t) -> Status {
    bool ok = false;
    Status st;
    switch (id) {
      case 1: st = Enum32(r, t, &h->type, &ok); break;
      case 2: st = I32(r, t, &h->uncompressed_page_size, &ok); break;
      case 3: st = I32(r, t, &h->compressed_page_size, &ok); break;
      case 4: st = OptI32(r, t, &h->crc); break;
      case 5: {
        if (t != CType::kStruct) return r.Skip(t);
        auto& d = h->data_page_header.emplace();
        uint32_t f_seen = 0;
        st = ReadStruct(r, [&](int16_t f, CType ft) -> Status {
          bool f_ok = false;
          switch (f) {
            case 1: RETURN_NOT_OK(I32(r, ft, &d.num_values, &f_ok)); break;
            case 2: RETURN_NOT_OK(Enum32(r, ft, &d.encoding, &f_ok)); break;
            case 3: RETURN_NOT_OK(Enum32(r, ft, &d.definition_level_encoding, &f_ok)); break;
            case 4: RETURN_NOT_OK(Enum32(r, ft, &d.repetition_level_encoding, &f_ok)); break;
            case 5: return ParseOptStatistics(r, ft, &d.statistics);
            default: return r.Skip(ft);
          }
          if (f_ok) f_seen |= 1u << f;
          return Status::OK();
        });
        if (st.ok() && (f_seen & 0x6) != 0x6)
          return Missing("DataPageHeader", "num_values/encoding");
        break;
      }
      case 7: {
        if (t != CType::kStruct) return r.Skip(t);
        auto& d = h->dictionary_page_header.emplace();
        bool has_n = false;
        st = ReadStruct(r, [&](int16_t f, CType ft) -> Status {
          switch (f) {
            case 1: return I32(r, ft, &d.num_values, &has_n);
            case 2: RETURN_NOT_OK(Enum32(r, ft, &d.encoding)); break;
            case 3: return OptBool(r, ft, &d.is_sorted);
            default: return r.Skip(ft);
          }
          return Status::OK();
        });
        if (st.ok() && !has_n) return Missing("DictionaryPageHeader", "num_values");
        break;
      }
      case 8: {
        if (t != CType::kStruct) return r.Skip(t);
        auto& d = h->data_page_header_v2.emplace();
        uint32_t f_seen = 0;
        st = ReadStruct(r, [&](int16_t f, CType ft) -> Status {
          bool f_ok = false;
          switch (f) {
            case 1: RETURN_NOT_OK(I32(r, ft, &d.num_values, &f_ok)); break;
            case 2: RETURN_NOT_OK(I32(r, ft, &d.num_nulls, &f_ok)); break;
            case 3: RETURN_NOT_OK(I32(r, ft, &d.num_rows, &f_ok)); break;
            case 4: RETURN_NOT_OK(Enum32(r, ft, &d.encoding, &f_ok)); break;
            case 5: RETURN_NOT_OK(I32(r, ft, &d.definition_levels_byte_length, &f_ok)); break;
            case 6: RETURN_NOT_OK(I32(r, ft, &d.repetition_levels_byte_length, &f_ok)); break;
            case 7:
              if (thrift::IsBool(ft))
                d.is_compressed = r.FieldBoolValue(ft);
              else
                return r.Skip(ft);
              break;
            case 8: return ParseOptStatistics(r, ft, &d.statistics);
            default: return r.Skip(ft);
          }
          if (f_ok) f_seen |= 1u << f;
          return Status::OK();
        });
        if (st.ok() && (f_seen & 0x7e) != 0x7e)
          return Missing("DataPageHeaderV2", "a count or length");
        break;
      }
      default: return r.Skip(t);
    }
    if (ok) seen |= 1u << id;
    return st;
  }));
  if ((seen & 0xe) != 0xe)
    return Missing("PageHeader", "type/uncompressed_page_size/compressed_page_size");
  *consumed = r.position();
  return Status::OK();
}

}  // namespace oxbow::parquet
