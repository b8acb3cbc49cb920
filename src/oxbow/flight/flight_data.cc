#include "oxbow/flight/flight_data.h"

#include <cstring>

namespace oxbow::flight {
namespace {

constexpr uint32_t kDescriptorField = 1;
constexpr uint32_t kHeaderField = 2;
constexpr uint32_t kAppMetadataField = 3;
constexpr uint32_t kBodyField = 1000;
constexpr uint32_t kLengthDelimited = 2;
// Body pieces smaller than this are copied into the preceding slice; a refcounted slice costs
// more than copying a few kilobytes.
constexpr int64_t kMinZeroCopyPiece = 4096;

void PutVarint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

void PutTag(std::string* out, uint32_t field) { PutVarint(out, (field << 3) | kLengthDelimited); }

void ReleaseBuffer(void* user_data) { delete static_cast<std::shared_ptr<Buffer>*>(user_data); }

grpc::Slice SliceOf(const std::shared_ptr<Buffer>& buffer) {
  auto* keep = new std::shared_ptr<Buffer>(buffer);
  return grpc::Slice(const_cast<uint8_t*>(buffer->data()), static_cast<size_t>(buffer->size()),
                     &ReleaseBuffer, keep);
}

// Keeps a received grpc slice alive for as long as a Buffer points into it.
struct SliceOwner {
  grpc::Slice slice;
};

grpc::Status Malformed(const std::string& what) {
  return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "malformed FlightData: " + what);
}

bool GetVarint(const uint8_t** p, const uint8_t* end, uint64_t* v) {
  *v = 0;
  for (int shift = 0; shift < 64 && *p < end; shift += 7) {
    uint8_t b = *(*p)++;
    *v |= static_cast<uint64_t>(b & 0x7F) << shift;
    if ((b & 0x80) == 0) return true;
  }
  return false;
}

}  // namespace

grpc::Status ToGrpcStatus(const Status& st) {
  if (st.ok()) return grpc::Status::OK;
  grpc::StatusCode code = grpc::StatusCode::INTERNAL;
  switch (st.code()) {
    case StatusCode::kOk: code = grpc::StatusCode::OK; break;
    case StatusCode::kInvalid: code = grpc::StatusCode::INVALID_ARGUMENT; break;
    case StatusCode::kNotFound: code = grpc::StatusCode::NOT_FOUND; break;
    case StatusCode::kAlreadyExists: code = grpc::StatusCode::ALREADY_EXISTS; break;
    case StatusCode::kOutOfRange: code = grpc::StatusCode::OUT_OF_RANGE; break;
    case StatusCode::kResourceExhausted: code = grpc::StatusCode::RESOURCE_EXHAUSTED; break;
    case StatusCode::kNotImplemented: code = grpc::StatusCode::UNIMPLEMENTED; break;
    case StatusCode::kCancelled: code = grpc::StatusCode::CANCELLED; break;
    case StatusCode::kUnauthenticated: code = grpc::StatusCode::UNAUTHENTICATED; break;
    case StatusCode::kPermissionDenied: code = grpc::StatusCode::PERMISSION_DENIED; break;
    case StatusCode::kUnavailable: code = grpc::StatusCode::UNAVAILABLE; break;
    case StatusCode::kAborted: code = grpc::StatusCode::ABORTED; break;
    case StatusCode::kIOError:
    case StatusCode::kCorruption:
    case StatusCode::kInternal: code = grpc::StatusCode::INTERNAL; break;
  }
  return grpc::Status(code, Truncate(st.message(), kMaxStatusMessageBytes));
}

Status FromGrpcStatus(const grpc::Status& st) {
  if (st.ok()) return Status::OK();
  StatusCode code = StatusCode::kIOError;
  switch (st.error_code()) {
    case grpc::StatusCode::INVALID_ARGUMENT: code = StatusCode::kInvalid; break;
    case grpc::StatusCode::NOT_FOUND: code = StatusCode::kNotFound; break;
    case grpc::StatusCode::ALREADY_EXISTS: code = StatusCode::kAlreadyExists; break;
    case grpc::StatusCode::OUT_OF_RANGE: code = StatusCode::kOutOfRange; break;
    case grpc::StatusCode::RESOURCE_EXHAUSTED: code = StatusCode::kResourceExhausted; break;
    case grpc::StatusCode::UNIMPLEMENTED: code = StatusCode::kNotImplemented; break;
    case grpc::StatusCode::CANCELLED: code = StatusCode::kCancelled; break;
    case grpc::StatusCode::INTERNAL: code = StatusCode::kInternal; break;
    case grpc::StatusCode::UNAUTHENTICATED: code = StatusCode::kUnauthenticated; break;
    case grpc::StatusCode::PERMISSION_DENIED: code = StatusCode::kPermissionDenied; break;
    case grpc::StatusCode::ABORTED: code = StatusCode::kAborted; break;
    // A server that cannot serve now and a transport that failed both mean: retry, maybe
    // elsewhere.
    case grpc::StatusCode::UNAVAILABLE: code = StatusCode::kUnavailable; break;
    default: break;  // DEADLINE_EXCEEDED, ...: the transport failed
  }
  return Status(code, st.error_message());
}

Result<std::shared_ptr<Buffer>> FlightDataIn::AlignedBody() const {
  if (!data_body) return Buffer::Empty();
  if (reinterpret_cast<uintptr_t>(data_body->data()) % 8 == 0) return data_body;
  return Buffer::CopyFrom(data_body->view());
}

grpc::Status SerializeFlightPayload(const FlightPayload& payload, grpc::ByteBuffer* out) {
  std::vector<grpc::Slice> slices;
  std::string head;
  if (payload.descriptor) {
    std::string descriptor = payload.descriptor->SerializeAsString();
    PutTag(&head, kDescriptorField);
    PutVarint(&head, descriptor.size());
    head.append(descriptor);
  }
  if (payload.data_header) {
    PutTag(&head, kHeaderField);
    PutVarint(&head, static_cast<uint64_t>(payload.data_header->size()));
    head.append(payload.data_header->view());
  }
  if (!payload.app_metadata.empty()) {
    PutTag(&head, kAppMetadataField);
    PutVarint(&head, payload.app_metadata.size());
    head.append(payload.app_metadata);
  }
  if (payload.body_length > 0) {
    PutTag(&head, kBodyField);
    PutVarint(&head, static_cast<uint64_t>(payload.body_length));
    for (const auto& piece : payload.data_body) {
      if (piece->size() < kMinZeroCopyPiece) {
        head.append(piece->view());
        continue;
      }
      if (!head.empty()) {
        slices.emplace_back(head);
        head.clear();
      }
      slices.push_back(SliceOf(piece));
    }
  }
  if (!head.empty()) slices.emplace_back(head);
  grpc::ByteBuffer bb(slices.data(), slices.size());
  out->Swap(&bb);
  return grpc::Status::OK;
}

grpc::Status ParseFlightData(grpc::ByteBuffer* in, FlightDataIn* out) {
  *out = FlightDataIn();
  std::shared_ptr<Buffer> whole;
  grpc::Slice single;
  if (in->TrySingleSlice(&single).ok()) {
    auto owner = std::make_shared<SliceOwner>(SliceOwner{single});
    whole = std::make_shared<Buffer>(owner->slice.begin(), owner->slice.size(), owner);
  } else {
    // Several slices: gather them once into an aligned buffer.
    std::vector<grpc::Slice> slices;
    grpc::Status st = in->Dump(&slices);
    if (!st.ok()) return st;
    auto alloc = MutableBuffer::Allocate(static_cast<int64_t>(in->Length()));
    if (!alloc.ok()) return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, "out of memory");
    auto buf = std::move(alloc).ValueOrDie();
    uint8_t* dst = buf->mutable_data();
    for (const auto& s : slices) {
      std::memcpy(dst, s.begin(), s.size());
      dst += s.size();
    }
    whole = std::move(buf);
  }
  const uint8_t* base = whole->data();
  const uint8_t* p = base;
  const uint8_t* end = base + whole->size();
  while (p < end) {
    uint64_t tag = 0;
    if (!GetVarint(&p, end, &tag)) return Malformed("truncated field tag");
    const uint32_t field = static_cast<uint32_t>(tag >> 3);
    const uint32_t wire = static_cast<uint32_t>(tag & 7);
    uint64_t value = 0;
    switch (wire) {
      case 0:
        if (!GetVarint(&p, end, &value)) return Malformed("truncated varint");
        continue;
      case 1:
        if (end - p < 8) return Malformed("truncated fixed64");
        p += 8;
        continue;
      case 5:
        if (end - p < 4) return Malformed("truncated fixed32");
        p += 4;
        continue;
      case kLengthDelimited: break;
      default: return Malformed("unsupported wire type " + std::to_string(wire));
    }
    if (!GetVarint(&p, end, &value) || value > static_cast<uint64_t>(end - p)) {
      return Malformed("field " + std::to_string(field) + " length runs past the message");
    }
    const int64_t at = p - base;
    const auto len = static_cast<int64_t>(value);
    switch (field) {
      case kDescriptorField: {
        ::arrow::flight::protocol::FlightDescriptor d;
        if (!d.ParseFromArray(p, static_cast<int>(len))) return Malformed("bad flight_descriptor");
        out->descriptor = std::move(d);
        break;
      }
      case kHeaderField: out->data_header = Buffer::Slice(whole, at, len); break;
      case kAppMetadataField:
        out->app_metadata.assign(reinterpret_cast<const char*>(p), len);
        break;
      case kBodyField: out->data_body = Buffer::Slice(whole, at, len); break;
      default: break;  // unknown fields are skipped, as protobuf does
    }
    p += len;
  }
  return grpc::Status::OK;
}

}  // namespace oxbow::flight
