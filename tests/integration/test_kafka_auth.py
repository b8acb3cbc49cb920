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
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KafkaPythonTopicPartition
from kafka.protocol.consumer import FetchRequest
from kafka.protocol.metadata import ApiVersionsRequest, MetadataRequest
from kafka.protocol.sasl import SaslAuthenticateRequest, SaslHandshakeRequest

from test_auth import add_user
from test_tls import pki  # noqa: F401 (the fixture: a CA and a server certificate for 127.0.0.1)

MECHANISMS = ["PLAIN", "SCRAM-SHA-256"]


@pytest.fixture
def secured(make_server, tmp_path, pki):  # noqa: F811
    data = tmp_path / "secured"
    data.mkdir()
    add_user(data, "root", "*=admin")
    add_user(data, "writer", "kafka.*=write")
    add_user(data, "reader", "kafka.orders=read")
    server = make_server(
        data_dir=data,
        extra_args=("--auth", "--tls-cert", str(pki / "server.pem"), "--tls-key",
                    str(pki / "server.key")),
        client_args={"tls_root_certs": (pki / "ca.pem").read_bytes()})
    server.ca = str(pki / "ca.pem")
    return server


def confluent(server, user: str, mechanism: str, password: str | None = None) -> dict:
    return {"bootstrap.servers": f"127.0.0.1:{server.kafka_port}", "security.protocol": "SASL_SSL",
            "ssl.ca.location": server.ca, "sasl.mechanism": mechanism, "sasl.username": user,
            "sasl.password": password or f"pw-{user}-123"}


def create_topic(server, mechanism: str, topic: str = "orders") -> None:
    admin = AdminClient(confluent(server, "root", mechanism))
    admin.create_topics([NewTopic(topic, num_partitions=2,
                                  replication_factor=1)])[topic].result(timeout=30)


def produce(config: dict, topic: str, values: list[bytes]) -> list:
    """The delivery errors (None for each delivered record)."""
    errors = []
    producer = Producer({**config, "linger.ms": 5, "message.timeout.ms": 20000})
    for v in values:
        producer.produce(topic, value=v, partition=0,
                         on_delivery=lambda err, msg: errors.append(err))
    producer.flush(30)
    return errors


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
    consumer.assign([KafkaPythonTopicPartition("orders", 1)])
    got = [m.value for m in consumer]
    consumer.close()
    assert got == [b"kp-%d" % i for i in range(10)]


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_wrong_password_is_refused(secured, mechanism):
    errors = []
    admin = AdminClient({**confluent(secured, "writer", mechanism, password="not-the-password"),
                         "error_cb": errors.append})
    with pytest.raises(KafkaException):
        admin.list_topics(timeout=5)
    for _ in range(10):  # error_cb is served by poll
        if errors:
            break
        admin.poll(0.5)
    assert any(e.code() == KafkaError._AUTHENTICATION for e in errors), errors
    assert "not-the-password" not in secured.log_path.read_text()
    with pytest.raises(Exception):
        KafkaProducer(bootstrap_servers=f"127.0.0.1:{secured.kafka_port}",
                      security_protocol="SASL_SSL", ssl_cafile=secured.ca, sasl_mechanism=mechanism,
                      sasl_plain_username="nobody", sasl_plain_password="whatever-123",
                      max_block_ms=5000).send("orders", b"x").get(timeout=10)


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


def raw_login(server, user: str):
    """A TLS connection logged in with SaslHandshake v1 + SaslAuthenticate v2 (PLAIN), each
    response decoded by kafka-python; returns the socket and call(request, version)."""
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

    handshake = call(SaslHandshakeRequest[1](mechanism="PLAIN"), 1)
    assert (handshake.error_code, handshake.mechanisms) == (0, ["PLAIN", "SCRAM-SHA-256"])
    login = call(SaslAuthenticateRequest[2](
        auth_bytes=f"\0{user}\0pw-{user}-123".encode()), 2)
    assert login.error_code == 0, login.error_message
    return sock, call


def kafka_frame(sock, request, version: int, correlation: int) -> bytes | None:
    """Sends a request (kafka-python's encoder); the response frame, or None when closed."""
    request.with_header(correlation_id=correlation, client_id="raw")
    payload = request.encode(version=version, header=True)
    sock.sendall(struct.pack(">i", len(payload)) + payload)
    size = sock.recv(4)
    if len(size) < 4:
        return None
    (n,) = struct.unpack(">i", size)
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            return None
        data += chunk
    return data


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
