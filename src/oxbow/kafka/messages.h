// The Kafka requests and responses Oxbow serves: structs generated at build time from the
// message definitions of kafka-clients (codegen/kafka_codegen.py writes
// messages_generated.h, namespace msg), each field exactly in the versions that define it,
// flexible versions with compact strings and tagged fields. docs/kafka.md lists the versions.
#pragma once

#include <string>
#include <type_traits>

#include "oxbow/kafka/api.h"
#include "oxbow/kafka/messages_generated.h"
#include "oxbow/kafka/wire.h"

namespace oxbow::kafka {

// librdkafka 2.16 ends a Metadata request for all topics with 3 bytes more (01 00 00), which
// Kafka ignores: bytes after a whole Metadata request are ignored here too.
template <typename Message>
constexpr bool kTrailingBytesIgnored = std::is_same_v<Message, msg::MetadataRequest>;

// Decodes a whole message body of `version` from untrusted bytes: Invalid naming the first
// problem, bytes after the message included.
template <typename Message>
Result<Message> Decode(Reader& r, int16_t version) {
  Message m;
  msg::Read(r, version, m);
  if (!kTrailingBytesIgnored<Message> && r.ok() && r.remaining() != 0) {
    r.Fail(std::to_string(r.remaining()) + " bytes after the end of the request");
  }
  if (!r.ok()) return r.status();
  return m;
}

template <typename Message>
std::string Encode(const Message& m, int16_t version) {
  Writer w;
  msg::Write(w, version, m);
  return w.Take();
}

}  // namespace oxbow::kafka
