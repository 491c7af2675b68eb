"""Generated subscriptions of the language round against Saxon, over the project's DTDs.

The workload generator writes or, not()/empty()/exists(), string functions, count(), literal
sequences and positions (``conditions``, ``positions``), unions, order by and ``*:name``, the
round's constructors (attributes, value templates, attribute copies, comments, namespace
declarations, sequences, let aliases: ``constructors``) and its other spellings (child::,
descendant::, self::, descendant-or-self::, @*, text() filters, the version line: ``spellings``) at
the rates given, mixed with the first round's predicates; every strategy and optimization level,
with and without the shared selection, must agree with Saxon (C14N results, matched sets).
"""

from __future__ import annotations

import pytest

from feedrouter.workload import dtds, generate_documents, generate_subscriptions
from tests.differential.oracle import SaxonOracle
from tests.differential.test_against_saxon import compare_with_saxon

pytestmark = pytest.mark.differential


@pytest.fixture(scope="module")
def oracle() -> SaxonOracle:
    return SaxonOracle()


@pytest.mark.parametrize(
    ("dtd_name", "seed", "knobs"),
    [
        ("bib", 21, {}),
        ("book", 22, {}),
        ("news", 23, {}),
        # recursive documents, many '//' and '*': positions count among siblings at every depth
        ("book", 24, {"DSProb": 0.5, "wildcard": 0.3}),
    ],
    ids=["bib", "book", "news", "book-recursive"],
)
def test_generated_language_round_agrees_with_saxon(
    oracle: SaxonOracle, dtd_name: str, seed: int, knobs: dict[str, float]
) -> None:
    graph = dtds.load(dtd_name)
    documents = generate_documents(graph, 12, seed=seed, doctype=dtd_name == "news")
    texts = generate_subscriptions(
        graph,
        80,
        seed=seed,
        form="mixed",
        conditions=0.5,
        positions=0.25,
        unions=0.2,
        orders=0.3,
        any_namespace=0.1,
        constructors=0.4,
        spellings=0.25,
        **knobs,
    )
    subscriptions = [(f"{dtd_name}-{i}", t) for i, t in enumerate(texts)]
    counts = compare_with_saxon(oracle, subscriptions, documents, dtd=graph)
    assert counts["pairs"] >= 1000 and counts["matches"] >= 50, counts
