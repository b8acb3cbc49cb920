"""The second S3 server, versitygw (scripts/install_versitygw.sh; not installed in CI): it checks
SigV4 signatures, so it can stand in for moto_server (OXBOW_S3_SERVER=versitygw) and the
benchmarks may measure against it. Skipped when the binary is absent."""

from __future__ import annotations

import os
import subprocess

import botocore.exceptions
import pytest

from oxbowtest import s3_server

pytestmark = pytest.mark.skipif(not s3_server.versitygw_binary().is_file(),
                                reason="versitygw not installed: scripts/install_versitygw.sh")


@pytest.fixture(scope="module")
def gw(tmp_path_factory):
    server = s3_server.start(tmp_path_factory.mktemp("gw") / "versitygw.log", kind="versitygw")
    yield server
    server.stop()


def test_signatures_are_checked(gw, s3_tool):
    client = gw.client()
    client.put_object(Bucket=gw.bucket, Key="signed", Body=b"x")
    for secret in ("not-" + gw.secret_access_key, gw.secret_access_key[:-1]):
        with pytest.raises(botocore.exceptions.ClientError) as refused:
            gw.client(secret=secret).get_object(Bucket=gw.bucket, Key="signed")
        assert refused.value.response["Error"]["Code"] == "SignatureDoesNotMatch"
    # Our client, with a wrong secret: refused with the reason, no secret in the message.
    bad = "wrong-secret-" + "x" * 20
    proc = subprocess.run([str(s3_tool), "cat", f"s3://{gw.bucket}/signed"], capture_output=True,
                          timeout=60, env=dict(os.environ, **gw.env(secret=bad)))
    err = proc.stderr.decode()
    assert proc.returncode == 1 and "SignatureDoesNotMatch" in err, err
    assert bad not in err and gw.secret_access_key not in err
    proc = subprocess.run([str(s3_tool), "cat", f"s3://{gw.bucket}/signed"], capture_output=True,
                          timeout=60, env=dict(os.environ, **gw.env()))
    assert proc.returncode == 0 and proc.stdout == b"x", proc.stderr
