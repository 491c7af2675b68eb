"""Helpers shared by the benchmarks in ``bench/``: timing, the lxml and Saxon baselines, tables, memory.

Every timed pass runs in :func:`feedrouter.heap.settled` (the routers and compiled XPaths alive then
are kept out of full garbage collections), as the ``feedrouter route`` command and the Spark
routing tasks run: the baselines get the same treatment.

The scripts in ``bench/`` are run as files (``python bench/<name>.py``), so this module is imported
as ``common`` (the script's folder is first on ``sys.path``); importing it also puts ``plugins/`` on
the path so that ``feedrouter`` imports without installing the package.
"""

from __future__ import annotations

import contextlib
import csv
import functools
import resource
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from lxml import etree

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
if str(ROOT / "plugins") not in sys.path:
    sys.path.insert(0, str(ROOT / "plugins"))

from feedrouter import heap  # noqa: E402
from feedrouter.lang import parse, to_xpath  # noqa: E402

Pairs = Sequence[tuple[str, str]]


def secure_parser() -> etree.XMLParser:
    return etree.XMLParser(resolve_entities="internal", no_network=True, load_dtd=False, huge_tree=False)


# -- timing ---------------------------------------------------------------------------------------


def time_per_document(fn: Callable[[bytes], object], documents: list[bytes], repeat: int = 1) -> float:
    """Median seconds per document over ``repeat`` passes (the first pass warms caches and is dropped)."""
    for data in documents[:3]:
        fn(data)
    passes = []
    with heap.settled():
        for _ in range(repeat):
            started = time.perf_counter()
            for data in documents:
                fn(data)
            passes.append((time.perf_counter() - started) / len(documents))
    return statistics.median(passes)


def parse_seconds(documents: list[bytes], repeat: int = 3) -> float:
    """Seconds per document for lxml parsing alone (the floor under any approach)."""
    parser = secure_parser()
    return time_per_document(lambda d: etree.fromstring(d, parser), documents, repeat=repeat)


def route_seconds(
    route: Callable[[bytes], dict[str, bytes]], documents: list[bytes], warmup: int = 1
) -> tuple[float, list[set[str]]]:
    """Mean seconds per document of ``route`` over ``documents`` and the matched ids of each.

    The first ``warmup`` documents are routed once untimed; the heap is settled before timing, so
    that a collection left over from compiling is not charged to routing.
    """
    for data in documents[:warmup]:
        route(data)
    elapsed = 0.0
    matched: list[set[str]] = []
    with heap.settled():
        for data in documents:
            started = time.perf_counter()
            result = route(data)
            elapsed += time.perf_counter() - started
            matched.append(set(result))
    return elapsed / len(documents), matched


# -- the lxml baseline ----------------------------------------------------------------------------


@dataclass
class CompiledXPaths:
    """One compiled lxml XPath per subscription (its for+where part); ``skipped``: not expressible."""

    compiled: list[tuple[str, etree.XPath]]
    skipped: set[str] = field(default_factory=set)
    seconds: float = 0.0

    def prefix(self, ids: set[str]) -> CompiledXPaths:
        """The XPaths of the subscriptions in ``ids`` (for nested populations)."""
        kept = [(sid, xp) for sid, xp in self.compiled if sid in ids]
        return CompiledXPaths(kept, self.skipped & ids, self.seconds * len(kept) / max(1, len(self.compiled)))


def compile_xpaths(texts: Pairs) -> CompiledXPaths:
    """Compile each subscription's for+where part; XPath 1.0 cannot order strings, those are skipped."""
    started = time.perf_counter()
    compiled, skipped = [], set()
    for sid, text in texts:
        try:
            expr, namespaces = to_xpath(parse(text))
        except ValueError:
            skipped.add(sid)
            continue
        compiled.append((sid, etree.XPath(expr, namespaces=namespaces)))
    return CompiledXPaths(compiled, skipped, time.perf_counter() - started)


@dataclass
class LxmlRun:
    """lxml over the first ``len(matched)`` documents (as many as fit in the time budget)."""

    seconds_per_doc: float
    matched: list[set[str]]
    documents: int

    @property
    def complete(self) -> bool:
        return len(self.matched) == self.documents


def run_xpaths(xpaths: CompiledXPaths, documents: list[bytes], budget_s: float) -> LxmlRun:
    """Parse each document and evaluate every XPath on it, stopping once ``budget_s`` is spent.

    At least one document is always measured; the time includes parsing (as routing does).
    """
    parser = secure_parser()
    compiled = xpaths.compiled
    matched: list[set[str]] = []
    with heap.settled():
        started = time.perf_counter()
        for data in documents:
            tree = etree.fromstring(data, parser)
            matched.append({sid for sid, xp in compiled if xp(tree)})
            if time.perf_counter() - started > budget_s:
                break
        seconds = time.perf_counter() - started
    return LxmlRun(seconds / len(matched), matched, len(documents))


def measure_lxml(texts: Pairs, documents: list[bytes], budget_s: float) -> tuple[float, dict, bool]:
    """Seconds per document for one compiled XPath per subscription (sampled if over budget)."""
    lxml_run = run_xpaths(compile_xpaths(texts), documents, budget_s)
    return lxml_run.seconds_per_doc, dict(enumerate(lxml_run.matched)), lxml_run.complete


def mismatches(
    routed: Sequence[set[str]], lxml_run: LxmlRun, skipped: set[str]
) -> tuple[int, list[tuple[int, str]]]:
    """Subscriptions whose matched set differs from lxml's, over the documents lxml measured.

    Returns the number of (document, subscription) disagreements and the first few of them.
    """
    count, examples = 0, []
    for index, expected in enumerate(lxml_run.matched):
        differ = (routed[index] - skipped) ^ expected
        count += len(differ)
        examples.extend((index, sid) for sid in sorted(differ)[: 5 - len(examples)])
    return count, examples


# -- the Saxon baseline ---------------------------------------------------------------------------


def measure_saxon(texts: Pairs, documents: list[bytes], sample: int, n_documents: int = 5) -> float:
    """Seconds per document for Saxon on ``sample`` subscriptions, scaled to the whole population."""
    proc, xq = _saxon()
    step = max(1, len(texts) // sample)
    chosen = texts[::step][:sample]
    docs = documents[:n_documents]
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


@functools.cache
def _saxon():  # type: ignore[no-untyped-def]
    """One Saxon processor per process (and its XQuery processor), made on first use."""
    from saxonche import PySaxonProcessor

    proc = PySaxonProcessor(license=False)
    return proc, proc.new_xquery_processor()


# -- memory ---------------------------------------------------------------------------------------


def rss_mb() -> float:
    """The process's peak resident set size so far, in MB (Linux reports ru_maxrss in KB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def vm_status_mb(field_name: str = "VmRSS") -> float:
    """A memory field of /proc/self/status in MB (VmRSS: resident now; VmHWM: peak); 0 if unknown."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field_name + ":"):
                return int(line.split()[1]) / 1024
    return 0.0


# -- tables ---------------------------------------------------------------------------------------


def write_csv(rows: Sequence[dict], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fields = list(dict.fromkeys(key for row in rows for key in row))
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)


def write_table_report(path: Path, title: str, description: str, rows: Sequence[dict]) -> None:
    """A results page: a title, a paragraph on how it was measured, and the rows as a table (also
    printed)."""
    text = "\n".join([f"# {title}", "", description, "", markdown_table(rows, list(rows[0])), ""])
    path.write_text(text)
    print(text)


def markdown_table(rows: Iterable[dict], cols: Sequence[str]) -> str:
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(_cell(row.get(c, "")) for c in cols) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def _cell(value: object) -> str:
    return "" if value is None else str(value)
