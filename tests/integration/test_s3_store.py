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
