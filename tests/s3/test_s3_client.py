"""The S3 client (S3FileSystem through the s3_tool driver) against a real S3 server, with boto3
as the reference client: what one writes the other reads, byte for byte."""

from __future__ import annotations

import os
import subprocess

import pytest

MIB = 1 << 20


def run_tool(tool, *args, env=None, input=None):
    return subprocess.run([str(tool), *map(str, args)], capture_output=True, timeout=120,
                          env=env, input=input)


def ok(tool, *args, env=None) -> bytes:
    proc = run_tool(tool, *args, env=env)
    assert proc.returncode == 0, f"s3_tool {args} exited {proc.returncode}: {proc.stderr.decode()}"
    return proc.stdout


def unknown_key_refused(err: str) -> bool:
    """S3's answer to an unknown access key: InvalidAccessKeyId (AWS, moto) or versitygw's
    XAdminUserNotFound, either reported as refused credentials."""
    return "Unauthenticated" in err and ("InvalidAccessKeyId" in err or
                                         "XAdminUserNotFound" in err)


def payload(size: int, seed: int = 7) -> bytes:
    return bytes(((i * 2654435761 + seed) >> 13) & 0xFF for i in range(size))


def test_put_then_boto3_reads_and_ranged_reads(s3_env, s3_tool, s3_prefix, tmp_path):
    data = payload(300_000)
    local = tmp_path / "obj"
    local.write_bytes(data)
    uri = f"s3://{s3_env.bucket}/{s3_prefix}/small.bin"
    ok(s3_tool, "put", uri, local)
    boto = s3_env.client()
    assert boto.get_object(Bucket=s3_env.bucket, Key=f"{s3_prefix}/small.bin")["Body"].read() == data
    assert ok(s3_tool, "size", uri).strip() == str(len(data)).encode()
    for offset, length in [(0, 1), (12345, 1000), (len(data) - 10, 10), (len(data) - 10, 500)]:
        assert ok(s3_tool, "get", uri, offset, length) == data[offset:offset + length]
    assert ok(s3_tool, "cat", uri) == data


def test_large_object_goes_up_as_multipart(s3_env, s3_tool, s3_prefix, tmp_path):
    data = payload(13 * MIB + 12345, seed=3)
    local = tmp_path / "big"
    local.write_bytes(data)
    key = f"{s3_prefix}/big.bin"
    env = dict(os.environ, OXBOW_S3_PART_BYTES=str(5 * MIB))
    ok(s3_tool, "put", f"s3://{s3_env.bucket}/{key}", local, env=env)
    boto = s3_env.client()
    head = boto.head_object(Bucket=s3_env.bucket, Key=key)
    assert head["ContentLength"] == len(data)
    # A multipart object's ETag ends in -<parts>. A part goes out once 2 parts are buffered
    # (one stays in hand): 5 MiB at 10 MiB written, then the last 8 MiB + 12345 bytes at Sync.
    assert head["ETag"].strip('"').endswith("-2"), head["ETag"]
    assert boto.get_object(Bucket=s3_env.bucket, Key=key)["Body"].read() == data
    uploads = boto.list_multipart_uploads(Bucket=s3_env.bucket, Prefix=s3_prefix)
    assert not uploads.get("Uploads"), "a finished multipart upload is still open"


def test_an_unsynced_file_leaves_no_object(s3_env, s3_tool, s3_prefix, tmp_path):
    local = tmp_path / "big"
    local.write_bytes(payload(11 * MIB, seed=9))  # parts went out before the File was dropped
    key = f"{s3_prefix}/unsynced"
    env = dict(os.environ, OXBOW_S3_PART_BYTES=str(5 * MIB))
    ok(s3_tool, "put-unsynced", f"s3://{s3_env.bucket}/{key}", local, env=env)
    boto = s3_env.client()
    assert boto.list_objects_v2(Bucket=s3_env.bucket, Prefix=key).get("KeyCount") == 0
    uploads = boto.list_multipart_uploads(Bucket=s3_env.bucket, Prefix=key)
    assert not uploads.get("Uploads"), f"the unsynced upload was not aborted: {uploads}"


def test_objects_boto3_wrote_are_read_and_listed_across_pages(s3_env, s3_tool, s3_prefix):
    boto = s3_env.client()
    keys = [f"{s3_prefix}/dir/k{i:02d}" for i in range(13)] + [
        f"{s3_prefix}/dir/sub/a b+c=é&.txt", f"{s3_prefix}/dir/sub2/x", f"{s3_prefix}/dirx"]
    for i, key in enumerate(keys):
        boto.put_object(Bucket=s3_env.bucket, Key=key, Body=payload(100 + i, seed=i))
    env = dict(os.environ, OXBOW_S3_LIST_PAGE_KEYS="4")  # 16 keys: several pages
    base = f"s3://{s3_env.bucket}/{s3_prefix}/dir"
    names = ok(s3_tool, "ls", base, env=env).decode().split("\n")[:-1]
    assert sorted(names) == sorted([f"k{i:02d}" for i in range(13)] + ["sub", "sub2"])
    paths = ok(s3_tool, "lsr", base, env=env).decode().split("\n")[:-1]
    assert sorted(paths) == sorted(f"s3://{s3_env.bucket}/{k}" for k in keys[:-1])
    special = f"s3://{s3_env.bucket}/{s3_prefix}/dir/sub/a b+c=é&.txt"
    assert ok(s3_tool, "cat", special) == payload(100 + 13, seed=13)


def test_missing_objects_and_deletes(s3_env, s3_tool, s3_prefix, tmp_path):
    missing = run_tool(s3_tool, "size", f"s3://{s3_env.bucket}/{s3_prefix}/nothing")
    assert missing.returncode == 1
    assert b"NotFound" in missing.stderr and b"404" in missing.stderr, missing.stderr
    no_bucket = run_tool(s3_tool, "ls", f"s3://no-such-bucket-here/{s3_prefix}")
    assert no_bucket.returncode == 1 and b"NoSuchBucket" in no_bucket.stderr, no_bucket.stderr

    boto = s3_env.client()
    for key in ["a", "d/b", "d/e/c"]:
        boto.put_object(Bucket=s3_env.bucket, Key=f"{s3_prefix}/{key}", Body=b"x")
    ok(s3_tool, "rm", f"s3://{s3_env.bucket}/{s3_prefix}/a")
    ok(s3_tool, "rmr", f"s3://{s3_env.bucket}/{s3_prefix}/d")
    left = boto.list_objects_v2(Bucket=s3_env.bucket, Prefix=s3_prefix).get("Contents", [])
    assert left == []


def test_wrong_credentials_fail_with_a_clear_error(s3_env, s3_tool, s3_prefix):
    uri = f"s3://{s3_env.bucket}/{s3_prefix}"
    ok(s3_tool, "check", uri)
    bad_secret = "wrong-secret-" + "x" * 20
    env = dict(os.environ, AWS_SECRET_ACCESS_KEY=bad_secret)
    proc = run_tool(s3_tool, "check", uri, env=env)
    assert proc.returncode == 1
    err = proc.stderr.decode()
    assert "Unauthenticated" in err and "SignatureDoesNotMatch" in err, err
    assert "AWS_SECRET_ACCESS_KEY" in err, err
    assert bad_secret not in err and s3_env.secret_access_key not in err

    env = dict(os.environ, AWS_ACCESS_KEY_ID="AKIANOSUCHKEY0000000")
    proc = run_tool(s3_tool, "check", uri, env=env)
    assert proc.returncode == 1 and unknown_key_refused(proc.stderr.decode()), proc.stderr

    env = {k: v for k, v in os.environ.items()
           if k not in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")}
    env["AWS_SHARED_CREDENTIALS_FILE"] = "/nonexistent"
    proc = run_tool(s3_tool, "check", uri, env=env)
    assert proc.returncode == 1 and "needs credentials" in proc.stderr.decode(), proc.stderr


def test_credentials_file_profile(s3_env, s3_tool, s3_prefix, tmp_path):
    creds = tmp_path / "credentials"
    creds.write_text(f"[default]\naws_access_key_id = nope\naws_secret_access_key = nope\n"
                     f"[oxbow]\naws_access_key_id = {s3_env.access_key_id}\n"
                     f"aws_secret_access_key = {s3_env.secret_access_key}\n")
    env = {k: v for k, v in os.environ.items()
           if k not in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")}
    env.update(AWS_SHARED_CREDENTIALS_FILE=str(creds), AWS_PROFILE="oxbow")
    ok(s3_tool, "check", f"s3://{s3_env.bucket}/{s3_prefix}", env=env)
    env["AWS_PROFILE"] = "default"
    proc = run_tool(s3_tool, "check", f"s3://{s3_env.bucket}/{s3_prefix}", env=env)
    assert proc.returncode == 1 and unknown_key_refused(proc.stderr.decode()), proc.stderr


def test_temporary_credentials_with_a_session_token(s3_env, s3_tool, s3_prefix, tmp_path):
    """AWS_SESSION_TOKEN is sent (and signed) as x-amz-security-token: credentials from STS
    AssumeRole work with it, and are refused without it or with a wrong one."""
    if s3_env.kind != "moto":
        pytest.skip(f"{s3_env.kind} has no IAM or STS")
    import boto3
    import json
    kw = dict(endpoint_url=s3_env.endpoint, region_name=s3_env.region,
              aws_access_key_id=s3_env.access_key_id,
              aws_secret_access_key=s3_env.secret_access_key)
    iam = boto3.client("iam", **kw)
    role_name = f"reader-{s3_prefix[:40]}"
    role = iam.create_role(RoleName=role_name, AssumeRolePolicyDocument=json.dumps(
        {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"AWS": "*"},
                                                 "Action": "sts:AssumeRole"}]}))["Role"]
    iam.put_role_policy(RoleName=role_name, PolicyName="everything", PolicyDocument=json.dumps(
        {"Version": "2012-10-17",
         "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}))
    creds = boto3.client("sts", **kw).assume_role(RoleArn=role["Arn"],
                                                  RoleSessionName="oxbow-test")["Credentials"]
    assert creds["AccessKeyId"].startswith("ASIA")
    env = dict(os.environ, AWS_ACCESS_KEY_ID=creds["AccessKeyId"],
               AWS_SECRET_ACCESS_KEY=creds["SecretAccessKey"],
               AWS_SESSION_TOKEN=creds["SessionToken"])
    local = tmp_path / "obj"
    local.write_bytes(b"temporary")
    uri = f"s3://{s3_env.bucket}/{s3_prefix}/tmp-creds"
    ok(s3_tool, "put", uri, local, env=env)
    assert ok(s3_tool, "cat", uri, env=env) == b"temporary"

    wrong = dict(env, AWS_SESSION_TOKEN="not-the-token")
    proc = run_tool(s3_tool, "cat", uri, env=wrong)
    assert proc.returncode == 1 and "InvalidToken" in proc.stderr.decode(), proc.stderr
    assert creds["SessionToken"] not in proc.stderr.decode()
    missing = {k: v for k, v in env.items() if k != "AWS_SESSION_TOKEN"}
    proc = run_tool(s3_tool, "cat", uri, env=missing)
    assert proc.returncode == 1 and "Unauthenticated" in proc.stderr.decode(), proc.stderr


def test_virtual_host_addressing(s3_env, s3_tool, s3_prefix, tmp_path):
    """<bucket>.<host> URLs (libcurl resolves *.localhost to the loopback address): the request
    paths carry no bucket, and the server finds it in the signed Host header."""
    env = dict(os.environ, AWS_ENDPOINT_URL=s3_env.endpoint.replace("127.0.0.1", "localhost"),
               OXBOW_S3_PATH_STYLE="0")
    local = tmp_path / "obj"
    local.write_bytes(payload(6000, seed=4))
    uri = f"s3://{s3_env.bucket}/{s3_prefix}/vh/obj"
    ok(s3_tool, "put", uri, local, env=env)
    assert ok(s3_tool, "get", uri, 10, 20, env=env) == payload(6000, seed=4)[10:30]
    assert ok(s3_tool, "ls", f"s3://{s3_env.bucket}/{s3_prefix}/vh", env=env) == b"obj\n"
    got = s3_env.client().get_object(Bucket=s3_env.bucket, Key=f"{s3_prefix}/vh/obj")
    assert got["Body"].read() == payload(6000, seed=4)
    if s3_env.kind == "moto":  # its request log shows the path without the bucket
        log = s3_env.log_path.read_text(errors="replace")
        assert f'"PUT /{s3_prefix}/vh/obj HTTP/1.1" 200' in log, "no virtual-host PUT in the log"
