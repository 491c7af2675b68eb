"""What the language round costs: a population where 30% use its constructs against the same without.

For each population shape, ``--size`` subscriptions are generated twice from the same seeds: once
plain (the first round's predicates only), once with 30% of them written with the language round's
constructs: ``or``, ``not()``/``empty()``/``exists()``, string functions, ``count()`` and literal
sequences among their conditions; positions; unions, ``order by``, ``*:name``; the round's
constructors (attributes, value templates, attribute copies, comments, namespace declarations,
sequences, ``let``); ``child::``, ``self::``, ``descendant-or-self::``, ``@*`` and ``text()``
filters, at the two densities of :data:`MIXES`. Both routers route the same generated documents;
the table gives ms per document (results built) and the ratio, which issue 14 wants at most 1.5.

Shapes: ``news`` (the NITF-like news DTD, FLWR and filter subscriptions mixed) and ``book``
(a recursive DTD, half the steps ``//`` and a fifth ``*``: deep documents where positions and
residual tests see many candidates). Results go to ``bench/results/language.md``.

Usage: ``.venv/bin/python bench/language_bench.py [--size 5000]``
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from common import RESULTS, route_seconds, write_table_report
from feedrouter import Router
from feedrouter.workload import dtds, generate_documents, generate_subscriptions

SHAPES = {
    "news": {"dtd": "news", "knobs": {}},
    "book": {"dtd": "book", "knobs": {"DSProb": 0.5, "wildcard": 0.2}},
}
SHARE = 0.3
#: The language round's knobs for the subscriptions that use it (see SubscriptionOptions), at two
#: densities: ``moderate``, a subscription using one or two of the new constructs, and ``dense``,
#: each using most of them at once (70% of its conditions new, a position on a quarter of its steps).
MIXES = {
    "moderate": {
        "conditions": 0.4,
        "positions": 0.15,
        "unions": 0.2,
        "orders": 0.2,
        "any_namespace": 0.1,
        "constructors": 0.3,
        "spellings": 0.15,
    },
    "dense": {
        "conditions": 0.7,
        "positions": 0.25,
        "unions": 0.3,
        "orders": 0.3,
        "any_namespace": 0.2,
        "constructors": 0.6,
        "spellings": 0.4,
    },
}


def populations(
    dtd: str, size: int, knobs: dict, new: dict[str, float]
) -> tuple[list[tuple[str, str]], list[tuple[str, str]], int]:
    """The plain population and the one where every third-or-so subscription uses the new language."""
    graph = dtds.load(dtd)
    plain, mixed, changed = [], [], 0
    for i in range(size):
        base = generate_subscriptions(graph, 1, seed=10_000 + i, form="mixed", **knobs)[0]
        plain.append((f"s{i}", base))
        if (i * 37) % 100 < SHARE * 100:
            text = generate_subscriptions(graph, 1, seed=10_000 + i, form="mixed", **new, **knobs)[0]
            changed += text != base
            mixed.append((f"s{i}", text))
        else:
            mixed.append((f"s{i}", base))
    return plain, mixed, changed


def measure(shape: str, mix: str, size: int, rounds: int) -> dict:
    spec = SHAPES[shape]
    graph = dtds.load(spec["dtd"])
    docs = generate_documents(graph, 40, seed=7, doctype=spec["dtd"] == "news")
    plain, mixed, changed = populations(spec["dtd"], size, spec["knobs"], MIXES[mix])
    routers = {
        "plain": Router.compile(plain, on_error="collect"),
        "mixed": Router.compile(mixed, on_error="collect"),
    }
    times: dict[str, list[float]] = {name: [] for name in routers}
    matched: dict[str, int] = {}
    for _ in range(rounds):  # alternate, so that both see the same machine
        for name, router in routers.items():
            seconds, found = route_seconds(router.route, docs)
            times[name].append(seconds)
            matched[name] = sum(len(m) for m in found)
    plain_ms = statistics.median(times["plain"]) * 1e3
    mixed_ms = statistics.median(times["mixed"]) * 1e3
    return {
        "population": shape,
        "new constructs": mix,
        "subscriptions": size,
        "with new constructs": changed,
        "invalid": len(routers["mixed"].errors),
        "documents": len(docs),
        "plain ms/doc": round(plain_ms, 2),
        "30% new ms/doc": round(mixed_ms, 2),
        "ratio": round(mixed_ms / plain_ms, 2),
        "matches plain": matched["plain"],
        "matches 30% new": matched["mixed"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=RESULTS / "language.md")
    args = parser.parse_args()
    rows = [measure(shape, mix, args.size, args.rounds) for shape in SHAPES for mix in MIXES]
    write_table_report(
        args.out,
        "The language round's cost: 30% of a population using its constructs",
        f"`bench/language_bench.py --size {args.size} --rounds {args.rounds}`: ms per document (median of "
        "the rounds, results built), FWR with the shared selection, no DTD optimizations. `with new "
        "constructs` counts the subscriptions whose text the language round changed; the mixes are "
        "`MIXES` in the script (moderate: one or two new constructs per subscription; dense: most of "
        "them in each).",
        rows,
    )


if __name__ == "__main__":
    main()
