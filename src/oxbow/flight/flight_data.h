// FlightData on the wire, encoded and decoded by hand so that record-batch bodies travel as
// gRPC slices that reference our Buffers (no copy on send, no copy on receive when gRPC hands
// us one slice). Field numbers from apache/arrow format/Flight.proto:
//   1 flight_descriptor (message), 2 data_header (bytes), 3 app_metadata (bytes),
//   1000 data_body (bytes).
#pragma once

#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/serialization_traits.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "oxbow/common/buffer.h"
#include "oxbow/common/status.h"
#include "oxbow/flight/flight.pb.h"

namespace oxbow::flight {

// An outgoing FlightData message.
struct FlightPayload {
  std::optional<::arrow::flight::protocol::FlightDescriptor> descriptor;  // first DoPut message
  std::shared_ptr<Buffer> data_header;                                    // may be null
  std::vector<std::shared_ptr<Buffer>> data_body;                         // pieces, in order
  int64_t body_length = 0;
  std::string app_metadata;
};

// An incoming FlightData message.
struct FlightDataIn {
  std::optional<::arrow::flight::protocol::FlightDescriptor> descriptor;
  std::shared_ptr<Buffer> data_header;  // null when absent
  std::shared_ptr<Buffer> data_body;    // null when absent
  std::string app_metadata;

  // The body, copied only when it is not 8-byte aligned (gRPC may hand us any address, and
  // Arrow buffers must be aligned). An empty buffer when absent.
  Result<std::shared_ptr<Buffer>> AlignedBody() const;
};

// The full gRPC method names of the Flight service.
namespace method {
#define OXBOW_FLIGHT_METHOD(name) "/arrow.flight.protocol.FlightService/" name
constexpr char kHandshake[] = OXBOW_FLIGHT_METHOD("Handshake");
constexpr char kListFlights[] = OXBOW_FLIGHT_METHOD("ListFlights");
constexpr char kGetFlightInfo[] = OXBOW_FLIGHT_METHOD("GetFlightInfo");
constexpr char kGetSchema[] = OXBOW_FLIGHT_METHOD("GetSchema");
constexpr char kDoGet[] = OXBOW_FLIGHT_METHOD("DoGet");
constexpr char kDoPut[] = OXBOW_FLIGHT_METHOD("DoPut");
constexpr char kDoExchange[] = OXBOW_FLIGHT_METHOD("DoExchange");
constexpr char kDoAction[] = OXBOW_FLIGHT_METHOD("DoAction");
constexpr char kListActions[] = OXBOW_FLIGHT_METHOD("ListActions");
#undef OXBOW_FLIGHT_METHOD
}  // namespace method

// A message sent to a client is cut to this many bytes (docs/api.md): it travels in a header,
// percent-encoded, and gRPC clients drop a call whose headers exceed 8-16 KiB.
inline constexpr size_t kMaxStatusMessageBytes = 2048;

// gRPC status <-> Status: the one place where gRPC errors are translated.
grpc::Status ToGrpcStatus(const Status& status);
Status FromGrpcStatus(const grpc::Status& status);

grpc::Status SerializeFlightPayload(const FlightPayload& payload, grpc::ByteBuffer* out);
grpc::Status ParseFlightData(grpc::ByteBuffer* in, FlightDataIn* out);

}  // namespace oxbow::flight

namespace grpc {

template <>
class SerializationTraits<oxbow::flight::FlightPayload> {
 public:
  static Status Serialize(const oxbow::flight::FlightPayload& payload, ByteBuffer* buffer,
                          bool* own_buffer) {
    *own_buffer = true;
    return oxbow::flight::SerializeFlightPayload(payload, buffer);
  }
  static Status Deserialize(ByteBuffer*, oxbow::flight::FlightPayload*) {
    return Status(StatusCode::UNIMPLEMENTED, "FlightPayload is only ever written");
  }
};

template <>
class SerializationTraits<oxbow::flight::FlightDataIn> {
 public:
  static Status Serialize(const oxbow::flight::FlightDataIn&, ByteBuffer*, bool*) {
    return Status(StatusCode::UNIMPLEMENTED, "FlightDataIn is only ever read");
  }
  static Status Deserialize(ByteBuffer* buffer, oxbow::flight::FlightDataIn* data) {
    Status st = oxbow::flight::ParseFlightData(buffer, data);
    buffer->Clear();
    return st;
  }
};

}  // namespace grpc
