"""Streams on deep documents: the chain of open elements is walked along, not kept per element."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import feedrouter.engine.runtime as runtime_module
from feedrouter.engine.document import DocumentParser
from feedrouter.engine.nfa import Nfa
from feedrouter.engine.runtime import LazyDfa, run
from tests.unit.engine.test_nfa import nav
from tests.unit.engine.test_runtime import _path, brute_force, trees


def matches_for(doc: bytes, paths: list[str]):  # type: ignore[no-untyped-def]
    nfa = Nfa()
    pids = {p: nfa.add_path(nav(p)) for p in paths}
    return run(LazyDfa(nfa), DocumentParser().events(doc), 256), pids


@settings(max_examples=80, deadline=None)
@given(trees(), st.lists(_path, min_size=1, max_size=4, unique=True))
def test_walked_chains_give_the_memoized_streams(doc: str, paths: list[str]) -> None:
    data = doc.encode()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(runtime_module, "_CHAIN_MEMO_PER_NODE", 0)  # never memoize: walk every stream
        patch.setattr(runtime_module, "_CHAIN_MEMO_SLACK", -1)
        matches, pids = matches_for(data, paths)
        walked = {p: matches.stream(pid) for p, pid in pids.items()}
        assert not matches._chains
    for p in paths:
        assert sorted(walked[p], key=lambda t: (t[-1], t)) == brute_force(data, p), p


def test_a_deep_document_keeps_no_chain_per_element() -> None:
    depth = 250
    doc = ("<a>" * depth + "</a>" * depth).encode()
    matches, pids = matches_for(doc, ["//a", "/a//a", "//*"])
    expected = {"//a": depth, "/a//a": depth - 1, "//*": depth}  # one tuple per element (Claim 1)
    for path, pid in pids.items():
        assert len(matches.stream(pid)) == expected[path]
    # a chain per element would hold depth^2 / 2 = 31,250 ids
    bound = runtime_module._CHAIN_MEMO_PER_NODE * depth + runtime_module._CHAIN_MEMO_SLACK
    assert matches._chained <= bound + depth
