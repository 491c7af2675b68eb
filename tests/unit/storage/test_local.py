"""The file:// store: round trips, atomic writes, errors, and no way out of its root."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from feedrouter.errors import StorageError
from feedrouter.storage import FileStore, ObjectNotFoundError, open_store


@pytest.fixture
def store(tmp_path: Path) -> FileStore:
    return FileStore(tmp_path / "store")


def test_put_get_list_exists_delete(store: FileStore) -> None:
    uri = store.put("news/a.plan", b"one")
    store.put("news/b.plan", b"two")
    store.put("sports/c.plan", b"three")
    assert uri == f"{store.uri}/news/a.plan"
    assert store.get("news/a.plan") == b"one"
    assert list(store.list("news/")) == ["news/a.plan", "news/b.plan"]
    assert list(store.list()) == ["news/a.plan", "news/b.plan", "sports/c.plan"]
    assert list(store.list("new")) == ["news/a.plan", "news/b.plan"]
    assert store.exists("news/a.plan") and not store.exists("news/zzz")
    store.delete("news/a.plan")
    store.delete("news/a.plan")  # deleting twice is fine
    assert not store.exists("news/a.plan")


def test_put_replaces_whole_objects_and_leaves_no_temporary_file(store: FileStore) -> None:
    store.put("k", b"old")
    store.put("k", b"new")
    assert store.get("k") == b"new"
    assert sorted(p.name for p in store.root.iterdir()) == ["k"]


def test_missing_objects_raise_not_found(store: FileStore) -> None:
    with pytest.raises(ObjectNotFoundError, match="no object 'nope'"):
        store.get("nope")
    assert list(store.list("nothing/")) == []


def test_uris_map_to_keys_only_under_the_root(store: FileStore, tmp_path: Path) -> None:
    assert store.key_of(store.uri_for("news/a.plan")) == "news/a.plan"
    for uri in ((tmp_path / "other" / "x").as_uri(), store.uri + "/../x", store.uri + "x/y", "s3://b/k"):
        with pytest.raises(StorageError):
            store.key_of(uri)


def test_a_symlink_planted_in_the_store_cannot_lead_out(store: FileStore, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("secret")
    store.root.mkdir(parents=True)
    os.symlink(secret, store.root / "link")
    with pytest.raises(StorageError, match="outside"):
        store.get("link")


def test_open_store_understands_uris_and_paths(tmp_path: Path) -> None:
    assert isinstance(open_store(tmp_path.as_uri()), FileStore)
    assert open_store(str(tmp_path)).uri == tmp_path.resolve().as_uri()
    for bad in ("file://host/path", "file:relative", "http://example.com/x"):
        with pytest.raises(StorageError):
            open_store(bad)


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o027, 0o640), (0o077, 0o600)])
def test_files_get_the_mode_the_umask_says(store: FileStore, umask: int, mode: int) -> None:
    previous = os.umask(umask)
    try:
        store.put("out/part-0.xml", b"<a/>")
        store.put_stream("out/part-1.xml", io.BytesIO(b"<b/>"))
    finally:
        os.umask(previous)
    assert (store.root / "out/part-0.xml").stat().st_mode & 0o777 == mode
    assert (store.root / "out/part-1.xml").stat().st_mode & 0o777 == mode


def test_put_stream_copies_a_large_stream_and_leaves_no_temp_file(store: FileStore) -> None:
    data = os.urandom(3 * 1024 * 1024 + 17)
    assert store.put_stream("big/blob", io.BytesIO(data)) == f"{store.uri}/big/blob"
    assert store.get("big/blob") == data
    assert [p.name for p in (store.root / "big").iterdir()] == ["blob"]
