"""Retention of the witness store: a feed's hours listed from their folders, whole hours deleted with
their ``_SUCCESS`` first."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from feedrouter.join.relations import HourWitnesses
from feedrouter.spark.witnesses import delete_hour, has_hour, read_hour, witness_hours, write_hour
from feedrouter.storage import FileStore, ObjectStore

HOUR = datetime(2026, 5, 1, 8, tzinfo=timezone.utc)


@pytest.fixture
def store(tmp_path: Path) -> FileStore:
    return FileStore(tmp_path / "state")


def write(store: ObjectStore, feed: str, hour: datetime) -> None:
    write_hour(store, HourWitnesses(feed, hour, ("block-1",)))


def test_a_feeds_hours_are_read_from_its_folders_and_no_other_feeds(store: FileStore) -> None:
    for hour in (HOUR + timedelta(hours=17), HOUR, HOUR + timedelta(hours=1)):
        write(store, "books", hour)
    write(store, "books-extra", HOUR - timedelta(hours=3))  # a feed whose name starts the same
    write(store, "films", HOUR - timedelta(hours=5))
    store.put("witnesses/books/dt=2026-13-01/hour=00/_SUCCESS", b"")  # no hour the layout writes
    store.put("witnesses/books/notes.txt", b"")

    assert witness_hours(store, "books") == [HOUR, HOUR + timedelta(hours=1), HOUR + timedelta(hours=17)]
    assert witness_hours(store, "films") == [HOUR - timedelta(hours=5)]
    assert witness_hours(store, "none") == []


def test_an_incomplete_hour_is_listed_too(store: FileStore) -> None:
    store.put("witnesses/books/dt=2026-05-01/hour=08/messages.parquet", b"half")  # no _SUCCESS

    assert witness_hours(store, "books") == [HOUR]
    assert not has_hour(store, "books", HOUR)


def test_deleting_an_hour_removes_its_marker_first_and_every_object(
    store: FileStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(store, "books", HOUR)
    write(store, "books", HOUR + timedelta(hours=1))
    deleted: list[str] = []
    original = FileStore._delete

    def recording(self: FileStore, key: str) -> None:
        deleted.append(key)
        original(self, key)

    monkeypatch.setattr(FileStore, "_delete", recording)

    assert delete_hour(store, "books", HOUR) == 6  # four tables, blocks.json and _SUCCESS
    assert deleted[0] == "witnesses/books/dt=2026-05-01/hour=08/_SUCCESS"
    assert len(set(deleted)) == 6
    assert read_hour(store, "books", HOUR) is None
    assert witness_hours(store, "books") == [HOUR + timedelta(hours=1)]
    assert has_hour(store, "books", HOUR + timedelta(hours=1))
    assert delete_hour(store, "books", HOUR) == 0  # already gone: nothing to delete


def test_expiring_deletes_each_hour_under_its_lease_and_leaves_a_busy_one(store: FileStore) -> None:
    """A routing or back-fill writing an old hour holds its lease: retention leaves that hour for
    its next run (a review found one deleted while written, left marked whole with tables missing,
    and every join reading it failing for ever)."""
    from contextlib import contextmanager

    from feedrouter.spark.errors import BatchBusyError
    from feedrouter.spark.witnesses import expire_hours

    hours = [HOUR + timedelta(hours=k) for k in range(3)]
    for hour in hours:
        write(store, "books", hour)
    held: list[datetime] = []

    @contextmanager
    def lock(feed: str, hour: datetime) -> Iterator[None]:
        if hour == hours[1]:
            raise BatchBusyError("[FR605] busy")
        held.append(hour)
        yield
        assert not has_hour(store, feed, hour)  # deleted while held

    assert expire_hours(store, "books", hours[2], lock) == [hours[0]]
    assert held == [hours[0]] and witness_hours(store, "books") == hours[1:]
