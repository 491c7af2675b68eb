"""The s3:// store against moto's S3 API server on loopback."""

from __future__ import annotations

import gzip
import io
import os
from dataclasses import replace
from typing import Any

import pytest

from feedrouter.errors import StorageError
from feedrouter.storage import ObjectNotFoundError, component, join_key, open_store
from feedrouter.storage.s3 import S3Settings, S3Store

pytestmark = pytest.mark.integration


def test_put_get_list_exists_delete(s3_bucket: str) -> None:
    store = open_store(f"s3://{s3_bucket}/root")
    other = open_store(f"s3://{s3_bucket}/rootless")
    other.put("x", b"not mine")
    key = join_key(component("../../escape"), "a.xml")
    assert store.put(key, b"<a/>") == f"s3://{s3_bucket}/root/%2E.%2F..%2Fescape/a.xml"
    store.put("b/c.xml", b"<c/>")
    assert store.get(key) == b"<a/>"
    assert list(store.list()) == [key, "b/c.xml"]  # nothing of the sibling prefix "rootless"
    assert list(store.list("b/")) == ["b/c.xml"]
    assert store.exists("b/c.xml") and not store.exists("b/d.xml")
    store.delete("b/c.xml")
    assert not store.exists("b/c.xml")


def test_missing_objects_and_buckets(s3_bucket: str) -> None:
    with pytest.raises(ObjectNotFoundError):
        open_store(f"s3://{s3_bucket}/root").get("missing")
    with pytest.raises(StorageError, match="NoSuchBucket") as caught:
        open_store("s3://no-such-bucket-here/x").get("k")
    assert not caught.value.transient


def test_open_streams_an_object_and_names_a_missing_one(s3_bucket: str) -> None:
    store = open_store(f"s3://{s3_bucket}/root")
    data = gzip.compress(b"<m>x</m>" * 50_000)
    store.put("in/a.xml.gz", data)
    with store.open("in/a.xml.gz") as stream:
        assert stream.read(10) == data[:10]  # a stream: read in pieces
        assert stream.read() == data[10:]
    with pytest.raises(ObjectNotFoundError):
        store.open("in/missing.xml")
    with pytest.raises(StorageError, match="FR503"):
        store.open("in/../x.xml")


@pytest.mark.parametrize("action", ["truncate", "stall"])
def test_open_reads_a_body_cut_short_or_stalled_as_fr502(
    s3_bucket: str, s3_endpoint: str, monkeypatch: pytest.MonkeyPatch, action: str
) -> None:
    """Through the loopback fault proxy: the stream ObjectStore.open hands out raises a transient
    storage error naming the object, within the (here 1 s) read timeout."""
    from feedrouter.errors import TransientStorageError
    from tests.integration.faults.proxy import FaultProxy, Rule

    open_store(f"s3://{s3_bucket}/root").put("in/a.xml", b"<m>" + b"x" * 100_000 + b"</m>")
    with FaultProxy(s3_endpoint) as proxy:
        monkeypatch.setenv("FEEDROUTER_S3_ENDPOINT_URL", proxy.url)
        monkeypatch.setenv("FEEDROUTER_S3_READ_TIMEOUT", "1")
        monkeypatch.setenv("FEEDROUTER_S3_MAX_ATTEMPTS", "1")
        rule = proxy.add(Rule("GET", r"/root/in/a\.xml$", action, times=1))  # type: ignore[arg-type]
        store = open_store(f"s3://{s3_bucket}/root")
        cut_short = pytest.raises(TransientStorageError, match=r"root/in/a\.xml was cut short")
        with cut_short as caught, store.open("in/a.xml") as stream:
            while stream.read(4096):
                pass
        assert rule.hits == 1 and caught.value.code == "FR502"
        with store.open("in/a.xml") as stream:  # the next read is whole
            assert stream.read().endswith(b"</m>")


MIB = 1024 * 1024


def _small_parts_store(bucket: str) -> S3Store:
    """A store that uploads in parts from 5 MiB on (S3's minimum part size), in 5 MiB parts."""
    settings = replace(S3Settings.from_env(), multipart_threshold=5 * MIB, multipart_chunk=5 * MIB)
    return S3Store.from_uri(f"s3://{bucket}/parts", settings=settings)


def test_a_part_above_the_threshold_arrives_intact_as_a_multipart_upload(s3_bucket: str) -> None:
    store = _small_parts_store(s3_bucket)
    data = os.urandom(12 * MIB + 123)
    store.put("big/part-0.xml", data)
    assert store.get("big/part-0.xml") == data
    head = store.client.head_object(Bucket=s3_bucket, Key="parts/big/part-0.xml")
    assert head["ETag"].strip('"').endswith("-3")  # S3's ETag of a 3-part upload: it went in parts
    store.put("big/small.xml", b"<a/>")  # below the threshold: one PUT
    head = store.client.head_object(Bucket=s3_bucket, Key="parts/big/small.xml")
    assert "-" not in head["ETag"]


def test_put_stream_uploads_a_stream_in_parts(s3_bucket: str) -> None:
    store = _small_parts_store(s3_bucket)
    data = os.urandom(11 * MIB)
    store.put_stream("big/stream.xml", io.BufferedReader(io.BytesIO(data), buffer_size=64 * 1024))
    assert store.get("big/stream.xml") == data
    store.put_stream("big/short.xml", io.BytesIO(b"<short/>"))
    assert store.get("big/short.xml") == b"<short/>"


class _BrokenStream(io.RawIOBase):
    """Gives ``size`` bytes, then fails like a source that went away mid-upload."""

    def __init__(self, size: int) -> None:
        self.left = size

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self.left <= 0:
            raise OSError("the source went away")
        n = min(len(buffer), self.left)
        buffer[:n] = b"x" * n
        self.left -= n
        return n


def test_an_unfinished_upload_is_aborted_and_publishes_nothing(s3_bucket: str) -> None:
    store = _small_parts_store(s3_bucket)
    with pytest.raises(OSError, match="went away"):
        store.put_stream("big/broken.xml", io.BufferedReader(_BrokenStream(12 * MIB)))
    assert not store.exists("big/broken.xml")
    assert store.client.list_multipart_uploads(Bucket=s3_bucket).get("Uploads", []) == []
