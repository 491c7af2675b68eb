"""Per-document routing cost against what a user would otherwise run, in one run.

For each population size (selective: each document matches a few percent of the subscriptions) it
measures, on the same generated documents:

* ``parse``: lxml parsing alone (the floor under any approach);
* ``feedrouter-F/FW/FWR``: Router.route per document, each strategy (results built); FWR also
  without the lazy DFA (``FWR:nodfa``) and without the shared selection index (``FWR:noindex``);
* ``lxml-xpath``: one compiled lxml XPath per subscription (its for+where part), evaluated on the
  parsed document: the matched set only, no results built;
* ``saxon``: saxonche evaluating each subscription text, on a sample of subscriptions and
  extrapolated linearly to the population (it is far too slow to run them all).

The matched sets of feedrouter and lxml are checked to be equal for every document. Results go to
``bench/results/engine.csv`` and ``engine.md``.

Usage: ``.venv/bin/python bench/engine_bench.py [--sizes 1000,10000,100000] [--documents 20]``
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time

from lxml import etree

from common import (
    RESULTS,
    markdown_table,
    measure_lxml,
    measure_saxon,
    rss_mb,
    secure_parser,
    time_per_document,
    write_csv,
)
from feedrouter import Router
from feedrouter.workload import dtds, generate_documents, generate_selective_population


def run(
    sizes: list[int],
    n_documents: int,
    strategies: list[str],
    lxml_budget: float,
    saxon_sample: int,
    dtd_name: str,
) -> list[dict]:
    graph = dtds.load(dtd_name)
    # news-sized messages: a few KB, up to ~10 KB
    documents = generate_documents(graph, n_documents, seed=2026, doc_depth=8, max_repeats=5)
    parse_s = time_per_document(lambda d: etree.fromstring(d, secure_parser()), documents, repeat=3)
    rows = []
    for size in sizes:
        texts = generate_selective_population(
            graph, size, seed=size, target_match_rate=0.02, documents=documents
        )
        subs = [(f"s{i}", t) for i, t in enumerate(texts)]
        lxml_s, lxml_matched, lxml_full = measure_lxml(subs, documents, lxml_budget)
        saxon_s = measure_saxon(subs, documents, saxon_sample)
        for label in strategies:
            strategy, _, variant = label.partition(":")
            gc.collect()
            started = time.perf_counter()
            router = Router.compile(
                subs, strategy=strategy, lazy_dfa=variant != "nodfa", shared_selection=variant != "noindex"
            )
            compile_s = time.perf_counter() - started
            route_s = time_per_document(router.route, documents, repeat=1)
            mismatches = sum(1 for d in lxml_matched if set(router.route(documents[d])) != lxml_matched[d])
            match_rate = statistics.mean(len(router.route(d)) for d in documents[:5]) / size
            rows.append(
                {
                    "dtd": dtd_name,
                    "subscriptions": size,
                    "strategy": label,
                    "compile_s": round(compile_s, 3),
                    "route_ms_per_doc": round(route_s * 1e3, 3),
                    "doc_bytes_avg": round(statistics.mean(map(len, documents))),
                    "parse_ms_per_doc": round(parse_s * 1e3, 3),
                    "lxml_xpath_ms_per_doc": round(lxml_s * 1e3, 3),
                    "lxml_docs_measured": len(lxml_matched),
                    "lxml_all_docs": lxml_full,
                    "saxon_ms_per_doc_est": round(saxon_s * 1e3, 1),
                    "speedup_vs_lxml": round(lxml_s / route_s, 2),
                    "speedup_vs_saxon": round(saxon_s / route_s, 1),
                    "route_over_parse": round(route_s / parse_s, 1),
                    "match_rate": round(match_rate, 4),
                    "matched_set_mismatches": mismatches,
                    "max_rss_mb": round(rss_mb()),
                }
            )
            print(rows[-1], flush=True)
            del router
    return rows


def write(rows: list[dict], name: str) -> None:
    write_csv(rows, RESULTS / f"{name}.csv")
    cols = [
        "subscriptions",
        "strategy",
        "compile_s",
        "route_ms_per_doc",
        "parse_ms_per_doc",
        "lxml_xpath_ms_per_doc",
        "saxon_ms_per_doc_est",
        "speedup_vs_lxml",
        "speedup_vs_saxon",
        "route_over_parse",
        "match_rate",
        "matched_set_mismatches",
    ]
    (RESULTS / f"{name}.md").write_text(markdown_table(rows, cols), encoding="utf-8")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--documents", type=int, default=20)
    ap.add_argument(
        "--strategies",
        default="F,FW,FWR,FWR:nodfa,FWR:noindex",
        help="strategies; ':nodfa' turns the lazy DFA off, ':noindex' the shared selection index",
    )
    ap.add_argument("--lxml-budget", type=float, default=60.0, help="seconds lxml may run per size")
    ap.add_argument("--saxon-sample", type=int, default=300)
    ap.add_argument("--dtd", default="news")
    ap.add_argument("--name", default="engine")
    args = ap.parse_args()
    rows = run(
        [int(s) for s in args.sizes.split(",")],
        args.documents,
        args.strategies.split(","),
        args.lxml_budget,
        args.saxon_sample,
        args.dtd,
    )
    write(rows, args.name)


if __name__ == "__main__":
    main()
