"""Peak memory per document byte (issue 18, item 3): parsing, the NFA pass and routing.

Documents of several shapes and sizes are routed by one router of ``--subscriptions`` generated
subscriptions (the selective news population of ``selective_bench.py``: FWR, ``optimize="dtd"``,
shared selection on). Shapes:

* ``siblings``: one root with N empty children (``<a><b/><b/>...</a>``, 4 bytes an element);
* ``nested``: chains of 100 nested elements side by side (deep-ish, 7 bytes an element);
* ``news``: a generated news document (the news DTD, mixed content, attributes, ~25 bytes an element).

Each document is measured in a child process of its own, one stage after the other; before a stage
the child collects garbage, hands free memory back to the system (``malloc_trim``), reads its
resident size (VmRSS) and resets its peak (``/proc/self/clear_refs``), so that the stage's figure is
its own peak (VmHWM) above what was resident before it. Stages:

* ``pull+list``: the parser before issue 18 (an ``XMLPullParser`` whose events are kept as a list
  of (event, element) pairs), for comparison (in huge mode, which it lacked: it refused 10 MB);
* ``parse``: :meth:`DocumentParser.events` read to the end (the tree, one element object at a time);
* ``parse+nfa``: the same events through the runtime (``run``), whose ``Matches`` is kept: what a
  router holds for a document before its plans run;
* ``route``: ``Router.route`` (results built), as the CLI and Spark run it (heap settled).

Run ``.venv/bin/python bench/memory_bench.py`` (about 5 minutes); ``--quick`` measures the 1 MB
documents only. Writes ``bench/results/memory.md``.
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import gc
import json
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from lxml import etree

from common import RESULTS, vm_status_mb
from feedrouter import Router, heap
from feedrouter.engine.document import DocumentParser
from feedrouter.engine.runtime import run
from feedrouter.workload import dtds, generate_documents, generate_selective_population

MB = 1_000_000
SEED = 2026
STAGES = ("pull+list", "parse", "parse+nfa", "route")
SIZES = {"siblings": (1, 4, 10), "nested": (1, 4, 10), "news": (1, 4, 10)}
NEWS_ELEMENTS_PER_MB = 44_000  # the generator's soft element cap that gives about 1 MB of news


# -- documents ------------------------------------------------------------------------------------


def siblings(megabytes: int) -> bytes:
    return b"<a>" + b"<b/>" * ((megabytes * MB - 7) // 4) + b"</a>"


def nested(megabytes: int) -> bytes:
    chain = b"<d>" * 100 + b"</d>" * 100
    return b"<a>" + chain * (megabytes * MB // len(chain)) + b"</a>"


def news(megabytes: int) -> bytes:
    cap = megabytes * NEWS_ELEMENTS_PER_MB
    graph = dtds.load("news")
    return generate_documents(graph, 1, seed=SEED, doc_depth=8, max_repeats=200, max_elements=cap)[0]


SHAPES = {"siblings": siblings, "nested": nested, "news": news}


def subscriptions(count: int) -> list[tuple[str, str]]:
    graph = dtds.load("news")
    sample = generate_documents(graph, 20, seed=SEED, doc_depth=8, max_repeats=5)
    texts = generate_selective_population(graph, count, seed=SEED, target_match_rate=0.02, documents=sample)
    return [(f"s{i}", text) for i, text in enumerate(texts)]


# -- one child: one document, every stage -----------------------------------------------------------


def _release_free_memory() -> None:
    gc.collect()
    libc = ctypes.util.find_library("c")
    if libc:
        ctypes.CDLL(libc).malloc_trim(0)


def _reset_peak() -> bool:
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def _pull_and_list(data: bytes) -> object:
    parser = etree.XMLPullParser(events=("start", "end"), resolve_entities="internal", huge_tree=True)
    parser.feed(data)
    parser.close()
    return list(parser.read_events())


def _stage(name: str, router: Router, data: bytes) -> object:
    parser: DocumentParser = router._parser  # the bench looks inside on purpose
    if name == "pull+list":
        return _pull_and_list(data)
    if name == "parse":
        return sum(1 for _ in parser.events(data))
    if name == "parse+nfa":
        return run(router._dfa, parser.events(data), parser.limits.max_depth)
    with heap.settled():
        return router.route(data)


def child(path: str, count: int) -> dict:
    data = Path(path).read_bytes()
    router = Router.compile(subscriptions(count), dtd=dtds.load("news"), strategy="FWR", optimize="dtd")
    row: dict = {"doc_mb": round(len(data) / MB, 2), "elements": data.count(b"<") - data.count(b"</")}
    for name in STAGES:
        _release_free_memory()
        before = vm_status_mb("VmRSS")
        exact = _reset_peak()
        started = time.perf_counter()
        held = _stage(name, router, data)
        seconds = time.perf_counter() - started
        peak = vm_status_mb("VmHWM")  # since the reset; without one, since the start: an upper bound
        if name == "route":
            results: dict[str, bytes] = held  # type: ignore[assignment]
            row["matched"] = len(results)
            row["result_mb"] = round(sum(map(len, results.values())) / MB, 1)
            distinct = {id(data): len(data) for data in results.values()}  # shared results are one object
            row["distinct_result_mb"] = round(sum(distinct.values()) / MB, 1)
            del results
        del held
        row[name] = {"mb": round(peak - before, 1), "s": round(seconds, 2)}
        row["peak_reset"] = exact
    return row


# -- the parent: documents, children, the report ---------------------------------------------------

NOTES = [
    "## What the memory is",
    "",
    "* **The tree** (`parse`): libxml2 spends about 120 bytes per element and per text node,",
    "  whatever the node's size in the document: 4-byte empty elements cost ~31x their bytes, news",
    "  ~18x. This is the floor for anything that hands lxml elements to the plans. The parser before",
    "  issue 18 added a list of (event, element) pairs and an element object per event on top",
    "  (`pull+list`, 27x-83x); `DocumentParser.events` now parses into the tree first (no element",
    "  object exists while libxml2 parses) and yields the events one at a time.",
    "* **The NFA pass** (`parse+nfa`, in `engine/runtime.py`): `Matches` keeps element ids, parents",
    "  and DFA-state members in `array('i')`, one string per distinct name, and lxml element objects",
    "  only for the root and the elements where some subscription path ends (others are made from",
    "  the tree when a plan first asks): 30-62 bytes per element on top of the tree.",
    "* **Routing** (`route`): on top, the results. For the news documents 397 of the 10,000",
    "  subscriptions match, many of them returning the whole `nitf` element; the distinct result",
    "  objects alone are ~19x the document (`results MB`). Result caps (ResultLimits) bound this.",
    "  The sibling and nested documents are not valid against the news DTD, so their `route`",
    "  includes compiling the DTD-free fallback router once per process (about 40 MB).",
    "",
    "## What would reach 20x",
    "",
    "* Results: sharing one serialization of a node between results (a result that is the whole",
    "  document need not be a copy per plan group) and joining a result's pieces once.",
    "* The plan context: `id_of()` builds a dict of every element object (~150 B per element);",
    "  children by ids from the runtime's arrays would need no lxml objects.",
    "* Empty-element floods (the sibling shape) stay at ~31x with any lxml tree; refusing them",
    "  earlier needs a bound on elements per document byte or on elements per document.",
]


def measure(shapes: dict[str, tuple[int, ...]], count: int) -> list[dict]:
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for shape, sizes in shapes.items():
            for megabytes in sizes:
                path = Path(folder) / f"{shape}-{megabytes}.xml"
                path.write_bytes(SHAPES[shape](megabytes))
                done = subprocess.run(
                    [sys.executable, __file__, "--child", str(path), "--subscriptions", str(count)],
                    capture_output=True,
                    text=True,
                    check=True,
                )
                row = json.loads(done.stdout.strip().splitlines()[-1])
                row["shape"] = shape
                rows.append(row)
                print(json.dumps(row), flush=True)
    return rows


def report(rows: list[dict], count: int, wall: float) -> str:
    lines = [
        "# Peak memory per document byte",
        "",
        f"`bench/memory_bench.py`, {count:,} subscriptions (the selective news population: FWR, "
        f"optimize=dtd), on {platform.node()} ({platform.processor() or platform.machine()}), "
        f"Python {platform.python_version()}, lxml {etree.__version__}, libxml2 "
        f"{'.'.join(map(str, etree.LIBXML_VERSION))}; {wall:.0f} s.",
        "",
        "Each figure is a stage's peak resident size above what was resident before it (MB), and in",
        "brackets that peak per MB of document. `pull+list` is the parser before issue 18, kept for",
        "comparison; `parse` is `DocumentParser.events` read to the end; `parse+nfa` keeps the",
        "runtime's `Matches` (arrays, element objects only where paths end); `route` is `Router.route`.",
        "`results MB` is the bytes of the results returned (in brackets: of the distinct result",
        "objects; subscriptions with identical plans share one).",
        "",
        "| shape | doc MB | elements | " + " | ".join(STAGES) + " | route s | matched | results MB |",
        "|---|---:|---:|" + "---:|" * len(STAGES) + "---:|---:|---:|",
    ]
    for row in rows:
        cells = [f"{row[s]['mb']:.0f} ({row[s]['mb'] / row['doc_mb']:.0f}x)" for s in STAGES]
        results = f"{row['result_mb']} ({row['distinct_result_mb']})"
        lines.append(
            f"| {row['shape']} | {row['doc_mb']} | {row['elements']:,} | "
            + " | ".join(cells)
            + f" | {row['route']['s']} | {row['matched']} | {results} |"
        )
    lines += ["", "Per element (bytes): the tree, and what the NFA pass adds to it.", ""]
    lines += ["| shape | doc MB | parse B/element | NFA pass B/element |", "|---|---:|---:|---:|"]
    for row in rows:
        tree = row["parse"]["mb"] * MB / row["elements"]
        nfa = (row["parse+nfa"]["mb"] - row["parse"]["mb"]) * MB / row["elements"]
        lines.append(f"| {row['shape']} | {row['doc_mb']} | {tree:.0f} | {nfa:.0f} |")
    lines += ["", *NOTES]
    if not all(row.get("peak_reset") for row in rows):
        lines += ["", "The peak could not be reset on this system: figures are upper bounds."]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--subscriptions", type=int, default=10_000)
    parser.add_argument("--quick", action="store_true", help="1 MB documents only")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.subscriptions)))
        return
    shapes = {shape: sizes[:1] for shape, sizes in SIZES.items()} if args.quick else SIZES
    started = time.perf_counter()
    rows = measure(shapes, args.subscriptions)
    text = report(rows, args.subscriptions, time.perf_counter() - started)
    target = RESULTS / ("memory-quick.md" if args.quick else "memory.md")
    target.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
