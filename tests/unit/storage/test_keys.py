"""Keys built from catalog names can never leave their store's prefix."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from feedrouter.errors import StorageError
from feedrouter.storage import component, join_key, validate_key


@pytest.mark.parametrize(
    "key",
    ["", "/etc/passwd", "a//b", "a/../b", "..", ".", "a/./b", "a/", "a\\b", "a\x00b", "a\nb", "x" * 1000],
)
def test_unsafe_keys_are_refused(key: str) -> None:
    with pytest.raises(StorageError, match="FR503"):
        validate_key(key)


@pytest.mark.parametrize("key", ["a", "news/abc.plan", "dt=2026-11-22/hour=16/part-00000.xml", "a..b/c"])
def test_ordinary_keys_pass(key: str) -> None:
    assert validate_key(key) == key


@given(st.text(min_size=1, max_size=16))  # 16 four-byte characters still fit a segment
def test_any_name_becomes_exactly_one_segment(name: str) -> None:
    segment = component(name)
    assert "/" not in segment and segment not in (".", "..") and not segment.startswith(".")
    assert join_key("root", segment, "x.plan").split("/") == ["root", segment, "x.plan"]


def test_distinct_names_stay_distinct() -> None:
    names = ["a/b", "a%2Fb", "..", "%2E.", "ü", "u"]
    assert len({component(n) for n in names}) == len(names)


def test_empty_names_are_refused_as_storage_errors() -> None:
    with pytest.raises(StorageError):
        component("")
