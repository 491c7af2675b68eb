"""ObjectStore.open: every store streams its objects through the interface (issue 13, step 7)."""

from __future__ import annotations

import errno
import gzip
import os
from pathlib import Path

import pytest

from feedrouter.errors import ObjectNotFoundError, StorageError, TransientStorageError
from feedrouter.storage import FileStore, ObjectStore
from feedrouter.storage.local import _FileBody


def test_a_file_store_streams_an_object_and_closes_it(tmp_path: Path) -> None:
    store = FileStore(tmp_path / "store")
    store.put("in/a.xml.gz", gzip.compress(b"<a/>" * 1000))
    with store.open("in/a.xml.gz") as stream:
        assert gzip.GzipFile(fileobj=stream).read() == b"<a/>" * 1000
    assert stream.closed


def test_a_file_store_opens_no_missing_object_folder_or_key_outside_its_root(tmp_path: Path) -> None:
    store = FileStore(tmp_path / "store")
    store.put("in/a.xml", b"<a/>")
    with pytest.raises(ObjectNotFoundError, match=r"no object 'in/b\.xml'"):
        store.open("in/b.xml")
    with pytest.raises(ObjectNotFoundError):
        store.open("in")
    (tmp_path / "secret").write_bytes(b"no")
    os.symlink(tmp_path / "secret", store.root / "in" / "link.xml")
    with pytest.raises(StorageError, match=r"FR503.*resolves outside"):
        store.open("in/link.xml")
    with pytest.raises(StorageError, match="FR503"):
        store.open("../secret")


class _FailingFile:
    """A file whose reads fail the way a dying disk does."""

    closed = False

    def read(self, size: int = -1) -> bytes:
        raise OSError(errno.EIO, "Input/output error")

    def close(self) -> None:
        self.closed = True


def test_a_failing_read_of_a_file_is_a_storage_error() -> None:
    body = _FileBody(_FailingFile(), "in/a.xml")  # type: ignore[arg-type]
    with pytest.raises(TransientStorageError, match=r"cannot access 'in/a\.xml'"):
        body.read(10)


class _WholeObjects(ObjectStore):
    """A store that can only hand out whole objects: open() still works, through get()."""

    uri = "mem://x"

    def __init__(self) -> None:
        self.objects = {"a.xml": b"<a/>"}

    def _put(self, key: str, data: bytes) -> None:
        self.objects[key] = data

    def _get(self, key: str) -> bytes:
        return self.objects[key]

    def _exists(self, key: str) -> bool:
        return key in self.objects

    def _delete(self, key: str) -> None:
        self.objects.pop(key, None)

    def _list(self, prefix: str):  # type: ignore[no-untyped-def]
        return iter(sorted(k for k in self.objects if k.startswith(prefix)))


def test_a_store_without_streaming_opens_the_whole_object() -> None:
    with _WholeObjects().open("a.xml") as stream:
        assert stream.read() == b"<a/>"


def test_a_missing_object_is_fr501_and_a_transient_failure_fr502(tmp_path: Path) -> None:
    """The code matches the class (the error table): no borrowed FR500 for either."""
    store = FileStore(tmp_path / "store")
    with pytest.raises(ObjectNotFoundError) as missing:
        store.get("nothing.xml")
    assert missing.value.code == "FR501"
    with pytest.raises(TransientStorageError) as transient:
        _FileBody(_FailingFile(), "in/a.xml").read(1)  # type: ignore[arg-type]
    assert transient.value.code == "FR502"
