"""S3 settings from the environment and the error classification (no server needed).

The round trips against an S3 API server are in tests/integration/test_s3_store.py.
"""

from __future__ import annotations

import io

import pytest

pytest.importorskip("botocore")

from botocore import exceptions as bce

from feedrouter.errors import StorageError, TransientStorageError
from feedrouter.storage import ObjectNotFoundError, open_store
from feedrouter.storage.s3 import S3Settings, S3Store, classify


def _client_error(code: str) -> bce.ClientError:
    return bce.ClientError({"Error": {"Code": code, "Message": "m"}}, "GetObject")


def test_settings_come_from_the_environment() -> None:
    env = {
        "FEEDROUTER_S3_ENDPOINT_URL": "http://127.0.0.1:9000",
        "AWS_ENDPOINT_URL": "http://ignored",
        "AWS_DEFAULT_REGION": "eu-west-1",
        "FEEDROUTER_S3_MAX_ATTEMPTS": "7",
        "AWS_SECRET_ACCESS_KEY": "never-held",
    }
    settings = S3Settings.from_env(env)
    assert settings == S3Settings("http://127.0.0.1:9000", "eu-west-1", "path", 7)
    assert "never-held" not in repr(settings)
    assert S3Settings.from_env({}) == S3Settings()


def test_the_client_uses_standard_retries() -> None:
    client = S3Settings(endpoint_url="http://127.0.0.1:1", max_attempts=4).client()
    assert client.meta.config.retries == {"mode": "standard", "total_max_attempts": 4}
    assert client.meta.config.s3 == {"addressing_style": "auto"}


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        (_client_error("NoSuchKey"), ObjectNotFoundError),
        (_client_error("404"), ObjectNotFoundError),
        (_client_error("SlowDown"), TransientStorageError),
        (_client_error("503"), TransientStorageError),
        (_client_error("AccessDenied"), StorageError),
        (_client_error("NoSuchBucket"), StorageError),
        (bce.EndpointConnectionError(endpoint_url="http://x"), TransientStorageError),
        (bce.ReadTimeoutError(endpoint_url="http://x"), TransientStorageError),
        (bce.NoCredentialsError(), StorageError),
    ],
)
def test_errors_say_whether_a_retry_can_help(error: Exception, kind: type[StorageError]) -> None:
    translated = classify(error, "s3://b/k")
    assert type(translated) is kind
    assert translated.transient is (kind is TransientStorageError)


def test_other_exceptions_are_not_translated() -> None:
    assert classify(ValueError("x"), "s3://b/k") is None


def test_s3_uris_and_keys() -> None:
    store = open_store("s3://bucket/feedrouter/plans/")
    assert isinstance(store, S3Store) and (store.bucket, store.prefix) == ("bucket", "feedrouter/plans")
    assert store.uri_for("news/x.plan") == "s3://bucket/feedrouter/plans/news/x.plan"
    assert store.key_of("s3://bucket/feedrouter/plans/news/x.plan") == "news/x.plan"
    with pytest.raises(StorageError):
        store.key_of("s3://bucket/feedrouter/other/x.plan")
    for bad in ("s3://", "s3://bucket/a/../b", "s3://bucket/k?versionId=1"):
        with pytest.raises(StorageError):
            open_store(bad)


@pytest.fixture
def no_ambient_credentials(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """Nothing for boto3's credential chain to find (and no instance-metadata lookups)."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/credentials")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/config")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    return monkeypatch


def test_missing_credentials_are_a_terminal_error(no_ambient_credentials: pytest.MonkeyPatch) -> None:
    store = S3Store.from_uri("s3://bucket/x", settings=S3Settings(endpoint_url="http://127.0.0.1:9"))
    with pytest.raises(StorageError, match="no AWS credentials") as caught:
        store.get("k")
    assert not caught.value.transient


def test_an_unreachable_endpoint_is_a_transient_error(no_ambient_credentials: pytest.MonkeyPatch) -> None:
    no_ambient_credentials.setenv("AWS_ACCESS_KEY_ID", "dummy")
    no_ambient_credentials.setenv("AWS_SECRET_ACCESS_KEY", "dummy")
    settings = S3Settings(endpoint_url="http://127.0.0.1:9", max_attempts=1, connect_timeout=1)
    store = S3Store.from_uri("s3://bucket/x", settings=settings)
    with pytest.raises(TransientStorageError, match="cannot reach S3"):
        store.get("k")


@pytest.mark.parametrize(
    "uri",
    [
        "s3://bucket/out/./alias",
        "s3://bucket/q?x=1",
        "s3://bucket/a#frag",
        "s3://bucket/%2e%2e/x",
        "s3://bucket//x",
    ],
)
def test_an_s3_store_refuses_a_non_canonical_uri(uri: str) -> None:
    with pytest.raises(StorageError) as caught:
        open_store(uri, client=object())
    assert caught.value.code == "FR503"


@pytest.mark.parametrize(
    ("size", "threshold", "chunk", "parts"),
    [
        (12, 5, 5, [5, 5, 2]),
        (10, 5, 5, [5, 5]),
        (7, 5, 4, [4, 3]),  # the threshold's tail joins the stream's next read
        (11, 8, 3, [3, 3, 3, 2]),
        (5, 5, 16, [5]),
    ],
)
def test_upload_parts_are_whole_chunks_but_the_last(
    size: int, threshold: int, chunk: int, parts: list[int]
) -> None:
    from feedrouter.storage.s3 import _chunks, _read_full

    data = bytes(range(size))
    settings = S3Settings(multipart_threshold=threshold, multipart_chunk=chunk)
    stream = io.BufferedReader(io.BytesIO(data), buffer_size=2)  # short reads, as sockets give
    first = _read_full(stream, threshold)
    chunks = list(_chunks(first, stream, settings))
    assert [len(c) for c in chunks] == parts and b"".join(chunks) == data
