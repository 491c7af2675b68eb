"""Object stores in the driver and in Spark tasks: opened by URI, one S3 client per process.

Tasks receive a :class:`StoreOpener` (plain, picklable settings, no credentials) and open the
stores they need; boto3 finds credentials in the executor's environment through its standard chain
(environment, shared files, instance roles). Stores and the S3 client are cached per Python worker
process, so a task does not pay for a new client per object or per subscriber.

Objects are read as streams through the stores themselves (:meth:`~feedrouter.storage.base.
ObjectStore.open`), so container files are never held whole.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from feedrouter.storage import ObjectStore, open_store
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
