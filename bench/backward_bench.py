"""Backward axes (issue 15): what they cost against the forward paths a user would write instead,
and against lxml evaluating the same backward paths one subscription at a time.

For each population shape, ``--size`` subscriptions: 70% from the workload's selective population
(each document matches a few percent of them, as in the paper benchmarks), 30% from five templates
that use backward steps, each with its hand-written forward equivalent (the same nodes, in the same
order):

* ``//D[c]/ancestor::A``  and ``//A[.//D[c]]``;
* ``//P/C[c]/..``  and ``//P[C[c]]``;
* ``//P/C[../S[c]]``  and ``//P[S[c]]/C``;
* ``//D[ancestor::A[c]]``  and ``//A[c]//D``;
* ``for $x in //P/C where $x/../S[c] return $x``  and ``for $x in //P[S[c]]/C return $x``;

with element names drawn from the DTD (``P`` a parent of ``C`` and ``S``, ``A`` an ancestor of
``D``) and ``c`` a comparison of an attribute or a child with a value the documents hold. Three
runs over the same generated documents: ``backward`` (the population with the backward texts),
``forward`` (with their equivalents: issue 15 wants ``backward`` at most 1.3x this), and ``lxml``
(one compiled XPath per subscription of the backward population, which lxml evaluates natively;
issue 15 wants ``backward`` at least 10x faster at 10,000 subscriptions). Matched sets are checked
equal between the three.

Shapes: ``news`` (the NITF-like DTD) and ``book`` (deep recursive sections: an element's ancestors
include its own name). Results go to ``bench/results/backward.md``.

Usage: ``.venv/bin/python bench/backward_bench.py [--size 10000]``
"""

from __future__ import annotations

import argparse
import random
import statistics
from pathlib import Path

from common import RESULTS, compile_xpaths, route_seconds, run_xpaths, write_table_report
from feedrouter import Router
from feedrouter.schema import DtdGraph
from feedrouter.workload import dtds, generate_documents, generate_selective_population
from feedrouter.workload.subscriptions import SubscriptionOptions, SubscriptionWriter, xquery_string
from feedrouter.workload.values import attribute_domain, element_domain

SHAPES: dict[str, dict] = {
    "news": {"dtd": "news", "documents": {}},
    "book": {"dtd": "book", "documents": {"doc_depth": 8}},  # deep recursive sections
}
SHARE = 0.3


def template_pair(graph: DtdGraph, rng: random.Random) -> tuple[str, str] | None:
    """One backward subscription and its forward equivalent, or None where the DTD offers no names."""
    names = sorted(n for n in graph.element_names if ":" not in n)
    kind = rng.randrange(5)
    if kind in (0, 3):  # an ancestor A of a descendant D
        pairs = [(a, d) for a in names for d in sorted(graph.reachable(a)) if ":" not in d]
        if not pairs:
            return None
        a, d = rng.choice(pairs)
        if kind == 0:
            c = _test(graph, d, rng)
            return f"//{d}{c}/ancestor::{a}", f"//{a}[.//{d}{c}]"
        c = _test(graph, a, rng)
        return f"//{d}[ancestor::{a}{c}]", f"//{a}{c}//{d}"
    families = [(p, sorted(c for c in graph.children(p) if ":" not in c)) for p in names]
    families = [(p, kids) for p, kids in families if kids]
    if not families:
        return None
    p, kids = rng.choice(families)
    c, s = rng.choice(kids), rng.choice(kids)
    if kind == 1:
        test = _test(graph, c, rng)
        return f"//{p}/{c}{test}/..", f"//{p}[{c}{test}]"
    if kind == 2:
        test = _test(graph, s, rng)
        return f"//{p}/{c}[../{s}{test}]", f"//{p}[{s}{test}]/{c}"
    test = _test(graph, s, rng)
    return (
        f"for $x in //{p}/{c} where $x/../{s}{test} return $x",
        f"for $x in //{p}[{s}{test}]/{c} return $x",
    )


def _test(graph: DtdGraph, name: str, rng: random.Random) -> str:
    """A selective predicate on ``name``: an attribute, or a text-only child, equal to one value the
    documents give it (as a real subscription names one value); none where there is nothing to compare."""
    writer = SubscriptionWriter(graph, SubscriptionOptions(), rng)
    choices = [
        (f"@{a}", attribute_domain(graph, name, a))
        for a in sorted(graph.attributes(name))
        if ":" not in a
    ]
    choices += [(c, element_domain(graph, c)) for c in sorted(graph.children(name)) if ":" not in c]
    choices = [(subject, domain) for subject, domain in choices if domain.comparable]
    if not choices:
        return ""
    subject, domain = rng.choice(choices)
    return f"[{subject} = {xquery_string(writer._string_value(domain))}]"


def populations(
    dtd: str, size: int, documents: list[bytes]
) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """The population with 30% backward subscriptions and the same with their forward equivalents."""
    graph = dtds.load(dtd)
    rng = random.Random(f"backward:{dtd}")
    plain = generate_selective_population(graph, size, seed=15, documents=documents)
    backward, forward = [], []
    for i, text in enumerate(plain):
        pair = template_pair(graph, rng) if (i * 37) % 100 < SHARE * 100 else None
        backward.append((f"s{i}", pair[0] if pair else text))
        forward.append((f"s{i}", pair[1] if pair else text))
    return backward, forward


def measure(shape: str, size: int, rounds: int, lxml_budget: float) -> dict:
    spec = SHAPES[shape]
    graph = dtds.load(spec["dtd"])
    docs = generate_documents(graph, 40, seed=9, doctype=spec["dtd"] == "news", **spec["documents"])
    backward, forward = populations(spec["dtd"], size, docs)
    routers = {
        "backward": Router.compile(backward, on_error="collect"),
        "forward": Router.compile(forward, on_error="collect"),
    }
    times: dict[str, list[float]] = {name: [] for name in routers}
    matched: dict[str, list[set[str]]] = {}
    for _ in range(rounds):  # alternate, so that both see the same machine
        for name, router in routers.items():
            seconds, found = route_seconds(router.route, docs)
            times[name].append(seconds)
            matched[name] = found
    xpaths = compile_xpaths(backward)
    lxml = run_xpaths(xpaths, docs, lxml_budget)
    agree_lxml = all(
        (matched["backward"][i] - xpaths.skipped) == expected for i, expected in enumerate(lxml.matched)
    )
    back_ms = statistics.median(times["backward"]) * 1e3
    forward_ms = statistics.median(times["forward"]) * 1e3
    uses = sum(b != f for (_, b), (_, f) in zip(backward, forward, strict=True))
    return {
        "population": shape,
        "subscriptions": size,
        "with backward steps": uses,
        "invalid": len(routers["backward"].errors) + len(routers["forward"].errors),
        "documents": len(docs),
        "backward ms/doc": round(back_ms, 2),
        "forward ms/doc": round(forward_ms, 2),
        "backward / forward": round(back_ms / forward_ms, 2),
        "lxml ms/doc": round(lxml.seconds_per_doc * 1e3, 1),
        "lxml documents": len(lxml.matched),
        "lxml / backward": round(lxml.seconds_per_doc * 1e3 / back_ms, 1),
        "matches/doc": round(sum(map(len, matched["backward"])) / len(docs), 1),
        "same matches (forward, lxml)": f"{matched['backward'] == matched['forward']}, {agree_lxml}",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=10000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--lxml-budget", type=float, default=60.0, help="seconds for the lxml run")
    parser.add_argument("--out", type=Path, default=RESULTS / "backward.md")
    args = parser.parse_args()
    rows = [measure(shape, args.size, args.rounds, args.lxml_budget) for shape in SHAPES]
    write_table_report(
        args.out,
        "Backward axes: against their forward equivalents and against lxml",
        f"`bench/backward_bench.py --size {args.size} --rounds {args.rounds}`: ms per document "
        "(median of the rounds, results built), FWR with the shared selection, no DTD "
        "optimizations; lxml: one compiled XPath per subscription of the backward population, "
        "parsing included, over as many documents as fit its budget. 30% of each population use "
        "backward steps (the templates in the script), the rest is the selective population.",
        rows,
    )


if __name__ == "__main__":
    main()
