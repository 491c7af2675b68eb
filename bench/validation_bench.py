"""What checking documents against the feed DTD costs (issue 18, item 12): lxml's DTD validation
per document, next to parsing it, on generated documents of the news, bib and book DTDs.

Routers that use DTD-driven optimizations validate every document (an invalid one is routed by the
DTD-free plans or quarantined); this prints the figures the README quotes, one JSON object per DTD.
Run: ``.venv/bin/python bench/validation_bench.py``.
"""

from __future__ import annotations

import argparse
import json
import time

from lxml import etree

from feedrouter.engine.document import DocumentParser
from feedrouter.schema.dtd import load_dtd
from feedrouter.workload import dtds, generate_documents


def per_document_us(action, items, rounds: int) -> float:  # type: ignore[no-untyped-def]
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for item in items:
            action(item)
        best = min(best, time.perf_counter() - start)
    return best / len(items) * 1e6


def measure(name: str, count: int, rounds: int, depth: int, repeats: int) -> dict[str, object]:
    graph = dtds.load(name)
    documents = generate_documents(graph, count, seed=7, doc_depth=depth, max_repeats=repeats)
    parser = DocumentParser(graph.text)
    roots = [next(parser.events(doc))[1] for doc in documents]
    validator = load_dtd(graph.text.encode())
    valid = sum(validator.validate(root) for root in roots)
    parse_us = per_document_us(lambda d: next(parser.events(d)), documents, rounds)
    validate_us = per_document_us(validator.validate, roots, rounds)
    elements = sum(sum(1 for _ in root.iter(etree.Element)) for root in roots) / len(roots)
    return {
        "dtd": name,
        "documents": count,
        "bytes_avg": round(sum(map(len, documents)) / count),
        "elements_avg": round(elements, 1),
        "valid": f"{valid}/{count}",
        "parse_us_per_doc": round(parse_us, 1),
        "validate_us_per_doc": round(validate_us, 1),
        "validate_over_parse": round(validate_us / parse_us, 2),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--documents", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    for name in ("news", "bib", "book"):
        for depth, repeats in ((6, 3), (10, 8)):
            result = measure(name, args.documents, args.rounds, depth, repeats)
            print(json.dumps({**result, "doc_depth": depth, "max_repeats": repeats}))


if __name__ == "__main__":
    main()
