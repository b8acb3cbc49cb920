"""A real S3 server for the tests and benchmarks: moto_server (moto[server] from PyPI) on
127.0.0.1, with signature checks on.

moto checks SigV4 signatures and IAM policies once IAM users exist; the first
INITIAL_NO_AUTH_ACTION_COUNT requests are let through unchecked so the set-up can create one.
`start()` creates the user `oxbow` with a policy allowing everything, an access key for it, and a
bucket; every later request must be signed with that key (a wrong secret gets
SignatureDoesNotMatch, an unknown key InvalidAccessKeyId).
"""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import socket
import subprocess
import sys
import time

import boto3

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


def start(log_path: pathlib.Path, bucket: str = "oxbow-test") -> S3Server:
    binary = moto_server_binary()
    if not binary.is_file():
        raise RuntimeError(f"{binary} is missing: scripts/setup.sh installs moto[server] "
                           f"(tests/requirements.txt)")
    port = _free_port()
    env = dict(os.environ, INITIAL_NO_AUTH_ACTION_COUNT=str(_SETUP_REQUESTS))
    for name in ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
                 "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        env.pop(name, None)
    log = open(log_path, "ab")
    proc = subprocess.Popen([str(binary), "-H", "127.0.0.1", "-p", str(port)], env=env,
                            stdout=log, stderr=subprocess.STDOUT)
    log.close()
    endpoint = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + START_DEADLINE_S
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"moto_server exited with {proc.returncode}: see {log_path}")
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            break
        except OSError:
            if time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError(f"moto_server did not listen within {START_DEADLINE_S}s")
            time.sleep(0.1)
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
