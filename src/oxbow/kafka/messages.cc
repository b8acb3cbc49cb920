#include "oxbow/kafka/messages.h"

#include <algorithm>

namespace oxbow::kafka {
namespace {

// The decoded request, or the reader's first error; bytes left over are an error too.
template <typename T>
Result<T> Finish(Reader& r, T value) {
  r.SkipTaggedFields(false);
  if (r.ok() && r.remaining() != 0) {
    r.Fail(std::to_string(r.remaining()) + " bytes after the end of the request");
  }
  if (!r.ok()) return r.status();
  return value;
}

void Error(Writer& w, ErrorCode e) { w.Int16(static_cast<int16_t>(e)); }

void Int32Array(Writer& w, const std::vector<int32_t>& values, bool f) {
  w.ArrayLength(static_cast<int32_t>(values.size()), f);
  for (int32_t v : values) w.Int32(v);
}

std::vector<int32_t> ReadInt32Array(Reader& r, bool f) {
  std::vector<int32_t> out(static_cast<size_t>(std::max(0, r.ArrayLength(f))));
  for (auto& v : out) v = r.Int32();
  return out;
}

// An array of structures: each element read by `read`, then its tagged fields.
template <typename Read>
auto ReadStructs(Reader& r, bool f, Read read) {
  std::vector<decltype(read())> out;
  const int32_t n = r.ArrayLength(f);
  for (int32_t i = 0; i < n && r.ok(); ++i) {
    out.push_back(read());
    r.SkipTaggedFields(f);
  }
  return out;
}

// An array of structures: each element written by `write`, then its (empty) tagged fields.
template <typename T, typename Write>
void WriteStructs(Writer& w, const std::vector<T>& items, bool f, Write write) {
  w.ArrayLength(static_cast<int32_t>(items.size()), f);
  for (const T& item : items) {
    write(item);
    w.NoTaggedFields(f);
  }
}

}  // namespace

const std::vector<ApiSupport>& SupportedApis() {
  // Produce v0-2 are advertised for librdkafka, which otherwise refuses to compress, and
  // answered with UNSUPPORTED_VERSION (docs/kafka.md).
  static const std::vector<ApiSupport> kApis = {
      {ApiKey::kProduce, 0, 13, 9},        {ApiKey::kFetch, 4, 16, 12},
      {ApiKey::kListOffsets, 1, 7, 6},     {ApiKey::kMetadata, 0, 13, 9},
      {ApiKey::kOffsetCommit, 2, 9, 8},    {ApiKey::kOffsetFetch, 1, 9, 6},
      {ApiKey::kFindCoordinator, 0, 6, 3}, {ApiKey::kJoinGroup, 0, 9, 6},
      {ApiKey::kHeartbeat, 0, 4, 4},       {ApiKey::kLeaveGroup, 0, 5, 4},
      {ApiKey::kSyncGroup, 0, 5, 4},       {ApiKey::kApiVersions, 0, 4, 3},
      {ApiKey::kCreateTopics, 2, 7, 5},    {ApiKey::kDeleteTopics, 1, 6, 4},
      {ApiKey::kInitProducerId, 0, 5, 2},  {ApiKey::kDescribeGroups, 0, 6, 5},
      {ApiKey::kListGroups, 0, 5, 3},      {ApiKey::kDescribeConfigs, 1, 4, 4},
      {ApiKey::kSaslHandshake, 1, 1, 2},   {ApiKey::kSaslAuthenticate, 0, 2, 2},
  };
  return kApis;
}

const ApiSupport* FindApi(int16_t api_key) {
  for (const auto& api : SupportedApis()) {
    if (static_cast<int16_t>(api.key) == api_key) return &api;
  }
  return nullptr;
}

RequestHeader DecodeRequestHeader(Reader& r) {
  RequestHeader h;
  h.api_key = r.Int16();
  h.api_version = r.Int16();
  h.correlation_id = r.Int32();
  h.client_id = r.NullableString(false);  // never compact, even in header v2
  const ApiSupport* api = FindApi(h.api_key);
  // Unknown keys and versions are answered (or refused) by the caller; tagged fields exist
  // only in the flexible versions of known APIs.
  if (api != nullptr && h.api_version >= api->min_version && h.api_version <= api->max_version) {
    r.SkipTaggedFields(IsFlexible(*api, h.api_version));
  }
  return h;
}

void EncodeResponseHeader(Writer& w, int32_t correlation_id, bool flexible) {
  w.Int32(correlation_id);
  w.NoTaggedFields(flexible);
}

// --- ApiVersions ---
Result<ApiVersionsRequest> DecodeApiVersions(Reader& r, int16_t version) {
  ApiVersionsRequest m;
  const bool f = version >= 3;
  if (version >= 3) {
    m.client_software_name = r.String(f);
    m.client_software_version = r.String(f);
  }
  r.SkipTaggedFields(f);
  return Finish(r, std::move(m));
}

void Encode(const ApiVersionsResponse& m, int16_t version, Writer& w) {
  const bool f = version >= 3;
  Error(w, m.error);
  w.ArrayLength(static_cast<int32_t>(m.apis.size()), f);
  for (const auto& api : m.apis) {
    w.Int16(static_cast<int16_t>(api.key));
    w.Int16(api.min_version);
    w.Int16(api.max_version);
    w.NoTaggedFields(f);
  }
  if (version >= 1) w.Int32(0);  // throttle time
  w.NoTaggedFields(f);
}

// --- Metadata ---
Result<MetadataRequest> DecodeMetadata(Reader& r, int16_t version) {
  MetadataRequest m;
  const bool f = version >= 9;
  const int32_t n = r.ArrayLength(f, version >= 1);
  if (n >= 0) {
    m.topics.emplace();
    for (int32_t i = 0; i < n && r.ok(); ++i) {
      if (version >= 10) (void)r.ReadUuid();
      auto name = version >= 10 ? r.NullableString(f) : std::optional(r.String(f));
      if (!name && r.ok()) r.Fail("metadata by topic id is not supported: name the topic");
      m.topics->push_back(name.value_or(""));
      r.SkipTaggedFields(f);
    }
    if (version == 0 && m.topics->empty()) m.topics.reset();
  }
  if (version >= 4) m.allow_auto_topic_creation = r.Bool();
  if (version >= 8 && version <= 10) (void)r.Bool();  // include cluster authorized operations
  if (version >= 8) (void)r.Bool();                   // include topic authorized operations
  r.SkipTaggedFields(f);
  // librdkafka 2.16 ends a request for all topics with 3 bytes more (01 00 00), which Kafka
  // ignores: bytes after a whole Metadata request are ignored here too.
  if (!r.ok()) return r.status();
  return m;
}

void Encode(const MetadataResponse& m, int16_t version, Writer& w) {
  const bool f = version >= 9;
  if (version >= 3) w.Int32(0);  // throttle time
  w.ArrayLength(static_cast<int32_t>(m.brokers.size()), f);
  for (const auto& b : m.brokers) {
    w.Int32(b.node_id);
    w.String(b.host, f);
    w.Int32(b.port);
    if (version >= 1) w.NullableString(std::nullopt, f);  // rack
    w.NoTaggedFields(f);
  }
  if (version >= 2) w.NullableString(m.cluster_id, f);
  if (version >= 1) w.Int32(m.controller_id);
  w.ArrayLength(static_cast<int32_t>(m.topics.size()), f);
  for (const auto& t : m.topics) {
    Error(w, t.error);
    w.String(t.name, f);
    if (version >= 10) w.WriteUuid(t.topic_id);
    if (version >= 1) w.Bool(false);  // internal
    w.ArrayLength(static_cast<int32_t>(t.partitions.size()), f);
    for (const auto& p : t.partitions) {
      Error(w, p.error);
      w.Int32(p.index);
      w.Int32(p.leader);
      if (version >= 7) w.Int32(0);            // leader epoch
      Int32Array(w, p.replicas, f);            // replicas
      Int32Array(w, p.replicas, f);            // in-sync replicas
      if (version >= 5) Int32Array(w, {}, f);  // offline replicas
      w.NoTaggedFields(f);
    }
    if (version >= 8) w.Int32(INT32_MIN);  // topic authorized operations: not computed
    w.NoTaggedFields(f);
  }
  if (version >= 8 && version <= 10) w.Int32(INT32_MIN);  // cluster authorized operations
  if (version >= 13) Error(w, ErrorCode::kNone);
  w.NoTaggedFields(f);
}

// --- CreateTopics ---
Result<CreateTopicsRequest> DecodeCreateTopics(Reader& r, int16_t version) {
  CreateTopicsRequest m;
  const bool f = version >= 5;
  const int32_t n = r.ArrayLength(f);
  for (int32_t i = 0; i < n && r.ok(); ++i) {
    CreatableTopic t;
    t.name = r.String(f);
    t.num_partitions = r.Int32();
    t.replication_factor = r.Int16();
    const int32_t assignments = r.ArrayLength(f);
    for (int32_t a = 0; a < assignments && r.ok(); ++a) {
      (void)r.Int32();
      (void)ReadInt32Array(r, f);
      r.SkipTaggedFields(f);
    }
    t.assignments = assignments;
    const int32_t configs = r.ArrayLength(f);
    for (int32_t c = 0; c < configs && r.ok(); ++c) {
      std::string name = r.String(f);
      t.configs.emplace_back(std::move(name), r.NullableString(f));
      r.SkipTaggedFields(f);
    }
    r.SkipTaggedFields(f);
    m.topics.push_back(std::move(t));
  }
  m.timeout_ms = r.Int32();
  if (version >= 1) m.validate_only = r.Bool();
  r.SkipTaggedFields(f);
  return Finish(r, std::move(m));
}

void Encode(const CreateTopicsResponse& m, int16_t version, Writer& w) {
  const bool f = version >= 5;
  if (version >= 2) w.Int32(0);  // throttle time
  w.ArrayLength(static_cast<int32_t>(m.topics.size()), f);
  for (const auto& t : m.topics) {
    w.String(t.name, f);
    if (version >= 7) w.WriteUuid(t.topic_id);
    Error(w, t.error);
    if (version >= 1) w.NullableString(t.message, f);
    if (version >= 5) {
      w.Int32(t.num_partitions);
      w.Int16(t.replication_factor);
      w.ArrayLength(0, f);  // configs: none (topics take no configs); Java's admin wants a list
    }
    w.NoTaggedFields(f);
  }
  w.NoTaggedFields(f);
}

// --- DeleteTopics ---
Result<DeleteTopicsRequest> DecodeDeleteTopics(Reader& r, int16_t version) {
  DeleteTopicsRequest m;
  const bool f = version >= 4;
  const int32_t n = r.ArrayLength(f);
  for (int32_t i = 0; i < n && r.ok(); ++i) {
    if (version >= 6) {
      m.names.push_back(r.NullableString(f));
      m.topic_ids.push_back(r.ReadUuid());
      r.SkipTaggedFields(f);
    } else {
      m.names.emplace_back(r.String(f));
      m.topic_ids.push_back(Uuid{});
    }
  }
  m.timeout_ms = r.Int32();
  r.SkipTaggedFields(f);
  return Finish(r, std::move(m));
}

void Encode(const DeleteTopicsResponse& m, int16_t version, Writer& w) {
  const bool f = version >= 4;
  w.Int32(0);  // throttle time (v1+)
  w.ArrayLength(static_cast<int32_t>(m.results.size()), f);
  for (const auto& t : m.results) {
    if (version >= 6) {
      w.NullableString(t.name, f);
      w.WriteUuid(t.topic_id);
    } else {
      w.String(t.name.value_or(""), f);
    }
    Error(w, t.error);
    if (version >= 5) w.NullableString(t.message, f);
    w.NoTaggedFields(f);
  }
  w.NoTaggedFields(f);
}

// --- ListOffsets ---
Result<ListOffsetsRequest> DecodeListOffsets(Reader& r, int16_t version) {
  ListOffsetsRequest m;
  const bool f = version >= 6;
  (void)r.Int32();  // replica id
  if (version >= 2) m.isolation_level = r.Int8();
  m.topics = ReadStructs(r, f, [&] {
    ListOffsetsTopic t;
    t.name = r.String(f);
    t.partitions = ReadStructs(r, f, [&] {
      ListOffsetsPartition part;
      part.index = r.Int32();
      if (version >= 4) (void)r.Int32();  // current leader epoch
      part.timestamp = r.Int64();
      return part;
    });
    return t;
  });
  r.SkipTaggedFields(f);
  return Finish(r, std::move(m));
}

void Encode(const ListOffsetsResponse& m, int16_t version, Writer& w) {
  const bool f = version >= 6;
  if (version >= 2) w.Int32(0);  // throttle time
  WriteStructs(w, m.topics, f, [&](const ListOffsetsTopicResult& t) {
    w.String(t.name, f);
    WriteStructs(w, t.partitions, f, [&](const ListOffsetsPartitionResult& p) {
      w.Int32(p.index);
      Error(w, p.error);
      w.Int64(p.timestamp);
      w.Int64(p.offset);
      if (version >= 4) w.Int32(p.offset >= 0 ? 0 : -1);  // leader epoch
    });
  });
  w.NoTaggedFields(f);
}

// --- Produce ---
Result<ProduceRequest> DecodeProduce(Reader& r, int16_t version) {
  ProduceRequest m;
  const bool f = version >= 9;
  if (version >= 3) m.transactional_id = r.NullableString(f);
  m.acks = r.Int16();
  m.timeout_ms = r.Int32();
  m.topics = ReadStructs(r, f, [&] {
    ProduceTopic t;
    if (version >= 13) {
      t.topic_id = r.ReadUuid();
    } else {
      t.name = r.String(f);
    }
    t.partitions = ReadStructs(r, f, [&] {
      ProducePartition part;
      part.index = r.Int32();
      part.records = r.NullableBytes(f);
      return part;
    });
    return t;
  });
  r.SkipTaggedFields(f);
  return Finish(r, std::move(m));
}

void Encode(const ProduceResponse& m, int16_t version, Writer& w) {
  const bool f = version >= 9;
  WriteStructs(w, m.topics, f, [&](const ProduceTopicResult& t) {
    if (version >= 13) {
      w.WriteUuid(t.topic_id);
    } else {
      w.String(t.name, f);
    }
    WriteStructs(w, t.partitions, f, [&](const ProducePartitionResult& p) {
      w.Int32(p.index);
      Error(w, p.error);
      w.Int64(p.base_offset);
      if (version >= 2) w.Int64(-1);  // log append time: records keep their create time
      if (version >= 5) w.Int64(p.log_start_offset);
      if (version >= 8) {
        WriteStructs(w, p.record_errors, f, [&](const std::pair<int32_t, std::string>& e) {
          w.Int32(e.first);
          w.NullableString(e.second, f);
        });
        w.NullableString(p.message, f);
      }
    });
  });
  if (version >= 1) w.Int32(0);  // throttle time
  w.NoTaggedFields(f);
}

// --- Fetch ---
Result<FetchRequest> DecodeFetch(Reader& r, int16_t version) {
  FetchRequest m;
  const bool f = version >= 12;
  if (version <= 14) (void)r.Int32();  // replica id (a tagged ReplicaState from v15)
  m.max_wait_ms = r.Int32();
  m.min_bytes = r.Int32();
  m.max_bytes = r.Int32();
  m.isolation_level = r.Int8();
  if (version >= 7) {
    m.session_id = r.Int32();
    m.session_epoch = r.Int32();
  }
  m.topics = ReadStructs(r, f, [&] {
    FetchTopic t;
    if (version >= 13) {
      t.topic_id = r.ReadUuid();
    } else {
      t.name = r.String(f);
    }
    t.partitions = ReadStructs(r, f, [&] {
      FetchPartition part;
      part.index = r.Int32();
      if (version >= 9) (void)r.Int32();  // current leader epoch
      part.fetch_offset = r.Int64();
      if (version >= 12) (void)r.Int32();  // last fetched epoch
      if (version >= 5) (void)r.Int64();   // log start offset (followers only)
      part.max_bytes = r.Int32();
      return part;
    });
    return t;
  });
  if (version >= 7) {
    (void)ReadStructs(r, f, [&] {  // forgotten topics: without sessions there is nothing to forget
      if (version >= 13) {
        (void)r.ReadUuid();
      } else {
        (void)r.String(f);
      }
      return ReadInt32Array(r, f);
    });
  }
  if (version >= 11) (void)r.String(f);  // rack id
  r.SkipTaggedFields(f);
  return Finish(r, std::move(m));
}

void Encode(const FetchResponse& m, int16_t version, Writer& w) {
  const bool f = version >= 12;
  w.Int32(0);  // throttle time (v1+)
  if (version >= 7) {
    Error(w, m.error);
    w.Int32(0);  // session id: no fetch sessions, every fetch is full
  }
  WriteStructs(w, m.topics, f, [&](const FetchTopicResult& t) {
    if (version >= 13) {
      w.WriteUuid(t.topic_id);
    } else {
      w.String(t.name, f);
    }
    WriteStructs(w, t.partitions, f, [&](const FetchPartitionResult& p) {
      w.Int32(p.index);
      Error(w, p.error);
      w.Int64(p.high_watermark);
      w.Int64(p.high_watermark);  // last stable offset: no transactions
      if (version >= 5) w.Int64(p.log_start_offset);
      w.ArrayLength(-1, f);            // aborted transactions: none
      if (version >= 11) w.Int32(-1);  // preferred read replica
      w.NullableBytes(std::string_view(p.records), f);
    });
  });
  w.NoTaggedFields(f);
}

// --- FindCoordinator ---
Result<FindCoordinatorRequest> DecodeFindCoordinator(Reader& r, int16_t version) {
  FindCoordinatorRequest m;
  const bool f = version >= 3;
  if (version <= 3) m.keys.push_back(r.String(f));
  if (version >= 1) m.key_type = r.Int8();
  if (version >= 4) {
    const int32_t n = r.ArrayLength(f);
    for (int32_t i = 0; i < n && r.ok(); ++i) m.keys.push_back(r.String(f));
  }
  r.SkipTaggedFields(f);
  return Finish(r, std::move(m));
}

void Encode(const FindCoordinatorResponse& m, int16_t version, Writer& w) {
  const bool f = version >= 3;
  if (version >= 1) w.Int32(0);  // throttle time
  if (version <= 3) {
    const Coordinator& c = m.coordinators.at(0);
    Error(w, c.error);
    if (version >= 1) w.NullableString(c.message, f);
    w.Int32(c.node_id);
    w.String(c.host, f);
    w.Int32(c.port);
  } else {
    w.ArrayLength(static_cast<int32_t>(m.coordinators.size()), f);
    for (const auto& c : m.coordinators) {
      w.String(c.key, f);
      w.Int32(c.node_id);
      w.String(c.host, f);
      w.Int32(c.port);
      Error(w, c.error);
      w.NullableString(c.message, f);
      w.NoTaggedFields(f);
    }
  }
  w.NoTaggedFields(f);
}

// --- JoinGroup ---
Result<JoinGroupRequest> DecodeJoinGroup(Reader& r, int16_t version) {
  JoinGroupRequest m;
  const bool f = version >= 6;
  m.group_id = r.String(f);
  m.session_timeout_ms = r.Int32();
  m.rebalance_timeout_ms = version >= 1 ? r.Int32() : m.session_timeout_ms;
  m.member_id = r.String(f);
  if (version >= 5) m.group_instance_id = r.NullableString(f);
  m.protocol_type = r.String(f);
  const int32_t n = r.ArrayLength(f);
  for (int32_t i = 0; i < n && r.ok(); ++i) {
    GroupProtocol p;
    p.name = r.String(f);
    p.metadata = std::string(r.Bytes(f));
    r.SkipTaggedFields(f);
    m.protocols.push_back(std::move(p));
  }
  if (version >= 8) (void)r.NullableString(f);  // reason
  r.SkipTaggedFields(f);
  return Finish(r, std::move(m));
}

void Encode(const JoinGroupResponse& m, int16_t version, Writer& w) {
  const bool f = version >= 6;
  if (version >= 2) w.Int32(0);  // throttle time
  Error(w, m.error);
  w.Int32(m.generation_id);
  if (version >= 7) {
    w.NullableString(m.protocol_type, f);
    w.NullableString(m.protocol_name, f);
  } else {
    w.String(m.protocol_name.value_or(""), f);
  }
  w.String(m.leader, f);
  if (version >= 9) w.Bool(false);  // skip assignment
  w.String(m.member_id, f);
  w.ArrayLength(static_cast<int32_t>(m.members.size()), f);
  for (const auto& member : m.members) {
    w.String(member.member_id, f);
    if (version >= 5) w.NullableString(member.group_instance_id, f);
    w.Bytes(member.metadata, f);
    w.NoTaggedFields(f);
  }
  w.NoTaggedFields(f);
}

// --- SyncGroup ---
Result<SyncGroupRequest> DecodeSyncGroup(Reader& r, int16_t version) {
  SyncGroupRequest m;
  const bool f = version >= 4;
  m.group_id = r.String(f);
  m.generation_id = r.Int32();
  m.member_id = r.String(f);
  if (version >= 3) m.group_instance_id = r.NullableString(f);
  if (version >= 5) {
    (void)r.NullableString(f);  // protocol type
    (void)r.NullableString(f);  // protocol name
  }
  const int32_t n = r.ArrayLength(f);
  for (int32_t i = 0; i < n && r.ok(); ++i) {
    std::string member = r.String(f);
    m.assignments.emplace_back(std::move(member), std::string(r.Bytes(f)));
    r.SkipTaggedFields(f);
  }
  r.SkipTaggedFields(f);
  return Finish(r, std::move(m));
}

void Encode(const SyncGroupResponse& m, int16_t version, Writer& w) {
  const bool f = version >= 4;
  if (version >= 1) w.Int32(0);  // throttle time
  Error(w, m.error);
  if (version >= 5) {
    w.NullableString(m.protocol_type, f);
    w.NullableString(m.protocol_name, f);
  }
  w.Bytes(m.assignment, f);
  w.NoTaggedFields(f);
}

// --- SaslHandshake ---
Result<SaslHandshakeRequest> DecodeSaslHandshake(Reader& r, int16_t version) {
  (void)version;  // not flexible in any version
  SaslHandshakeRequest m;
  m.mechanism = r.String(false);
  return Finish(r, std::move(m));
}

void Encode(const SaslHandshakeResponse& m, int16_t version, Writer& w) {
  (void)version;
  Error(w, m.error);
  w.ArrayLength(static_cast<int32_t>(m.mechanisms.size()), false);
  for (const auto& mechanism : m.mechanisms) w.String(mechanism, false);
}

// --- SaslAuthenticate ---
Result<SaslAuthenticateRequest> DecodeSaslAuthenticate(Reader& r, int16_t version) {
  SaslAuthenticateRequest m;
  const bool f = version >= 2;
  m.auth_bytes = std::string(r.Bytes(f));
  r.SkipTaggedFields(f);
  return Finish(r, std::move(m));
}

void Encode(const SaslAuthenticateResponse& m, int16_t version, Writer& w) {
  const bool f = version >= 2;
  Error(w, m.error);
  w.NullableString(m.message, f);
  w.Bytes(m.auth_bytes, f);
  if (version >= 1) w.Int64(m.session_lifetime_ms);
  w.NoTaggedFields(f);
}

// --- Heartbeat ---
Result<HeartbeatRequest> DecodeHeartbeat(Reader& r, int16_t version) {
  HeartbeatRequest m;
  const bool f = version >= 4;
  m.group_id = r.String(f);
  m.generation_id = r.Int32();
  m.member_id = r.String(f);
  if (version >= 3) m.group_instance_id = r.NullableString(f);
  r.SkipTaggedFields(f);
  return Finish(r, std::move(m));
}

void EncodeHeartbeat(ErrorCode error, int16_t version, Writer& w) {
  const bool f = version >= 4;
  if (version >= 1) w.Int32(0);  // throttle time
  Error(w, error);
  w.NoTaggedFields(f);
}

// --- LeaveGroup ---
Result<LeaveGroupRequest> DecodeLeaveGroup(Reader& r, int16_t version) {
  LeaveGroupRequest m;
  const bool f = version >= 4;
  m.group_id = r.String(f);
  if (version <= 2) {
    m.members.push_back({r.String(f), std::nullopt});
  } else {
    const int32_t n = r.ArrayLength(f);
    for (int32_t i = 0; i < n && r.ok(); ++i) {
      LeavingMember member;
      member.member_id = r.String(f);
      member.group_instance_id = r.NullableString(f);
      if (version >= 5) (void)r.NullableString(f);  // reason
      r.SkipTaggedFields(f);
      m.members.push_back(std::move(member));
    }
  }
  r.SkipTaggedFields(f);
  return Finish(r, std::move(m));
}

void Encode(const LeaveGroupResponse& m, int16_t version, Writer& w) {
  const bool f = version >= 4;
  if (version >= 1) w.Int32(0);  // throttle time
  // Before v3 the one member's error is the response's; from v3 each member has its own.
  Error(w, version < 3 && !m.members.empty() ? m.members[0].error : m.error);
  if (version >= 3) {
    w.ArrayLength(static_cast<int32_t>(m.members.size()), f);
    for (const auto& member : m.members) {
      w.String(member.member_id, f);
      w.NullableString(member.group_instance_id, f);
      Error(w, member.error);
      w.NoTaggedFields(f);
    }
  }
  w.NoTaggedFields(f);
}

// --- DescribeGroups ---
Result<DescribeGroupsRequest> DecodeDescribeGroups(Reader& r, int16_t version) {
  DescribeGroupsRequest m;
  const bool f = version >= 5;
  const int32_t n = r.ArrayLength(f);
  for (int32_t i = 0; i < n && r.ok(); ++i) m.groups.push_back(r.String(f));
  if (version >= 3) (void)r.Bool();  // include authorized operations
  r.SkipTaggedFields(f);
  return Finish(r, std::move(m));
}

void Encode(const DescribeGroupsResponse& m, int16_t version, Writer& w) {
  const bool f = version >= 5;
  if (version >= 1) w.Int32(0);  // throttle time
  w.ArrayLength(static_cast<int32_t>(m.groups.size()), f);
  for (const auto& g : m.groups) {
    Error(w, g.error);
    if (version >= 6) w.NullableString(std::nullopt, f);  // error message
    w.String(g.group_id, f);
    w.String(g.state, f);
    w.String(g.protocol_type, f);
    w.String(g.protocol_name, f);
    w.ArrayLength(static_cast<int32_t>(g.members.size()), f);
    for (const auto& member : g.members) {
      w.String(member.member_id, f);
      if (version >= 4) w.NullableString(member.group_instance_id, f);
      w.String(member.client_id, f);
      w.String(member.client_host, f);
      w.Bytes(member.metadata, f);
      w.Bytes(member.assignment, f);
      w.NoTaggedFields(f);
    }
    if (version >= 3) w.Int32(INT32_MIN);  // authorized operations: not computed
    w.NoTaggedFields(f);
  }
  w.NoTaggedFields(f);
}

// --- ListGroups ---
Result<ListGroupsRequest> DecodeListGroups(Reader& r, int16_t version) {
  ListGroupsRequest m;
  const bool f = version >= 3;
  if (version >= 4) {
    const int32_t n = r.ArrayLength(f);
    for (int32_t i = 0; i < n && r.ok(); ++i) m.states.push_back(r.String(f));
  }
  if (version >= 5) {
    const int32_t n = r.ArrayLength(f);
    for (int32_t i = 0; i < n && r.ok(); ++i) m.types.push_back(r.String(f));
  }
  r.SkipTaggedFields(f);
  return Finish(r, std::move(m));
}

void Encode(const ListGroupsResponse& m, int16_t version, Writer& w) {
  const bool f = version >= 3;
  if (version >= 1) w.Int32(0);  // throttle time
  Error(w, ErrorCode::kNone);
  w.ArrayLength(static_cast<int32_t>(m.groups.size()), f);
  for (const auto& g : m.groups) {
    w.String(g.group_id, f);
    w.String(g.protocol_type, f);
    if (version >= 4) w.String(g.state, f);
    if (version >= 5) w.String("classic", f);  // group type
    w.NoTaggedFields(f);
  }
  w.NoTaggedFields(f);
}

// --- DescribeConfigs ---
Result<DescribeConfigsRequest> DecodeDescribeConfigs(Reader& r, int16_t version) {
  DescribeConfigsRequest m;
  const bool f = version >= 4;
  const int32_t n = r.ArrayLength(f);
  for (int32_t i = 0; i < n && r.ok(); ++i) {
    ConfigResource resource;
    resource.type = r.Int8();
    resource.name = r.String(f);
    const int32_t keys = r.ArrayLength(f, true);
    for (int32_t k = 0; k < keys && r.ok(); ++k) (void)r.String(f);
    r.SkipTaggedFields(f);
    m.resources.push_back(std::move(resource));
  }
  (void)r.Bool();                    // include synonyms (v1+)
  if (version >= 3) (void)r.Bool();  // include documentation
  r.SkipTaggedFields(f);
  return Finish(r, std::move(m));
}

void Encode(const DescribeConfigsResponse& m, int16_t version, Writer& w) {
  const bool f = version >= 4;
  w.Int32(0);  // throttle time
  w.ArrayLength(static_cast<int32_t>(m.results.size()), f);
  for (const auto& result : m.results) {
    Error(w, result.error);
    w.NullableString(result.message, f);
    w.Int8(result.resource.type);
    w.String(result.resource.name, f);
    w.ArrayLength(0, f);  // configs
    w.NoTaggedFields(f);
  }
  w.NoTaggedFields(f);
}

// --- OffsetCommit ---
Result<OffsetCommitRequest> DecodeOffsetCommit(Reader& r, int16_t version) {
  OffsetCommitRequest m;
  const bool f = version >= 8;
  m.group_id = r.String(f);
  m.generation_id = r.Int32();
  m.member_id = r.String(f);
  if (version >= 7) m.group_instance_id = r.NullableString(f);
  if (version <= 4) (void)r.Int64();  // retention time
  m.topics = ReadStructs(r, f, [&] {
    OffsetCommitTopic t;
    t.name = r.String(f);
    t.partitions = ReadStructs(r, f, [&] {
      OffsetCommitPartition part;
      part.index = r.Int32();
      part.offset = r.Int64();
      if (version >= 6) (void)r.Int32();  // committed leader epoch
      part.metadata = r.NullableString(f);
      return part;
    });
    return t;
  });
  r.SkipTaggedFields(f);
  return Finish(r, std::move(m));
}

void Encode(const OffsetCommitResponse& m, int16_t version, Writer& w) {
  const bool f = version >= 8;
  if (version >= 3) w.Int32(0);  // throttle time
  WriteStructs(w, m.topics, f, [&](const OffsetCommitTopicResult& t) {
    w.String(t.name, f);
    WriteStructs(w, t.partitions, f, [&](const PartitionError& p) {
      w.Int32(p.index);
      Error(w, p.error);
    });
  });
  w.NoTaggedFields(f);
}

// --- OffsetFetch ---
namespace {
std::optional<std::vector<OffsetFetchTopic>> ReadOffsetFetchTopics(Reader& r, bool f,
                                                                   bool nullable) {
  const int32_t n = r.ArrayLength(f, nullable);
  if (n < 0) return std::nullopt;
  std::vector<OffsetFetchTopic> topics;
  for (int32_t i = 0; i < n && r.ok(); ++i) {
    OffsetFetchTopic t;
    t.name = r.String(f);
    t.partitions = ReadInt32Array(r, f);
    r.SkipTaggedFields(f);
    topics.push_back(std::move(t));
  }
  return topics;
}
}  // namespace

Result<OffsetFetchRequest> DecodeOffsetFetch(Reader& r, int16_t version) {
  OffsetFetchRequest m;
  const bool f = version >= 6;
  if (version <= 7) {
    OffsetFetchGroup g;
    g.group_id = r.String(f);
    g.topics = ReadOffsetFetchTopics(r, f, version >= 2);
    m.groups.push_back(std::move(g));
  } else {
    const int32_t n = r.ArrayLength(f);
    for (int32_t i = 0; i < n && r.ok(); ++i) {
      OffsetFetchGroup g;
      g.group_id = r.String(f);
      if (version >= 9) {
        (void)r.NullableString(f);  // member id
        (void)r.Int32();            // member epoch
      }
      g.topics = ReadOffsetFetchTopics(r, f, true);
      r.SkipTaggedFields(f);
      m.groups.push_back(std::move(g));
    }
  }
  if (version >= 7) (void)r.Bool();  // require stable: no transactions, always stable
  r.SkipTaggedFields(f);
  return Finish(r, std::move(m));
}

void Encode(const OffsetFetchResponse& m, int16_t version, Writer& w) {
  const bool f = version >= 6;
  if (version >= 3) w.Int32(0);  // throttle time
  auto write_topics = [&](const std::vector<OffsetFetchTopicResult>& topics) {
    WriteStructs(w, topics, f, [&](const OffsetFetchTopicResult& t) {
      w.String(t.name, f);
      WriteStructs(w, t.partitions, f, [&](const OffsetFetchPartitionResult& p) {
        w.Int32(p.index);
        w.Int64(p.offset);
        if (version >= 5) w.Int32(-1);  // committed leader epoch
        w.NullableString(p.metadata, f);
        Error(w, p.error);
      });
    });
  };
  if (version <= 7) {
    const OffsetFetchGroupResult& g = m.groups.at(0);
    write_topics(g.topics);
    if (version >= 2) Error(w, g.error);
  } else {
    w.ArrayLength(static_cast<int32_t>(m.groups.size()), f);
    for (const auto& g : m.groups) {
      w.String(g.group_id, f);
      write_topics(g.topics);
      Error(w, g.error);
      w.NoTaggedFields(f);
    }
  }
  w.NoTaggedFields(f);
}

// --- InitProducerId ---
Result<InitProducerIdRequest> DecodeInitProducerId(Reader& r, int16_t version) {
  InitProducerIdRequest m;
  const bool f = version >= 2;
  m.transactional_id = r.NullableString(f);
  m.transaction_timeout_ms = r.Int32();
  if (version >= 3) {
    m.producer_id = r.Int64();
    m.producer_epoch = r.Int16();
  }
  r.SkipTaggedFields(f);
  return Finish(r, std::move(m));
}

void Encode(const InitProducerIdResponse& m, int16_t version, Writer& w) {
  const bool f = version >= 2;
  w.Int32(0);  // throttle time
  Error(w, m.error);
  w.Int64(m.producer_id);
  w.Int16(m.producer_epoch);
  w.NoTaggedFields(f);
}

}  // namespace oxbow::kafka
