"""The object store: one small interface over ``s3://`` and ``file://``.

>>> import tempfile
>>> store = open_store(tempfile.mkdtemp())
>>> uri = store.put(join_key(component("news"), "a.txt"), b"hello")
>>> store.get("news/a.txt"), list(store.list("news/"))
(b'hello', ['news/a.txt'])

boto3 is imported only when an ``s3://`` store first talks to S3.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from feedrouter.errors import StorageError
from feedrouter.storage.base import ObjectNotFoundError, ObjectStore
from feedrouter.storage.keys import component, join_key, validate_key
from feedrouter.storage.local import FileStore

if TYPE_CHECKING:
    from feedrouter.storage.s3 import S3Settings

__all__ = [
    "FileStore",
    "ObjectNotFoundError",
    "ObjectStore",
    "component",
    "join_key",
    "open_store",
    "validate_key",
]


def open_store(uri: str, *, client: Any = None, settings: S3Settings | None = None) -> ObjectStore:
    """The store rooted at ``uri``: ``s3://bucket/prefix``, ``file:///path`` or a plain local path.

    Args:
        uri: the root of the store.
        client: for ``s3://``, a boto3 S3 client to use instead of one configured from the
            environment (e.g. the client of an Airflow connection).
        settings: for ``s3://``, the S3 settings (timeouts, multipart sizes; and the client's
            configuration when no client is given); default: the environment's.
    """
    if uri.startswith("s3://"):
        from feedrouter.storage.s3 import S3Store

        return S3Store.from_uri(uri, client=client, settings=settings)
    if uri.startswith("file:"):
        return FileStore.from_uri(uri)
    if "://" in uri:
        raise StorageError(f"unsupported store URI {uri!r}: use s3:// or file://", code="FR500")
    return FileStore(uri)
