"""Store URIs have one canonical spelling: every other spelling is refused (FR503), never repaired."""

from __future__ import annotations

from pathlib import Path

import pytest

from feedrouter.errors import StorageError
from feedrouter.storage import FileStore, open_store
from feedrouter.storage.uris import (
    canonical_prefix,
    file_path,
    file_uri,
    is_within,
    overlaps,
    prefix_problem,
)
from tests.hostile.names.corpus import ACCEPTED_PREFIXES, REFUSED_PREFIXES


@pytest.mark.parametrize(("uri", "why"), REFUSED_PREFIXES)
def test_hostile_prefixes_are_refused(uri: str, why: str) -> None:
    with pytest.raises(StorageError, match="FR503") as caught:
        canonical_prefix(uri, "output prefix")
    assert caught.value.code == "FR503", why


@pytest.mark.parametrize("uri", ACCEPTED_PREFIXES)
def test_canonical_prefixes_pass_without_their_trailing_slash(uri: str) -> None:
    assert canonical_prefix(uri) == uri.removesuffix("/")


def test_the_message_names_the_canonical_spelling_when_there_is_one() -> None:
    assert "write file:///srv/etc" in (prefix_problem("file:///srv/out/%2e%2e/etc") or "")
    assert "write file:///srv/out/A" in (prefix_problem("file:///srv/out/%41") or "")


@pytest.mark.parametrize("name", ["plain", "a b", "é=x", "100%", "a#b?c", "it's", "[x]"])
def test_file_uris_round_trip_and_are_canonical(tmp_path: Path, name: str) -> None:
    path = tmp_path / name / "out"
    uri = file_uri(path)
    assert prefix_problem(uri) is None
    assert file_path(uri) == path


def test_containment_is_by_whole_segments() -> None:
    assert is_within("s3://bucket/plans/news", "s3://bucket/plans")
    assert is_within("s3://bucket/plans", "s3://bucket/plans/")
    assert not is_within("s3://bucket/plans2", "s3://bucket/plans")
    assert overlaps("s3://bucket", "s3://bucket/out") and not overlaps("s3://bucket/a", "s3://bucket/b")


@pytest.mark.parametrize(
    "uri", ["file:///srv/out/%2e%2e/etc", "file:///srv/out/./alias", "file://localhost/srv", "file:///a?x"]
)
def test_file_stores_refuse_non_canonical_uris(uri: str) -> None:
    with pytest.raises(StorageError, match="FR503"):
        open_store(uri)


def test_a_file_store_names_its_root_canonically(tmp_path: Path) -> None:
    store = FileStore(tmp_path / "a b=c")
    assert store.uri == file_uri(tmp_path / "a b=c") and prefix_problem(store.uri) is None
    assert FileStore.from_uri(store.uri).root == store.root
    uri = store.put("x/y.plan", b"1")
    assert store.key_of(uri) == "x/y.plan"


def test_key_of_refuses_a_query_or_fragment(tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    with pytest.raises(StorageError, match="FR503"):
        store.key_of(f"{store.uri}/news/a.plan?x=1")
