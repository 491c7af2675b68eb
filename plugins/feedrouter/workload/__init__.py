"""Workload generators for tests and benchmarks (paper 000, section 6.1).

* :func:`generate_documents`: random documents valid against a DTD (DocDepth, MaxRepeats, MaxValue).
* :func:`generate_subscriptions`: random subscription texts in the feedrouter language (Q, D1, PP,
  RP, D2, DSProb, MaxValue, wildcard rate), FLWR or filter form.
* :func:`generate_selective_population`: many subscriptions of which each document matches few.
* :func:`generate_feed_hours` and :func:`generate_join_subscriptions`: hours of RSS-like items for
  several feeds and join subscriptions over them (issue 16, paper 001 section 6).
* :mod:`feedrouter.workload.dtds`: the project's DTDs ``BIB``, ``BOOK`` and ``NEWS``.

Everything is deterministic for a given seed.
"""

from feedrouter.workload import dtds
from feedrouter.workload.documents import DocumentOptions, generate_documents
from feedrouter.workload.joins import (
    GeneratedMessage,
    HourBatch,
    Vocabulary,
    generate_feed_hours,
    generate_join_subscriptions,
)
from feedrouter.workload.selective import generate_selective_population
from feedrouter.workload.subscriptions import SubscriptionOptions, generate_subscriptions, match_probe

__all__ = [
    "DocumentOptions",
    "GeneratedMessage",
    "HourBatch",
    "SubscriptionOptions",
    "Vocabulary",
    "dtds",
    "generate_documents",
    "generate_feed_hours",
    "generate_join_subscriptions",
    "generate_selective_population",
    "generate_subscriptions",
    "match_probe",
]
