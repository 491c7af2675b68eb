"""Keyword subscriptions: the selection index's keyword matching against evaluating each subscription.

A population of ``--size`` subscriptions that differ only in a keyword (``contains``, ``starts-with``,
``ends-with``, ``lower-case(x) = "v"``) is routed over real documents (the RSS/Atom feeds, NITF
articles and the XMark auction in ``../shared/data``) three ways, in the same run:

* ``indexed``: ``Router`` with the shared selection on: each keyword site keeps one Aho-Corasick
  automaton (contains), its needle lengths (starts-with, ends-with) or a hash of values (lower-case
  equality), so a document costs one pass per site, and only subscriptions whose keyword occurs run;
* ``each``: the same router with the shared selection off: every subscription whose path occurs
  evaluates its own test (what the issue calls "evaluating each");
* ``lxml``: one compiled lxml XPath per subscription (XPath 1.0 has contains and starts-with; the
  others are left out of that column, and said so).

Two populations of different shape: ``titles`` (one contains() keyword per subscription over item,
entry and article titles) and ``mixed`` (contains over bodies and descriptions, starts-with and
ends-with over names and titles, lower-case equality on categories and titles, on several paths).
Keywords are drawn from the documents' own words (so that some match) and from made-up words (so
that most do not), as a real keyword population would be. Matched sets are checked equal between
``indexed`` and ``each``. Results go to ``bench/results/keywords.md``.

Usage: ``.venv/bin/python bench/keywords_bench.py [--size 10000]``
"""

from __future__ import annotations

import argparse
import random
import re
import time
from pathlib import Path

from common import RESULTS, compile_xpaths, markdown_table, route_seconds, run_xpaths
from feedrouter import Router
from feedrouter.workload.subscriptions import xquery_string

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
DOCUMENT_GLOBS = ("feeds/*/*", "nitf/*/*.xml", "xmark/xmark-0.0001.xml")
WORD = re.compile(r"[A-Za-z][a-z]{3,12}")

# (function, context path, argument) per population: where keywords are looked for
SHAPES = {
    "titles": [
        ("contains", "//item", "title"),
        ("contains", "//item", "name"),
        ("contains", "//hedline", "hl1"),
    ],
    "mixed": [
        ("contains", "//item", "description"),
        ("contains", "//body.content", "."),
        ("contains", "//item", "."),
        ("starts-with", "//item", "title"),
        ("ends-with", "//person", "name"),
        ("starts-with", "//person", "name"),
        ("lower-case", "//item", "category"),
        ("lower-case", "//item", "title"),
        ("contains", "//annotation", "description"),
    ],
}


def documents() -> list[bytes]:
    found = sorted({p for glob in DOCUMENT_GLOBS for p in DATA.glob(glob)})
    return [p.read_bytes() for p in found if p.is_file()]


def vocabulary(docs: list[bytes]) -> list[str]:
    words = {w for d in docs for w in WORD.findall(d.decode("utf-8", "replace"))}
    return sorted(words)


def population(
    shape: str, size: int, words: list[str], titles: list[str], seed: int
) -> list[tuple[str, str]]:
    """``size`` keyword subscriptions; a third of the keywords occur in the documents."""
    rng = random.Random(seed)
    sites = SHAPES[shape]
    subs = []
    for i in range(size):
        function, context, arg = sites[i % len(sites)]
        if rng.random() < 0.33:
            word = rng.choice(titles).lower() if function == "lower-case" else rng.choice(words)
        else:
            word = "".join(rng.choice("bcdfghjklmnpqrstvwxz") for _ in range(rng.randint(5, 9)))
        if function == "starts-with":
            word = word[: rng.randint(2, 5)].capitalize()
        elif function == "ends-with":
            word = word[-rng.randint(2, 4) :]
        if function == "lower-case":
            test = f"lower-case({arg}) = {xquery_string(word)}"
        else:
            test = f"{function}({arg}, {xquery_string(word)})"
        subs.append((f"{shape}-{i}", f"{context}[{test}]"))
    return subs


def measure(shape: str, size: int, docs: list[bytes], words: list[str], titles: list[str]) -> dict:
    subs = population(shape, size, words, titles, seed=size)
    started = time.perf_counter()
    indexed = Router.compile(subs)
    compile_s = time.perf_counter() - started
    each = Router.compile(subs, shared_selection=False)
    repeat = docs * 3
    indexed_s, indexed_matched = route_seconds(indexed.route, repeat)
    each_s, each_matched = route_seconds(each.route, repeat)
    assert indexed_matched == each_matched, "the index changed a result"
    xpaths = compile_xpaths(
        [(sid, text) for sid, text in subs if "contains(" in text or "starts-with(" in text]
    )
    lxml_run = run_xpaths(xpaths, docs, budget_s=60.0)
    matches = sum(len(m) for m in indexed_matched[: len(docs)])
    return {
        "population": shape,
        "subscriptions": size,
        "documents": len(docs),
        "matches per pass": matches,
        "compile s": round(compile_s, 2),
        "indexed ms/doc": round(indexed_s * 1e3, 3),
        "each ms/doc": round(each_s * 1e3, 3),
        "each / indexed": round(each_s / indexed_s, 1),
        "lxml ms/doc": round(lxml_run.seconds_per_doc * 1e3, 1),
        "lxml subscriptions": len(xpaths.compiled),
        "lxml / indexed": round(lxml_run.seconds_per_doc / indexed_s, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=10000)
    parser.add_argument("--out", type=Path, default=RESULTS / "keywords.md")
    args = parser.parse_args()
    docs = documents()
    words = vocabulary(docs)
    titles = sorted(
        {t for d in docs for t in re.findall(r"<title>([^<]{3,60})</title>", d.decode("utf-8", "replace"))}
    )
    rows = [measure(shape, args.size, docs, words, titles) for shape in SHAPES]
    cols = list(rows[0])
    text = [
        "# Keyword subscriptions: the selection index against evaluating each",
        "",
        f"`bench/keywords_bench.py --size {args.size}`; {len(docs)} real documents from ../shared/data "
        "(RSS/Atom feeds, NITF articles, the XMark auction), each routed three times; ms per document, "
        "results built. `each` is the same router with the shared selection off; `lxml` is one compiled "
        "XPath per subscription for the contains()/starts-with() ones only (XPath 1.0 has no ends-with "
        "or lower-case), parsing included. Matched sets of `indexed` and `each` are checked equal.",
        "",
        markdown_table(rows, cols),
        "",
    ]
    args.out.write_text("\n".join(text))
    print("\n".join(text))


if __name__ == "__main__":
    main()
