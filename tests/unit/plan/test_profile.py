"""The per-operator profiler: exclusive times that add up, garbage collection timed apart."""

from __future__ import annotations

import ast
import gc
import time

from feedrouter import Router
from feedrouter.plan.profile import GARBAGE_COLLECTION, Profiler
from tests.conftest import ROOT


def _spin(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def test_nested_measurements_are_exclusive_and_add_up_to_the_total() -> None:
    profiler = Profiler()
    started = time.perf_counter()
    with profiler.measure("SemiJoin"):
        _spin(0.002)
        with profiler.measure("path-tuples"):
            _spin(0.004)
        with profiler.measure("SemiJoin"):  # reentering a category nests like any other
            _spin(0.002)
    total = time.perf_counter() - started
    assert profiler.calls == {"SemiJoin": 2, "path-tuples": 1}
    assert profiler.seconds["path-tuples"] >= 0.004
    assert profiler.seconds["SemiJoin"] >= 0.004
    assert sum(profiler.seconds.values()) <= total
    seconds = [row[1] for row in profiler.table()]
    assert seconds == sorted(seconds, reverse=True)


def test_a_collection_is_its_own_category_and_not_the_interrupted_operators() -> None:
    garbage = [[i] for i in range(200_000)]  # something for a full collection to walk
    profiler = Profiler()
    with profiler.collecting(), profiler.measure("Selection"):
        gc.collect()
    assert profiler.calls[GARBAGE_COLLECTION] >= 1
    assert profiler.seconds[GARBAGE_COLLECTION] > profiler.seconds["Selection"]
    assert profiler._on_collection not in gc.callbacks  # collecting() cleans up after itself
    del garbage


def test_collections_are_not_timed_outside_collecting() -> None:
    profiler = Profiler()
    with profiler.measure("Selection"):
        gc.collect()
    assert GARBAGE_COLLECTION not in profiler.seconds


def _documented_categories() -> set[str]:
    """The categories :meth:`Router.profile`'s docstring lists."""
    doc = " ".join((Router.profile.__doc__ or "").split())
    listed = doc.split("Categories:")[1].split("(")[0].replace(" and ", ", ")
    return {name.strip(" .") for name in listed.split(",") if name.strip(" .")}


def _reported_categories() -> set[str]:
    """The categories ``bench/paper_report.py`` orders its tables by (read, not imported: it needs
    matplotlib and the bench directory on the path)."""
    tree = ast.parse((ROOT / "bench" / "paper_report.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "CATEGORIES" for t in node.targets):
            return set(ast.literal_eval(node.value))
    raise AssertionError("bench/paper_report.py defines no CATEGORIES")


def test_every_category_a_profile_measures_is_documented_and_reported() -> None:
    router = Router.compile(
        [
            ("deep", "//a//a//a"),  # node sets on a recursive document
            ("flwr", "for $x in //a where $x/a return <r>{ $x/text() }</r>"),
            ("tree", "for $x in /a return <r>{ $x//a }</r>"),
        ],
        strategy="FW",
    )
    depth = 40
    measured = set(router.profile([("<a>" * depth + "z" + "</a>" * depth).encode(), b"<a><a/>t</a>"]))
    assert "node sets" in measured
    assert measured <= _documented_categories()
    assert measured <= _reported_categories()
