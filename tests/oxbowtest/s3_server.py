"""A real S3 server for the tests and benchmarks on 127.0.0.1, with signature checks on:
moto_server (moto[server] from PyPI, the default and CI's) or the Versity S3 Gateway
(versitygw, Go, built by scripts/install_versitygw.sh into build/tools), chosen by `start`'s
`kind` or else the environment variable OXBOW_S3_SERVER (`moto` | `versitygw`).

moto checks SigV4 signatures and IAM policies once IAM users exist; the first
INITIAL_NO_AUTH_ACTION_COUNT requests are let through unchecked so the set-up can create one.
`start()` creates the user `oxbow` with a policy allowing everything, an access key for it, and a
bucket; every later request must be signed with that key (a wrong secret gets
SignatureDoesNotMatch, an unknown key InvalidAccessKeyId).

versitygw serves a directory (its POSIX backend) with one root key, given a fresh random secret
at each start; it has no IAM or STS. `start()` checks that it refuses a request signed with a
wrong secret before handing it out.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import secrets
import socket
import subprocess
import sys
import time

import boto3
import botocore.exceptions

# The set-up's unchecked requests: CreateUser, PutUserPolicy, CreateAccessKey.
_SETUP_REQUESTS = 3
START_DEADLINE_S = 30.0


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclasses.dataclass
class S3Server:
    proc: subprocess.Popen
    endpoint: str
    access_key_id: str
    secret_access_key: str
    bucket: str
    region: str = "us-east-1"
    log_path: pathlib.Path | None = None
    kind: str = "moto"  # or "versitygw"

    def env(self, secret: str | None = None) -> dict[str, str]:
        """The AWS environment an oxbowd or s3_tool is started with."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_REGION": self.region,
            "AWS_ACCESS_KEY_ID": self.access_key_id,
            "AWS_SECRET_ACCESS_KEY": secret or self.secret_access_key,
        }

    def client(self, secret: str | None = None):
        """A boto3 S3 client signing with the server's key (the reference client)."""
        return boto3.client("s3", endpoint_url=self.endpoint, region_name=self.region,
                            aws_access_key_id=self.access_key_id,
                            aws_secret_access_key=secret or self.secret_access_key)

    def pyiceberg_properties(self) -> dict[str, str]:
        return {"s3.endpoint": self.endpoint, "s3.region": self.region,
                "s3.access-key-id": self.access_key_id,
                "s3.secret-access-key": self.secret_access_key}

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def moto_server_binary() -> pathlib.Path:
    return pathlib.Path(sys.prefix) / "bin" / "moto_server"


REPO = pathlib.Path(__file__).resolve().parents[2]
KINDS = ("moto", "versitygw")


def versitygw_binary() -> pathlib.Path:
    return REPO / "build" / "tools" / "versitygw"


def chosen_kind(kind: str | None = None) -> str:
    kind = kind or os.environ.get("OXBOW_S3_SERVER") or "moto"
    if kind not in KINDS:
        raise RuntimeError(f"OXBOW_S3_SERVER={kind!r}: the S3 server is one of {', '.join(KINDS)}")
    return kind


def _clean_env() -> dict[str, str]:
    env = dict(os.environ)
    for name in ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
                 "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        env.pop(name, None)
    return env


def _wait_listening(proc: subprocess.Popen, port: int, name: str, log_path: pathlib.Path) -> None:
    deadline = time.monotonic() + START_DEADLINE_S
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"{name} exited with {proc.returncode}: see {log_path}")
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError(f"{name} did not listen within {START_DEADLINE_S}s")
            time.sleep(0.1)


def start(log_path: pathlib.Path, bucket: str = "oxbow-test", kind: str | None = None) -> S3Server:
    """The S3 server `kind` (default: $OXBOW_S3_SERVER, else moto) with `bucket` created;
    its output goes to `log_path`, a versitygw's objects to a directory beside it."""
    if chosen_kind(kind) == "versitygw":
        return _start_versitygw(log_path, bucket)
    binary = moto_server_binary()
    if not binary.is_file():
        raise RuntimeError(f"{binary} is missing: scripts/setup.sh installs moto[server] "
                           f"(tests/requirements.txt)")
    port = _free_port()
    env = dict(_clean_env(), INITIAL_NO_AUTH_ACTION_COUNT=str(_SETUP_REQUESTS))
    log = open(log_path, "ab")
    proc = subprocess.Popen([str(binary), "-H", "127.0.0.1", "-p", str(port)], env=env,
                            stdout=log, stderr=subprocess.STDOUT)
    log.close()
    endpoint = f"http://127.0.0.1:{port}"
    _wait_listening(proc, port, "moto_server", log_path)
    try:
        iam = boto3.client("iam", endpoint_url=endpoint, region_name="us-east-1",
                           aws_access_key_id="setup", aws_secret_access_key="setup")
        iam.create_user(UserName="oxbow")
        iam.put_user_policy(UserName="oxbow", PolicyName="everything", PolicyDocument=json.dumps(
            {"Version": "2012-10-17",
             "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}))
        key = iam.create_access_key(UserName="oxbow")["AccessKey"]
        server = S3Server(proc, endpoint, key["AccessKeyId"], key["SecretAccessKey"], bucket,
                          log_path=log_path)
        server.client().create_bucket(Bucket=bucket)
    except Exception:
        proc.kill()
        proc.wait()
        raise
    return server


def _start_versitygw(log_path: pathlib.Path, bucket: str) -> S3Server:
    binary = versitygw_binary()
    if not binary.is_file():
        raise RuntimeError(f"{binary} is missing: run scripts/install_versitygw.sh")
    root = log_path.parent / f"{log_path.stem}-objects"
    root.mkdir(parents=True, exist_ok=True)
    port = _free_port()
    access_key = "oxbow-root"
    secret = secrets.token_hex(20)
    # The key goes in the environment, not on the command line (which `ps` shows everyone).
    # Keep-alive on, as any deployment runs it (off by default); --quiet: no line per request.
    env = dict(_clean_env(), ROOT_ACCESS_KEY_ID=access_key, ROOT_SECRET_ACCESS_KEY=secret)
    log = open(log_path, "ab")
    proc = subprocess.Popen([str(binary), "--port", f"127.0.0.1:{port}", "--keep-alive", "--quiet",
                             "--virtual-domain", "localhost", "posix", str(root)],
                            env=env, stdout=log, stderr=subprocess.STDOUT)
    log.close()
    _wait_listening(proc, port, "versitygw", log_path)
    server = S3Server(proc, f"http://127.0.0.1:{port}", access_key, secret, bucket,
                      log_path=log_path, kind="versitygw")
    try:
        server.client().create_bucket(Bucket=bucket)
        try:
            server.client(secret="not-" + secret).list_objects_v2(Bucket=bucket)
        except botocore.exceptions.ClientError as e:
            if e.response["Error"]["Code"] != "SignatureDoesNotMatch":
                raise
        else:
            raise RuntimeError("versitygw accepted a request signed with a wrong secret")
    except Exception:
        server.stop()
        raise
    return server
