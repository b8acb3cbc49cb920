#include <cstring>

#include "oxbow/parquet/thrift_internal.h"

namespace oxbow::parquet::thrift {

void CompactWriter::BeginStruct() {
  stack_.push_back(last_id_);
  last_id_ = 0;
}

void CompactWriter::EndStruct() {
  out_->push_back(0);
  last_id_ = stack_.empty() ? 0 : stack_.back();
  if (!stack_.empty()) stack_.pop_back();
}

void CompactWriter::Varint(uint64_t v) {
  while (v >= 0x80) {
    out_->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out_->push_back(static_cast<char>(v));
}

void CompactWriter::FieldHeader(int16_t id, CType type) {
  const int delta = id - last_id_;
  if (delta > 0 && delta <= 15) {
    out_->push_back(static_cast<char>((delta << 4) | static_cast<uint8_t>(type)));
  } else {
    out_->push_back(static_cast<char>(type));
    Varint(ZigZag(id));
  }
  last_id_ = id;
}

void CompactWriter::FieldBool(int16_t id, bool v) {
  FieldHeader(id, v ? CType::kTrue : CType::kFalse);
}

void CompactWriter::FieldI8(int16_t id, int8_t v) {
  FieldHeader(id, CType::kByte);
  out_->push_back(static_cast<char>(v));
}

void CompactWriter::FieldI16(int16_t id, int16_t v) {
  FieldHeader(id, CType::kI16);
  Varint(ZigZag(v));
}

void CompactWriter::FieldI32(int16_t id, int32_t v) {
  FieldHeader(id, CType::kI32);
  Varint(ZigZag(v));
}

void CompactWriter::FieldI64(int16_t id, int64_t v) {
  FieldHeader(id, CType::kI64);
  Varint(ZigZag(v));
}

void CompactWriter::FieldDouble(int16_t id, double v) {
  FieldHeader(id, CType::kDouble);
  char bytes[8];
  std::memcpy(bytes, &v, 8);  // little-endian host
  out_->append(bytes, 8);
}

void CompactWriter::FieldBinary(int16_t id, std::string_view v) {
  FieldHeader(id, CType::kBinary);
  ElementBinary(v);
}

void CompactWriter::ElementBinary(std::string_view v) {
  Varint(v.size());
  out_->append(v.data(), v.size());
}

void CompactWriter::FieldStruct(int16_t id) {
  FieldHeader(id, CType::kStruct);
  BeginStruct();
}

void CompactWriter::FieldList(int16_t id, CType element, int64_t size) {
  FieldHeader(id, CType::kList);
  const auto elem = static_cast<uint8_t>(element);
  if (size < 15) {
    out_->push_back(static_cast<char>((size << 4) | elem));
  } else {
    out_->push_back(static_cast<char>(0xf0 | elem));
    Varint(static_cast<uint64_t>(size));
  }
}

Status CompactReader::Error(std::string_view what) const {
  return Status::Corruption("thrift: " + std::string(what) + " at byte " +
                            std::to_string(position()));
}

Status CompactReader::ReadVarint(uint64_t* v) {
  uint64_t result = 0;
  for (int shift = 0; shift < 70; shift += 7) {
    if (pos_ >= end_) return Error("truncated varint");
    const uint8_t b = *pos_++;
    if (shift == 63 && b > 1) return Error("varint overflows 64 bits");
    result |= static_cast<uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) {
      *v = result;
      return Status::OK();
    }
  }
  return Error("varint longer than 10 bytes");
}

Status CompactReader::ReadZigZag(int64_t* v) {
  uint64_t u;
  RETURN_NOT_OK(ReadVarint(&u));
  *v = static_cast<int64_t>(u >> 1) ^ -static_cast<int64_t>(u & 1);
  return Status::OK();
}

Status CompactReader::BeginStruct() {
  if (static_cast<int>(stack_.size()) >= kMaxDepth) return Error("nesting deeper than 32");
  stack_.push_back(last_id_);
  last_id_ = 0;
  return Status::OK();
}

Status CompactReader::EndStruct() {
  if (stack_.empty()) return Error("unbalanced struct end");
  last_id_ = stack_.back();
  stack_.pop_back();
  return Status::OK();
}

Status CompactReader::ReadFieldHeader(int16_t* id, CType* type) {
  if (pos_ >= end_) return Error("truncated struct (no stop byte)");
  const uint8_t b = *pos_++;
  const uint8_t t = b & 0x0f;
  if (t > static_cast<uint8_t>(CType::kStruct))
    return Error("unknown field type " + std::to_string(t));
  *type = static_cast<CType>(t);
  if (*type == CType::kStop) {
    if (b != 0) return Error("bad stop byte");
    return Status::OK();
  }
  const int delta = b >> 4;
  if (delta != 0) {
    const int next = last_id_ + delta;
    if (next > INT16_MAX) return Error("field id overflows i16");
    *id = static_cast<int16_t>(next);
  } else {
    int64_t v;
    RETURN_NOT_OK(ReadZigZag(&v));
    if (v < INT16_MIN || v > INT16_MAX) return Error("field id out of i16 range");
    *id = static_cast<int16_t>(v);
  }
  last_id_ = *id;
  return Status::OK();
}

Status CompactReader::ReadI8(int8_t* v) {
  if (pos_ >= end_) return Error("truncated i8");
  *v = static_cast<int8_t>(*pos_++);
  return Status::OK();
}

Status CompactReader::ReadI16(int16_t* v) {
  int64_t x = 0;
  RETURN_NOT_OK(ReadZigZag(&x));
  if (x < INT16_MIN || x > INT16_MAX) return Error("i16 out of range");
  *v = static_cast<int16_t>(x);
  return Status::OK();
}

Status CompactReader::ReadI32(int32_t* v) {
  int64_t x = 0;
  RETURN_NOT_OK(ReadZigZag(&x));
  if (x < INT32_MIN || x > INT32_MAX) return Error("i32 out of range");
  *v = static_cast<int32_t>(x);
  return Status::OK();
}

Status CompactReader::ReadI64(int64_t* v) { return ReadZigZag(v); }

Status CompactReader::ReadDouble(double* v) {
  if (end_ - pos_ < 8) return Error("truncated double");
  std::memcpy(v, pos_, 8);
  pos_ += 8;
  return Status::OK();
}

Status CompactReader::ReadBinary(std::string_view* v) {
  uint64_t len;
  RETURN_NOT_OK(ReadVarint(&len));
  if (len > static_cast<uint64_t>(end_ - pos_)) {
    return Error("binary of " + std::to_string(len) + " bytes runs past the end");
  }
  *v = std::string_view(reinterpret_cast<const char*>(pos_), len);
  pos_ += len;
  return Status::OK();
}

Status CompactReader::ReadString(std::string* v) {
  std::string_view view;
  RETURN_NOT_OK(ReadBinary(&view));
  v->assign(view);
  return Status::OK();
}

Status CompactReader::ReadListHeader(CType* element, int32_t* size) {
  if (pos_ >= end_) return Error("truncated list header");
  const uint8_t b = *pos_++;
  const uint8_t t = b & 0x0f;
  if (t == 0 || t > static_cast<uint8_t>(CType::kStruct)) {
    return Error("unknown list element type " + std::to_string(t));
  }
  *element = static_cast<CType>(t);
  uint64_t n = b >> 4;
  if (n == 15) RETURN_NOT_OK(ReadVarint(&n));
  // Every element takes at least one byte, so a longer list cannot fit.
  if (n > static_cast<uint64_t>(end_ - pos_)) {
    return Error("list of " + std::to_string(n) + " elements runs past the end");
  }
  *size = static_cast<int32_t>(n);
  return Status::OK();
}

Status CompactReader::ReadListBool(bool* v) {
  if (pos_ >= end_) return Error("truncated bool");
  *v = *pos_++ == 1;
  return Status::OK();
}

Status CompactReader::Skip(CType type) { return SkipDepth(type, static_cast<int>(stack_.size())); }

Status CompactReader::SkipDepth(CType type, int depth) {
  if (depth >= kMaxDepth) return Error("nesting deeper than 32");
  switch (type) {
    case CType::kTrue:
    case CType::kFalse: return Status::OK();  // a field bool lives in its header
    case CType::kByte: {
      int8_t v;
      return ReadI8(&v);
    }
    case CType::kI16:
    case CType::kI32:
    case CType::kI64: {
      uint64_t v;
      return ReadVarint(&v);
    }
    case CType::kDouble: {
      double v;
      return ReadDouble(&v);
    }
    case CType::kBinary: {
      std::string_view v;
      return ReadBinary(&v);
    }
    case CType::kList:
    case CType::kSet: {
      CType elem;
      int32_t n;
      RETURN_NOT_OK(ReadListHeader(&elem, &n));
      for (int32_t i = 0; i < n; ++i) {
        if (elem == CType::kTrue || elem == CType::kFalse) {
          bool b;
          RETURN_NOT_OK(ReadListBool(&b));
        } else {
          RETURN_NOT_OK(SkipDepth(elem, depth + 1));
        }
      }
      return Status::OK();
    }
    case CType::kMap: {
      uint64_t n;
      RETURN_NOT_OK(ReadVarint(&n));
      if (n == 0) return Status::OK();
      if (n > static_cast<uint64_t>(end_ - pos_)) return Error("map runs past the end");
      if (pos_ >= end_) return Error("truncated map header");
      const uint8_t kv = *pos_++;
      const auto key = static_cast<CType>(kv >> 4);
      const auto value = static_cast<CType>(kv & 0x0f);
      if ((kv >> 4) > 12 || (kv & 0x0f) > 12 || key == CType::kStop || value == CType::kStop) {
        return Error("bad map element types");
      }
      for (uint64_t i = 0; i < n; ++i) {
        for (CType t : {key, value}) {
          if (t == CType::kTrue || t == CType::kFalse) {
            bool b;
            RETURN_NOT_OK(ReadListBool(&b));
          } else {
            RETURN_NOT_OK(SkipDepth(t, depth + 1));
          }
        }
      }
      return Status::OK();
    }
    case CType::kStruct: {
      RETURN_NOT_OK(BeginStruct());
      while (true) {
        int16_t id;
        CType t;
        RETURN_NOT_OK(ReadFieldHeader(&id, &t));
        if (t == CType::kStop) break;
        RETURN_NOT_OK(SkipDepth(t, depth + 1));
      }
      return EndStruct();
    }
    case CType::kStop: break;
  }
  return Error("cannot skip a value of type stop");
}

}  // namespace oxbow::parquet::thrift
