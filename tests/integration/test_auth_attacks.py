"""What a careful attacker and a careless operator try against --auth (docs/security.md): a
removed user's token after the name is created again, a password change, concurrent guesses
against the lockout on every listener, topic ids that would name hidden tables, a users file
others may read, SCRAM salts of unknown users across restarts, grants that could never match,
and the metrics page."""

from __future__ import annotations

import os
import stat
import threading
import time
import uuid

import pyarrow as pa
import pyarrow.flight as fl
import pytest
import requests
from kafka.protocol.admin import DeleteTopicsRequest
from kafka.protocol.consumer import FetchRequest
from kafka.protocol.metadata import MetadataRequest
from kafka.protocol.producer import ProduceRequest
from kafka.protocol.sasl import SaslAuthenticateRequest, SaslHandshakeRequest

from oxbowtest.flight import expect_error
from oxbowtest.server import refused_start
from oxbowtest.auth import add_user, oxbow
from test_kafka_auth import secured  # noqa: F401 (fixture: --auth, TLS, root/writer/reader)
from test_kafka_auth import (create_topic, raw_connection, raw_login, raw_plain, raw_scram,
                             record_set, tls_auth_server)

UNKNOWN_TOPIC_ID = 100
TOPIC_AUTHORIZATION_FAILED = 29
SASL_AUTHENTICATION_FAILED = 58


def flight_login(server, name: str, password: str) -> fl.FlightCallOptions:
    header = server.new_client().authenticate_basic_token(name, password)
    return fl.FlightCallOptions(headers=[header])


def bearer(options: fl.FlightCallOptions) -> str:
    return options.headers[0][1].decode().split(" ", 1)[1]


def list_tables(server, options: fl.FlightCallOptions) -> list:
    return list(server.new_client().do_action(fl.Action("list_tables", b"{}"), options=options))


def rest_get(server, path: str, **kwargs) -> requests.Response:
    return requests.get(f"https://127.0.0.1:{server.catalog_port}{path}", verify=server.ca,
                        timeout=30, **kwargs)


def set_password(server, name: str, password: str, grant: str) -> None:
    done = oxbow("user", "add", "--data-dir", str(server.data_dir), name, "--password-stdin",
                 "--grant", grant, stdin=password + "\n")
    assert done.returncode == 0, done.stderr


# --- 1. a token belongs to one identity of its user -------------------------------------------


def test_a_removed_users_token_stays_dead_when_the_name_comes_back(secured):  # noqa: F811
    options = flight_login(secured, "reader", "pw-reader-123")
    token = bearer(options)
    list_tables(secured, options)
    assert rest_get(secured, "/v1/namespaces",
                    headers={"Authorization": f"Bearer {token}"}).status_code == 200
    _, kafka_call = raw_login(secured, "reader")
    assert oxbow("user", "remove", "--data-dir", str(secured.data_dir), "reader").returncode == 0
    add_user(secured.data_dir, "reader", "*=admin")  # the same name, more grants
    with expect_error("UNAUTHENTICATED", "'reader'", "removed or given a new password"):
        list_tables(secured, options)
    answer = rest_get(secured, "/v1/namespaces", headers={"Authorization": f"Bearer {token}"})
    assert answer.status_code == 401, answer.text
    assert "removed or given a new password" in answer.json()["error"]["message"]
    # An open Kafka connection of the old identity closes at its next request once its user
    # is read again (at most a second later), instead of going on with the new grants.
    time.sleep(1.2)
    with pytest.raises(AssertionError, match="closed the connection"):
        kafka_call(MetadataRequest[9](topics=None, allow_auto_topic_creation=False), 9)
    # The new identity logs in as usual.
    list_tables(secured, flight_login(secured, "reader", "pw-reader-123"))


def test_a_password_change_ends_earlier_tokens(secured):  # noqa: F811
    old = flight_login(secured, "writer", "pw-writer-123")
    set_password(secured, "writer", "a-new-password", "kafka.*=write")
    with expect_error("UNAUTHENTICATED", "'writer'", "removed or given a new password"):
        list_tables(secured, old)
    assert rest_get(secured, "/v1/namespaces",
                    headers={"Authorization": f"Bearer {bearer(old)}"}).status_code == 401
    list_tables(secured, flight_login(secured, "writer", "a-new-password"))


# --- 2. concurrent guesses count before their check -------------------------------------------

GUESSES = 40


def guess_at_once(attempt) -> dict:
    """Runs attempt() on GUESSES threads released by one barrier: {outcome: count}."""
    barrier = threading.Barrier(GUESSES)
    outcomes: list[str] = []
    lock = threading.Lock()

    def run():
        barrier.wait()
        outcome = attempt()
        with lock:
            outcomes.append(outcome)

    threads = [threading.Thread(target=run) for _ in range(GUESSES)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    return {o: outcomes.count(o) for o in set(outcomes)}


def assert_at_most_five_checked(outcomes: dict, listener: str) -> None:
    assert sum(outcomes.values()) == GUESSES, (listener, outcomes)
    assert set(outcomes) <= {"checked", "locked out"}, (listener, outcomes)
    assert 1 <= outcomes.get("checked", 0) <= 5, (listener, outcomes)


def test_concurrent_guesses_cannot_outrun_the_lockout_on_any_listener(secured):  # noqa: F811
    def flight():
        try:
            secured.new_client().authenticate_basic_token("guess-flight", "wrong-password")
        except fl.FlightUnauthenticatedError:
            return "checked"
        except pa.ArrowInvalid as e:  # RESOURCE_EXHAUSTED (docs/security.md)
            return "locked out" if "too many" in str(e) else str(e)
        return "logged in"

    def rest():
        answer = rest_get(secured, "/v1/config", auth=("guess-rest", "wrong-password"))
        message = answer.json()["error"]["message"]
        return "locked out" if "too many" in message else (
            "checked" if "wrong user name or password" in message else message)

    def kafka(login):
        def attempt():
            code, message = login()
            assert code == SASL_AUTHENTICATION_FAILED, (code, message)
            return "locked out" if "too many" in message else (
                "checked" if "invalid" in message else message)
        return attempt

    assert_at_most_five_checked(guess_at_once(flight), "Flight")
    assert_at_most_five_checked(guess_at_once(rest), "REST")
    assert_at_most_five_checked(
        guess_at_once(kafka(lambda: raw_plain(secured, "guess-plain", "wrong-password"))),
        "Kafka SASL/PLAIN")
    assert_at_most_five_checked(
        guess_at_once(kafka(lambda: raw_scram(secured, "guess-scram", "wrong-password"))),
        "Kafka SASL/SCRAM-SHA-256")
    # The right password of a user sent 40 times at once: every login gets in, in turns.
    outcomes = guess_at_once(
        lambda: "in" if raw_plain(secured, "writer", "pw-writer-123")[0] == 0 else "refused")
    assert outcomes == {"in": GUESSES}


# --- 3. topic ids name no hidden table --------------------------------------------------------


def topic_ids(call) -> dict:
    metadata = call(MetadataRequest[12](topics=None, allow_auto_topic_creation=False), 12)
    return {t.name: t.topic_id for t in metadata.topics}


def test_topic_ids_do_not_name_tables_a_user_may_not_read(secured):  # noqa: F811
    for topic in ("orders", "secret"):
        create_topic(secured, "PLAIN", topic)
    _, root = raw_login(secured, "root")
    ids = topic_ids(root)
    # Keyed by the server secret: not "oxbow" and a counter, no id tells how many tables exist.
    assert all(not i.bytes.startswith(b"oxbow") for i in ids.values()), ids
    _, reader = raw_login(secured, "reader")  # may read kafka.orders only
    assert set(topic_ids(reader)) == {"orders"}
    sequential = [uuid.UUID(bytes=b"oxbow\0\0\0" + n.to_bytes(8, "big")) for n in range(1, 6)]
    for topic_id in [ids["secret"], uuid.uuid4(), *sequential]:
        deleted = reader(DeleteTopicsRequest[6](topics=[DeleteTopicsRequest.DeleteTopicState(
            name=None, topic_id=topic_id)], timeout_ms=10000), 6).responses[0]
        assert (deleted.error_code, deleted.name) == (UNKNOWN_TOPIC_ID, None), deleted
        assert "secret" not in (deleted.error_message or "")
        F = FetchRequest.FetchTopic
        fetched = reader(FetchRequest[13](
            max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=0,
            topics=[F(topic_id=topic_id, partitions=[F.FetchPartition(
                partition=0, fetch_offset=0, partition_max_bytes=1 << 20)])],
            forgotten_topics_data=[], rack_id=""), 13)
        assert fetched.responses[0].partitions[0].error_code == UNKNOWN_TOPIC_ID
        P = ProduceRequest.TopicProduceData
        produced = reader(ProduceRequest[13](acks=-1, timeout_ms=1000, topic_data=[P(
            topic_id=topic_id, partition_data=[P.PartitionProduceData(
                index=0, records=record_set([b"x"]))])]), 13)
        assert produced.responses[0].partition_responses[0].error_code == UNKNOWN_TOPIC_ID
    # A topic the user may read but not delete is named, and refused for what it is.
    deleted = reader(DeleteTopicsRequest[6](topics=[DeleteTopicsRequest.DeleteTopicState(
        name=None, topic_id=ids["orders"])], timeout_ms=10000), 6).responses[0]
    assert (deleted.error_code, deleted.name) == (TOPIC_AUTHORIZATION_FAILED, "orders")
    # Ids stay the same across restarts (clients cache them).
    secured.restart()
    _, root = raw_login(secured, "root")
    assert topic_ids(root) == ids


# --- 4. the users file is a credential ---------------------------------------------------------


def test_the_users_file_is_private_and_a_readable_one_refuses_to_start(oxbowd_bin, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    add_user(data, "root", "*=admin")
    users = data / "users.json"
    assert stat.S_IMODE(users.stat().st_mode) == 0o600
    os.chmod(users, 0o644)  # as every earlier version wrote it
    printed = refused_start(oxbowd_bin, data, "--auth")
    assert "may be read by others (mode 0644)" in printed and f"chmod 600 {users}" in printed
    add_user(data, "other", "a.*=read")  # rewriting the file makes it private again
    assert stat.S_IMODE(users.stat().st_mode) == 0o600


# --- 5. SCRAM's made-up salt is the same across restarts --------------------------------------


def test_unknown_users_get_the_same_scram_salt_across_restarts(secured):  # noqa: F811
    def salts(name: str) -> str:
        sock, call = raw_connection(secured)
        with sock:
            assert call(SaslHandshakeRequest[1](mechanism="SCRAM-SHA-256"), 1).error_code == 0
            first = call(SaslAuthenticateRequest[2](
                auth_bytes=f"n,,n={name},r={uuid.uuid4().hex}".encode()), 2)
            fields = dict(p.split("=", 1) for p in first.auth_bytes.decode().split(","))
            return fields["s"], fields["i"]

    before = {name: salts(name) for name in ("nobody", "writer")}
    secured.restart()
    after = {name: salts(name) for name in ("nobody", "writer")}
    assert after == before  # a real user's salt is stable, and so is the made-up one
    assert len(before["nobody"][0]) == len(before["writer"][0])
    assert before["nobody"][1] == before["writer"][1]
    assert (secured.data_dir / "server.secret").stat().st_mode & 0o077 == 0


# --- 6. grants that could never match are refused ---------------------------------------------


@pytest.mark.parametrize("tables", ["*.*", ".*", "shop.ord*", "shop.", "*.orders", " shop.*",
                                    "shop/x.*", "sh op.*", "a*"])
def test_grants_that_could_never_match_are_refused(tmp_path, tables):
    done = oxbow("user", "add", "--data-dir", str(tmp_path), "u", "--password-stdin", "--grant",
                 f"{tables}=read", stdin="long-enough-password\n")
    assert done.returncode != 0
    assert "must be \"ns.t\", \"ns.*\" or \"*\"" in done.stderr, done.stderr
    assert not (tmp_path / "users.json").exists()


# --- 7. the metrics page under --auth ---------------------------------------------------------


def test_metrics_need_a_login_of_a_user_granted_every_table(make_server, tmp_path, pki):  # noqa: F811
    server = tls_auth_server(make_server, tmp_path / "m", pki,
                             {"prometheus": "*=read", "reader": "kafka.orders=read"},
                             "--metrics-auth", "on")
    url = server.metrics_url + "/metrics"
    refused = requests.get(url, timeout=10)
    assert refused.status_code == 401 and refused.headers["WWW-Authenticate"].startswith("Basic")
    assert "oxbow_" not in refused.text
    assert requests.get(url, auth=("prometheus", "wrong-password"), timeout=10).status_code == 401
    forbidden = requests.get(url, auth=("reader", "pw-reader-123"), timeout=10)
    assert forbidden.status_code == 403 and "'*'" in forbidden.text
    page = requests.get(url, auth=("prometheus", "pw-prometheus-123"), timeout=10)
    assert page.status_code == 200 and "oxbow_" in page.text
    token = bearer(flight_login(server, "prometheus", "pw-prometheus-123"))
    assert requests.get(url, headers={"Authorization": f"Bearer {token}"},
                        timeout=10).status_code == 200
    # Probes need no login.
    assert requests.get(server.metrics_url + "/healthz", timeout=10).status_code == 200
    assert requests.get(server.metrics_url + "/readyz", timeout=10).status_code == 200


def test_metrics_auth_on_needs_auth(oxbowd_bin, tmp_path):
    printed = refused_start(oxbowd_bin, tmp_path, "--metrics-auth", "on",
                            metrics_listen="127.0.0.1:0")
    assert "--metrics-auth on needs --auth" in printed
