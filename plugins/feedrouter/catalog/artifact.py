"""The plan artifact: a compiled plan as bytes in the object store, and the checks on reading it.

Layout::

    FEEDROUTER-PLAN\\n
    {"catalog_version": 7, "compression": "zlib", "digest": "<sha256 of payload>", "feed": "news",
     "feed_id": 3, "feedrouter": "0.1.0", "format": 3, "payload_bytes": 123}\\n
    <payload: zlib-compressed pickle of a CompiledPlan>

**Trust boundary.** The payload is a pickle, and unpickling runs code named by the data. Plans are
therefore only read from the deployment's own object store, and only after the SHA-256 of the payload
matches the digest recorded in the catalog (``plan_builds.digest``) — checked *before* anything is
decompressed or unpickled. Whoever can write both the plans prefix and the catalog can run code in
the routing job; grant those rights as you would deploy rights.

**Bound to its feed.** The header names the feed (and its catalog id) the plan was built for, and
the payload's plan must say the same; a loader that names the feed it wants (``feed=``,
``feed_id=``) refuses an artifact of any other feed with FR306, so a ``plan_builds`` row pointed at
another feed's (genuine, digest-matching) artifact routes nothing.

Every other refusal is a :class:`~feedrouter.errors.CompileError` with code FR305.
"""

from __future__ import annotations

import hashlib
import json
import pickle
import zlib
from dataclasses import dataclass

import feedrouter
from feedrouter import heap
from feedrouter.catalog.compiled import CompiledPlan, PlanSummary
from feedrouter.errors import CompileError, error
from feedrouter.storage import ObjectStore

MAGIC = b"FEEDROUTER-PLAN\n"
# 2: plans grouped by signature (shared plans), interned return items with slot refs, flat code
# 3: the header names the feed id; FeedConfig carries the feed's result limits and DTD policy
# 4: optimization levels and claims moved out of plan/rules/, plans keep no subscription text or
#    AST, typed per-document caches (classes pickles name moved); the payload starts with the
#    plan's summary (feed settings and targets) so the batch driver never unpickles the router
# 5: a feed's join blocks compiled as witness plans with their equality selections factored out
#    (JoinsOfFeed.witnessing)
# 6: the blocks filed under a selection's or a needle's key grouped by the test of their other
#    conditions (selections.Indexed: a tuple of blocks per test)
# 7: a key's untested blocks are its first group (selections._split)
FORMAT_VERSION = 7
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
    feed_id: int | None = None
    #: the payload starts with the plan's summary (feed settings and targets, no router), this long
    summary_bytes: int = 0

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
    """Serialize a compiled plan (pickle, zlib) behind a header naming its digest.

    The payload is the plan's summary (small: what the batch driver reads) followed by the whole
    plan (what routing tasks read); one digest covers both.
    """
    with heap.paused():
        summary = zlib.compress(pickle.dumps(plan.summary, protocol=pickle.HIGHEST_PROTOCOL), level)
        payload = summary + zlib.compress(pickle.dumps(plan, protocol=pickle.HIGHEST_PROTOCOL), level)
    header = ArtifactHeader(
        summary_bytes=len(summary),
        format=FORMAT_VERSION,
        feedrouter=feedrouter.__version__,
        feed=plan.feed.name,
        feed_id=plan.feed.id,
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


def decode(
    data: bytes,
    expected_digest: str,
    source: str = "plan artifact",
    *,
    feed: str | None = None,
    feed_id: int | None = None,
) -> CompiledPlan:
    """Verify and unpickle an artifact; the digest and the feed are checked before anything is
    unpickled.

    Args:
        data: the artifact's bytes.
        expected_digest: ``plan_builds.digest`` of the row that named the artifact.
        source: the artifact's URI, for messages.
        feed, feed_id: the feed the caller routes (its name and catalog id); an artifact of another
            feed is refused with FR306. Loaders that know the feed must pass them.
    """
    header, payload = _verified(data, expected_digest, source, feed, feed_id)
    with heap.paused():
        plan = pickle.loads(zlib.decompress(payload[header.summary_bytes :]))
    if not isinstance(plan, CompiledPlan) or (plan.feed.name, plan.feed.id) != (header.feed, header.feed_id):
        raise _refuse(source, "its payload is not the compiled plan its header describes")
    return plan


def decode_summary(
    data: bytes,
    expected_digest: str,
    source: str = "plan artifact",
    *,
    feed: str | None = None,
    feed_id: int | None = None,
) -> PlanSummary:
    """The plan's summary (feed settings and targets) after the checks of :func:`decode`, without
    unpickling the router: what the batch driver needs, at a small fraction of the cost."""
    header, payload = _verified(data, expected_digest, source, feed, feed_id)
    summary = pickle.loads(zlib.decompress(payload[: header.summary_bytes]))
    if not isinstance(summary, PlanSummary) or summary.feed.name != header.feed:
        raise _refuse(source, "its summary is not the plan summary its header describes")
    return summary


def _verified(
    data: bytes, expected_digest: str, source: str, feed: str | None, feed_id: int | None
) -> tuple[ArtifactHeader, bytes]:
    """The header and payload of an artifact whose feed, integrity and digest are checked."""
    header, payload = read_header(data, source)
    check_feed(header, source, feed, feed_id)
    actual = hashlib.sha256(payload).hexdigest()
    if actual != header.digest or len(payload) != header.payload_bytes:
        raise _refuse(source, f"it is corrupted: payload digest {actual[:12]}… does not match its header")
    if actual != expected_digest:
        raise _refuse(
            source, f"its digest {actual[:12]}… is not the {expected_digest[:12]}… the catalog recorded"
        )
    if not 0 < header.summary_bytes < len(payload):
        raise _refuse(source, "its header does not place the plan's summary inside the payload")
    return header, payload


def check_feed(header: ArtifactHeader, source: str, feed: str | None, feed_id: int | None) -> None:
    """Refuse (FR306) an artifact built for another feed than ``feed`` (and ``feed_id``)."""
    wrong_name = feed is not None and header.feed != feed
    wrong_id = feed_id is not None and header.feed_id != feed_id
    if wrong_name or wrong_id:
        raise error(
            "FR306",
            f"refusing plan {source}: it was built for feed {header.feed!r} (id {header.feed_id}), "
            f"not for feed {feed!r} (id {feed_id}); run `feedrouter build-plan --feed {feed}`",
        )


def load_plan(
    store: ObjectStore,
    uri: str,
    expected_digest: str,
    *,
    feed: str | None = None,
    feed_id: int | None = None,
) -> CompiledPlan:
    """Read the artifact at ``uri`` from ``store`` and return its plan, or refuse it (FR305, FR306).

    Args:
        store: the deployment's plans store; ``uri`` must lie under its root.
        uri: the artifact's URI as recorded in ``plan_builds.artifact_uri``.
        expected_digest: ``plan_builds.digest`` of the same row.
        feed, feed_id: the feed the row belongs to (see :func:`decode`).
    """
    return decode(store.get(store.key_of(uri)), expected_digest, source=uri, feed=feed, feed_id=feed_id)



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
