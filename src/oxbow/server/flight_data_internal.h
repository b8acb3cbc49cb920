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
#include "oxbow/server/flight.pb.h"

namespace oxbow::server {

// An outgoing FlightData message.
struct FlightPayload {
  std::shared_ptr<Buffer> data_header;             // may be null
  std::vector<std::shared_ptr<Buffer>> data_body;  // pieces, in order
  int64_t body_length = 0;
  std::string app_metadata;
};

// An incoming FlightData message.
struct FlightDataIn {
  std::optional<::arrow::flight::protocol::FlightDescriptor> descriptor;
  std::shared_ptr<Buffer> data_header;  // null when absent
  std::shared_ptr<Buffer> data_body;    // null when absent
  std::string app_metadata;
};

grpc::Status SerializeFlightPayload(const FlightPayload& payload, grpc::ByteBuffer* out);
grpc::Status ParseFlightData(grpc::ByteBuffer* in, FlightDataIn* out);

}  // namespace oxbow::server

namespace grpc {

template <>
class SerializationTraits<oxbow::server::FlightPayload> {
 public:
  static Status Serialize(const oxbow::server::FlightPayload& payload, ByteBuffer* buffer,
                          bool* own_buffer) {
    *own_buffer = true;
    return oxbow::server::SerializeFlightPayload(payload, buffer);
  }
  static Status Deserialize(ByteBuffer*, oxbow::server::FlightPayload*) {
    return Status(StatusCode::UNIMPLEMENTED, "the server never reads FlightPayload");
  }
};

template <>
class SerializationTraits<oxbow::server::FlightDataIn> {
 public:
  static Status Serialize(const oxbow::server::FlightDataIn&, ByteBuffer*, bool*) {
    return Status(StatusCode::UNIMPLEMENTED, "the server never writes FlightDataIn");
  }
  static Status Deserialize(ByteBuffer* buffer, oxbow::server::FlightDataIn* data) {
    Status st = oxbow::server::ParseFlightData(buffer, data);
    buffer->Clear();
    return st;
  }
};

}  // namespace grpc
