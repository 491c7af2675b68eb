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
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from feedrouter.errors import StorageError, TransientStorageError, error
from feedrouter.storage.base import ObjectNotFoundError, ObjectStore, ObjectStream
from feedrouter.storage.keys import validate_key
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

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> S3Settings:
        """Read ``FEEDROUTER_S3_ENDPOINT_URL`` (else ``AWS_ENDPOINT_URL_S3``, ``AWS_ENDPOINT_URL``),
        ``AWS_REGION`` (else ``AWS_DEFAULT_REGION``), ``FEEDROUTER_S3_ADDRESSING_STYLE`` (default
        "path" with a custom endpoint), ``FEEDROUTER_S3_MAX_ATTEMPTS``,
        ``FEEDROUTER_S3_CONNECT_TIMEOUT`` and ``FEEDROUTER_S3_READ_TIMEOUT`` (seconds).

        Raises:
            StorageError: [FR500] a number setting that is not a positive number.
        """
        env = os.environ if env is None else env
        endpoint = _first(env, "FEEDROUTER_S3_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")
        style = env.get("FEEDROUTER_S3_ADDRESSING_STYLE") or ("path" if endpoint else "auto")
        return cls(
            endpoint_url=endpoint,
            region=_first(env, "AWS_REGION", "AWS_DEFAULT_REGION") or "us-east-1",
            addressing_style=style,
            max_attempts=int(_number(env, "FEEDROUTER_S3_MAX_ATTEMPTS", 5, whole=True)),
            connect_timeout=_number(env, "FEEDROUTER_S3_CONNECT_TIMEOUT", DEFAULT_CONNECT_TIMEOUT),
            read_timeout=_number(env, "FEEDROUTER_S3_READ_TIMEOUT", DEFAULT_READ_TIMEOUT),
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
            self._client = (self._settings or S3Settings.from_env()).client()
        return self._client

    def _object_key(self, key: str) -> str:
        return f"{self.prefix}/{key}" if self.prefix else key

    def _put(self, key: str, data: bytes) -> None:
        with _errors(self.bucket, key):
            self.client.put_object(Bucket=self.bucket, Key=self._object_key(key), Body=data)

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


def _number(env: Mapping[str, str], name: str, default: float, whole: bool = False) -> float:
    text = env.get(name)
    if not text:
        return default
    try:
        value = int(text) if whole else float(text)
    except ValueError:
        value = 0
    if not value > 0 or value != value or value == float("inf"):
        kind = "a positive whole number" if whole else "a positive number of seconds"
        raise StorageError(f"{name}={text!r} is not {kind}", code="FR500")
    return value


def _first(env: Mapping[str, str], *names: str) -> str | None:
    return next((env[name] for name in names if env.get(name)), None)
