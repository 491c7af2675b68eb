"""Differential tests: every strategy's results equal Saxon's, on generated and hand-written cases.

For each (document, subscription) pair, Saxon evaluates the subscription text with the document as
context item. The matched sets must be equal, and each match's bytes must equal Saxon's result as
canonical XML. Pairs where Saxon raises (FORG0001 on a non-numeric value compared with a number,
our one documented difference) are counted and left out.
"""

from __future__ import annotations

from collections import Counter

import pytest

from feedrouter import Router
from feedrouter.lang import match_probe, parse
from feedrouter.workload import dtds, generate_documents, generate_subscriptions
from tests.differential.oracle import SaxonOracle, canonical

pytestmark = pytest.mark.differential

# (strategy, optimization level, shared selection index): every optimization on and off
CONFIGURATIONS = [
    ("F", "none", False),
    ("F", "dtd", True),
    ("FW", "query", True),
    ("FW", "dtd", True),
    ("FWR", "none", False),
    ("FWR", "query", True),
    ("FWR", "dtd", True),
    ("FWR", "dtd", False),
]


@pytest.fixture(scope="module")
def oracle() -> SaxonOracle:
    return SaxonOracle()


def compare_with_saxon(
    oracle: SaxonOracle, subscriptions: list[tuple[str, str]], documents: list[bytes], dtd: object = None
) -> Counter:
    """Route every document with every strategy and compare with Saxon; returns what was compared."""
    probes = {sid: match_probe(parse(text)) for sid, text in subscriptions}
    expected = {}
    for d, data in enumerate(documents):
        sdoc = oracle.document(data)
        for sid, text in subscriptions:
            expected[d, sid] = oracle.answer(text, probes[sid], sdoc)
    counts: Counter = Counter()
    for strategy, level, shared_selection in CONFIGURATIONS:
        optimize = level if dtd is not None or level != "dtd" else "query"
        router = Router.compile(
            subscriptions,
            dtd=dtd,
            strategy=strategy,
            optimize=optimize,
            on_error="collect",
            shared_selection=shared_selection,
        )
        assert not router.errors, router.errors
        if optimize == "dtd":
            explained = [router.explain(sid) for sid, _ in subscriptions]
            counts["chain_rewrites"] += sum("the only chain of elements" in e for e in explained)
        counts["shared_plans"] = max(
            counts["shared_plans"], len(subscriptions) - router.stats()["shared_plans"]
        )
        for d, data in enumerate(documents):
            got = router.route(data, source=f"doc-{d}")
            for sid, text in subscriptions:
                answer = expected[d, sid]
                if answer.error is not None:
                    counts["saxon_errors"] += 1
                    continue
                where = (
                    f"{strategy}/{optimize}/index={shared_selection}, doc {d}, {sid}: {text}\n{data.decode()}"
                )
                assert (sid in got) == answer.matched, where
                counts["pairs"] += 1
                if answer.matched:
                    assert canonical(got[sid]) == canonical(answer.result), where
                    counts["matches"] += 1
    return counts


@pytest.mark.parametrize(
    ("dtd_name", "seed", "knobs"),
    [
        ("bib", 11, {}),
        ("book", 12, {}),
        ("news", 13, {}),
        # deep recursion with many '//' and '*': duplicates and unordered streams everywhere
        ("book", 14, {"DSProb": 0.5, "wildcard": 0.3}),
    ],
    ids=["bib", "book", "news", "book-recursive"],
)
def test_generated_workload_agrees_with_saxon(
    oracle: SaxonOracle, dtd_name: str, seed: int, knobs: dict[str, float]
) -> None:
    graph = dtds.load(dtd_name)
    documents = generate_documents(graph, 20, seed=seed, doctype=dtd_name == "news")
    texts = generate_subscriptions(graph, 120, seed=seed, form="mixed", **knobs)
    subscriptions = [(f"{dtd_name}-{i}", t) for i, t in enumerate(texts)]
    # subscribers who ask for the same thing: their plans and results are shared
    subscriptions += [(f"{dtd_name}-again-{i}", t) for i, t in enumerate(texts[:20])]
    counts = compare_with_saxon(oracle, subscriptions, documents, dtd=graph)
    assert counts["shared_plans"] >= 20, counts
    if dtd_name in ("bib", "news"):  # DTDs with unique chains: '//' expands into '/' steps
        assert counts["chain_rewrites"] >= 20, counts
    # thousands of pairs per strategy, and enough of them matching to mean something
    assert counts["pairs"] >= len(CONFIGURATIONS) * 2000, counts
    assert counts["matches"] >= len(CONFIGURATIONS) * 100, counts
    assert counts["saxon_errors"] <= counts["pairs"] // 10, counts
