"""A sample catalog: one DTD, one feed, a few subscribers and generated subscriptions.

What ``feedrouter catalog init-sample`` inserts (the demo and the benchmarks use it). The rows go in
through ordinary INSERTs, exactly as a user's SQL would, so on Postgres the triggers see them.
Inserting again is harmless: rows whose name exists are left alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, func, select
from sqlalchemy.dialects import postgresql

from feedrouter.catalog.models import Base, Dtd, Feed, Subscriber, Subscription

#: Subscriptions are inserted in chunks to bound the memory of one executemany.
CHUNK = 10000


@dataclass(frozen=True)
class SampleSpec:
    """What to insert. Prefixes are URIs (``file:///…`` or ``s3://…``)."""

    feed: str
    dtd_name: str
    dtd_text: str
    dtd_root: str
    input_prefix: str
    output_base: str
    subscribers: int
    texts: Sequence[str]
    invalid: Sequence[str] = ()


def insert_sample(conn: Connection, spec: SampleSpec) -> dict[str, int]:
    """Insert the sample rows; returns how many subscriptions of the feed exist afterwards."""
    _insert_ignore(conn, Dtd, [{"name": spec.dtd_name, "root_element": spec.dtd_root, "text": spec.dtd_text}])
    dtd_id = conn.scalar(select(Dtd.id).where(Dtd.name == spec.dtd_name))
    _insert_ignore(conn, Feed, [{"name": spec.feed, "input_prefix": spec.input_prefix, "dtd_id": dtd_id}])
    feed_id = conn.execute(select(Feed.id).where(Feed.name == spec.feed)).scalar_one()
    names = [f"{spec.feed}-subscriber-{i + 1}" for i in range(spec.subscribers)]
    base = spec.output_base.rstrip("/")
    _insert_ignore(conn, Subscriber, [{"name": n, "output_prefix": f"{base}/{n}"} for n in names])
    ids = dict(conn.execute(select(Subscriber.name, Subscriber.id).where(Subscriber.name.in_(names))).all())
    rows = _subscription_rows(spec, feed_id, [ids[n] for n in names])
    for start in range(0, len(rows), CHUNK):
        _insert_ignore(conn, Subscription, rows[start : start + CHUNK])
    count = conn.scalar(select(func.count()).select_from(Subscription).where(Subscription.feed_id == feed_id))
    return {"subscriptions": int(count or 0), "subscribers": len(names)}


def _subscription_rows(spec: SampleSpec, feed_id: int, subscriber_ids: list[int]) -> list[dict[str, Any]]:
    texts = [(f"sub-{i:06d}", text) for i, text in enumerate(spec.texts)]
    texts += [(f"broken-{i:03d}", text) for i, text in enumerate(spec.invalid)]
    return [
        {
            "subscriber_id": subscriber_ids[i % len(subscriber_ids)],
            "feed_id": feed_id,
            "name": name,
            "query": text,
        }
        for i, (name, text) in enumerate(texts)
    ]


def _insert_ignore(conn: Connection, table: type[Base], rows: Iterable[dict[str, Any]]) -> None:
    """INSERT … ON CONFLICT DO NOTHING."""
    rows = list(rows)
    if not rows:
        return
    # executemany: SQLAlchemy batches the rows into multi-row INSERTs within the driver's limits.
    conn.execute(postgresql.insert(table).on_conflict_do_nothing(), rows)
