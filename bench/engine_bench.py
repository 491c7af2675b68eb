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
import contextlib
import csv
import gc
import resource
import statistics
import sys
import time
from pathlib import Path

from lxml import etree

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "plugins"))

from feedrouter import Router  # noqa: E402
from feedrouter.lang import parse, to_xpath  # noqa: E402
from feedrouter.workload import dtds, generate_documents, generate_selective_population  # noqa: E402

RESULTS = ROOT / "bench" / "results"


def secure_parser() -> etree.XMLParser:
    return etree.XMLParser(resolve_entities="internal", no_network=True, load_dtd=False, huge_tree=False)


def time_per_document(fn, documents: list[bytes], repeat: int = 1) -> float:  # type: ignore[no-untyped-def]
    """Median seconds per document over ``repeat`` passes (the first pass warms caches and is dropped)."""
    for data in documents[:3]:
        fn(data)
    passes = []
    for _ in range(repeat):
        started = time.perf_counter()
        for data in documents:
            fn(data)
        passes.append((time.perf_counter() - started) / len(documents))
    return statistics.median(passes)


def measure_lxml(
    texts: list[tuple[str, str]], documents: list[bytes], budget_s: float
) -> tuple[float, dict, bool]:
    """Seconds per document for one compiled XPath per subscription (sampled if over budget)."""
    compiled = []
    for sid, text in texts:
        expr, namespaces = to_xpath(parse(text))
        compiled.append((sid, etree.XPath(expr, namespaces=namespaces)))
    parser = secure_parser()
    matched: dict[int, set[str]] = {}
    started = time.perf_counter()
    done = 0
    for d, data in enumerate(documents):
        tree = etree.fromstring(data, parser)
        matched[d] = {sid for sid, xp in compiled if xp(tree)}
        done += 1
        if time.perf_counter() - started > budget_s:
            break
    return (time.perf_counter() - started) / done, matched, done == len(documents)


def measure_saxon(texts: list[tuple[str, str]], documents: list[bytes], sample: int) -> float:
    """Seconds per document for Saxon on ``sample`` subscriptions, scaled to the whole population."""
    from saxonche import PySaxonProcessor

    proc = PySaxonProcessor(license=False)
    xq = proc.new_xquery_processor()
    step = max(1, len(texts) // sample)
    chosen = texts[::step][:sample]
    docs = documents[:5]
    started = time.perf_counter()
    for data in docs:
        node = proc.parse_xml(xml_text=data.decode("utf-8"))
        for _, text in chosen:
            xq.set_query_content(text)
            xq.set_context(xdm_item=node)
            with contextlib.suppress(Exception):  # FORG0001 on odd values costs the same
                xq.run_query_to_string()
    per_doc = (time.perf_counter() - started) / len(docs)
    return per_doc * len(texts) / len(chosen)


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


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
    RESULTS.mkdir(parents=True, exist_ok=True)
    with (RESULTS / f"{name}.csv").open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
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
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(str(r[c]) for c in cols) + " |" for r in rows]
    (RESULTS / f"{name}.md").write_text("\n".join(lines) + "\n", encoding="utf-8")


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
