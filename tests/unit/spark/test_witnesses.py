"""The witness store's Parquet tables: round trip, identical bytes on a re-run, completeness marker."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

from feedrouter.join.relations import HourWitnesses, MessageRef
from feedrouter.spark.witnesses import encode, has_hour, read_hour, write_hour
from feedrouter.storage import open_store

HOUR = datetime(2026, 5, 1, 8, tzinfo=timezone.utc)


def hour_of_witnesses() -> HourWitnesses:
    found = HourWitnesses("books", HOUR)
    found.messages += [
        MessageRef("a.xml", 0, HOUR + timedelta(minutes=5)),
        MessageRef("b.xml", 0, None),
        MessageRef("b.xml", 1, HOUR - timedelta(minutes=20, microseconds=7)),
    ]
    found.roots = {"block-1": [(0, 1), (2, 4)], "block-2": [(2, 4)]}
    found.values = {(0, 1): {"author": ("ann", "bob"), "@id": ("7",)}, (2, 4): {"author": ("ann",)}}
    found.fragments = {(0, 1): {"nodes  title": b"<title>R</title>"}, (2, 4): {"value  @id": b""}}
    return found


def test_an_hour_reads_back_as_written(tmp_path: Path) -> None:
    store = open_store(tmp_path.as_uri())
    assert read_hour(store, "books", HOUR) is None and not has_hour(store, "books", HOUR)
    written = hour_of_witnesses()
    write_hour(store, written)
    back = read_hour(store, "books", HOUR)
    assert back is not None
    assert back.messages == written.messages
    assert back.roots == written.roots
    assert {n: {k: set(v) for k, v in leaves.items()} for n, leaves in back.values.items()} == {
        n: {k: set(v) for k, v in leaves.items()} for n, leaves in written.values.items()
    }
    assert back.fragments == written.fragments
    assert back.value_index("author") == {"ann": [(0, 1), (2, 4)], "bob": [(0, 1)]}


def test_a_rerun_writes_identical_bytes() -> None:
    first, second = encode(hour_of_witnesses()), encode(hour_of_witnesses())
    assert first == second
    shuffled = hour_of_witnesses()
    shuffled.roots = {"block-2": [(2, 4)], "block-1": [(2, 4), (0, 1)]}  # same relation, other order
    assert encode(shuffled) == first
