"""One size of the selective-population series (issue 4's targets), in a process of its own.

A fresh process per size makes the resident memory figures belong to that size alone. On the news
DTD with news-sized messages, for ``--size`` subscriptions of which each document matches about 2%
(:func:`generate_selective_population`), with FWR, ``optimize="dtd"`` and the shared selection on:

* ``compile_s``: ``Router.compile`` of the whole population;
* ``rss_*_mb``: VmRSS before and after compiling, and the peak (VmHWM) once routing is done;
* ``add_ms_mean`` / ``add_ms_max``: ``Router.add`` of ``--adds`` new subscriptions, one at a time, on
  the compiled router (then removed again, ``remove_ms_mean``);
* ``route_ms_per_doc``: ``Router.route`` per document (results built), ``parse_ms_per_doc``: lxml
  parsing alone, ``lxml_ms_per_doc``: one compiled lxml XPath per subscription (for+where only, no
  results), ``saxon_ms_per_doc_est``: Saxon on a sample of subscriptions, scaled to the population;
* ``mismatches``: (document, subscription) pairs where the router's matched set differs from lxml's,
  over every document lxml measured (``lxml_docs``);
* ``profile_*``: the per-operator breakdown (``Router.profile``) in ms per document.

Prints one JSON object on the last line of stdout. ``paper_bench.py`` runs this for each size;
run it alone with ``.venv/bin/python bench/selective_bench.py --size 10000``.

``--growth 10000,100000`` measures instead how the per-document cost grows between sizes: every
size compiled in one process, routing passes alternating between them for ``--rounds`` rounds, so
that each size sees the same machine (the host's speed drifts by tens of percent between runs,
which separate processes would read as growth). Reports each size's median ms per document and
the median over rounds of the per-round ratio to the smallest size.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import time

from common import (
    compile_xpaths,
    measure_saxon,
    mismatches,
    parse_seconds,
    route_seconds,
    run_xpaths,
    vm_status_mb,
)
from feedrouter import Router, heap
from feedrouter.workload import dtds, generate_documents, generate_selective_population

DTD = "news"
MATCH_RATE = 0.02
SEED = 2026


def population(size: int, documents: list[bytes]) -> list[tuple[str, str]]:
    """The first ``size`` subscriptions of one population: the same seed at every size, so that the
    sizes share their templates and a smaller population is a prefix of a larger one."""
    texts = generate_selective_population(
        dtds.load(DTD), size, seed=SEED, target_match_rate=MATCH_RATE, documents=documents
    )
    return [(f"s{i}", text) for i, text in enumerate(texts)]


def time_adds(router: Router, extra: list[tuple[str, str]]) -> dict[str, float]:
    """Mean and worst ms of ``Router.add`` for each extra subscription, then of removing them."""
    gc.collect()
    adds = []
    for sid, text in extra:
        started = time.perf_counter()
        router.add(sid, text)
        adds.append(time.perf_counter() - started)
    started = time.perf_counter()
    for sid, _ in extra:
        router.remove(sid)
    removes = (time.perf_counter() - started) / len(extra)
    return {
        "add_ms_mean": round(statistics.mean(adds) * 1e3, 3),
        "add_ms_max": round(max(adds) * 1e3, 3),
        "remove_ms_mean": round(removes * 1e3, 3),
    }


def profile_row(router: Router, documents: list[bytes]) -> dict[str, float]:
    with heap.settled():
        seconds = router.profile(documents)
    return {f"profile_{k}": round(v * 1e3 / len(documents), 3) for k, v in seconds.items()}


def reproducers(examples: list[tuple[int, str]], pairs: list[tuple[str, str]]) -> list[list]:
    """[document index, subscription id, text] for each disagreement with lxml found."""
    texts = dict(pairs)
    return [[index, sid, texts.get(sid, "")] for index, sid in examples]


def measure(size: int, n_documents: int, adds: int, lxml_budget: float, saxon_sample: int) -> dict:
    graph = dtds.load(DTD)
    documents = generate_documents(graph, n_documents, seed=SEED, doc_depth=8, max_repeats=5)
    everyone = population(size + adds, documents)
    pairs, extra = everyone[:size], everyone[size:]
    gc.collect()
    rss_before = vm_status_mb("VmRSS")
    started = time.perf_counter()
    router = Router.compile(pairs, dtd=graph, strategy="FWR", optimize="dtd", shared_selection=True)
    compile_s = time.perf_counter() - started
    rss_compiled = vm_status_mb("VmRSS")
    row: dict = {
        "subscriptions": size,
        "strategy": "FWR",
        "optimize": "dtd",
        "documents": n_documents,
        "doc_bytes_avg": round(statistics.mean(map(len, documents))),
        "compile_s": round(compile_s, 2),
        "rss_before_mb": round(rss_before),
        "rss_compiled_mb": round(rss_compiled),
    }
    row.update(time_adds(router, extra))
    route_s, routed = route_seconds(router.route, documents)
    parse_s = parse_seconds(documents)
    row.update(profile_row(router, documents[:5]))
    row["rss_peak_mb"] = round(vm_status_mb("VmHWM"))
    row["stats"] = router.stats()
    del router
    gc.collect()
    xpaths = compile_xpaths(pairs)
    lxml_run = run_xpaths(xpaths, documents, lxml_budget)
    saxon_s = measure_saxon(pairs, documents, saxon_sample, n_documents=3)
    wrong, examples = mismatches(routed, lxml_run, xpaths.skipped)
    row.update(
        {
            "route_ms_per_doc": round(route_s * 1e3, 3),
            "parse_ms_per_doc": round(parse_s * 1e3, 4),
            "lxml_compile_s": round(xpaths.seconds, 2),
            "lxml_ms_per_doc": round(lxml_run.seconds_per_doc * 1e3, 2),
            "lxml_docs": f"{len(lxml_run.matched)}/{n_documents}",
            "lxml_skipped": len(xpaths.skipped),
            "saxon_ms_per_doc_est": round(saxon_s * 1e3, 1),
            "saxon_sampled": f"{min(saxon_sample, size)}/{size}",
            "x_vs_lxml": round(lxml_run.seconds_per_doc / route_s, 2),
            "x_vs_saxon": round(saxon_s / route_s, 1),
            "route_over_parse": round(route_s / parse_s, 1),
            "match_rate": round(statistics.mean(map(len, routed)) / size, 4),
            "mismatches": wrong,
            "mismatch_examples": reproducers(examples, pairs),
        }
    )
    return row


def measure_growth(sizes: list[int], n_documents: int, rounds: int) -> dict:
    """Per-document routing cost of each size, measured in alternating passes in one process."""
    graph = dtds.load(DTD)
    documents = generate_documents(graph, n_documents, seed=SEED, doc_depth=8, max_repeats=5)
    everyone = population(max(sizes), documents)
    routers = {
        size: Router.compile(everyone[:size], dtd=graph, strategy="FWR", optimize="dtd") for size in sizes
    }
    passes: dict[int, list[float]] = {size: [] for size in sizes}
    for size in sizes:
        route_seconds(routers[size].route, documents[:2], warmup=2)
    for _ in range(rounds):
        for size in sizes:
            seconds, _ = route_seconds(routers[size].route, documents, warmup=0)
            passes[size].append(seconds * 1e3)
    smallest = min(sizes)
    return {
        "sizes": sizes,
        "documents": n_documents,
        "rounds": rounds,
        "ms_per_doc_median": {size: round(statistics.median(passes[size]), 3) for size in sizes},
        "ms_per_doc_passes": {size: [round(x, 3) for x in passes[size]] for size in sizes},
        "growth_median": {size: _median_ratio(passes[smallest], passes[size]) for size in sizes},
        "shared_plans": {size: routers[size].stats()["shared_plans"] for size in sizes},
    }


def _median_ratio(base: list[float], other: list[float]) -> float:
    return round(statistics.median(b / a for a, b in zip(base, other, strict=True)), 2)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--growth", default="", help="comma-separated sizes: measure growth between them")
    ap.add_argument("--rounds", type=int, default=9, help="alternating passes per size (with --growth)")
    ap.add_argument("--size", type=int, default=10000)
    ap.add_argument("--documents", type=int, default=20)
    ap.add_argument("--adds", type=int, default=100)
    ap.add_argument("--lxml-budget", type=float, default=90.0, help="seconds lxml may run")
    ap.add_argument("--saxon-sample", type=int, default=200)
    args = ap.parse_args()
    if args.growth:
        sizes = sorted(int(size) for size in args.growth.split(","))
        print(json.dumps(measure_growth(sizes, args.documents, args.rounds)))
        return
    row = measure(args.size, args.documents, args.adds, args.lxml_budget, args.saxon_sample)
    print(json.dumps(row))


if __name__ == "__main__":
    main()
