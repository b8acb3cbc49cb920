"""oxbowd's schema registry (docs/schema-registry.md) through confluent-kafka's own
SchemaRegistryClient, AvroSerializer and AvroDeserializer, and its REST API's status and error
codes as Confluent documents them; a producer and a consumer with registry-framed Avro values
through Oxbow's Kafka listener; the registry's state across a SIGKILL; logins under --auth."""

from __future__ import annotations

import json
import subprocess
import threading
import uuid

import pyarrow as pa
import pytest
import requests
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.serialization import MessageField, SerializationContext

from oxbowtest.auth import add_user
from oxbowtest.cluster import Cluster
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
    # A table's framing id, given when first asked for, is durable before any value carries it.
    topic = avro_confluent_table(server)
    ctx = SerializationContext(topic, MessageField.VALUE)
    framed = AvroSerializer(registry, json.dumps(USER_V1))({"id": 1, "name": "a"}, ctx)
    assert produce_framed(server, topic, [framed]) == [None]
    server.kill()
    server.start()
    registry = client(server)
    assert [registry.get_version("durable-value", v).schema_id for v in (1, 2)] == ids
    consumer = Consumer({"bootstrap.servers": bootstrap(server), "group.id": "g-" + topic})
    consumer.assign([TopicPartition(topic, 0, 0)])
    message = consumer.poll(10)
    assert message is not None and message.error() is None
    assert message.value() == framed
    consumer.close()
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


# A table whose Kafka values are registry-framed Avro (docs/schema-registry.md#tables-as-subjects).
USERS = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("name", pa.string())])
USER_V1 = {"type": "record", "name": "User", "namespace": "app",
           "fields": [{"name": "id", "type": "long"},
                      {"name": "name", "type": ["null", "string"], "default": None}]}
USER_V2 = {**USER_V1, "fields": USER_V1["fields"] + [
    {"name": "email", "type": ["null", "string"], "default": None}]}


def avro_confluent_table(server, primary_key=None) -> str:
    name = "it.users_" + uuid.uuid4().hex[:8]
    server.create_table(name, USERS, properties={"kafka.value.format": "avro-confluent"},
                        **({"primary_key": primary_key} if primary_key else {}))
    return name


def produce_framed(server, topic: str, values: list[bytes], keys=None) -> list:
    """Produces the values; returns each record's delivery error (None when appended)."""
    errors = []
    producer = Producer({"bootstrap.servers": bootstrap(server), "retries": 0})
    for i, value in enumerate(values):
        producer.produce(topic, value=value, key=keys[i] if keys else None,
                         on_delivery=lambda err, _msg: errors.append(err))
    assert producer.flush(30) == 0
    return errors


def test_a_tables_schema_versions_are_its_subject_and_evolve_it(server):
    topic = avro_confluent_table(server)
    subject = topic + "-value"
    registry = client(server)
    assert registry.get_versions(subject) == [1]
    assert json.loads(registry.get_latest_version(subject).schema.schema_str) == {
        "type": "record", "name": "row", "fields": [
            {"name": "id", "type": "long"},
            {"name": "name", "type": ["null", "string"], "default": None}]}
    ctx = SerializationContext(topic, MessageField.VALUE)
    v1 = AvroSerializer(registry, json.dumps(USER_V1))  # auto-registers: the table's version 1
    assert produce_framed(server, topic, [v1({"id": 1, "name": "ann"}, ctx),
                                          v1({"id": 2, "name": None}, ctx)]) == [None, None]
    assert registry.get_versions(subject) == [1]  # its record's name is the writer's business

    # A compatible new version alters the table.
    v2 = AvroSerializer(registry, json.dumps(USER_V2))
    assert produce_framed(server, topic, [v2({"id": 3, "name": "cy", "email": "c@x"}, ctx)]) == [
        None]
    assert registry.get_versions(subject) == [1, 2]
    assert [f["name"] for f in server.describe(topic)["schema"]["fields"]] == [
        "id", "name", "email"]
    # A writer still on version 1 writes into the current schema (email null).
    assert produce_framed(server, topic, [v1({"id": 4, "name": "dee"}, ctx)]) == [None]
    # An alter through Flight is a new version too; version 2's writers go on.
    server.action("alter_table", {"table": topic, "changes": [
        {"op": "add_column", "name": "age", "type": "int32"}]})
    assert registry.get_versions(subject) == [1, 2, 3]
    assert produce_framed(server, topic, [v2({"id": 5, "name": "eve", "email": None}, ctx)]) == [
        None]

    expected = [{"id": 1, "name": "ann", "email": None, "age": None},
                {"id": 2, "name": None, "email": None, "age": None},
                {"id": 3, "name": "cy", "email": "c@x", "age": None},
                {"id": 4, "name": "dee", "email": None, "age": None},
                {"id": 5, "name": "eve", "email": None, "age": None}]
    assert server.read_all(topic).to_pylist() == expected
    # Fetch frames every value with the current version's id; AvroDeserializer reads them.
    current = registry.get_version(subject, 3).schema_id  # (the client caches "latest")
    consumer = Consumer({"bootstrap.servers": bootstrap(server), "group.id": "g-" + topic,
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    deserialize = AvroDeserializer(registry)
    got = []
    while len(got) < len(expected):
        message = consumer.poll(10)
        assert message is not None and message.error() is None
        assert message.value()[:5] == b"\0" + current.to_bytes(4, "big")
        got.append(deserialize(message.value(), ctx))
    consumer.close()
    assert got == expected


def test_a_table_subject_refuses_what_the_table_cannot_become(server):
    topic = avro_confluent_table(server)
    subject = topic + "-value"
    registry = client(server)
    fields_before = server.describe(topic)["schema"]["fields"]

    def refused(schema: dict) -> tuple[int, int, str]:
        with pytest.raises(SchemaRegistryError) as error:
            registry.register_schema(subject, avro(schema))
        return error.value.http_status_code, error.value.error_code, error.value.error_message

    # A required new field: BACKWARD refuses it, as for any subject.
    assert refused({**USER_V1, "fields": USER_V1["fields"] + [
        {"name": "age", "type": "int"}]})[:2] == (409, 409)
    # Compatible in Avro, but no column change makes it: the fields in another order, a
    # narrower type, a new field not first a union with null.
    registry.set_compatibility(subject, "NONE")
    status, code, message = refused({**USER_V1, "fields": USER_V1["fields"][::-1]})
    assert (status, code) == (409, 409) and "the table's order" in message
    status, code, message = refused({**USER_V1, "fields": [
        {"name": "id", "type": "int"}, USER_V1["fields"][1]]})
    assert (status, code) == (409, 409) and "no widening" in message
    status, code, message = refused({**USER_V1, "fields": USER_V1["fields"] + [
        {"name": "age", "type": ["int", "null"], "default": 0}]})
    assert (status, code) == (409, 409) and "a union has a column form only as" in message
    assert server.describe(topic)["schema"]["fields"] == fields_before
    assert registry.get_versions(subject) == [1]
    # Its versions are the table's: deleting them is refused.
    with pytest.raises(SchemaRegistryError) as error:
        registry.delete_subject(subject)
    assert (error.value.http_status_code, error.value.error_code) == (422, 42205)

    # A value framed with an id that is no version of the subject, or not framed, is refused.
    other = registry.register_schema("unrelated-" + uuid.uuid4().hex[:8] + "-value", avro(V1))
    datum = b"\x02\x00"  # id 1, name null
    errors = produce_framed(server, topic, [b"\0" + other.to_bytes(4, "big") + datum,
                                            datum + b"\0\0\0"])
    assert [e.code() if e else None for e in errors] == [KafkaError.INVALID_RECORD] * 2
    assert server.read_all(topic).num_rows == 0


def test_a_primary_key_tables_key_and_value_subjects(server):
    topic = avro_confluent_table(server, primary_key=["id"])
    registry = client(server)
    assert sorted(s for s in registry.get_subjects() if s.startswith(topic)) == [
        topic + "-key", topic + "-value"]
    key_schema = {"type": "record", "name": "UserKey", "fields": [{"name": "id", "type": "long"}]}
    keys = AvroSerializer(registry, json.dumps(key_schema))
    values = AvroSerializer(registry, json.dumps(USER_V1))
    kctx = SerializationContext(topic, MessageField.KEY)
    vctx = SerializationContext(topic, MessageField.VALUE)
    rows = [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}, {"id": 1, "name": "a2"}]
    errors = produce_framed(server, topic, [values(r, vctx) for r in rows],
                            keys=[keys({"id": r["id"]}, kctx) for r in rows])
    assert errors == [None] * 3
    assert sorted(server.get({"table": topic, "snapshot": True})[0].to_pylist(),
                  key=lambda r: r["id"]) == [{"id": 1, "name": "a2"}, {"id": 2, "name": "b"}]
    # The key columns never change.
    with pytest.raises(SchemaRegistryError) as error:
        registry.register_schema(topic + "-key", avro(
            {**key_schema, "fields": key_schema["fields"] + [
                {"name": "x", "type": ["null", "long"], "default": None}]}))
    assert error.value.http_status_code == 409
    assert "cannot change" in error.value.error_message


def test_a_clusters_servers_share_one_registry(oxbowd_bin, zookeeper, tmp_path):
    """Every server of a cluster serves the registry, whose state is one ZooKeeper znode that
    each change replaces at its version: what one server registers the others answer, changes
    made at once on three servers are all kept with distinct ids, and a server SIGKILLed and
    started again finds it all."""
    cluster = Cluster(oxbowd_bin, zookeeper.chroot("registry"), tmp_path).start()
    try:
        registries = {i: client(s) for i, s in cluster.servers.items()}
        first = registries[1].register_schema("shared-value", avro(V1))
        assert registries[2].get_schema(first).schema_str == registries[1].get_schema(
            first).schema_str
        assert registries[3].get_versions("shared-value") == [1]

        def register_many(i: int) -> None:
            for k in range(10):
                record = {**V1, "name": f"R{i}_{k}"}
                registries[i].register_schema(f"s{i}-{k}-value", avro(record))

        threads = [threading.Thread(target=register_many, args=(i,)) for i in registries]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        subjects = {f"s{i}-{k}-value" for i in registries for k in range(10)}
        for i in registries:
            fresh = client(cluster.servers[i])  # nothing cached
            assert subjects <= set(fresh.get_subjects())
            ids = {fresh.get_latest_version(s).schema_id for s in subjects}
            assert len(ids) == 30 and first not in ids

        # An avro-confluent table's subject, produced to and consumed through other servers.
        topic = "it.cluster_users_" + uuid.uuid4().hex[:8]
        cluster.create_table(topic, **{"kafka.value.format": "avro-confluent"})
        ctx = SerializationContext(topic, MessageField.VALUE)
        writer = {"type": "record", "name": "W", "fields": [
            {"name": "id", "type": "long"},
            {"name": "writer", "type": ["null", "string"], "default": None}]}
        serialize = AvroSerializer(registries[3], json.dumps(writer))
        rows = [{"id": i, "writer": f"w{i}"} for i in range(20)]
        assert produce_framed(cluster.servers[2], topic,
                              [serialize(r, ctx) for r in rows]) == [None] * 20
        assert [registries[i].get_versions(topic + "-value") for i in registries] == [[1]] * 3

        cluster.kill(1)
        evolved = {**writer, "fields": writer["fields"] + [
            {"name": "note", "type": ["null", "string"], "default": None}]}
        AvroSerializer(registries[3], json.dumps(evolved))({"id": 20, "writer": None,
                                                           "note": "n"}, ctx)
        assert client(cluster.servers[2]).get_versions(topic + "-value") == [1, 2]
        cluster.restart(1)
        restarted = client(cluster.servers[1])
        assert restarted.get_versions(topic + "-value") == [1, 2]
        assert restarted.get_version("shared-value", 1).schema_id == first
        consumer = Consumer({"bootstrap.servers": bootstrap(cluster.servers[1]),
                             "group.id": "g-" + topic, "enable.auto.commit": False})
        consumer.assign([TopicPartition(topic, 0, 0)])
        deserialize = AvroDeserializer(restarted)
        got = []
        while len(got) < len(rows):
            message = consumer.poll(10)
            assert message is not None and message.error() is None
            got.append(deserialize(message.value(), ctx))
        consumer.close()
        assert got == [{**r, "note": None} for r in rows]
    finally:
        cluster.stop()

