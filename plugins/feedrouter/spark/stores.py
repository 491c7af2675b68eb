"""Object stores in the driver and in Spark tasks: opened by URI, one S3 client per process.

Tasks receive a :class:`StoreOpener` (plain, picklable settings, no credentials) and open the
stores they need; boto3 finds credentials in the executor's environment through its standard chain
(environment, shared files, instance roles). Stores and the S3 client are cached per Python worker
process, so a task does not pay for a new client per object or per subscriber.

:func:`open_stream` reads an object as a stream, so container files are never held whole.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, BinaryIO

from feedrouter.errors import StorageError
from feedrouter.storage import FileStore, ObjectStore, open_store, validate_key
from feedrouter.storage.s3 import S3Settings

_STORES: dict[tuple[object, str], ObjectStore] = {}
_CLIENTS: dict[S3Settings, Any] = {}


@dataclass(frozen=True)
class StoreOpener:
    """Opens ``s3://`` and ``file://`` stores with the same S3 settings everywhere.

    Attributes:
        s3: endpoint, region, retries (:class:`~feedrouter.storage.s3.S3Settings`); None: read
            them from the environment of the process that opens the store.
    """

    s3: S3Settings | None = None

    @classmethod
    def from_env(cls) -> StoreOpener:
        """The driver's S3 settings, to be shipped to the tasks."""
        return cls(S3Settings.from_env())

    def open(self, uri: str) -> ObjectStore:
        """The store rooted at ``uri`` (cached in this process)."""
        key = (self, uri)
        store = _STORES.get(key)
        if store is None:
            store = _STORES[key] = self._open(uri)
        return store

    def _open(self, uri: str) -> ObjectStore:
        if not uri.startswith("s3://"):
            return open_store(uri)
        from feedrouter.storage.s3 import S3Store

        return S3Store.from_uri(uri, client=self._client())

    def _client(self) -> Any:
        settings = self.s3 or S3Settings.from_env()
        client = _CLIENTS.get(settings)
        if client is None:
            client = _CLIENTS[settings] = settings.client()  # boto3 clients are thread-safe
        return client


@contextmanager
def open_stream(store: ObjectStore, key: str) -> Iterator[BinaryIO]:
    """The object under ``key`` as a readable stream, closed on exit."""
    validate_key(key)
    stream = _s3_stream(store, key) if hasattr(store, "bucket") else _file_stream(store, key)
    try:
        yield stream
    finally:
        stream.close()


def _s3_stream(store: Any, key: str) -> BinaryIO:
    # A body cut short or stalled while the splitter reads it is a TransientStorageError (FR502):
    # the task fails and is retried, the hour is not lost to an unclassified botocore error.
    return store.open_body(key)  # type: ignore[no-any-return]


def _file_stream(store: ObjectStore, key: str) -> BinaryIO:
    if not isinstance(store, FileStore):
        return io.BytesIO(store.get(key))
    path = store.root.joinpath(*key.split("/"))
    if not path.resolve().is_relative_to(store.root):
        raise StorageError(f"key {key!r} resolves outside {store.uri}", code="FR500")
    try:
        return path.open("rb")
    except OSError:
        return io.BytesIO(store.get(key))  # the store's own call raises the right storage error
