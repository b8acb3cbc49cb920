"""oxbowd's schema registry (docs/schema-registry.md) through confluent-kafka's own
SchemaRegistryClient, AvroSerializer and AvroDeserializer, and its REST API's status and error
codes as Confluent documents them; a producer and a consumer with registry-framed Avro values
through Oxbow's Kafka listener; the registry's state across a SIGKILL; logins under --auth."""

from __future__ import annotations

import json
import subprocess
import uuid

import pytest
import requests
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.serialization import MessageField, SerializationContext

from oxbowtest.auth import add_user
from oxbowtest.kafka import bootstrap, create_topic

V1 = {"type": "record", "name": "Order", "namespace": "shop",
      "fields": [{"name": "id", "type": "long"}, {"name": "item", "type": "string"}]}
# + an optional field: BACKWARD compatible.
V2 = {**V1, "fields": V1["fields"] + [{"name": "note", "type": ["null", "string"],
                                       "default": None}]}
# + a required field: a V2 reader could not read V1's data, so BACKWARD refuses it.
REQUIRED = {**V1, "fields": V1["fields"] + [{"name": "qty", "type": "int"}]}


@pytest.fixture(scope="module")
def server(module_server):
    return module_server


def url(server) -> str:
    return f"http://127.0.0.1:{server.registry_port}"


def client(server, **config) -> SchemaRegistryClient:
    return SchemaRegistryClient({"url": url(server), **config})


def avro(schema: dict) -> Schema:
    return Schema(json.dumps(schema), "AVRO")


def test_the_confluent_client_registers_evolves_and_refuses(server):
    registry = client(server)
    subject = "orders-" + uuid.uuid4().hex[:8] + "-value"
    first = registry.register_schema(subject, avro(V1))
    assert registry.register_schema(subject, avro(V1)) == first  # the same schema: the same id
    second = registry.register_schema(subject, avro(V2))
    assert second != first
    assert registry.get_versions(subject) == [1, 2]
    latest = registry.get_latest_version(subject)
    assert (latest.version, latest.schema_id) == (2, second)
    assert json.loads(registry.get_schema(first).schema_str)["fields"] == V1["fields"]
    assert registry.lookup_schema(subject, avro(V1)).version == 1
    assert registry.test_compatibility(subject, avro(REQUIRED)) is False
    with pytest.raises(SchemaRegistryError) as refused:
        registry.register_schema(subject, avro(REQUIRED))
    assert (refused.value.http_status_code, refused.value.error_code) == (409, 409)
    # NONE lets it in; the subject's level, not the global one.
    registry.set_compatibility(subject, "NONE")
    assert registry.get_compatibility(subject) == "NONE"
    assert registry.register_schema(subject, avro(REQUIRED)) > second
    assert registry.get_compatibility() == "BACKWARD"
    assert subject in registry.get_subjects()
    assert registry.delete_version(subject, 3) == 3
    assert registry.get_versions(subject) == [1, 2]
    assert sorted(registry.delete_subject(subject)) == [1, 2]
    assert subject not in registry.get_subjects()
    assert sorted(registry.delete_subject(subject, permanent=True)) == [1, 2, 3]


def test_rest_errors_are_confluents(server):
    base = url(server)
    subject = "errors-" + uuid.uuid4().hex[:8]

    def call(method, path, body=None):
        response = requests.request(method, base + path, json=body, timeout=10)
        assert response.headers["Content-Type"] == "application/vnd.schemaregistry.v1+json"
        return response.status_code, response.json()

    def error(method, path, body=None):
        status, answer = call(method, path, body)
        return status, answer["error_code"]

    assert error("GET", f"/subjects/{subject}/versions") == (404, 40401)
    assert error("GET", "/schemas/ids/999999") == (404, 40403)
    assert error("POST", f"/subjects/{subject}/versions", {"schema": "{\"type\": \"nope\"}"}) == (
        422, 42201)
    assert error("PUT", "/config", {"compatibility": "SIDEWAYS"}) == (422, 42203)
    status, answer = call("POST", f"/subjects/{subject}/versions", {"schema": json.dumps(V1)})
    assert status == 200 and answer["id"] > 0
    assert error("GET", f"/subjects/{subject}/versions/2") == (404, 40402)
    assert error("GET", f"/subjects/{subject}/versions/x") == (422, 42202)
    assert error("POST", f"/subjects/{subject}", {"schema": json.dumps(V2)}) == (404, 40403)
    assert error("DELETE", f"/subjects/{subject}?permanent=true") == (404, 40405)
    assert call("DELETE", f"/subjects/{subject}") == (200, [1])
    assert error("DELETE", f"/subjects/{subject}") == (404, 40404)
    assert call("GET", "/schemas/types") == (200, ["AVRO"])
    assert error("POST", f"/subjects/{subject}/versions",
                 {"schema": "{}", "schemaType": "PROTOBUF"}) == (422, 42201)


def test_serialized_values_through_kafka_decode_old_and_new(server):
    """AvroSerializer registers the topic's value schema on first use (TopicNameStrategy:
    <topic>-value) and frames each value (magic byte 0, the schema id, the datum); the raw topic
    keeps the framed bytes, and AvroDeserializer reads both versions back by their ids."""
    topic = "avro-" + uuid.uuid4().hex[:8]
    create_topic(server, topic, 1)
    registry = client(server)
    producer = Producer({"bootstrap.servers": bootstrap(server)})
    sent = []
    for schema, rows in ((V1, [{"id": 1, "item": "tea"}, {"id": 2, "item": "cake"}]),
                         (V2, [{"id": 3, "item": "jam", "note": "gift"}])):
        serialize = AvroSerializer(registry, json.dumps(schema))
        for row in rows:
            producer.produce(topic, value=serialize(
                row, SerializationContext(topic, MessageField.VALUE)))
            sent.append(row)
    assert producer.flush(30) == 0
    assert registry.get_versions(topic + "-value") == [1, 2]

    deserialize = AvroDeserializer(registry)
    consumer = Consumer({"bootstrap.servers": bootstrap(server), "group.id": "avro-" + topic,
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    got = []
    while len(got) < 3:
        message = consumer.poll(10)
        assert message is not None and message.error() is None
        assert message.value()[0] == 0  # Confluent's framing, as produced
        got.append(deserialize(message.value(), SerializationContext(topic, MessageField.VALUE)))
    consumer.close()
    assert got == sent
    # A reader schema of the newest version reads the old records too (note defaults to null).
    reader = AvroDeserializer(registry, json.dumps(V2))
    framed = AvroSerializer(registry, json.dumps(V1))({"id": 9, "item": "x"},
                                                      SerializationContext(topic,
                                                                           MessageField.VALUE))
    assert reader(framed, SerializationContext(topic, MessageField.VALUE)) == {
        "id": 9, "item": "x", "note": None}


def test_the_registry_survives_a_sigkill(make_server):
    server = make_server()
    server.stable_ports = True
    registry = client(server)
    ids = [registry.register_schema("durable-value", avro(schema)) for schema in (V1, V2)]
    registry.set_compatibility("durable-value", "FULL")
    assert "durable-value" in (server.data_dir / "schema-registry" / "registry.json").read_text()
    server.kill()
    server.start()
    registry = client(server)
    assert [registry.get_version("durable-value", v).schema_id for v in (1, 2)] == ids
    assert registry.get_compatibility("durable-value") == "FULL"
    assert registry.register_schema("other-value", avro(REQUIRED)) > max(ids)


def test_logins_and_grants(make_server, tmp_path):
    data = tmp_path / "secured"
    data.mkdir()
    add_user(data, "admin", "*=admin")  # password pw-admin-123
    add_user(data, "reader", "kafka.orders=read")
    server = make_server(extra_args=("--auth",), data_dir=data)
    base = url(server)
    assert requests.get(base + "/subjects", timeout=10).json()["error_code"] == 40101
    admin = client(server, **{"basic.auth.user.info": "admin:pw-admin-123"})
    assert admin.register_schema("orders-value", avro(V1)) > 0
    reader = client(server, **{"basic.auth.user.info": "reader:pw-reader-123"})
    assert reader.get_latest_version("orders-value").version == 1
    with pytest.raises(SchemaRegistryError) as refused:
        reader.register_schema("orders-value", avro(V2))
    assert (refused.value.http_status_code, refused.value.error_code) == (403, 40301)
    wrong = client(server, **{"basic.auth.user.info": "reader:wrong"})
    with pytest.raises(SchemaRegistryError) as unauthorized:
        wrong.get_subjects()
    assert unauthorized.value.http_status_code == 401


def test_cli_schema_commands(server, tmp_path):
    """`oxbow schema`: the same registry from the shell (docs/cli.md#schema-registry)."""
    cli = str(server.binary.with_name("oxbow"))
    registry = ["--registry", url(server)]
    subject = "cli-" + uuid.uuid4().hex[:8] + "-value"
    v1, required = tmp_path / "v1.avsc", tmp_path / "required.avsc"
    v1.write_text(json.dumps(V1))
    required.write_text(json.dumps(REQUIRED))

    def oxbow(*args, ok=True):
        run = subprocess.run([cli, "schema", *args, *registry], capture_output=True, text=True,
                             timeout=30)
        assert (run.returncode == 0) == ok, run.stdout + run.stderr
        return run

    schema_id = json.loads(oxbow("register", subject, str(v1)).stdout)["id"]
    assert subject in json.loads(oxbow("list").stdout)
    assert json.loads(oxbow("versions", subject).stdout) == [1]
    got = json.loads(oxbow("get", subject).stdout)
    assert (got["id"], got["version"]) == (schema_id, 1)
    assert json.loads(oxbow("get", "--id", str(schema_id)).stdout)["schema"] == got["schema"]
    refused = oxbow("check", subject, str(required), ok=False)
    assert json.loads(refused.stdout)["is_compatible"] is False
    assert "qty" in refused.stdout and "not compatible" in refused.stderr
    assert "incompatible" in oxbow("register", subject, str(required), ok=False).stderr
    assert json.loads(oxbow("config", subject).stdout) == {"compatibilityLevel": "BACKWARD"}
    assert json.loads(oxbow("config", subject, "--set", "NONE").stdout) == {"compatibility": "NONE"}
    assert json.loads(oxbow("delete", subject, "--version", "1").stdout) == 1
    assert "40401" in oxbow("versions", subject, ok=False).stderr
