"""Plan artifact bytes per subscription, for two populations of different shape (issue 13 step 6).

The payload of a plan artifact is a zlib-compressed pickle of the compiled router (see
:func:`feedrouter.catalog.artifact.encode`; the delivery targets it also carries are left out here).
For each population this prints the payload bytes per subscription (compressed and raw pickle) and
the share of it the subscription texts take (``texts_*``: the router keeps them only when it may
need to recompile them, see ``Router._texts``).

Run with ``.venv/bin/python bench/artifact_bench.py [--size 3000]``; prints one JSON object per line.
"""

from __future__ import annotations

import argparse
import json
import pickle
import zlib

from feedrouter import Router
from feedrouter.workload import (
    dtds,
    generate_documents,
    generate_selective_population,
    generate_subscriptions,
)

SEED = 2026


def news_selective(size: int) -> tuple[list[tuple[str, str]], str]:
    """The selective population of ``selective_bench.py`` (news DTD, about 2% matched per document)."""
    graph = dtds.load("news")
    documents = generate_documents(graph, 50, seed=SEED, doc_depth=8, max_repeats=5)
    texts = generate_selective_population(graph, size, seed=SEED, target_match_rate=0.02, documents=documents)
    return [(f"s{i}", t) for i, t in enumerate(texts)], "news"


def book_paper(size: int) -> tuple[list[tuple[str, str]], str]:
    """A paper 000 §6.3-style population on the Book DTD (FLWR, predicates and return paths)."""
    graph = dtds.load("book")
    texts = generate_subscriptions(graph, size, seed=SEED, D1=3, PP=(1, 3), RP=(1, 4), D2=2, DSProb=0.2)
    return [(f"q{i}", t) for i, t in enumerate(texts)], "book"


def payload(obj: object) -> tuple[int, int]:
    raw = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    return len(zlib.compress(raw, 6)), len(raw)


def measure(name: str, pairs: list[tuple[str, str]], dtd: str, optimize: str) -> dict:
    router = Router.compile(pairs, dtd=dtds.load(dtd), strategy="FWR", optimize=optimize, on_error="collect")
    served = len(router)
    compressed, raw = payload(router)
    texts_compressed, texts_raw = payload(dict(pairs))
    return {
        "population": name,
        "optimize": optimize,
        "subscriptions": served,
        "payload_bytes_per_sub": round(compressed / served, 1),
        "pickle_bytes_per_sub": round(raw / served, 1),
        "texts_payload_bytes_per_sub": round(texts_compressed / served, 1),
        "texts_pickle_bytes_per_sub": round(texts_raw / served, 1),
        "keeps_texts": bool(getattr(router, "_texts", None)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=3000)
    args = parser.parse_args()
    for make in (news_selective, book_paper):
        pairs, dtd = make(args.size)
        for optimize in ("dtd", "query"):
            print(json.dumps(measure(make.__name__, pairs, dtd, optimize)), flush=True)


if __name__ == "__main__":
    main()
