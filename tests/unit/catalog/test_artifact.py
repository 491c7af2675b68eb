"""Plan artifacts: round trip, and refusal (FR305) of anything corrupted, foreign or mismatched,
checked before a single byte is unpickled."""

from __future__ import annotations

import hashlib
import json
import pickle
import zlib

import pytest

import feedrouter
from feedrouter import Router
from feedrouter.catalog import artifact
from feedrouter.catalog.compiled import CompiledPlan, FeedConfig, Target
from feedrouter.errors import CompileError

UNPICKLED: list[str] = []


def _mark_unpickled() -> None:
    UNPICKLED.append("code ran")


class _Trap:
    """Unpickling this calls _mark_unpickled: a stand-in for a malicious payload."""

    def __reduce__(self):  # type: ignore[no-untyped-def]
        return (_mark_unpickled, ())


def _plan(version: int = 3) -> CompiledPlan:
    router = Router.compile([("1", "//title")])
    target = Target(1, "titles", "alice", "s3://out/alice")
    return CompiledPlan(
        FeedConfig("news", "s3://in/news", "{prefix}/{hour}/"), version, router, {"1": target}
    )


def _with_header(data: bytes, **changes: object) -> bytes:
    header, payload = artifact.read_header(data)
    fields = {**header.__dict__, **changes}
    return artifact.MAGIC + json.dumps(fields).encode() + b"\n" + payload


def test_round_trip() -> None:
    encoded = artifact.encode(_plan())
    plan = artifact.decode(encoded.data, encoded.digest)
    assert plan.route(b"<a><title>x</title></a>") == {"1": b"<title>x</title>"}
    assert plan.targets["1"].subscriber == "alice" and plan.catalog_version == 3
    header, _ = artifact.read_header(encoded.data)
    assert (header.feed, header.catalog_version, header.format, header.feedrouter) == (
        "news",
        3,
        artifact.FORMAT_VERSION,
        feedrouter.__version__,
    )


NEXT_FORMAT = artifact.FORMAT_VERSION + 1


@pytest.mark.parametrize(
    ("mangle", "why"),
    [
        (lambda d: d[:-1] + bytes([d[-1] ^ 1]), "corrupted"),
        (lambda d: d[:-20], "corrupted"),
        (lambda d: b"<?xml version='1.0'?><plan/>", "not a feedrouter plan artifact"),
        (lambda d: artifact.MAGIC + b"x" * 5000, "unterminated or too long"),
        (lambda d: artifact.MAGIC + b"{not json}\n", "unreadable"),
        (lambda d: _with_header(d, format=NEXT_FORMAT), f"has format {NEXT_FORMAT}"),
        (lambda d: _with_header(d, feedrouter="0.0.1"), "built by feedrouter 0.0.1"),
        (lambda d: _with_header(d, compression="lz4"), "unknown compression"),
    ],
)
def test_bad_artifacts_are_refused(mangle, why: str) -> None:  # type: ignore[no-untyped-def]
    encoded = artifact.encode(_plan())
    with pytest.raises(CompileError, match=rf"\[FR305\] refusing plan .*{why}"):
        artifact.decode(mangle(encoded.data), encoded.digest)


def test_an_artifact_the_catalog_did_not_record_is_refused() -> None:
    encoded = artifact.encode(_plan())
    with pytest.raises(CompileError, match="not the 000000000000… the catalog recorded"):
        artifact.decode(encoded.data, "0" * 64)


def test_the_digest_is_checked_before_anything_is_unpickled() -> None:
    payload = zlib.compress(pickle.dumps(_Trap()))
    digest = hashlib.sha256(payload).hexdigest()
    header = artifact.ArtifactHeader(1, feedrouter.__version__, "news", 3, digest, len(payload))
    data = artifact.MAGIC + header.to_bytes() + b"\n" + payload
    with pytest.raises(CompileError, match="FR305"):
        artifact.decode(data, "f" * 64)  # self-consistent, but not what the catalog recorded
    assert UNPICKLED == []


def _feed_plan(name: str, feed_id: int) -> CompiledPlan:
    router = Router.compile([("1", "//title")])
    feed = FeedConfig(name, f"s3://in/{name}", "{prefix}/{hour}/", id=feed_id)
    return CompiledPlan(feed, 3, router, {"1": Target(1, "titles", "alice", "s3://out/alice")})


def test_the_header_names_the_feed_and_its_id() -> None:
    header, _ = artifact.read_header(artifact.encode(_feed_plan("news", 7)).data)
    assert (header.feed, header.feed_id) == ("news", 7)


@pytest.mark.parametrize(("feed", "feed_id"), [("sports", None), ("sports", 8), ("news", 8)])
def test_an_artifact_of_another_feed_is_refused_before_unpickling(feed: str, feed_id: int | None) -> None:
    encoded = artifact.encode(_feed_plan("news", 7))
    with pytest.raises(
        CompileError, match=r"\[FR306\] refusing plan .*built for feed 'news' \(id 7\)"
    ) as caught:
        artifact.decode(encoded.data, encoded.digest, feed=feed, feed_id=feed_id)
    assert caught.value.code == "FR306"
    assert artifact.decode(encoded.data, encoded.digest, feed="news", feed_id=7).feed.id == 7


def test_a_payload_whose_feed_id_disagrees_with_its_header_is_refused() -> None:
    encoded = artifact.encode(_feed_plan("news", 7))
    forged = _with_header(encoded.data, feed_id=8)
    with pytest.raises(CompileError, match="not the compiled plan its header describes"):
        artifact.decode(forged, encoded.digest, feed="news", feed_id=8)


def test_the_summary_is_read_without_unpickling_the_router(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    encoded = artifact.encode(_plan())

    def no_router(self: Router, state: object) -> None:
        raise AssertionError("the router was unpickled")

    monkeypatch.setattr(Router, "__setstate__", no_router)
    summary = artifact.decode_summary(encoded.data, encoded.digest, feed="news")
    assert summary.feed.name == "news" and summary.catalog_version == 3
    assert summary.targets == {"1": Target(1, "titles", "alice", "s3://out/alice")}
    with pytest.raises(AssertionError, match="the router was unpickled"):
        artifact.decode(encoded.data, encoded.digest)


def test_the_summary_is_checked_like_the_plan() -> None:
    encoded = artifact.encode(_plan())
    with pytest.raises(CompileError) as caught:
        artifact.decode_summary(encoded.data, "0" * 64)
    assert caught.value.code == "FR305"
    with pytest.raises(CompileError) as caught:
        artifact.decode_summary(encoded.data, encoded.digest, feed="wire")
    assert caught.value.code == "FR306"
    misplaced = _with_header(encoded.data, summary_bytes=0)
    with pytest.raises(CompileError, match="summary"):
        artifact.decode_summary(misplaced, encoded.digest)
