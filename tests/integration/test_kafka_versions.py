"""Every API version the Kafka listener advertises, checked against kafka-python's codec (which
is generated from the same message definitions, independently of ours): each request is encoded
by kafka-python, answered by oxbowd, and the response must decode with kafka-python's class of
that version and re-encode to exactly the bytes oxbowd sent (docs/kafka.md).
"""

from __future__ import annotations

import json
import socket
import struct
import uuid

import pyarrow as pa
import pytest
from kafka.protocol.admin import (CreatePartitionsRequest, CreateTopicsRequest,
                                  DeleteGroupsRequest, DeleteRecordsRequest, DeleteTopicsRequest,
                                  DescribeConfigsRequest, DescribeGroupsRequest,
                                  IncrementalAlterConfigsRequest, ListGroupsRequest)
from kafka.protocol.consumer import (FetchRequest, HeartbeatRequest, JoinGroupRequest,
                                     LeaveGroupRequest, ListOffsetsRequest, OffsetCommitRequest,
                                     OffsetDeleteRequest, OffsetFetchRequest, SyncGroupRequest)
from kafka.protocol.metadata import ApiVersionsRequest, FindCoordinatorRequest, MetadataRequest
from kafka.protocol.producer import InitProducerIdRequest, ProduceRequest
from kafka.record.default_records import DefaultRecordBatchBuilder



@pytest.fixture(scope="module")
def server(module_server):
    return module_server


class Connection:
    def __init__(self, port: int):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.correlation = 0

    def call(self, request, version: int):
        """Sends `request` at `version`; returns (decoded response, raw response body)."""
        self.correlation += 1
        request.with_header(correlation_id=self.correlation, client_id="versions-test")
        payload = request.encode(version=version, header=True)
        self.sock.sendall(struct.pack(">i", len(payload)) + payload)
        (size,) = struct.unpack(">i", self._read(4))
        frame = self._read(size)
        response_class = request.header.get_response_class()
        # ApiVersions answers with response header v0; every other flexible API with v1.
        flexible = response_class.flexible_version_q(version) and request.API_KEY != 18
        (correlation,) = struct.unpack(">i", frame[:4])
        assert correlation == self.correlation
        body = frame[4 + (1 if flexible else 0):]
        if flexible:
            assert frame[4] == 0, "tagged fields in the response header"
        decoded = response_class.decode(body, version=version)
        decoded._header = None  # kafka-python's encode() expects the attribute
        assert decoded.encode(version=version) == body, (
            f"{response_class.__name__} v{version}: kafka-python re-encodes the response "
            "differently (a field oxbowd wrote is off)")
        return decoded

    def _read(self, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            assert chunk, "oxbowd closed the connection"
            data += chunk
        return data

    def close(self):
        self.sock.close()


def create_topic(conn: Connection, topic: str, partitions: int = 1) -> None:
    T = CreateTopicsRequest.CreatableTopic
    created = conn.call(CreateTopicsRequest[7](topics=[T(
        name=topic, num_partitions=partitions, replication_factor=1, assignments=[],
        configs=[])], timeout_ms=1000), 7)
    assert created.topics[0].error_code == 0


def advertised(server) -> dict[int, tuple[int, int]]:
    conn = Connection(server.kafka_port)
    response = conn.call(ApiVersionsRequest[0](), 0)
    conn.close()
    assert response.error_code == 0
    return {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}


def versions(server, request_class):
    low, high = advertised(server)[request_class.API_KEY]
    return range(low, high + 1)


def test_api_versions_every_version(server):
    apis = advertised(server)
    assert apis[18] == (0, 4) and apis[0][0] == 0 and apis[1][0] == 4
    conn = Connection(server.kafka_port)
    for v in range(0, 5):
        response = conn.call(ApiVersionsRequest[v](client_software_name="t",
                                                   client_software_version="1"), v)
        assert response.error_code == 0
        assert {k.api_key for k in response.api_keys} == set(apis)
    conn.close()


def test_metadata_create_delete_every_version(server):
    conn = Connection(server.kafka_port)
    for v in versions(server, CreateTopicsRequest):
        topic = f"v{v}-{uuid.uuid4().hex[:8]}"
        T = CreateTopicsRequest.CreatableTopic
        created = conn.call(CreateTopicsRequest[v](
            topics=[T(name=topic, num_partitions=3, replication_factor=1, assignments=[],
                      configs=[])], timeout_ms=1000), v)
        assert [(t.name, t.error_code) for t in created.topics] == [(topic, 0)]
        for mv in versions(server, MetadataRequest):
            topics = [MetadataRequest.MetadataRequestTopic(name=topic)]
            md = conn.call(MetadataRequest[mv](topics=topics, allow_auto_topic_creation=False), mv)
            assert [(t.name, t.error_code, len(t.partitions)) for t in md.topics] == [(topic, 0, 3)]
            assert [(b.node_id, b.port) for b in md.brokers] == [(0, server.kafka_port)]
    for v in versions(server, DeleteTopicsRequest):
        topic = f"d{v}-{uuid.uuid4().hex[:8]}"
        create_topic(conn, topic)
        if v >= 6:
            request = DeleteTopicsRequest[v](
                topics=[DeleteTopicsRequest.DeleteTopicState(name=topic)], timeout_ms=1000)
        else:
            request = DeleteTopicsRequest[v](topic_names=[topic], timeout_ms=1000)
        deleted = conn.call(request, v)
        assert [r.error_code for r in deleted.responses] == [0]
    conn.close()


def records(values: list[bytes], compression: int = 0, producer_id: int = -1,
            base_sequence: int = -1) -> bytes:
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=compression, is_transactional=False,
                                        producer_id=producer_id,
                                        producer_epoch=0 if producer_id >= 0 else -1,
                                        base_sequence=base_sequence, batch_size=1 << 20)
    for i, v in enumerate(values):
        builder.append(i, timestamp=1_700_000_000_000 + i, key=None, value=v, headers=[])
    return bytes(builder.build())


def test_produce_fetch_list_offsets_every_version(server):
    conn = Connection(server.kafka_port)
    topic = "pf-" + uuid.uuid4().hex[:8]
    create_topic(conn, topic)
    metadata = conn.call(MetadataRequest[12](
        topics=[MetadataRequest.MetadataRequestTopic(name=topic)]), 12)
    topic_id = metadata.topics[0].topic_id
    P = ProduceRequest.TopicProduceData
    expected = 0
    for v in versions(server, ProduceRequest):
        named = {"topic_id": topic_id} if v >= 13 else {"name": topic}  # v13 names topics by id
        data = [P(**named, partition_data=[P.PartitionProduceData(
            index=0, records=records([b"v%d-%d" % (v, i) for i in range(3)]))])]
        response = conn.call(ProduceRequest[v](acks=-1, timeout_ms=1000, topic_data=data), v)
        if v >= 13:
            assert response.responses[0].topic_id == topic_id
        part = response.responses[0].partition_responses[0]
        if v < 3:
            assert part.error_code == 35  # advertised for librdkafka, refused on use
            continue
        assert (part.error_code, part.base_offset) == (0, expected)
        expected += 3
    F = FetchRequest.FetchTopic
    for v in versions(server, FetchRequest):
        response = conn.call(FetchRequest[v](
            max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=0,
            topics=[F(**({"topic_id": topic_id} if v >= 13 else {"topic": topic}),
                      partitions=[F.FetchPartition(
                partition=0, fetch_offset=3, partition_max_bytes=1 << 20)])],
            forgotten_topics_data=[], rack_id=""), v)
        part = response.responses[0].partitions[0]
        assert (part.error_code, part.high_watermark) == (0, expected)
        assert len(part.records) > 0
    L = ListOffsetsRequest.ListOffsetsTopic
    for v in versions(server, ListOffsetsRequest):
        for timestamp, offset in ((-1, expected), (-2, 0)):
            response = conn.call(ListOffsetsRequest[v](
                replica_id=-1, isolation_level=0,
                topics=[L(name=topic, partitions=[L.ListOffsetsPartition(
                    partition_index=0, timestamp=timestamp)])]), v)
            part = response.topics[0].partitions[0]
            assert (part.error_code, part.offset) == (0, offset)
    conn.close()


def test_corrupt_batches_fail_their_partition_with_corrupt_message(server):
    conn = Connection(server.kafka_port)
    topic = "bad-" + uuid.uuid4().hex[:8]
    create_topic(conn, topic)
    good = records([b"a", b"b"], compression=1)
    flipped = good[:-1] + bytes([good[-1] ^ 1])
    P = ProduceRequest.TopicProduceData
    for batch, error, message in ((flipped, 2, "CRC32C mismatch"), (good[:40], 2, "batch length"),
                                  (good, 0, None)):
        response = conn.call(ProduceRequest[12](acks=-1, timeout_ms=1000, topic_data=[P(
            name=topic, partition_data=[P.PartitionProduceData(index=0, records=batch)])]), 12)
        part = response.responses[0].partition_responses[0]
        assert part.error_code == error
        if message:
            assert message in part.error_message
        else:
            assert part.base_offset == 0  # the refused batches appended nothing
    conn.close()


def test_group_apis_every_version(server):
    conn = Connection(server.kafka_port)
    topic = "grp-" + uuid.uuid4().hex[:8]
    for v in versions(server, FindCoordinatorRequest):
        request = (FindCoordinatorRequest[v](key="g", key_type=0) if v < 4 else
                   FindCoordinatorRequest[v](key_type=0, coordinator_keys=["g"]))
        response = conn.call(request, v)
        port = response.port if v < 4 else response.coordinators[0].port
        assert port == server.kafka_port
    JP = JoinGroupRequest.JoinGroupRequestProtocol
    for v in versions(server, JoinGroupRequest):
        group = f"g{v}-{uuid.uuid4().hex[:6]}"
        joined = conn.call(JoinGroupRequest[v](
            group_id=group, session_timeout_ms=10_000, rebalance_timeout_ms=10_000, member_id="",
            protocol_type="consumer", protocols=[JP(name="range", metadata=b"meta")]), v)
        assert joined.error_code == 0 and joined.leader == joined.member_id
        assert [m.metadata for m in joined.members] == [b"meta"]
        sv = min(v, 5)
        synced = conn.call(SyncGroupRequest[sv](
            group_id=group, generation_id=joined.generation_id, member_id=joined.member_id,
            protocol_type="consumer", protocol_name="range",
            assignments=[SyncGroupRequest.SyncGroupRequestAssignment(
                member_id=joined.member_id, assignment=b"mine")]), sv)
        assert (synced.error_code, synced.assignment) == (0, b"mine")
        hv = min(v, 4)
        beat = conn.call(HeartbeatRequest[hv](group_id=group, generation_id=joined.generation_id,
                                              member_id=joined.member_id), hv)
        assert beat.error_code == 0
        cv = max(2, min(v, 9))
        C = OffsetCommitRequest.OffsetCommitRequestTopic
        committed = conn.call(OffsetCommitRequest[cv](
            group_id=group, generation_id_or_member_epoch=joined.generation_id,
            member_id=joined.member_id, topics=[C(name=topic, partitions=[
                C.OffsetCommitRequestPartition(partition_index=0, committed_offset=42 + v,
                                               committed_metadata="m")])]), cv)
        assert committed.topics[0].partitions[0].error_code == 0
        lv = min(v, 5)
        if lv >= 3:
            request = LeaveGroupRequest[lv](group_id=group, members=[
                LeaveGroupRequest.MemberIdentity(member_id=joined.member_id)])
        else:
            request = LeaveGroupRequest[lv](group_id=group, member_id=joined.member_id)
        assert conn.call(request, lv).error_code == 0
    for v in versions(server, OffsetFetchRequest):
        if v >= 8:
            G = OffsetFetchRequest.OffsetFetchRequestGroup
            response = conn.call(OffsetFetchRequest[v](groups=[G(group_id="none", topics=None)],
                                                       require_stable=False), v)
            assert response.groups[0].topics == []
        else:
            T = OffsetFetchRequest.OffsetFetchRequestTopic
            response = conn.call(OffsetFetchRequest[v](
                group_id="none", topics=[T(name=topic, partition_indexes=[0])]), v)
            assert response.topics[0].partitions[0].committed_offset == -1
    conn.close()


def test_offsets_fetch_back_what_was_committed(server):
    conn = Connection(server.kafka_port)
    C = OffsetCommitRequest.OffsetCommitRequestTopic
    group = "solo-" + uuid.uuid4().hex[:6]
    conn.call(OffsetCommitRequest[9](group_id=group, generation_id_or_member_epoch=-1,
                                     member_id="", topics=[C(name="t", partitions=[
                                         C.OffsetCommitRequestPartition(
                                             partition_index=1, committed_offset=77,
                                             committed_metadata=None)])]), 9)
    G = OffsetFetchRequest.OffsetFetchRequestGroup
    response = conn.call(OffsetFetchRequest[9](groups=[G(group_id=group, topics=None)],
                                               require_stable=False), 9)
    topics = response.groups[0].topics
    assert [(t.name, [(p.partition_index, p.committed_offset) for p in t.partitions])
            for t in topics] == [("t", [(1, 77)])]
    conn.close()
    # Durable in this server's data dir (docs/kafka.md), not anywhere else.
    offsets = json.loads((server.data_dir / "kafka" / "offsets.json").read_text())
    assert offsets["groups"][group] == {"t": {"1": {"offset": 77, "metadata": None}}}


def commit_from_outside(conn: Connection, group: str, topic: str, partitions: dict) -> None:
    """An OffsetCommit by no member (a tool's), as `kafka-consumer-groups --reset-offsets`."""
    C = OffsetCommitRequest.OffsetCommitRequestTopic
    committed = conn.call(OffsetCommitRequest[9](
        group_id=group, generation_id_or_member_epoch=-1, member_id="",
        topics=[C(name=topic, partitions=[
            C.OffsetCommitRequestPartition(partition_index=p, committed_offset=o,
                                           committed_metadata=None)
            for p, o in partitions.items()])]), 9)
    assert {p.error_code for p in committed.topics[0].partitions} == {0}


def committed_offsets(conn: Connection, group: str) -> dict:
    G = OffsetFetchRequest.OffsetFetchRequestGroup
    fetched = conn.call(OffsetFetchRequest[9](groups=[G(group_id=group, topics=None)],
                                              require_stable=False), 9)
    return {(t.name, p.partition_index): p.committed_offset
            for t in fetched.groups[0].topics for p in t.partitions}


def listed_groups(conn: Connection) -> set:
    return {g.group_id for g in conn.call(ListGroupsRequest[5](), 5).groups}


def test_delete_groups_every_version(server):
    """DeleteGroups (kafka-consumer-groups --delete): a group without members loses its offsets
    and leaves the listing; one with members is NON_EMPTY_GROUP (68), an unknown one
    GROUP_ID_NOT_FOUND (69), as Kafka answers."""
    conn = Connection(server.kafka_port)
    topic = "dg-" + uuid.uuid4().hex[:6]
    create_topic(conn, topic, 2)
    for v in versions(server, DeleteGroupsRequest):
        group = f"deleted-v{v}-" + uuid.uuid4().hex[:6]
        commit_from_outside(conn, group, topic, {0: 5, 1: 7})
        assert group in listed_groups(conn)
        deleted = conn.call(DeleteGroupsRequest[v](groups_names=[group, "no-" + group]), v)
        assert [(r.group_id, r.error_code) for r in deleted.results] == [
            (group, 0), ("no-" + group, 69)]
        assert committed_offsets(conn, group) == {}
        assert group not in listed_groups(conn)
    busy = "busy-" + uuid.uuid4().hex[:6]
    JP = JoinGroupRequest.JoinGroupRequestProtocol
    conn.call(JoinGroupRequest[9](
        group_id=busy, session_timeout_ms=30_000, rebalance_timeout_ms=30_000, member_id="",
        protocol_type="consumer", protocols=[JP(name="range", metadata=b"")]), 9)
    deleted = conn.call(DeleteGroupsRequest[2](groups_names=[busy]), 2)
    assert [r.error_code for r in deleted.results] == [68]
    conn.close()


def subscription(topics: list[str]) -> bytes:
    """ConsumerProtocolSubscription v0: the topics, no user data."""
    out = struct.pack(">hi", 0, len(topics))
    for t in topics:
        out += struct.pack(">h", len(t)) + t.encode()
    return out + struct.pack(">i", -1)


def test_offset_delete(server):
    """OffsetDelete (kafka-consumer-groups --delete-offsets): offsets of a topic no member
    subscribes to go; a subscribed topic is GROUP_SUBSCRIBED_TO_TOPIC (86); an unknown group is
    GROUP_ID_NOT_FOUND (69) for the whole request."""
    conn = Connection(server.kafka_port)
    kept, dropped = ("od-" + uuid.uuid4().hex[:6] for _ in range(2))
    group = "offset-delete-" + uuid.uuid4().hex[:6]
    for topic in (kept, dropped):
        create_topic(conn, topic, 2)
        commit_from_outside(conn, group, topic, {0: 3, 1: 4})
    JP = JoinGroupRequest.JoinGroupRequestProtocol
    conn.call(JoinGroupRequest[9](
        group_id=group, session_timeout_ms=30_000, rebalance_timeout_ms=30_000, member_id="",
        protocol_type="consumer", protocols=[JP(name="range", metadata=subscription([kept]))]), 9)
    T = OffsetDeleteRequest.OffsetDeleteRequestTopic
    P = T.OffsetDeleteRequestPartition
    response = conn.call(OffsetDeleteRequest[0](group_id=group, topics=[
        T(name=kept, partitions=[P(partition_index=0)]),
        T(name=dropped, partitions=[P(partition_index=0), P(partition_index=1)])]), 0)
    assert response.error_code == 0
    assert [(t.name, [(p.partition_index, p.error_code) for p in t.partitions])
            for t in response.topics] == [(kept, [(0, 86)]), (dropped, [(0, 0), (1, 0)])]
    assert committed_offsets(conn, group) == {(kept, 0): 3, (kept, 1): 4}
    unknown = conn.call(OffsetDeleteRequest[0](group_id="no-" + group, topics=[
        T(name=kept, partitions=[P(partition_index=0)])]), 0)
    assert unknown.error_code == 69
    conn.close()


def test_deleted_offsets_stay_deleted_after_a_restart(make_server):
    server = make_server()
    conn = Connection(server.kafka_port)
    topic = "restart-" + uuid.uuid4().hex[:6]
    create_topic(conn, topic, 2)
    commit_from_outside(conn, "gone", topic, {0: 1})
    commit_from_outside(conn, "trimmed", topic, {0: 1, 1: 2})
    assert conn.call(DeleteGroupsRequest[2](groups_names=["gone"]), 2).results[0].error_code == 0
    T = OffsetDeleteRequest.OffsetDeleteRequestTopic
    trimmed = conn.call(OffsetDeleteRequest[0](group_id="trimmed", topics=[
        T(name=topic, partitions=[T.OffsetDeleteRequestPartition(partition_index=1)])]), 0)
    assert (trimmed.error_code, trimmed.topics[0].partitions[0].error_code) == (0, 0)
    conn.close()
    server.restart()
    conn = Connection(server.kafka_port)
    assert committed_offsets(conn, "gone") == {}
    assert committed_offsets(conn, "trimmed") == {(topic, 0): 1}
    assert "gone" not in listed_groups(conn)
    conn.close()


def test_init_producer_id_every_version(server):
    conn = Connection(server.kafka_port)
    ids = set()
    for v in versions(server, InitProducerIdRequest):
        response = conn.call(InitProducerIdRequest[v](transactional_id=None,
                                                      transaction_timeout_ms=1000), v)
        assert (response.error_code, response.producer_epoch) == (0, 0)
        ids.add(response.producer_id)
    assert len(ids) == len(versions(server, InitProducerIdRequest))
    conn.close()


def test_describe_and_list_groups_and_configs_every_version(server):
    conn = Connection(server.kafka_port)
    group = "described-" + uuid.uuid4().hex[:6]
    JP = JoinGroupRequest.JoinGroupRequestProtocol
    joined = conn.call(JoinGroupRequest[9](
        group_id=group, session_timeout_ms=30_000, rebalance_timeout_ms=30_000, member_id="",
        protocol_type="consumer", protocols=[JP(name="range", metadata=b"meta")]), 9)
    conn.call(SyncGroupRequest[5](
        group_id=group, generation_id=joined.generation_id, member_id=joined.member_id,
        protocol_type="consumer", protocol_name="range",
        assignments=[SyncGroupRequest.SyncGroupRequestAssignment(member_id=joined.member_id,
                                                                 assignment=b"mine")]), 5)
    for v in versions(server, DescribeGroupsRequest):
        d = conn.call(DescribeGroupsRequest[v](groups=[group, "no-such-group"]), v).groups
        assert [(g.group_id, g.group_state, g.protocol_data) for g in d] == [
            (group, "Stable", "range"), ("no-such-group", "Dead", "")]
        assert [(m.member_id, m.client_id, m.client_host, m.member_assignment)
                for m in d[0].members] == [(joined.member_id, "versions-test", "/127.0.0.1",
                                            b"mine")]
    for v in versions(server, ListGroupsRequest):
        listed = conn.call(ListGroupsRequest[v](), v).groups
        assert group in [g.group_id for g in listed]
    topic = "cfg-" + uuid.uuid4().hex[:6]
    create_topic(conn, topic)
    R = DescribeConfigsRequest.DescribeConfigsResource
    week_ms = str(7 * 24 * 3600 * 1000)  # the test server's retention: oxbowd's default
    for v in versions(server, DescribeConfigsRequest):
        results = conn.call(DescribeConfigsRequest[v](resources=[
            R(resource_type=2, resource_name=topic, configuration_keys=None),
            R(resource_type=2, resource_name=topic, configuration_keys=["retention.ms"]),
            R(resource_type=2, resource_name="missing-" + topic, configuration_keys=None),
            R(resource_type=4, resource_name="0", configuration_keys=None)],
            include_synonyms=False, include_documentation=True), v).results
        assert [r.error_code for r in results] == [0, 0, 3, 0]
        # ConfigSource 5: DEFAULT_CONFIG, the topic sets none of them.
        assert [(c.name, c.value, c.config_source) for c in results[0].configs] == [
            ("cleanup.policy", "delete", 5), ("compression.type", "producer", 5),
            ("max.message.bytes", str(100 << 20), 5), ("message.timestamp.type", "CreateTime", 5),
            ("retention.bytes", "-1", 5), ("retention.ms", week_ms, 5),
            ("segment.bytes", str(256 << 20), 5)]
        assert [c.name for c in results[1].configs] == ["retention.ms"]
        assert results[3].configs == []
    conn.close()


def test_incremental_alter_configs_every_version(server):
    """IncrementalAlterConfigs sets and deletes a topic's retention (its table's log.retention
    properties); DescribeConfigs then shows them as the topic's own (ConfigSource 1)."""
    conn = Connection(server.kafka_port)
    topic = "alter-" + uuid.uuid4().hex[:6]
    create_topic(conn, topic)
    Res = IncrementalAlterConfigsRequest.AlterConfigsResource
    Cfg = Res.AlterableConfig

    def alter(v, *configs, validate_only=False):
        return conn.call(IncrementalAlterConfigsRequest[v](resources=[Res(
            resource_type=2, resource_name=topic, configs=[
                Cfg(name=n, config_operation=op, value=value) for n, op, value in configs])],
            validate_only=validate_only), v).responses[0]

    def described():
        R = DescribeConfigsRequest.DescribeConfigsResource
        result = conn.call(DescribeConfigsRequest[4](resources=[
            R(resource_type=2, resource_name=topic, configuration_keys=None)],
            include_synonyms=False, include_documentation=False), 4).results[0]
        return {c.name: (c.value, c.config_source) for c in result.configs}

    for v in versions(server, IncrementalAlterConfigsRequest):
        assert alter(v, ("retention.ms", 0, "3600000"), ("retention.bytes", 0, "-1"),
                     validate_only=True).error_code == 0
        assert described()["retention.ms"][1] == 5, "validate_only changed the topic"
        assert alter(v, ("retention.ms", 0, "3600000"), ("retention.bytes", 0, "-1")).error_code == 0
        assert described()["retention.ms"] == ("3600000", 1)
        assert described()["retention.bytes"] == ("-1", 1)
        assert server.describe(f"kafka.{topic}")["properties"]["log.retention"] == "3600000ms"
        assert alter(v, ("retention.ms", 1, None), ("retention.bytes", 1, None)).error_code == 0
        assert described()["retention.ms"][1] == 5
        refused = alter(v, ("flush.messages", 0, "1"))
        assert refused.error_code == 40 and "flush.messages" in refused.error_message
        refused = alter(v, ("cleanup.policy", 0, "compact"))
        assert refused.error_code == 40 and "compact" in refused.error_message
    conn.close()


def test_create_partitions_every_version(server):
    """CreatePartitions grows a topic; validate_only changes nothing; a count not larger is
    INVALID_PARTITIONS, a manual assignment INVALID_REQUEST."""
    conn = Connection(server.kafka_port)
    topic = "grow-" + uuid.uuid4().hex[:6]
    create_topic(conn, topic)
    T = CreatePartitionsRequest.CreatePartitionsTopic

    def grow(v, count, assignments=None, validate_only=False):
        return conn.call(CreatePartitionsRequest[v](
            topics=[T(name=topic, count=count, assignments=assignments)], timeout_ms=1000,
            validate_only=validate_only), v).results[0]

    buckets = lambda: len(server.describe(f"kafka.{topic}")["bucket_offsets"])  # noqa: E731
    for v in versions(server, CreatePartitionsRequest):
        count = buckets()
        assert grow(v, count + 1, validate_only=True).error_code == 0
        assert buckets() == count
        assert grow(v, count + 1).error_code == 0
        assert buckets() == count + 1
        refused = grow(v, count + 1)
        assert refused.error_code == 37 and "must be larger" in refused.error_message
        manual = grow(v, count + 2, assignments=[T.CreatePartitionsAssignment(broker_ids=[0])])
        assert manual.error_code == 42, manual
    conn.close()


def test_delete_records_every_version(server):
    """DeleteRecords moves a partition's start (low watermark) up; -1 is the high watermark;
    past it is OFFSET_OUT_OF_RANGE, an unknown partition UNKNOWN_TOPIC_OR_PARTITION."""
    conn = Connection(server.kafka_port)
    topic = "trim-" + uuid.uuid4().hex[:6]
    create_topic(conn, topic)
    P = ProduceRequest.TopicProduceData
    for _ in range(3):
        conn.call(ProduceRequest[9](acks=-1, timeout_ms=1000, topic_data=[P(
            name=topic, partition_data=[P.PartitionProduceData(
                index=0, records=records([b"a", b"b", b"c", b"d"]))])]), 9)
    T = DeleteRecordsRequest.DeleteRecordsTopic

    def delete(v, partition, offset):
        return conn.call(DeleteRecordsRequest[v](topics=[T(name=topic, partitions=[
            T.DeleteRecordsPartition(partition_index=partition, offset=offset)])],
            timeout_ms=1000), v).topics[0].partitions[0]

    for v, offset in zip(versions(server, DeleteRecordsRequest), (2, 5, 9)):
        done = delete(v, 0, offset)
        assert (done.error_code, done.low_watermark) == (0, offset)
        assert server.describe(f"kafka.{topic}")["bucket_offsets"][0]["earliest_offset"] == offset
        assert delete(v, 0, 13).error_code == 1
        assert delete(v, 3, 1).error_code == 3
    assert (delete(2, 0, -1).error_code, delete(2, 0, -1).low_watermark) == (0, 12)
    conn.close()


def idempotent_producer(conn: Connection, topic: str):
    """produce(conn, sequence) of one 3-record batch by a new idempotent producer."""
    producer = conn.call(InitProducerIdRequest[4](transactional_id=None,
                                                  transaction_timeout_ms=1000), 4)
    P = ProduceRequest.TopicProduceData

    def produce(conn, sequence: int):
        batch = records([b"a", b"b", b"c"], producer_id=producer.producer_id,
                        base_sequence=sequence)
        response = conn.call(ProduceRequest[9](acks=-1, timeout_ms=1000, topic_data=[P(
            name=topic, partition_data=[P.PartitionProduceData(index=0, records=batch)])]), 9)
        part = response.responses[0].partition_responses[0]
        return part.error_code, part.base_offset

    return produce


def test_idempotent_retries_are_deduplicated_across_a_clean_restart(server):
    conn = Connection(server.kafka_port)
    topic = "idem-" + uuid.uuid4().hex[:8]
    create_topic(conn, topic)
    produce = idempotent_producer(conn, topic)
    assert produce(conn, 0) == (0, 0)
    assert produce(conn, 0) == (0, 0)  # a retry: acknowledged with its offset, not appended
    assert produce(conn, 3) == (0, 3)
    conn.close()
    server.stop()
    assert (server.data_dir / "kafka" / "producers.json").is_file()
    server.start()
    conn = Connection(server.kafka_port)
    assert produce(conn, 3) == (0, 3)  # still known after the restart
    assert produce(conn, 9)[0] == 45  # OUT_OF_ORDER_SEQUENCE_NUMBER: 6-8 are missing
    assert produce(conn, 6) == (0, 6)
    conn.close()
    assert server.describe("kafka." + topic)["bucket_offsets"][0]["next_offset"] == 9


def test_idempotent_retries_are_deduplicated_after_a_crash(server):
    """SIGKILL leaves no snapshot of the batches since the last one: they are replayed from the
    log, where each idempotent batch carries its producer id and sequences."""
    conn = Connection(server.kafka_port)
    topic = "crash-" + uuid.uuid4().hex[:8]
    create_topic(conn, topic)
    produce = idempotent_producer(conn, topic)
    assert produce(conn, 0) == (0, 0)
    assert produce(conn, 3) == (0, 3)
    conn.close()
    server.kill()
    server.start()
    conn = Connection(server.kafka_port)
    assert produce(conn, 3) == (0, 3)  # the retry of a batch acknowledged before the crash
    assert produce(conn, 0) == (0, 0)
    assert produce(conn, 9)[0] == 45  # OUT_OF_ORDER_SEQUENCE_NUMBER: 6-8 are missing
    assert produce(conn, 6) == (0, 6)
    conn.close()
    # A clean stop snapshots the state; a crash after it replays only what follows.
    server.stop()
    server.start()
    conn = Connection(server.kafka_port)
    assert produce(conn, 9) == (0, 9)
    conn.close()
    server.kill()
    server.start()
    conn = Connection(server.kafka_port)
    assert produce(conn, 9) == (0, 9)  # replayed after the snapshot
    assert produce(conn, 6) == (0, 6)  # from the snapshot
    assert produce(conn, 12) == (0, 12)
    conn.close()
    assert server.describe("kafka." + topic)["bucket_offsets"][0]["next_offset"] == 15


def test_undecodable_json_record_is_named(server):
    table = "shop.json_" + uuid.uuid4().hex[:8]
    server.create_table(table, pa.schema([pa.field("id", pa.int64(), nullable=False)]),
                        properties={"kafka.value.format": "json"})
    conn = Connection(server.kafka_port)
    P = ProduceRequest.TopicProduceData
    batch = records([b'{"id": 1}', b'{"id": 2}', b'{"id": "three"}'])
    response = conn.call(ProduceRequest[12](acks=-1, timeout_ms=1000, topic_data=[P(
        name=table, partition_data=[P.PartitionProduceData(index=0, records=batch)])]), 12)
    conn.close()
    part = response.responses[0].partition_responses[0]
    assert part.error_code == 87  # INVALID_RECORD
    assert part.error_message.startswith("record batch 0: record 2: "), part.error_message
    assert "'id'" in part.error_message, part.error_message
    assert [e.batch_index for e in part.record_errors] == [0]
    assert server.describe(table)["bucket_offsets"][0]["next_offset"] == 0


def test_unknown_topic_ids_are_named_so(server):
    conn = Connection(server.kafka_port)
    unknown = uuid.UUID(int=12345)
    F = FetchRequest.FetchTopic
    response = conn.call(FetchRequest[16](
        max_wait_ms=0, min_bytes=0, topics=[F(topic_id=unknown, partitions=[F.FetchPartition(
            partition=0, fetch_offset=0, partition_max_bytes=100)])],
        forgotten_topics_data=[], rack_id=""), 16)
    assert response.responses[0].partitions[0].error_code == 100  # UNKNOWN_TOPIC_ID
    P = ProduceRequest.TopicProduceData
    response = conn.call(ProduceRequest[13](acks=-1, timeout_ms=1000, topic_data=[P(
        topic_id=unknown, partition_data=[P.PartitionProduceData(index=0, records=records(
            [b"x"]))])]), 13)
    assert response.responses[0].partition_responses[0].error_code == 100
    conn.close()
