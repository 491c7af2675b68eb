"""The s3:// store against moto's S3 API server on loopback."""

from __future__ import annotations

import gzip

import pytest

from feedrouter.errors import StorageError
from feedrouter.storage import ObjectNotFoundError, component, join_key, open_store

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
