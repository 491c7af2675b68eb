"""The object store interface: one root URI, relative keys, bytes in and out.

Every store is rooted at a URI (``file:///srv/feedrouter/plans``, ``s3://bucket/plans``) and takes
keys relative to it (:mod:`feedrouter.storage.keys`), so code that builds keys from catalog names
can never read or write outside the root. Failures raise :class:`~feedrouter.errors.StorageError`
(terminal: wrong bucket, no permission, missing object) or
:class:`~feedrouter.errors.TransientStorageError` (a retry may help: throttling, dropped connection).
"""

from __future__ import annotations

import io
from abc import ABC, abstractmethod
from collections.abc import Iterator
from types import TracebackType
from typing import BinaryIO, Protocol

from feedrouter.errors import ObjectNotFoundError, StorageError, error
from feedrouter.storage.keys import validate_key, validate_prefix

__all__ = ["ObjectNotFoundError", "ObjectStore", "ObjectStream"]


class ObjectStream(Protocol):
    """What :meth:`ObjectStore.open` returns: a binary stream to read once and close, used as a
    context manager (an open file, an S3 body, a ``BytesIO``)."""

    def read(self, size: int | None = -1, /) -> bytes: ...

    def close(self) -> None: ...

    def __enter__(self) -> ObjectStream: ...

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None, /
    ) -> object: ...


class ObjectStore(ABC):
    """Bytes under keys relative to :attr:`uri`. Implementations: ``FileStore``, ``S3Store``."""

    #: The root URI, without a trailing slash.
    uri: str

    def put(self, key: str, data: bytes) -> str:
        """Write ``data`` under ``key`` (replacing any object there); returns the object's URI.

        Writers never expose a partial object: readers see the old bytes or the new ones.
        """
        self._put(validate_key(key), data)
        return self.uri_for(key)

    def put_stream(self, key: str, stream: BinaryIO) -> str:
        """Write what ``stream`` holds under ``key``, for objects too large to hold whole; returns
        the object's URI. ``S3Store`` holds one part at a time (a multipart upload from
        ``s3_multipart_threshold`` bytes on), ``FileStore`` copies in blocks.

        Like :meth:`put`, readers never see a partial object.
        """
        self._put_stream(validate_key(key), stream)
        return self.uri_for(key)

    def get(self, key: str) -> bytes:
        """The bytes under ``key``; :class:`ObjectNotFoundError` when there is no such object."""
        return self._get(validate_key(key))

    def open(self, key: str) -> ObjectStream:
        """The object under ``key`` as a readable binary stream, for objects too large to hold whole.

        Use it as a context manager (``with store.open(key) as stream:``) so that the file or the
        connection is released. Reading fails with storage errors only: a body cut short or stalled
        while it streams is a :class:`~feedrouter.errors.TransientStorageError` (FR502).

        Raises:
            ObjectNotFoundError: [FR501] no such object. StorageError: the store refused the read.
        """
        return self._open(validate_key(key))

    def exists(self, key: str) -> bool:
        return self._exists(validate_key(key))

    def delete(self, key: str) -> None:
        """Remove the object under ``key``; deleting a missing object is not an error."""
        self._delete(validate_key(key))

    def list(self, prefix: str = "") -> Iterator[str]:
        """Keys (relative to the root) that start with ``prefix``, in lexicographic order."""
        return self._list(validate_prefix(prefix))

    def uri_for(self, key: str) -> str:
        """The absolute URI of ``key`` under this store's root."""
        return f"{self.uri}/{validate_key(key)}"

    def key_of(self, uri: str) -> str:
        """The key of an absolute URI under this store's root; StorageError for any other URI."""
        root = self.uri + "/"
        if not uri.startswith(root):
            raise StorageError(f"{uri} is not under this store's root {self.uri}", code="FR500")
        key = uri[len(root) :]
        if "?" in key or "#" in key:
            # uri_for never writes them: such a URI was not made by this store.
            raise error("FR503", f"{uri} has a query or a fragment; it names no object of {self.uri}")
        return validate_key(key)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.uri!r})"

    @abstractmethod
    def _put(self, key: str, data: bytes) -> None: ...

    @abstractmethod
    def _get(self, key: str) -> bytes: ...

    def _put_stream(self, key: str, stream: BinaryIO) -> None:
        # stores that cannot stream writes take the whole object; FileStore and S3Store stream
        self._put(key, stream.read())

    def _open(self, key: str) -> ObjectStream:
        # stores that cannot stream read the whole object; FileStore and S3Store stream
        return io.BytesIO(self._get(key))

    @abstractmethod
    def _exists(self, key: str) -> bool: ...

    @abstractmethod
    def _delete(self, key: str) -> None: ...

    @abstractmethod
    def _list(self, prefix: str) -> Iterator[str]: ...
