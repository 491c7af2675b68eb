"""The batch's log: every record logged while a batch runs carries its feed, hour and batch id as
``extra`` fields (``feedrouter_feed``, ``feedrouter_hour``, ``feedrouter_batch_id``), so JSON log
formats (``feedrouter --log-format json``, Airflow's structured task logs) show them as keys.

The fields live in a context variable set by :func:`batch_fields` for the run, so helpers deep in
the batch log through :data:`log` without passing the batch around; threads the batch starts
(the lease heartbeat) run in a copy of the context and log with the same fields.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, MutableMapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

FIELDS = ("feedrouter_feed", "feedrouter_hour", "feedrouter_batch_id")

_FIELDS: ContextVar[dict[str, object] | None] = ContextVar("feedrouter_batch_fields", default=None)


class BatchLog(logging.LoggerAdapter[logging.Logger]):
    """A logger whose records carry the running batch's fields (a call's own ``extra`` wins)."""

    def process(self, msg: Any, kwargs: MutableMapping[str, Any]) -> tuple[Any, MutableMapping[str, Any]]:
        kwargs["extra"] = {**(_FIELDS.get() or {}), **(kwargs.get("extra") or {})}
        return msg, kwargs


log = BatchLog(logging.getLogger("feedrouter.spark"))


@contextmanager
def batch_fields(feed: str, hour: str, batch_id: int | None = None) -> Iterator[None]:
    """Log the block's records with this batch's fields."""
    token = _FIELDS.set({"feedrouter_feed": feed, "feedrouter_hour": hour, "feedrouter_batch_id": batch_id})
    try:
        yield
    finally:
        _FIELDS.reset(token)


def set_batch_id(batch_id: int) -> None:
    """The batch id, once the ledger has given it (records before it carry None)."""
    fields = _FIELDS.get()
    if fields is not None:  # in place: threads started by the batch see it too
        fields["feedrouter_batch_id"] = batch_id
