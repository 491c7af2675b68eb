"""``s3://`` stores through boto3: AWS S3 or any S3 API server (MinIO, moto).

Configuration comes from the environment (:class:`S3Settings`); credentials are never read or held
here: boto3's standard chain finds them (environment, shared files, instance roles). Inside Airflow,
pass the client of an Airflow connection instead (the seam)::

    from airflow.providers.amazon.aws.hooks.s3 import S3Hook
    store = open_store("s3://bucket/plans", client=S3Hook(aws_conn_id="feedrouter_s3").get_conn())

botocore retries throttling and dropped connections itself ("standard" retry mode); what is still
failing after those attempts is raised as :class:`~feedrouter.errors.TransientStorageError`, so the
scheduler can retry the task later, and everything else as a terminal ``StorageError``. A body cut
short or stalled while it streams (:meth:`~feedrouter.storage.base.ObjectStore.open`,
:class:`S3Body`) is transient too. Every call is bounded by the connect and read timeouts of
:class:`S3Settings`, so a hung endpoint costs seconds, not minutes.
"""

from __future__ import annotations

import contextlib
import http.client
import io
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, BinaryIO
from urllib.parse import urlsplit

from feedrouter.errors import StorageError, TransientStorageError, error
from feedrouter.settings import Settings, load_settings
from feedrouter.storage.base import ObjectNotFoundError, ObjectStore, ObjectStream
from feedrouter.storage.keys import validate_key
from feedrouter.storage.multipart import upload_in_parts
from feedrouter.storage.uris import canonical_prefix

#: Error codes S3 answers with that a later attempt may not get.
TRANSIENT_CODES = frozenset(
    {
        "InternalError",
        "RequestTimeout",
        "RequestTimeTooSkewed",
        "ServiceUnavailable",
        "SlowDown",
        "Throttling",
        "ThrottlingException",
        "RequestLimitExceeded",
        "500",
        "502",
        "503",
        "504",
    }
)
NOT_FOUND_CODES = frozenset({"NoSuchKey", "404", "NotFound"})
#: Seconds to wait for a connection and for each read from the socket (botocore's default is 60
#: for each, times every retry attempt).
DEFAULT_CONNECT_TIMEOUT = 5.0
DEFAULT_READ_TIMEOUT = 30.0
#: Objects from this size on are uploaded in parts; each part is read, held and sent alone, so an
#: upload holds one chunk in memory whatever the object's size (S3's minimum part is 5 MiB).
DEFAULT_MULTIPART_THRESHOLD = 64 * 1024 * 1024
DEFAULT_MULTIPART_CHUNK = 16 * 1024 * 1024


@dataclass(frozen=True)
class S3Settings:
    """How to reach S3. Holds no credential, so it can be logged and pickled safely.

    Attributes:
        endpoint_url: an S3 API server (MinIO, moto); None for AWS itself.
        region: the signing region.
        addressing_style: "path" (needed by most non-AWS servers) or "virtual"/"auto".
        max_attempts: total attempts per call, the first included (botocore "standard" mode).
        connect_timeout: seconds to wait for a connection to the endpoint.
        read_timeout: seconds to wait for each read from the socket (a stalled response or body).
    """

    endpoint_url: str | None = None
    region: str = "us-east-1"
    addressing_style: str = "auto"
    max_attempts: int = 5
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT
    read_timeout: float = DEFAULT_READ_TIMEOUT
    multipart_threshold: int = DEFAULT_MULTIPART_THRESHOLD
    multipart_chunk: int = DEFAULT_MULTIPART_CHUNK

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> S3Settings:
        """Read ``FEEDROUTER_S3_ENDPOINT_URL`` (else ``AWS_ENDPOINT_URL_S3``, ``AWS_ENDPOINT_URL``),
        ``AWS_REGION`` (else ``AWS_DEFAULT_REGION``), ``FEEDROUTER_S3_ADDRESSING_STYLE`` (default
        "path" with a custom endpoint), ``FEEDROUTER_S3_MAX_ATTEMPTS``,
        ``FEEDROUTER_S3_CONNECT_TIMEOUT`` and ``FEEDROUTER_S3_READ_TIMEOUT`` (seconds),
        ``FEEDROUTER_S3_MULTIPART_THRESHOLD`` and ``FEEDROUTER_S3_MULTIPART_CHUNK`` (bytes).

        Raises:
            SettingsError: [FR700] a setting with an invalid value, named.
        """
        env = os.environ if env is None else env
        return cls.from_settings(load_settings(env), env)

    @classmethod
    def from_settings(cls, settings: Settings, env: Mapping[str, str] | None = None) -> S3Settings:
        """From feedrouter's settings, with boto3's own endpoint and region variables in ``env``
        (default ``os.environ``) where the settings name none."""
        env = os.environ if env is None else env
        endpoint = settings.s3_endpoint_url or _first(env, "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")
        return cls(
            endpoint_url=endpoint,
            region=_first(env, "AWS_REGION", "AWS_DEFAULT_REGION") or "us-east-1",
            addressing_style=settings.s3_addressing_style or ("path" if endpoint else "auto"),
            max_attempts=settings.s3_max_attempts,
            connect_timeout=settings.s3_connect_timeout,
            read_timeout=settings.s3_read_timeout,
            multipart_threshold=settings.s3_multipart_threshold,
            multipart_chunk=settings.s3_multipart_chunk,
        )

    def client(self) -> Any:
        """A boto3 S3 client with these settings and the standard credential chain."""
        import boto3
        from botocore.config import Config

        config = Config(
            region_name=self.region,
            retries={"mode": "standard", "total_max_attempts": self.max_attempts},
            connect_timeout=self.connect_timeout,
            read_timeout=self.read_timeout,
            s3={"addressing_style": self.addressing_style},
        )
        return boto3.session.Session().client("s3", endpoint_url=self.endpoint_url, config=config)


class S3Store(ObjectStore):
    """Objects under ``s3://bucket/prefix``; keys are appended to the prefix."""

    def __init__(
        self, bucket: str, prefix: str = "", *, client: Any = None, settings: S3Settings | None = None
    ) -> None:
        self.bucket = bucket
        self.prefix = prefix.strip("/")
        self.uri = f"s3://{bucket}/{self.prefix}" if self.prefix else f"s3://{bucket}"
        self._client = client
        self._settings = settings

    @classmethod
    def from_uri(cls, uri: str, *, client: Any = None, settings: S3Settings | None = None) -> S3Store:
        """A store for ``s3://bucket[/prefix]``; the client defaults to one from the environment."""
        parts = urlsplit(canonical_prefix(uri, "S3 store URI"))
        if parts.scheme != "s3" or not parts.netloc:
            raise error("FR503", f"not an s3://bucket/prefix URI: {uri!r}")
        prefix = parts.path.strip("/")
        if prefix:
            validate_key(prefix)
        return cls(parts.netloc, prefix, client=client, settings=settings)

    @property
    def client(self) -> Any:
        """The boto3 client, created on first use (so a store can be built where boto3 is idle)."""
        if self._client is None:
            self._client = self.settings.client()
        return self._client

    def _object_key(self, key: str) -> str:
        return f"{self.prefix}/{key}" if self.prefix else key

    @property
    def settings(self) -> S3Settings:
        """The settings this store was given, else the environment's (read once)."""
        if self._settings is None:
            self._settings = S3Settings.from_env()
        return self._settings

    def _put(self, key: str, data: bytes) -> None:
        if len(data) >= self.settings.multipart_threshold:
            self._put_stream(key, io.BytesIO(data))
            return
        with _errors(self.bucket, key):
            self.client.put_object(Bucket=self.bucket, Key=self._object_key(key), Body=data)

    def _put_stream(self, key: str, stream: BinaryIO) -> None:
        # One chunk in memory at a time: an object below the threshold is one PUT, a larger one a
        # multipart upload (multipart.py), aborted if anything fails so no parts linger unbilled.
        first = _read_full(stream, self.settings.multipart_threshold)
        if len(first) < self.settings.multipart_threshold:
            with _errors(self.bucket, key):
                self.client.put_object(Bucket=self.bucket, Key=self._object_key(key), Body=first)
            return
        with _errors(self.bucket, key):
            upload_in_parts(
                self.client, self.bucket, self._object_key(key), _chunks(first, stream, self.settings)
            )

    def _get(self, key: str) -> bytes:
        with _errors(self.bucket, key):
            response = self.client.get_object(Bucket=self.bucket, Key=self._object_key(key))
            return bytes(response["Body"].read())

    def _open(self, key: str) -> ObjectStream:
        # the body streams: a cut or stalled read is FR502 (S3Body), bounded by the read timeout
        with _errors(self.bucket, key):
            response = self.client.get_object(Bucket=self.bucket, Key=self._object_key(key))
        return S3Body(response["Body"], f"{self.uri}/{key}")

    def _exists(self, key: str) -> bool:
        try:
            with _errors(self.bucket, key):
                self.client.head_object(Bucket=self.bucket, Key=self._object_key(key))
        except ObjectNotFoundError:
            return False
        return True

    def _delete(self, key: str) -> None:
        with _errors(self.bucket, key):
            self.client.delete_object(Bucket=self.bucket, Key=self._object_key(key))

    def _list(self, prefix: str) -> Iterator[str]:
        root = f"{self.prefix}/" if self.prefix else ""
        with _errors(self.bucket, prefix or "(all)"):
            pages = self.client.get_paginator("list_objects_v2").paginate(
                Bucket=self.bucket, Prefix=root + prefix
            )
            # Materialize inside the error handler: pagination calls S3 lazily.
            keys = [item["Key"][len(root) :] for page in pages for item in page.get("Contents", ())]
        return iter(keys)


class S3Body:
    """A streaming S3 body whose read failures are storage errors: a body cut short
    (``IncompleteReadError``), a connection reset or a read timeout while it streams is a
    :class:`~feedrouter.errors.TransientStorageError` (FR502) naming the object, never a raw
    botocore or urllib3 error. Readable like a binary file (``read``, ``readinto``, ``close``)."""

    def __init__(self, body: Any, uri: str) -> None:
        self._body = body
        self.uri = uri

    def read(self, size: int | None = -1) -> bytes:
        try:
            return bytes(self._body.read(None if size is None or size < 0 else size))
        except Exception as exc:
            raise _translated(exc, self.uri) from exc

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def readable(self) -> bool:
        return True

    def close(self) -> None:
        with contextlib.suppress(Exception):  # a broken connection: nothing left to read or lose
            self._body.close()

    def __enter__(self) -> S3Body:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _translated(exc: BaseException, where: str) -> BaseException:
    translated = classify(exc, where)
    return exc if translated is None else translated


@contextmanager
def _errors(bucket: str, key: str) -> Iterator[None]:
    """Translate botocore failures into the storage error tree."""
    try:
        yield
    except Exception as exc:
        translated = classify(exc, f"s3://{bucket}/…/{key}")
        if translated is None:
            raise
        raise translated from exc


def classify(exc: BaseException, where: str) -> StorageError | None:
    """The storage error for a botocore exception, or None when ``exc`` is not one of botocore's."""
    from botocore import exceptions as bce

    if _is_cut_short(exc):
        return TransientStorageError(
            f"the body of {where} was cut short or stalled while streaming ({type(exc).__name__}): "
            "a retry reads it again"
        )
    if isinstance(exc, bce.ClientError):
        code = str(exc.response.get("Error", {}).get("Code", ""))
        if code in NOT_FOUND_CODES:
            return ObjectNotFoundError(f"no object {where}")
        cls = TransientStorageError if code in TRANSIENT_CODES else StorageError
        return cls(f"S3 refused {where}: {code} {exc.response.get('Error', {}).get('Message', '')}")
    if isinstance(exc, (bce.ConnectionError, bce.HTTPClientError)):
        return TransientStorageError(f"cannot reach S3 for {where}: {type(exc).__name__}")
    if isinstance(exc, bce.NoCredentialsError):
        return StorageError(f"no AWS credentials found for {where} (standard chain or connection)")
    if isinstance(exc, bce.BotoCoreError):
        return StorageError(f"S3 call failed for {where}: {type(exc).__name__}")
    return None


def _is_cut_short(exc: BaseException) -> bool:
    """A response body that ended early, was reset or timed out while streaming."""
    from botocore import exceptions as bce
    from urllib3 import exceptions as u3

    streaming = (
        bce.IncompleteReadError,
        bce.ResponseStreamingError,
        bce.ReadTimeoutError,
        u3.ProtocolError,
        u3.ReadTimeoutError,
        u3.IncompleteRead,
        http.client.IncompleteRead,
        ConnectionResetError,
    )
    return isinstance(exc, streaming)


def _first(env: Mapping[str, str], *names: str) -> str | None:
    return next((env[name] for name in names if env.get(name)), None)


def _read_full(stream: BinaryIO, size: int) -> bytes:
    """Up to ``size`` bytes of ``stream``, fewer only at its end (``read`` may return short)."""
    chunks, missing = [], size
    while missing > 0:
        chunk = stream.read(missing)
        if not chunk:
            break
        chunks.append(chunk)
        missing -= len(chunk)
    return b"".join(chunks)


def _chunks(first: bytes, stream: BinaryIO, settings: S3Settings) -> Iterator[bytes]:
    """The parts of an upload: ``first`` cut into chunks, then the rest of ``stream`` chunk by chunk."""
    size = settings.multipart_chunk
    view = memoryview(first)
    # all but the tail of ``first``; the tail joins the stream's next read, so no part but the last
    # is ever smaller than a chunk (S3 refuses small parts in the middle)
    whole = len(first) - len(first) % size
    for start in range(0, whole, size):
        yield bytes(view[start : start + size])
    tail = bytes(view[whole:])
    while True:
        chunk = tail + _read_full(stream, size - len(tail))
        tail = b""
        if not chunk:
            return
        yield chunk
        if len(chunk) < size:
            return
