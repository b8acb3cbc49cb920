"""TLS, SASL and per-table permissions on the Kafka listener (docs/security.md#kafka), with real
clients over SASL_SSL: confluent-kafka (librdkafka) and kafka-python log in with PLAIN and
SCRAM-SHA-256 as users made by `oxbow user`, against a certificate the test makes with openssl.
A wrong password is refused, a missing grant is TOPIC_AUTHORIZATION_FAILED, and nothing but
ApiVersions and the SASL exchange is answered before the login.
"""

from __future__ import annotations

import socket
import ssl
import struct
import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KafkaPythonTopicPartition
from kafka.errors import KafkaTimeoutError
from kafka.protocol.consumer import FetchRequest
from kafka.protocol.metadata import ApiVersionsRequest, MetadataRequest
from kafka.protocol.sasl import SaslAuthenticateRequest, SaslHandshakeRequest

from oxbowtest.auth import users_dir
from oxbowtest.kafka import create_topic as create_kafka_topic, deliver, exchange

MECHANISMS = ["PLAIN", "SCRAM-SHA-256"]


def tls_auth_server(make_server, data, pki, users: dict[str, str], *extra_args: str):
    """oxbowd with --auth and TLS from `pki`, its users (name -> grants) added first."""
    server = make_server(
        data_dir=users_dir(data, users),
        extra_args=("--auth", *extra_args, "--tls-cert", str(pki / "server.pem"), "--tls-key",
                    str(pki / "server.key")),
        client_args={"tls_root_certs": (pki / "ca.pem").read_bytes()})
    server.ca = str(pki / "ca.pem")
    return server


@pytest.fixture
def secured(make_server, tmp_path, pki):  # noqa: F811
    return tls_auth_server(make_server, tmp_path / "secured", pki,
                           {"root": "*=admin", "writer": "kafka.*=write",
                            "reader": "kafka.orders=read"})


def refused_connection_errors(config: dict) -> list:
    """The errors librdkafka reports when a client with `config` cannot get metadata; the client
    is gone when this returns, so it makes no more attempts."""
    errors = []
    admin = AdminClient({**config, "error_cb": errors.append})
    with pytest.raises(KafkaException):
        admin.list_topics(timeout=1)
    for _ in range(20):  # error_cb is served by poll
        if errors:
            break
        admin.poll(0.5)
    return errors


def confluent(server, user: str, mechanism: str, password: str | None = None) -> dict:
    return {"bootstrap.servers": f"127.0.0.1:{server.kafka_port}", "security.protocol": "SASL_SSL",
            "ssl.ca.location": server.ca, "sasl.mechanism": mechanism, "sasl.username": user,
            "sasl.password": password or f"pw-{user}-123"}


def create_topic(server, mechanism: str, topic: str = "orders") -> None:
    create_kafka_topic(server, topic, 2, **confluent(server, "root", mechanism))


def produce(config: dict, topic: str, values: list[bytes]) -> list:
    """The delivery errors (None for each delivered record)."""
    reports, _ = deliver({**config, "linger.ms": 5, "message.timeout.ms": 20000}, topic,
                         [(0, None, v, None) for v in values])
    return [err for err, _ in reports]


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_librdkafka_over_sasl_ssl(secured, mechanism):
    create_topic(secured, mechanism)
    values = [b"order-%d" % i for i in range(20)]
    assert produce(confluent(secured, "writer", mechanism), "orders", values) == [None] * 20
    consumer = Consumer({**confluent(secured, "reader", mechanism), "group.id": "g-" + mechanism,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe(["orders"])
    got = []
    while len(got) < 20:
        msg = consumer.poll(10)
        assert msg is not None, f"consumed {len(got)} of 20"
        assert msg.error() is None, msg.error()
        got.append(msg.value())
    consumer.commit(asynchronous=False)
    committed = consumer.committed([TopicPartition("orders", 0)], timeout=10)
    consumer.close()
    assert sorted(got) == sorted(values)
    assert committed[0].offset == 20


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_kafka_python_over_sasl_ssl(secured, mechanism):
    create_topic(secured, "SCRAM-SHA-256")
    common = dict(bootstrap_servers=f"127.0.0.1:{secured.kafka_port}", security_protocol="SASL_SSL",
                  ssl_cafile=secured.ca, sasl_mechanism=mechanism)
    producer = KafkaProducer(sasl_plain_username="writer", sasl_plain_password="pw-writer-123",
                             **common)
    for i in range(10):
        producer.send("orders", value=b"kp-%d" % i, partition=1).get(timeout=30)
    producer.close()
    consumer = KafkaConsumer(sasl_plain_username="reader", sasl_plain_password="pw-reader-123",
                             auto_offset_reset="earliest", consumer_timeout_ms=10000, **common)
    partition = KafkaPythonTopicPartition("orders", 1)
    consumer.assign([partition])
    got = []
    for message in consumer:  # ends after 10 s without a message
        got.append(message.value)
        if len(got) == 10:
            break
    end = consumer.end_offsets([partition])[partition]
    consumer.close()
    assert got == [b"kp-%d" % i for i in range(10)]
    assert end == 10  # and nothing after them


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_wrong_password_is_refused(secured, mechanism):
    errors = refused_connection_errors(
        confluent(secured, "writer", mechanism, password="not-the-password"))
    assert any(e.code() == KafkaError._AUTHENTICATION for e in errors), errors
    assert "not-the-password" not in secured.log_path.read_text()
    # kafka-python bootstraps in its constructor and gives up when bootstrap_timeout_ms ends;
    # the server counts the refused logins.
    before = failed_logins(secured).get(("sasl", "Unauthenticated"), 0)
    with pytest.raises(KafkaTimeoutError, match="Unable to bootstrap"):
        KafkaProducer(bootstrap_servers=f"127.0.0.1:{secured.kafka_port}",
                      security_protocol="SASL_SSL", ssl_cafile=secured.ca, sasl_mechanism=mechanism,
                      sasl_plain_username="nobody", sasl_plain_password="whatever-123",
                      bootstrap_timeout_ms=3000, max_block_ms=5000).send("orders", b"x").get(timeout=10)
    assert failed_logins(secured).get(("sasl", "Unauthenticated"), 0) > before


def test_missing_grants_are_topic_authorization_failed(secured):
    create_topic(secured, "PLAIN")
    create_topic(secured, "PLAIN", "secret")
    # reader may read kafka.orders, not write it
    errors = produce(confluent(secured, "reader", "SCRAM-SHA-256"), "orders", [b"no"])
    assert [e.code() for e in errors] == [KafkaError.TOPIC_AUTHORIZATION_FAILED]
    # writer may write kafka.*, not create topics
    admin = AdminClient(confluent(secured, "writer", "PLAIN"))
    with pytest.raises(KafkaException) as denied:
        admin.create_topics([NewTopic("other", num_partitions=1,
                                      replication_factor=1)])["other"].result(timeout=30)
    assert denied.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    # reader sees only the topics it may read
    writer_topics = AdminClient(confluent(secured, "writer", "PLAIN")).list_topics(timeout=10)
    assert {"orders", "secret"} <= set(writer_topics.topics)
    reader_topics = AdminClient(confluent(secured, "reader", "PLAIN")).list_topics(timeout=10)
    assert set(reader_topics.topics) == {"orders"}
    # Clients do not fetch a topic whose metadata is refused: a raw Fetch after a raw login.
    sock, call = raw_login(secured, "reader")
    F = FetchRequest.FetchTopic
    fetched = call(FetchRequest[12](
        max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=0,
        topics=[F(topic=topic, partitions=[F.FetchPartition(
            partition=0, fetch_offset=0, partition_max_bytes=1 << 20)]) for topic in
                ("secret", "orders")], forgotten_topics_data=[], rack_id=""), 12)
    sock.close()
    assert [(t.topic, t.partitions[0].error_code) for t in fetched.responses] == [
        ("secret", 29), ("orders", 0)]  # TOPIC_AUTHORIZATION_FAILED for the first only


def raw_connection(server):
    """A TLS connection to the Kafka listener; returns the socket and call(request, version),
    which sends a request and decodes its response with kafka-python."""
    context = ssl.create_default_context(cafile=server.ca)
    sock = context.wrap_socket(socket.create_connection(("127.0.0.1", server.kafka_port),
                                                        timeout=10),
                               server_hostname="127.0.0.1")
    correlation = iter(range(1, 1000))

    def call(request, version):
        frame = kafka_frame(sock, request, version, next(correlation))
        assert frame is not None, "oxbowd closed the connection"
        response_class = request.header.get_response_class()
        flexible = response_class.flexible_version_q(version)
        return response_class.decode(frame[4 + (1 if flexible else 0):], version=version)

    return sock, call


def sasl_plain(call, user: str, password: str) -> tuple[int, str]:
    """SaslHandshake v1 + SaslAuthenticate v2 with PLAIN: (error code, error message)."""
    handshake = call(SaslHandshakeRequest[1](mechanism="PLAIN"), 1)
    assert (handshake.error_code, handshake.mechanisms) == (0, ["PLAIN", "SCRAM-SHA-256"])
    login = call(SaslAuthenticateRequest[2](auth_bytes=f"\0{user}\0{password}".encode()), 2)
    return login.error_code, login.error_message or ""


def raw_login(server, user: str):
    """A TLS connection logged in with PLAIN as `user`: the socket and call(request, version)."""
    sock, call = raw_connection(server)
    code, message = sasl_plain(call, user, f"pw-{user}-123")
    assert code == 0, message
    return sock, call


def kafka_frame(sock, request, version: int, correlation: int) -> bytes | None:
    """Sends a request (kafka-python's encoder); the response frame, or None when closed."""
    request.with_header(correlation_id=correlation, client_id="raw")
    return exchange(sock, request.encode(version=version, header=True))


def test_requests_before_the_login_close_the_connection(secured):
    context = ssl.create_default_context(cafile=secured.ca)
    with socket.create_connection(("127.0.0.1", secured.kafka_port), timeout=10) as raw:
        with context.wrap_socket(raw, server_hostname="127.0.0.1") as sock:
            assert kafka_frame(sock, ApiVersionsRequest[3](client_software_name="t",
                                                           client_software_version="1"), 3, 1)
            assert kafka_frame(sock, MetadataRequest[12](topics=None,
                                                         allow_auto_topic_creation=False), 12,
                               2) is None
    # A plaintext client gets no Kafka answer from the TLS listener.
    with socket.create_connection(("127.0.0.1", secured.kafka_port), timeout=10) as sock:
        try:
            answer = kafka_frame(sock, ApiVersionsRequest[0](), 0, 1)
        except ConnectionError:
            answer = None
        assert answer is None or not answer.startswith(struct.pack(">i", 1))


# --- every request x every grant level ---------------------------------------------------------

LEVELS = ("none", "read", "write", "admin")  # each user's grant on kafka.* ("none": other.*)
TOPIC_AUTHORIZATION_FAILED = 29


def error_codes(value) -> set[int]:
    """Every non-zero error_code anywhere in a decoded response (as to_dict() gives it)."""
    if isinstance(value, dict):
        found = {value["error_code"]} if value.get("error_code") else set()
        for v in value.values():
            found |= error_codes(v)
        return found
    if isinstance(value, list):
        return set().union(*(error_codes(v) for v in value)) if value else set()
    return set()


def record_set(values: list[bytes]) -> bytes:
    from kafka.record.memory_records import MemoryRecordsBuilder
    builder = MemoryRecordsBuilder(magic=2, compression_type=0, batch_size=1 << 20)
    for v in values:
        builder.append(timestamp=int(time.time() * 1000), key=None, value=v)
    builder.close()
    return bytes(builder.buffer())


def kafka_calls():
    """(request, the access it needs, make(level) -> (request, version)) for every Kafka request
    a grant decides, and those a login alone allows ("login")."""
    from kafka.protocol.admin import (CreateTopicsRequest, DeleteTopicsRequest,
                                      DescribeConfigsRequest, DescribeGroupsRequest,
                                      ListGroupsRequest)
    from kafka.protocol.consumer import (ListOffsetsRequest, OffsetCommitRequest,
                                         OffsetFetchRequest)
    from kafka.protocol.metadata import FindCoordinatorRequest
    from kafka.protocol.producer import InitProducerIdRequest, ProduceRequest

    P, F, L = ProduceRequest.TopicProduceData, FetchRequest.FetchTopic, ListOffsetsRequest.ListOffsetsTopic
    C, M = OffsetCommitRequest.OffsetCommitRequestTopic, MetadataRequest.MetadataRequestTopic
    return [
        ("Produce", "write", lambda level: (ProduceRequest[9](
            transactional_id=None, acks=-1, timeout_ms=10000, topic_data=[P(name="orders", partition_data=[
                P.PartitionProduceData(index=0, records=record_set([b"by-" + level.encode()]))])]), 9)),
        ("Fetch", "read", lambda level: (FetchRequest[12](
            max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=0, topics=[F(
                topic="orders", partitions=[F.FetchPartition(partition=0, fetch_offset=0,
                                                             partition_max_bytes=1 << 20)])],
            forgotten_topics_data=[], rack_id=""), 12)),
        ("ListOffsets", "read", lambda level: (ListOffsetsRequest[6](
            replica_id=-1, isolation_level=0, topics=[L(name="orders", partitions=[
                L.ListOffsetsPartition(partition_index=0, current_leader_epoch=-1, timestamp=-1)])]), 6)),
        ("Metadata of a named topic", "read", lambda level: (MetadataRequest[9](
            topics=[M(name="orders")], allow_auto_topic_creation=False), 9)),
        ("Metadata auto-creating a topic", "admin", lambda level: (MetadataRequest[9](
            topics=[M(name="auto_" + level)], allow_auto_topic_creation=True), 9)),
        ("DescribeConfigs of a topic", "read", lambda level: (DescribeConfigsRequest[4](
            resources=[DescribeConfigsRequest.DescribeConfigsResource(
                resource_type=2, resource_name="orders", configuration_keys=None)]), 4)),
        ("CreateTopics", "admin", lambda level: (CreateTopicsRequest[5](
            topics=[CreateTopicsRequest.CreatableTopic(name="new_" + level, num_partitions=1,
                                                       replication_factor=1, assignments=[], configs=[])],
            timeout_ms=10000, validate_only=False), 5)),
        ("DeleteTopics", "admin", lambda level: (DeleteTopicsRequest[4](
            topic_names=["victim_" + level], timeout_ms=10000), 4)),
        ("OffsetCommit", "read", lambda level: (OffsetCommitRequest[8](
            group_id="g-" + level, generation_id_or_member_epoch=-1, member_id="", group_instance_id=None,
            topics=[C(name="orders", partitions=[C.OffsetCommitRequestPartition(
                partition_index=0, committed_offset=1, committed_leader_epoch=-1,
                committed_metadata="")])]), 8)),
        ("OffsetFetch of a named topic", "read", lambda level: (OffsetFetchRequest[6](
            group_id="g-" + level, topics=[OffsetFetchRequest.OffsetFetchRequestTopic(
                name="orders", partition_indexes=[0])], require_stable=False), 6)),
        ("FindCoordinator", "login", lambda level: (FindCoordinatorRequest[3](key="g-" + level, key_type=0), 3)),
        ("ListGroups", "login", lambda level: (ListGroupsRequest[3](), 3)),
        ("DescribeGroups", "login", lambda level: (DescribeGroupsRequest[5](
            groups=["g-" + level], include_authorized_operations=False), 5)),
        ("InitProducerId", "login", lambda level: (InitProducerIdRequest[2](
            transactional_id=None, transaction_timeout_ms=60000), 2)),
    ]


@pytest.fixture
def graded(make_server, tmp_path, pki):  # noqa: F811
    users = {"root": "*=admin", "none": "other.*=admin"}
    users.update({level: f"kafka.*={level}" for level in LEVELS[1:]})
    server = tls_auth_server(make_server, tmp_path / "graded", pki, users, "--log-level", "debug")
    create_topic(server, "PLAIN")
    for level in LEVELS:
        create_topic(server, "PLAIN", "victim_" + level)
    assert produce(confluent(server, "root", "PLAIN"), "orders", [b"a", b"b"]) == [None, None]
    return server


def test_every_kafka_request_needs_its_grant(graded):
    """The Kafka rows of the permission table (docs/security.md), asserted: each request by
    each grant level, decoded by kafka-python, answers TOPIC_AUTHORIZATION_FAILED exactly when
    the grant is missing."""
    rank = {level: i for i, level in enumerate(LEVELS)}
    outcome, expected = {}, {}
    for level in LEVELS:
        sock, call = raw_login(graded, level)
        for name, needs, make in kafka_calls():
            expected[(name, level)] = "ok" if needs == "login" or rank[level] >= rank[needs] else "denied"
            request, version = make(level)
            codes = error_codes(call(request, version).to_dict())
            outcome[(name, level)] = ("ok" if not codes else "denied" if codes == {TOPIC_AUTHORIZATION_FAILED}
                                      else f"error codes {sorted(codes)}")
        sock.close()
    assert outcome == expected
    # What the allowed calls did, seen by root: one record per writer, the created and
    # deleted topics.
    topics = set(AdminClient(confluent(graded, "root", "PLAIN")).list_topics(timeout=10).topics)
    assert {t for t in topics if t.startswith(("new_", "victim_", "auto_"))} == {
        "new_admin", "auto_admin", "victim_none", "victim_read", "victim_write"}
    # Listings never fail: they show what the user may read.
    for level in LEVELS:
        sock, call = raw_login(graded, level)
        listed = {t["name"] for t in call(MetadataRequest[9](topics=None, allow_auto_topic_creation=False),
                                          9).to_dict()["topics"]}
        sock.close()
        assert (listed == set()) if level == "none" else ("orders" in listed), (level, listed)


# --- one lockout for every way in ----------------------------------------------------------------


def scram_client_final(password: str, client_first_bare: str, server_first: str) -> str:
    """RFC 5802's client-final-message, written from the RFC for this test."""
    import base64
    import hashlib
    import hmac
    fields = dict(part.split("=", 1) for part in server_first.split(","))
    salted = hashlib.pbkdf2_hmac("sha256", password.encode(), base64.b64decode(fields["s"]), int(fields["i"]))
    client_key = hmac.new(salted, b"Client Key", hashlib.sha256).digest()
    stored_key = hashlib.sha256(client_key).digest()
    without_proof = "c=biws,r=" + fields["r"]
    auth_message = ",".join((client_first_bare, server_first, without_proof)).encode()
    signature = hmac.new(stored_key, auth_message, hashlib.sha256).digest()
    proof = bytes(a ^ b for a, b in zip(client_key, signature))
    return without_proof + ",p=" + base64.b64encode(proof).decode()


def raw_scram(server, user: str, password: str) -> tuple[int, str]:
    """One SASL/SCRAM-SHA-256 login on a new connection: (error code, error message) of the
    step that ended it (0 and "" when it succeeded)."""
    sock, call = raw_connection(server)
    with sock:
        handshake = call(SaslHandshakeRequest[1](mechanism="SCRAM-SHA-256"), 1)
        assert handshake.error_code == 0
        bare = f"n={user},r={uuid.uuid4().hex}"
        first = call(SaslAuthenticateRequest[2](auth_bytes=("n,," + bare).encode()), 2)
        if first.error_code:
            return first.error_code, first.error_message
        final = call(SaslAuthenticateRequest[2](auth_bytes=scram_client_final(
            password, bare, first.auth_bytes.decode()).encode()), 2)
        return final.error_code, final.error_message or ""


def raw_plain(server, user: str, password: str) -> tuple[int, str]:
    sock, call = raw_connection(server)
    with sock:
        return sasl_plain(call, user, password)


def failed_logins(server) -> dict:
    """oxbow_request_errors_total of failed logins: {(operation, code): count}."""
    import urllib.request

    from prometheus_client.parser import text_string_to_metric_families
    with urllib.request.urlopen(server.metrics_url + "/metrics", timeout=10) as response:
        page = response.read().decode()
    return {(s.labels["operation"], s.labels["code"]): s.value
            for f in text_string_to_metric_families(page) for s in f.samples
            if s.name == "oxbow_request_errors_total"
            and s.labels["operation"] in ("handshake", "sasl", "rest_login")}


def test_wrong_scram_logins_lock_the_name_out_everywhere(secured):
    SASL_AUTHENTICATION_FAILED = 58
    assert raw_scram(secured, "writer", "pw-writer-123") == (0, "")
    before = failed_logins(secured)
    for _ in range(5):
        code, message = raw_scram(secured, "writer", "not-the-password")
        assert code == SASL_AUTHENTICATION_FAILED and "invalid credentials" in message, message
    # Locked out for 30 s: the right password is refused too, saying why.
    code, message = raw_scram(secured, "writer", "pw-writer-123")
    assert code == SASL_AUTHENTICATION_FAILED
    assert "too many failed logins for this user name; retry in" in message, message
    # librdkafka shows the reason to its user.
    errors = refused_connection_errors(confluent(secured, "writer", "SCRAM-SHA-256"))
    assert any(e.code() == KafkaError._AUTHENTICATION and "too many failed logins" in e.str()
               for e in errors), errors
    # One limiter per name, shared by every front end: PLAIN, the Flight handshake and the
    # REST catalog's basic credentials refuse the name too.
    code, message = raw_plain(secured, "writer", "pw-writer-123")
    assert code == SASL_AUTHENTICATION_FAILED and "too many failed logins" in message, message
    with pytest.raises(Exception, match="too many failed logins"):
        secured.new_client().authenticate_basic_token("writer", "pw-writer-123")
    import requests
    rest = requests.get(f"https://127.0.0.1:{secured.catalog_port}/v1/config", verify=secured.ca,
                        auth=("writer", "pw-writer-123"), timeout=10)
    assert rest.status_code == 401 and "too many failed logins" in rest.json()["error"]["message"]
    # Each front end counts its failed logins: five wrong proofs, then refusals of the locked
    # name (raw SCRAM, PLAIN, and librdkafka's attempts, as many as it made).
    after = failed_logins(secured)
    moved = {k: v - before.get(k, 0) for k, v in after.items() if v != before.get(k, 0)}
    assert moved.pop(("sasl", "ResourceExhausted"), 0) >= 3, moved
    assert moved == {("sasl", "Unauthenticated"): 5, ("handshake", "ResourceExhausted"): 1,
                     ("rest_login", "ResourceExhausted"): 1}, moved
    # Other names are not locked out.
    assert raw_scram(secured, "reader", "pw-reader-123") == (0, "")
    # Wrong Flight passwords lock out SCRAM the same way.
    for _ in range(5):
        with pytest.raises(Exception):
            secured.new_client().authenticate_basic_token("reader", "wrong-password")
    assert "too many failed logins" in raw_scram(secured, "reader", "pw-reader-123")[1]
    log = secured.log_path.read_text()
    for secret in ("pw-writer-123", "not-the-password", "pw-reader-123", "wrong-password"):
        assert secret not in log


# --- mutual TLS -------------------------------------------------------------------------------


def test_mutual_tls_on_the_kafka_listener(make_server, pki, rogue):  # noqa: F811
    server = make_server(
        extra_args=("--tls-cert", str(pki / "server.pem"), "--tls-key", str(pki / "server.key"),
                    "--tls-client-ca", str(pki / "ca.pem")),
        client_args={"tls_root_certs": (pki / "ca.pem").read_bytes(),
                     "cert_chain": (pki / "client.pem").read_bytes(),
                     "private_key": (pki / "client.key").read_bytes()})
    ssl_config = {"bootstrap.servers": f"127.0.0.1:{server.kafka_port}", "security.protocol": "SSL",
                  "ssl.ca.location": str(pki / "ca.pem")}
    signed = {**ssl_config, "ssl.certificate.location": str(pki / "client.pem"),
              "ssl.key.location": str(pki / "client.key")}
    admin = AdminClient(signed)
    admin.create_topics([NewTopic("orders", num_partitions=1, replication_factor=1)])[
        "orders"].result(timeout=30)
    assert produce(signed, "orders", [b"m-%d" % i for i in range(5)]) == [None] * 5
    consumer = Consumer({**signed, "group.id": "mtls", "auto.offset.reset": "earliest"})
    consumer.assign([TopicPartition("orders", 0, 0)])
    got = []
    while len(got) < 5:
        msg = consumer.poll(10)
        assert msg is not None and msg.error() is None, msg and msg.error()
        got.append(msg.value())
    consumer.close()
    assert got == [b"m-%d" % i for i in range(5)]
    # Without a certificate, or with one from another CA, the handshake fails.
    for config in (ssl_config, {**ssl_config, "ssl.certificate.location": str(rogue / "client.pem"),
                                "ssl.key.location": str(rogue / "client.key")}):
        errors = refused_connection_errors(config)
        assert errors and all(e.code() in (KafkaError._SSL, KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN)
                              for e in errors), errors
    # The same for a plain Python TLS client: no certificate, no Kafka answer.
    context = ssl.create_default_context(cafile=str(pki / "ca.pem"))
    with pytest.raises((ssl.SSLError, ConnectionError)):
        with socket.create_connection(("127.0.0.1", server.kafka_port), timeout=10) as raw, \
                context.wrap_socket(raw, server_hostname="127.0.0.1") as sock:
            # TLS 1.3 reports the refused certificate at the first read.
            if kafka_frame(sock, ApiVersionsRequest[3](client_software_name="t",
                                                       client_software_version="1"), 3, 1) is None:
                raise ConnectionError("closed")
    context.load_cert_chain(str(pki / "client.pem"), str(pki / "client.key"))
    with socket.create_connection(("127.0.0.1", server.kafka_port), timeout=10) as raw, \
            context.wrap_socket(raw, server_hostname="127.0.0.1") as sock:
        assert kafka_frame(sock, ApiVersionsRequest[3](client_software_name="t",
                                                       client_software_version="1"), 3, 1)


def test_secrets_stay_out_of_logs_describe_and_metrics_on_kafka_and_rest(graded):
    """SASL/PLAIN and SCRAM logins (right and wrong), REST basic credentials and bearer
    tokens: none of the passwords, tokens, hashes or SCRAM proofs reach the server's log (at
    debug level), describe_table or /metrics."""
    import json
    import urllib.request

    import pyarrow.flight as fl
    import requests
    from prometheus_client.parser import text_string_to_metric_families

    secrets = ["pw-read-123", "pw-write-123", "pw-root-123", "wrong-pass-kafka", "wrong-pass-rest"]
    assert raw_plain(graded, "read", "pw-read-123")[0] == 0
    assert raw_plain(graded, "write", "wrong-pass-kafka")[0] != 0
    assert raw_scram(graded, "write", "pw-write-123") == (0, "")
    assert raw_scram(graded, "read", "wrong-pass-kafka")[0] != 0
    # The SCRAM messages of a login, as they cross the wire, are secrets too.
    bare = "n=write,r=" + uuid.uuid4().hex
    sock, call = raw_connection(graded)
    with sock:
        assert call(SaslHandshakeRequest[1](mechanism="SCRAM-SHA-256"), 1).error_code == 0
        first = call(SaslAuthenticateRequest[2](auth_bytes=("n,," + bare).encode()), 2)
        final_message = scram_client_final("pw-write-123", bare, first.auth_bytes.decode())
        final = call(SaslAuthenticateRequest[2](auth_bytes=final_message.encode()), 2)
        assert final.error_code == 0, final.error_message
    secrets += [final_message.rsplit("p=", 1)[1], final.auth_bytes.decode().split("v=", 1)[1]]
    # The REST catalog, with basic credentials and with a handshake token.
    base = f"https://127.0.0.1:{graded.catalog_port}"
    assert requests.get(base + "/v1/namespaces", verify=graded.ca, auth=("read", "pw-read-123"),
                        timeout=10).status_code == 200
    assert requests.get(base + "/v1/namespaces", verify=graded.ca, auth=("read", "wrong-pass-rest"),
                        timeout=10).status_code == 401
    header = graded.new_client().authenticate_basic_token("root", "pw-root-123")
    token = header[1].decode().split(" ", 1)[1]
    secrets.append(token)
    assert requests.get(base + "/v1/namespaces", verify=graded.ca, timeout=10,
                        headers={"Authorization": "Bearer " + token}).status_code == 200
    users = json.loads((graded.data_dir / "users.json").read_text())["users"]
    secrets += [u["hash"] for u in users]
    described = b"".join(r.body.to_pybytes() for r in graded.client.do_action(
        fl.Action("describe_table", json.dumps({"table": "kafka.orders"}).encode()),
        options=fl.FlightCallOptions(headers=[header]))).decode()
    assert "kafka.orders" in described
    with urllib.request.urlopen(graded.metrics_url + "/metrics", timeout=10) as response:
        page = response.read().decode()
    list(text_string_to_metric_families(page))  # a real page
    log = graded.log_path.read_text()
    assert "logged in" in log  # the debug lines of the logins are there
    for text, where in ((log, "the log"), (described, "describe_table"), (page, "/metrics")):
        for secret in secrets:
            assert secret not in text, f"a secret appears in {where}"
