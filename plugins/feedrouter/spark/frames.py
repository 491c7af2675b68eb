"""The batch's rows as Arrow record batches: what ``mapInArrow`` hands the tasks and takes back.

Three row shapes, declared as Spark DDL (for the DataFrames) and built as Arrow batches (in tasks):

* :data:`OBJECTS`: the hour's input objects ``(ordinal, key)``: the driver's listing;
* :data:`ROUTED`: stage 1's output, one row per result (``sid``, ``ordinal``, ``idx`` order it,
  ``body`` holds it) and one statistics row per object (``sid`` = ``""``, ``stats`` a pickled
  :class:`~feedrouter.spark.tasks.ObjectStats`);
* :data:`REPORTED`: stage 2's output, one small row per delivery, refused delivery or statistics
  (``payload`` a pickled :class:`~feedrouter.spark.publish.Delivered`, ``Undelivered`` or
  ``ObjectStats``): all the driver collects.

Results can be MiBs, so the batches the tasks yield are cut by bytes (:func:`bounded`), and the
batches Spark feeds them are cut by ``spark.sql.execution.arrow.maxBytesPerBatch``
(:data:`ARROW_CONF`, set by the job for its run).
"""

from __future__ import annotations

import pickle
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from feedrouter.spark.spec import JobSpec
from feedrouter.spark.tasks import STATS, WITNESSES, Key, deliver_partition, route_partition

if TYPE_CHECKING:
    import pyarrow as pa

OBJECTS = "ordinal bigint, key string"
ROUTED = "sid string, ordinal bigint, idx bigint, source string, digest string, body binary, stats binary"
REPORTED = "kind string, payload binary"

#: Bytes and rows after which a task cuts the Arrow batch it is filling (one larger result still
#: makes a batch of its own).
MAX_BATCH_BYTES = 8 << 20
MAX_BATCH_ROWS = 4096
#: What Spark's Arrow batches towards the tasks may hold (the same bound, by bytes and by rows).
ARROW_CONF = {
    "spark.sql.execution.arrow.maxBytesPerBatch": str(MAX_BATCH_BYTES),
    "spark.sql.execution.arrow.maxRecordsPerBatch": str(MAX_BATCH_ROWS),
}


def route_arrow(spec: JobSpec, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Stage 1 in ``mapInArrow``: route the objects of the partition, yield :data:`ROUTED` rows."""
    import pyarrow as pa

    items = ((row["ordinal"], row["key"]) for batch in batches for row in batch.to_pylist())
    rows = (_routed_row(key, value) for key, value in route_partition(spec, None, items))
    yield from bounded(rows, arrow_schema(pa, ROUTED))


def deliver_arrow(spec: JobSpec, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Stage 2 in ``mapInArrow``: write the partition's folders (its rows are sorted by subscription,
    object, message), yield one :data:`REPORTED` row per outcome."""
    import pyarrow as pa

    records = (_record(row) for batch in batches for row in batch.to_pylist())
    outcomes = deliver_partition(spec, records)
    rows = ({"kind": kind, "payload": pickle.dumps(value)} for kind, value in outcomes)
    yield from bounded(rows, arrow_schema(pa, REPORTED))


def reported(payloads: Iterable[bytes]) -> Iterator[Any]:
    """The driver's side of :data:`REPORTED`: the tasks' outcomes, unpickled."""
    return (pickle.loads(payload) for payload in payloads)


def bounded(
    rows: Iterable[dict[str, Any]],
    schema: pa.Schema,
    max_bytes: int = MAX_BATCH_BYTES,
    max_rows: int = MAX_BATCH_ROWS,
) -> Iterator[pa.RecordBatch]:
    """Arrow batches of ``rows``, each cut once it holds ``max_bytes`` or ``max_rows``."""
    import pyarrow as pa

    pending: list[dict[str, Any]] = []
    size = 0
    for row in rows:
        pending.append(row)
        size += sum(len(value) for value in row.values() if isinstance(value, (bytes, str)))
        if size >= max_bytes or len(pending) >= max_rows:
            yield pa.RecordBatch.from_pylist(pending, schema=schema)
            pending, size = [], 0
    if pending:
        yield pa.RecordBatch.from_pylist(pending, schema=schema)


def _routed_row(key: Key, value: Any) -> dict[str, Any]:
    sid, ordinal, index = key
    if sid in (STATS, WITNESSES):  # pickled in the stats column: small, read by one task
        return {"sid": sid, "ordinal": ordinal, "idx": index, "stats": pickle.dumps(value)}
    digest, body, source = value
    return {"sid": sid, "ordinal": ordinal, "idx": index, "source": source, "digest": digest, "body": body}


def _record(row: dict[str, Any]) -> tuple[Key, Any]:
    key = (row["sid"], row["ordinal"], row["idx"])
    if row["sid"] in (STATS, WITNESSES):
        return key, pickle.loads(row["stats"])
    return key, (row["digest"], row["body"], row["source"])


_TYPES = {"string": "string", "bigint": "int64", "int": "int32", "binary": "binary"}


def arrow_schema(pa: Any, ddl: str) -> pa.Schema:
    """The Arrow schema of a flat DDL string (the types Spark maps them to)."""
    fields = (column.split() for column in ddl.split(","))
    return pa.schema([(name, getattr(pa, _TYPES[kind])()) for name, kind in fields])
