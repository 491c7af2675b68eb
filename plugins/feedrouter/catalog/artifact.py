"""The plan artifact: a compiled plan as bytes in the object store, and the checks on reading it.

Layout::

    FEEDROUTER-PLAN\\n
    {"catalog_version": 7, "compression": "zlib", "digest": "<sha256 of payload>", "feed": "news",
     "feedrouter": "0.1.0", "format": 1, "payload_bytes": 123}\\n
    <payload: zlib-compressed pickle of a CompiledPlan>

**Trust boundary.** The payload is a pickle, and unpickling runs code named by the data. Plans are
therefore only read from the deployment's own object store, and only after the SHA-256 of the payload
matches the digest recorded in the catalog (``plan_builds.digest``) — checked *before* anything is
decompressed or unpickled. Whoever can write both the plans prefix and the catalog can run code in
the routing job; grant those rights as you would deploy rights.

Every refusal is a :class:`~feedrouter.errors.CompileError` with code FR305.
"""

from __future__ import annotations

import gc
import hashlib
import json
import pickle
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import feedrouter
from feedrouter.catalog.compiled import CompiledPlan
from feedrouter.errors import CompileError
from feedrouter.storage import ObjectStore

MAGIC = b"FEEDROUTER-PLAN\n"
# 2: plans grouped by signature (shared plans), interned return items with slot refs, flat code
FORMAT_VERSION = 2
MAX_HEADER_BYTES = 4096
SUFFIX = ".plan"


@dataclass(frozen=True)
class ArtifactHeader:
    """The readable part of an artifact: what it is, for which feed and version, and its digest."""

    format: int
    feedrouter: str
    feed: str
    catalog_version: int
    digest: str
    payload_bytes: int
    compression: str = "zlib"

    def to_bytes(self) -> bytes:
        return json.dumps(self.__dict__, sort_keys=True).encode("utf-8")


@dataclass(frozen=True)
class Artifact:
    """An encoded plan: the bytes to store and their header."""

    data: bytes
    header: ArtifactHeader

    @property
    def digest(self) -> str:
        return self.header.digest


def encode(plan: CompiledPlan, *, level: int = 6) -> Artifact:
    """Serialize a compiled plan (pickle, zlib) behind a header naming its digest."""
    with gc_paused():
        payload = zlib.compress(pickle.dumps(plan, protocol=pickle.HIGHEST_PROTOCOL), level)
    header = ArtifactHeader(
        format=FORMAT_VERSION,
        feedrouter=feedrouter.__version__,
        feed=plan.feed.name,
        catalog_version=plan.catalog_version,
        digest=hashlib.sha256(payload).hexdigest(),
        payload_bytes=len(payload),
    )
    return Artifact(MAGIC + header.to_bytes() + b"\n" + payload, header)


def read_header(data: bytes, source: str = "plan artifact") -> tuple[ArtifactHeader, bytes]:
    """The header and the payload of ``data``; FR305 when it is not a plan this version reads."""
    if not data.startswith(MAGIC):
        raise _refuse(source, "it is not a feedrouter plan artifact (no FEEDROUTER-PLAN header)")
    end = data.find(b"\n", len(MAGIC), len(MAGIC) + MAX_HEADER_BYTES)
    if end < 0:
        raise _refuse(source, "its header is unterminated or too long")
    try:
        fields = json.loads(data[len(MAGIC) : end])
        header = ArtifactHeader(**fields)
    except (ValueError, TypeError) as exc:
        raise _refuse(source, f"its header is unreadable ({exc})") from None
    _check_versions(header, source)
    return header, data[end + 1 :]


def decode(data: bytes, expected_digest: str, source: str = "plan artifact") -> CompiledPlan:
    """Verify and unpickle an artifact; the digest is checked before anything is unpickled."""
    header, payload = read_header(data, source)
    actual = hashlib.sha256(payload).hexdigest()
    if actual != header.digest or len(payload) != header.payload_bytes:
        raise _refuse(source, f"it is corrupted: payload digest {actual[:12]}… does not match its header")
    if actual != expected_digest:
        raise _refuse(
            source, f"its digest {actual[:12]}… is not the {expected_digest[:12]}… the catalog recorded"
        )
    with gc_paused():
        plan = pickle.loads(zlib.decompress(payload))
    if not isinstance(plan, CompiledPlan) or plan.feed.name != header.feed:
        raise _refuse(source, "its payload is not the compiled plan its header describes")
    return plan


def load_plan(store: ObjectStore, uri: str, expected_digest: str) -> CompiledPlan:
    """Read the artifact at ``uri`` from ``store`` and return its plan, or refuse it (FR305).

    Args:
        store: the deployment's plans store; ``uri`` must lie under its root.
        uri: the artifact's URI as recorded in ``plan_builds.artifact_uri``.
        expected_digest: ``plan_builds.digest`` of the same row.
    """
    return decode(store.get(store.key_of(uri)), expected_digest, source=uri)


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while millions of objects are made at once.

    A plan of 100,000 subscriptions is millions of small objects; with the collector running,
    unpickling it spends most of its time in repeated full collections (27 s instead of about 3 s).
    Nothing made here is garbage yet, so pausing loses nothing.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _check_versions(header: ArtifactHeader, source: str) -> None:
    if header.format != FORMAT_VERSION:
        raise _refuse(source, f"it has format {header.format}; this feedrouter reads format {FORMAT_VERSION}")
    if header.feedrouter != feedrouter.__version__:
        raise _refuse(
            source,
            f"it was built by feedrouter {header.feedrouter}, this is {feedrouter.__version__}; "
            f"run `feedrouter build-plan --feed {header.feed}`",
        )
    if header.compression != "zlib":
        raise _refuse(source, f"it uses unknown compression {header.compression!r}")


def _refuse(source: str, why: str) -> CompileError:
    return CompileError(f"refusing plan {source}: {why}", code="FR305")
