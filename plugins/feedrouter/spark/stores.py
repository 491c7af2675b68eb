"""Object stores in the driver and in Spark tasks: opened by URI, one S3 client per process.

Tasks receive a :class:`StoreOpener` (plain, picklable settings) and open the stores they need.
S3 credentials either travel inside it (``credentials``: an Airflow connection's keys, carried in
the job to the executors, never in Spark conf or logs) or, when it carries none, boto3 finds them
in the task process through its standard chain (environment, shared files, instance roles). Stores
and S3 clients are cached per Python worker process, so a task does not pay for a new client per
object or per subscriber.

Objects are read as streams through the stores themselves (:meth:`~feedrouter.storage.base.
ObjectStore.open`), so container files are never held whole.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from feedrouter.errors import error
from feedrouter.storage import ObjectStore, open_store
from feedrouter.storage.s3 import S3Settings

#: The credential names a StoreOpener carries, as boto3 reads them from an environment.
CREDENTIAL_NAMES = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")

Credentials = tuple[tuple[str, str], ...]

_STORES: dict[tuple[object, str], ObjectStore] = {}
_CLIENTS: dict[tuple[S3Settings, Credentials], Any] = {}
#: held while a store or client is made, so that threads opening one at once make it once
#: (reentrant: opening a store makes its client)
_MAKING = threading.RLock()


@dataclass(frozen=True)
class StoreOpener:
    """Opens ``s3://`` and ``file://`` stores with the same S3 settings everywhere.

    Attributes:
        s3: endpoint, region, retries (:class:`~feedrouter.storage.s3.S3Settings`); None: read
            them from the environment of the process that opens the store.
        credentials: ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY`` and optionally
            ``AWS_SESSION_TOKEN`` for every S3 client this opener makes (driver and tasks); None or
            empty: the standard chain of the process. Never shown by ``repr``/``str``.
    """

    s3: S3Settings | None = None
    credentials: Mapping[str, str] | None = field(default=None, repr=False, kw_only=True)

    def __post_init__(self) -> None:
        # A sorted tuple: hashable (stores are cached by opener) and compared by value.
        object.__setattr__(self, "credentials", _checked(self.credentials))

    def __repr__(self) -> str:
        hidden = f", credentials=<{len(self._credentials)} hidden>" if self._credentials else ""
        return f"StoreOpener(s3={self.s3!r}{hidden})"

    __str__ = __repr__

    @classmethod
    def from_env(cls) -> StoreOpener:
        """The driver's S3 settings, to be shipped to the tasks (credentials: the tasks' chain)."""
        return cls(S3Settings.from_env())

    @property
    def _credentials(self) -> Credentials:
        return self.credentials or ()  # type: ignore[return-value]  # a tuple since __post_init__

    def open(self, uri: str) -> ObjectStore:
        """The store rooted at ``uri`` (cached in this process)."""
        key = (self, uri)
        store = _STORES.get(key)
        if store is None:
            with _MAKING:  # the join stage's writer threads open subscribers' stores at once
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
        cache_key = (settings, self._credentials)
        client = _CLIENTS.get(cache_key)
        if client is None:  # boto3 clients are thread-safe: one per settings and credentials
            with _MAKING:
                client = _CLIENTS.get(cache_key)
                if client is None:
                    client = _CLIENTS[cache_key] = s3_client(settings, dict(self._credentials))
        return client


def s3_client(settings: S3Settings, credentials: Mapping[str, str]) -> Any:
    """A boto3 S3 client with ``settings``, signed with ``credentials`` when there are any."""
    if not credentials:
        return settings.client()
    import boto3

    session = boto3.session.Session(
        aws_access_key_id=credentials.get("AWS_ACCESS_KEY_ID"),
        aws_secret_access_key=credentials.get("AWS_SECRET_ACCESS_KEY"),
        aws_session_token=credentials.get("AWS_SESSION_TOKEN"),
    )
    # settings.client() builds its config on a default session: reuse its config on this one
    template = settings.client()
    return session.client("s3", endpoint_url=settings.endpoint_url, config=template.meta.config)


def _checked(credentials: Mapping[str, str] | None) -> Credentials | None:
    if not credentials:
        return None
    unknown = sorted(set(credentials) - set(CREDENTIAL_NAMES))
    if unknown:  # name the keys, never the values
        expected = list(CREDENTIAL_NAMES)
        raise error("FR700", f"StoreOpener credentials: unknown names {unknown}, expected {expected}")
    if not credentials.get("AWS_ACCESS_KEY_ID") or not credentials.get("AWS_SECRET_ACCESS_KEY"):
        needed = "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are both needed"
        raise error("FR700", f"StoreOpener credentials: {needed}")
    return tuple(sorted((name, value) for name, value in credentials.items() if value))
