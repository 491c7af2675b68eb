"""The Arrow side of the job without Spark: rows survive the round trip through record batches,
and batches are cut by bytes, so MiB results never pile up in one batch."""

from __future__ import annotations

import pyarrow as pa

from feedrouter.spark import frames
from feedrouter.spark.tasks import STATS, ObjectStats


def test_batches_are_cut_by_bytes_and_by_rows() -> None:
    schema = frames.arrow_schema(pa, frames.REPORTED)
    rows = [{"kind": "delivery", "payload": b"x" * 400} for _ in range(10)]
    batches = list(frames.bounded(rows, schema, max_bytes=1000, max_rows=100))
    assert [batch.num_rows for batch in batches] == [3, 3, 3, 1]
    assert [b.num_rows for b in frames.bounded(rows, schema, max_bytes=1 << 20, max_rows=4)] == [4, 4, 2]
    huge = [{"kind": "delivery", "payload": b"y" * 5000}]  # one row above the bound: a batch of its own
    assert [b.num_rows for b in frames.bounded(huge + rows[:1], schema, max_bytes=1000)] == [1, 1]


def test_routed_rows_round_trip_through_arrow() -> None:
    stats = ObjectStats(3, documents=2, matches=1)
    records = [(("7", 3, 1), ("d1g3st", b"<title>1</title>", "a.xml")), ((STATS, 3, 0), stats)]
    schema = frames.arrow_schema(pa, frames.ROUTED)
    [batch] = frames.bounded((frames._routed_row(key, value) for key, value in records), schema)
    assert batch.schema.names == ["sid", "ordinal", "idx", "source", "digest", "body", "stats"]
    assert [frames._record(row) for row in batch.to_pylist()] == records


def test_the_spark_ddl_and_the_arrow_schemas_agree() -> None:
    for ddl in (frames.OBJECTS, frames.ROUTED, frames.REPORTED):
        schema = frames.arrow_schema(pa, ddl)
        assert [f"{field.name}" for field in schema] == [column.split()[0] for column in ddl.split(",")]
    assert frames.ARROW_CONF["spark.sql.execution.arrow.maxBytesPerBatch"] == str(frames.MAX_BATCH_BYTES)
