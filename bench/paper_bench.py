"""Paper 000 section 6 reproduced on feedrouter, with lxml, Saxon and parsing baselines in the same runs.

Experiments (names for ``--only``; the paper's figure numbers):

* ``fig7``: Bib DTD, Q = 5,000: strategies F / FW / FWR x optimization none / query / query+DTD, with
  the per-operator breakdown of every cell (``Router.profile``, like Table 2);
* ``fig10``: the same on the recursive Book DTD, Q = 10,000;
* ``fig8``: Bib, query+DTD, PP = 1..3 predicate paths;
* ``fig9``: Bib, query+DTD, RP = 1..4 return paths;
* ``fig11``: Bib, query+DTD, MaxValue = 100, Q = 5,000..50,000, all three strategies;
* ``fig12``: Book, FWR, query+DTD, MaxValue = 100, Q = 10,000..100,000, with and without the shared
  selection (shared post-processing);
* ``selective``: issue 4's targets on a selective population (news DTD, ~2% match rate) at 10,000
  and 100,000 subscriptions, each size in its own process (``selective_bench.py``), and the growth
  of the per-document cost between them measured with both sizes in one process, alternating.

Every routing row also has, on the same documents and population: lxml parsing alone, one compiled
lxml XPath per subscription (its for+where part; evaluated document by document until a time budget
is spent), Saxon per subscription (a sample of subscriptions, scaled to the population), the ratios
of each to routing, and the number of subscriptions whose matched set differs from lxml's.

Results (CSV, Markdown, PNG) go to ``bench/results/`` (``bench/results/quick/`` with ``--quick``);
``paper.md`` there collects every table of a full run: a run with ``--only`` writes the files of
its experiments and leaves ``paper.md`` as the last full run left it. See ``bench/README.md``.

Usage: ``.venv/bin/python bench/paper_bench.py [--quick] [--only fig7,fig11,...]``
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import lxml

import paper_report
from common import (
    RESULTS,
    CompiledXPaths,
    LxmlRun,
    compile_xpaths,
    measure_saxon,
    mismatches,
    parse_seconds,
    route_seconds,
    run_xpaths,
)
from feedrouter import Router, heap
from feedrouter.schema import DtdGraph
from feedrouter.workload import dtds, generate_documents, generate_subscriptions

BENCH = Path(__file__).resolve().parent
EXPERIMENTS = ("fig7", "fig8", "fig9", "fig10", "fig11", "fig12", "selective")
STRATEGIES = ("F", "FW", "FWR")
LEVELS = ("none", "query", "dtd")
SEED = 2026


# -- workloads --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Workload:
    """The paper's document (DocDepth, MaxRepeats, MaxValue) and query (D1, PP, RP, D2, DSProb) knobs."""

    dtd: str
    doc_depth: int
    max_repeats: tuple[tuple[str, int], ...]
    D1: int
    PP: int = 1
    RP: int = 2
    D2: int = 2
    DSProb: float = 0.2
    max_value: int = 10

    @property
    def graph(self) -> DtdGraph:
        return dtds.load(self.dtd)

    def documents(self, count: int) -> list[bytes]:
        return generate_documents(
            self.graph,
            count,
            seed=SEED,
            doc_depth=self.doc_depth,
            max_repeats=dict(self.max_repeats),
            max_value=self.max_value,
        )

    def pairs(self, count: int) -> list[tuple[str, str]]:
        """``count`` distinct subscriptions; a smaller count is a prefix of a larger one."""
        texts = generate_subscriptions(
            self.graph,
            count,
            seed=SEED,
            D1=self.D1,
            PP=self.PP,
            RP=self.RP,
            D2=self.D2,
            DSProb=self.DSProb,
            max_value=self.max_value,
        )
        return [(f"q{i}", text) for i, text in enumerate(texts)]


#: Paper 000 §6.2: four levels, 20 books per bib (here up to 20), up to five authors or editors.
BIB = Workload("bib", doc_depth=4, max_repeats=(("book", 20), ("author", 5), ("editor", 5), ("*", 3)), D1=2)
#: Paper 000 §6.3: up to four levels of sections, 12 top-level sections, p/figure/section up to 4 times.
BOOK = Workload("book", doc_depth=5, max_repeats=(("section", 12), ("author", 3), ("*", 4)), D1=3)


@dataclass(frozen=True)
class Settings:
    """Sizes of one run: the full suite or the ``--quick`` smoke run."""

    bib_q: int = 5000
    book_q: int = 10000
    pp: tuple[int, ...] = (1, 2, 3)
    rp: tuple[int, ...] = (1, 2, 3, 4)
    fig11_q: tuple[int, ...] = (5000, 10000, 25000, 50000)
    fig12_q: tuple[int, ...] = (10000, 25000, 50000, 100000)
    selective_sizes: tuple[int, ...] = (10000, 100000)
    documents: int = 12
    scaling_documents: int = 10
    selective_documents: int = 20
    growth_rounds: int = 9
    profile_documents: int = 5
    lxml_budget: float = 20.0
    saxon_sample: int = 200
    results: Path = RESULTS


FULL = Settings()
QUICK = Settings(
    bib_q=500,
    book_q=1000,
    fig11_q=(500, 1000, 2000),
    fig12_q=(1000, 2000, 4000),
    selective_sizes=(1000, 4000),
    documents=5,
    scaling_documents=4,
    selective_documents=5,
    growth_rounds=3,
    profile_documents=2,
    lxml_budget=3.0,
    saxon_sample=30,
    results=RESULTS / "quick",
)


# -- one population and its baselines ---------------------------------------------------------------


@dataclass
class Point:
    """A population and its documents, with the baselines measured on them."""

    workload: Workload
    pairs: list[tuple[str, str]]
    documents: list[bytes]
    xpaths: CompiledXPaths
    lxml: LxmlRun
    parse_s: float
    saxon_s: float
    saxon_sampled: int


def measure_point(
    workload: Workload,
    pairs: list[tuple[str, str]],
    documents: list[bytes],
    settings: Settings,
    xpaths: CompiledXPaths | None = None,
) -> Point:
    xpaths = xpaths if xpaths is not None else compile_xpaths(pairs)
    lxml_run = run_xpaths(xpaths, documents, settings.lxml_budget)
    saxon_s = measure_saxon(pairs, documents, settings.saxon_sample, n_documents=3)
    parse_s = parse_seconds(documents)
    sampled = min(settings.saxon_sample, len(pairs))
    return Point(workload, pairs, documents, xpaths, lxml_run, parse_s, saxon_s, sampled)


# -- one router configuration -----------------------------------------------------------------------


@dataclass(frozen=True)
class Config:
    strategy: str
    optimize: str = "dtd"
    shared: bool = True

    @property
    def label(self) -> str:
        return f"{self.strategy}/{self.optimize}" + ("" if self.shared else "/unshared")


def extend(
    router: Router | None, workload: Workload, config: Config, pairs: list[tuple[str, str]]
) -> tuple[Router, float]:
    """Compile ``pairs`` (fresh when ``router`` is None, else add those it lacks); seconds taken."""
    gc.collect()
    started = time.perf_counter()
    if router is None:
        router = Router.compile(
            pairs,
            dtd=workload.graph,
            strategy=config.strategy,
            optimize=config.optimize,
            shared_selection=config.shared,
        )
    else:
        for sid, text in pairs[len(router) :]:
            router.add(sid, text)
    return router, time.perf_counter() - started


def measure_run(experiment: str, point: Point, config: Config, router: Router, compile_s: float) -> dict:
    """One table row: routing per document, every baseline of ``point`` and the ratios."""
    route_s, routed = route_seconds(router.route, point.documents)
    wrong, examples = mismatches(routed, point.lxml, point.xpaths.skipped)
    workload, q = point.workload, len(point.pairs)
    row = {
        "experiment": experiment,
        "dtd": workload.dtd,
        "Q": q,
        "PP": workload.PP,
        "RP": workload.RP,
        "max_value": workload.max_value,
        "strategy": config.strategy,
        "optimize": config.optimize,
        "shared_selection": config.shared,
        "documents": len(point.documents),
        "compile_s": round(compile_s, 2),
        "route_ms_per_doc": round(route_s * 1e3, 2),
        "match_rate": round(statistics.mean(map(len, routed)) / q, 4),
        "parse_ms_per_doc": round(point.parse_s * 1e3, 4),
        "lxml_ms_per_doc": round(point.lxml.seconds_per_doc * 1e3, 2),
        "lxml_docs": f"{len(point.lxml.matched)}/{len(point.documents)}",
        "lxml_skipped": len(point.xpaths.skipped),
        "saxon_ms_per_doc_est": round(point.saxon_s * 1e3, 1),
        "saxon_sampled": f"{point.saxon_sampled}/{q}",
        "x_vs_lxml": round(point.lxml.seconds_per_doc / route_s, 3),
        "x_vs_saxon": round(point.saxon_s / route_s, 2),
        "route_over_parse": round(route_s / point.parse_s, 1),
        "mismatches": wrong,
        **{k: v for k, v in router.stats().items() if k in ("distinct_paths", "pattern_plans")},
        "mismatch_examples": reproducers(examples, point),
    }
    knobs = f"{workload.dtd} Q={q} PP={workload.PP} RP={workload.RP} MaxValue={workload.max_value}"
    print(f"  {experiment} {knobs} {config.label}: {row['route_ms_per_doc']} ms/doc", flush=True)
    return row


def reproducers(examples: list[tuple[int, str]], point: Point) -> list[dict]:
    texts = dict(point.pairs)
    return [
        {"document": point.documents[index].decode("utf-8"), "subscription": sid, "text": texts[sid]}
        for index, sid in examples
    ]


def profile_rows(
    experiment: str, point: Point, config: Config, router: Router, documents: list[bytes], mqpt: float
) -> list[dict]:
    """ms per document per operator category (exclusive times), plus their total and the unprofiled time."""
    with heap.settled():
        seconds = router.profile(documents)
    base = {
        "experiment": experiment,
        "dtd": point.workload.dtd,
        "Q": len(point.pairs),
        "strategy": config.strategy,
        "optimize": config.optimize,
    }
    rows = [
        {**base, "category": k, "ms_per_doc": round(v * 1e3 / len(documents), 3)} for k, v in seconds.items()
    ]
    total = sum(seconds.values()) * 1e3 / len(documents)
    rows.append({**base, "category": "total (profiled)", "ms_per_doc": round(total, 3)})
    rows.append({**base, "category": "route, unprofiled", "ms_per_doc": mqpt})
    return rows


# -- experiments ------------------------------------------------------------------------------------


@dataclass
class Results:
    rows: list[dict] = field(default_factory=list)
    breakdown: list[dict] = field(default_factory=list)
    selective: list[dict] = field(default_factory=list)
    growth: dict = field(default_factory=dict)  # the selective sizes timed alternately in one process
    seconds: dict[str, float] = field(default_factory=dict)

    def of(self, experiment: str) -> list[dict]:
        return [r for r in self.rows if r["experiment"] == experiment]


def fresh_point(workload: Workload, q: int, settings: Settings) -> Point:
    documents = workload.documents(settings.documents)
    return measure_point(workload, workload.pairs(q), documents, settings)


def opt_matrix(name: str, workload: Workload, q: int, settings: Settings, results: Results) -> None:
    """Figures 7 and 10: every strategy at every optimization level, each with its breakdown."""
    point = fresh_point(workload, q, settings)
    for strategy in STRATEGIES:
        for level in LEVELS:
            config = Config(strategy, level)
            router, compile_s = extend(None, workload, config, point.pairs)
            row = measure_run(name, point, config, router, compile_s)
            results.rows.append(row)
            sample = point.documents[: settings.profile_documents]
            results.breakdown += profile_rows(name, point, config, router, sample, row["route_ms_per_doc"])
            del router


def sweep(name: str, knob: str, values: tuple[int, ...], settings: Settings, results: Results) -> None:
    """Figures 8 and 9: vary PP or RP on Bib with query+DTD optimizations (reusing fig7's rows)."""
    for value in values:
        workload = replace(BIB, **{knob: value})
        reused = [r for r in results.of("fig7") if r["optimize"] == "dtd"] if workload == BIB else []
        if reused and reused[0]["Q"] == settings.bib_q:
            results.rows += [{**r, "experiment": name} for r in reused]
            continue
        point = fresh_point(workload, settings.bib_q, settings)
        for strategy in STRATEGIES:
            router, compile_s = extend(None, workload, Config(strategy), point.pairs)
            results.rows.append(measure_run(name, point, Config(strategy), router, compile_s))
            del router


def q_scaling(
    name: str, workload: Workload, qs: tuple[int, ...], configs: list[Config], settings: Settings
) -> list[dict]:
    """Figures 11 and 12: nested populations, each router grown by ``Router.add`` from one Q to the next.

    ``compile_s`` is cumulative (the time to compile the first Q subscriptions). Every Q uses the
    same documents, so that the points differ only in the population.
    """
    everyone = workload.pairs(max(qs))
    documents = workload.documents(settings.scaling_documents)
    xpaths = compile_xpaths(everyone)
    points = []
    for q in qs:
        prefix = everyone[:q]
        subset = xpaths.prefix({sid for sid, _ in prefix})
        points.append(measure_point(workload, prefix, documents, settings, subset))
    rows = []
    for config in configs:
        router, total = None, 0.0
        for point in points:
            router, seconds = extend(router, workload, config, point.pairs)
            total += seconds
            rows.append(measure_run(name, point, config, router, total))
        del router
    return rows


def selective(settings: Settings) -> list[dict]:
    """The issue's targets, one process per size (``selective_bench.py``)."""
    rows = []
    for size in settings.selective_sizes:
        budget = str(max(3 * settings.lxml_budget, 10.0))
        cmd = [sys.executable, str(BENCH / "selective_bench.py"), "--size", str(size)]
        cmd += ["--documents", str(settings.selective_documents), "--lxml-budget", budget]
        cmd += ["--saxon-sample", str(settings.saxon_sample)]
        done = subprocess.run(cmd, check=True, capture_output=True, text=True)
        rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
        print(f"  selective {size}: {rows[-1]['route_ms_per_doc']} ms/doc", flush=True)
    return rows


def run_selective(settings: Settings, results: Results) -> None:
    results.selective.extend(selective(settings))
    results.growth.update(growth(settings))


def growth(settings: Settings) -> dict:
    """Per-document cost across the selective sizes, measured alternately in one process."""
    sizes = ",".join(map(str, settings.selective_sizes))
    cmd = [sys.executable, str(BENCH / "selective_bench.py"), "--growth", sizes]
    cmd += ["--documents", str(settings.selective_documents), "--rounds", str(settings.growth_rounds)]
    done = subprocess.run(cmd, check=True, capture_output=True, text=True)
    found = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"  growth: {found['growth_median']}", flush=True)
    return found


def run_experiment(name: str, settings: Settings, results: Results) -> None:
    steps: dict[str, Callable[[], None]] = {
        "fig7": lambda: opt_matrix("fig7", BIB, settings.bib_q, settings, results),
        "fig8": lambda: sweep("fig8", "PP", settings.pp, settings, results),
        "fig9": lambda: sweep("fig9", "RP", settings.rp, settings, results),
        "fig10": lambda: opt_matrix("fig10", BOOK, settings.book_q, settings, results),
        "fig11": lambda: results.rows.extend(
            q_scaling("fig11", replace(BIB, max_value=100), settings.fig11_q, scaling_configs(), settings)
        ),
        "fig12": lambda: results.rows.extend(
            q_scaling("fig12", replace(BOOK, max_value=100), settings.fig12_q, sharing_configs(), settings)
        ),
        "selective": lambda: run_selective(settings, results),
    }
    print(f"{name} ...", flush=True)
    started = time.perf_counter()
    steps[name]()
    results.seconds[name] = round(time.perf_counter() - started, 1)
    gc.collect()


def scaling_configs() -> list[Config]:
    return [Config(s) for s in STRATEGIES]


def sharing_configs() -> list[Config]:
    return [Config("FWR", shared=False), Config("FWR", shared=True)]


# -- main -------------------------------------------------------------------------------------------


def machine() -> dict[str, str]:
    cpu = next(
        (line.split(":", 1)[1].strip() for line in _cpuinfo() if line.startswith("model name")), "unknown"
    )
    return {
        "code": _commit(),
        "cpu": f"{cpu} x {os.cpu_count()}",
        "python": platform.python_version(),
        "lxml": lxml.__version__,
        "platform": platform.platform(),
        "load average at start": " ".join(f"{x:.2f}" for x in os.getloadavg()),
    }


def _commit() -> str:
    """The commit measured, marked ``+changes`` when the work tree differs from it."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=BENCH
        )
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "plugins"], capture_output=True, text=True, cwd=BENCH
        )
    except OSError:
        return "unknown"
    if head.returncode != 0:
        return "unknown"
    return head.stdout.strip() + (" +changes" if dirty.stdout.strip() else "")


def _cpuinfo() -> list[str]:
    try:
        return Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return []


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes: a smoke run of about two minutes")
    ap.add_argument("--only", default=",".join(EXPERIMENTS), help="comma-separated experiments to run")
    args = ap.parse_args()
    settings = QUICK if args.quick else FULL
    chosen = [name for name in EXPERIMENTS if name in args.only.split(",")]
    info = machine()
    started = time.perf_counter()
    results = Results()
    for name in chosen:
        run_experiment(name, settings, results)
    info["wall time"] = f"{time.perf_counter() - started:.0f} s"
    info["load average at end"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    command = "bench/paper_bench.py" + (" --quick" if args.quick else "")
    paper_report.write_all(results, settings, info, command, summary=len(chosen) == len(EXPERIMENTS))


if __name__ == "__main__":
    main()
