"""The catalog's locks: every advisory-lock key feedrouter takes is made here.

A plan build of a feed holds ``pg_advisory_xact_lock(advisory_key(feed))`` for its transaction (see
:mod:`feedrouter.catalog.builder`). Runs of one hour do not use an advisory lock: they hold a lease,
a row of ``hour_leases`` that outlives a connection
(:mod:`feedrouter.catalog.lease`).
"""

from __future__ import annotations

import hashlib

from sqlalchemy import Connection, func, select


def advisory_key(feed_name: str) -> int:
    """The signed 64-bit advisory-lock key of a feed's plan builds (stable across processes).

    >>> advisory_key("news") == advisory_key("news") != advisory_key("sports")
    True
    """
    digest = hashlib.sha256(f"feedrouter.build_plan:{feed_name}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def try_build_lock(conn: Connection, feed_name: str) -> bool:
    """Take the feed's build lock for this transaction if it is free; False when another holds it."""
    return bool(conn.scalar(select(func.pg_try_advisory_xact_lock(advisory_key(feed_name)))))


def wait_for_build_lock(conn: Connection, feed_name: str) -> None:
    """Block until the feed's build lock is free, then hold it for this transaction."""
    conn.scalar(select(func.pg_advisory_xact_lock(advisory_key(feed_name))))
