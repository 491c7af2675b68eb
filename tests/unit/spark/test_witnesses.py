"""The witness store's Parquet tables: round trip, identical bytes on a re-run, completeness marker."""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from feedrouter import kernel
from feedrouter.errors import WitnessesUnreadable
from feedrouter.join.relations import HourWitnesses, LeafEntries, MessageRef, MessageWitnesses
from feedrouter.join.witness import WitnessRow
from feedrouter.spark.witnesses import (
    DELIVERY_TABLES,
    WitnessHours,
    blocks_of_hour,
    encode,
    has_hour,
    read_hour,
    read_joinable,
    read_relation,
    tables,
    write_hour,
)
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


def filed_messages(rng: random.Random, count: int) -> list[MessageWitnesses]:
    """Messages as routing tasks file them: nodes bound in groups of blocks (a block now and then
    in two groups of a node, as two plans can bind it), rows of two plans' names, a node now and
    then in both plans' rows (a leaf both read, with the same values), values repeated and
    missing."""
    plans = [
        (("author", "@lang"), ("nodes  author",)),
        (("author", "title"), ("nodes  title", "value  title")),
    ]
    blocks = [f"block-{i:02}" for i in range(12)]
    words = ["ann", "bob", "cy", "", "é\u00e9"]
    found = []
    for number in range(count):
        message = MessageWitnesses(MessageRef(f"m{number}", 0, None))
        for node in rng.sample(range(1, 40), rng.randint(0, 3)):
            groups = [tuple(rng.sample(blocks, rng.randint(1, 3))) for _ in range(rng.randint(1, 3))]
            message.bound[node] = groups
            # a leaf of a node has its values whichever plan reads it
            leaf_values = {
                leaf: tuple(rng.choices(words, k=rng.randint(0, 2))) for leaf in ("author", "@lang", "title")
            }
            for names in rng.sample(plans, rng.randint(1, 2)):
                values = tuple(leaf_values[leaf] for leaf in names[0])
                fragments = tuple(f"<{name}>{node}</{name}>".encode() for name in names[1])
                message.rows.append((names, WitnessRow(node, values, fragments)))
        found.append(message)
    return found


@pytest.fixture(params=["compiled", "python"])
def writer_loops(request: pytest.FixtureRequest) -> Iterator[None]:
    """The writer's loops over filed messages compiled (:mod:`feedrouter.kernel`) and in Python."""
    if request.param == "python":
        with kernel.turned_off():
            yield
    elif kernel.file_messages is None:
        pytest.skip("the compiled kernel is turned off or not built")
    else:
        yield


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.usefixtures("writer_loops")
def test_the_tables_of_filed_messages_hold_what_their_relations_do(seed: int) -> None:
    """The writer builds its tables straight from the filed groups and rows, sorted in one pass:
    they hold the rows of the relations read as mappings (each block's roots in stream order, a
    node's names the union of its rows'), sorted as the store keeps them, whether the relations
    were read between messages or not; and an hour set from those mappings writes the same bytes."""
    rng = random.Random(seed)
    messages = filed_messages(rng, 40)
    roots: dict[str, list[tuple[int, int]]] = {}
    values: dict[tuple[int, int], dict[str, tuple[str, ...]]] = {}
    fragments: dict[tuple[int, int], dict[str, bytes]] = {}
    for number, message in enumerate(messages):
        for node in sorted(message.bound):
            for group in message.bound[node]:
                for block in group:
                    roots.setdefault(block, []).append((number, node))
        for (leaves, names), row in message.rows:
            values.setdefault((number, row.node), {}).update(zip(leaves, row.values, strict=True))
            fragments.setdefault((number, row.node), {}).update(zip(names, row.fragments, strict=True))
    read_between = HourWitnesses("books", HOUR)
    read_at_end = HourWitnesses("books", HOUR)
    for message in messages:
        read_at_end.append(message)
        read_between.append(message)
        if rng.random() < 0.2:
            getattr(read_between, rng.choice(["roots", "values", "fragments"]))
    as_mappings = HourWitnesses("books", HOUR, messages=[m.message for m in messages])
    as_mappings.roots, as_mappings.values, as_mappings.fragments = roots, values, fragments
    written = tables(read_at_end)
    assert [tuple(row.values()) for row in written["roots"].to_pylist()] == sorted(
        (block, m, n) for block, nodes in roots.items() for m, n in nodes
    )
    # each distinct value once, with how many values its leaf has in the node
    assert [tuple(row.values()) for row in written["values"].to_pylist()] == sorted(
        {
            (leaf, v, m, n, len(vs))
            for (m, n), leaves in values.items()
            for leaf, vs in leaves.items()
            for v in vs
        }
    )
    assert [tuple(row.values()) for row in written["fragments"].to_pylist()] == sorted(
        (m, n, name, data) for (m, n), named in fragments.items() for name, data in named.items()
    )
    assert encode(read_between) == encode(read_at_end) == encode(as_mappings)
    for hour in (read_between, read_at_end):
        assert hour.roots == roots and hour.values == values and hour.fragments == fragments


def test_the_relations_an_engine_joins_read_as_arrow(tmp_path: Path) -> None:
    """What Spark's executors read: the roots with their message's event time in microseconds (a
    message without one takes part in no join: its nodes are left out), the values as stored."""
    store = open_store(tmp_path.as_uri())
    assert read_relation(store, "books", HOUR, "roots") is None  # not written yet
    witnesses = hour_of_witnesses()
    witnesses.roots["block-3"] = [(1, 2)]  # a node of the message without a time
    write_hour(store, witnesses)
    roots = read_relation(store, "books", HOUR, "roots")
    assert roots is not None
    micros = lambda when: (when - datetime(1970, 1, 1, tzinfo=timezone.utc)) // timedelta(microseconds=1)  # noqa: E731
    assert sorted(roots.to_pylist(), key=lambda row: (row["block"], row["message"])) == [
        {"block": "block-1", "message": 0, "node": 1, "time_us": micros(HOUR + timedelta(minutes=5))},
        {
            "block": "block-1",
            "message": 2,
            "node": 4,
            "time_us": micros(HOUR - timedelta(minutes=20, microseconds=7)),
        },
        {
            "block": "block-2",
            "message": 2,
            "node": 4,
            "time_us": micros(HOUR - timedelta(minutes=20, microseconds=7)),
        },
    ]
    values = read_relation(store, "books", HOUR, "values")
    assert values is not None
    assert sorted((row["leaf"], row["value"], row["message"], row["node"]) for row in values.to_pylist()) == [
        ("@id", "7", 0, 1),
        ("author", "ann", 0, 1),
        ("author", "ann", 2, 4),
        ("author", "bob", 0, 1),
    ]
    with pytest.raises(ValueError, match="fragments"):
        read_relation(store, "books", HOUR, "fragments")


def test_delivery_reads_only_the_messages_and_fragments(tmp_path: Path) -> None:
    store = open_store(tmp_path.as_uri())
    written = hour_of_witnesses()
    write_hour(store, written)
    back = read_hour(store, "books", HOUR, DELIVERY_TABLES)
    assert back is not None
    assert back.messages == written.messages and back.fragments == written.fragments
    assert back.roots == {} and back.values == {}


def test_the_stage_reads_each_hour_once_and_each_message_provenance_once(tmp_path: Path) -> None:
    """The join stage's reader: an hour read once whoever asks; a message's provenance made once
    however many pairs it is in, with the message's identity and arrival hour."""
    store = open_store(tmp_path.as_uri())
    write_hour(store, hour_of_witnesses())
    hours = WitnessHours(store)
    assert hours.read("books", HOUR) is hours.read("books", HOUR)
    first = hours.provenance("books", (HOUR, 2, 4))
    assert first is hours.provenance("books", (HOUR, 2, 5))  # another node of the same message
    assert (first.feed, first.hour, first.source, first.index) == ("books", "2026-05-01T08", "b.xml", 1)
    assert hours.provenance("books", (HOUR, 0, 1)).source == "a.xml"
    assert hours.joinable("books", HOUR) is hours.joinable("books", HOUR)
    joinable = hours.joinable("books", HOUR)
    hours.forget_joinable()
    assert hours.joinable("books", HOUR) is not joinable  # read again once forgotten


def test_delivering_reads_only_the_expected_messages_of_an_hour(tmp_path: Path) -> None:
    """Told which messages the pairs to deliver are in, the reader makes objects of theirs only
    (a review measured 106 MB held to deliver two pairs from an hour of 100,000 nodes); an hour
    read before for other pairs is read again."""
    store = open_store(tmp_path.as_uri())
    write_hour(store, hour_of_witnesses())
    hours = WitnessHours(store)
    everything = hours.read("books", HOUR)
    assert everything is not None and set(everything.fragments) == {(0, 1), (2, 4)}
    hours.expect({("books", HOUR): {2}})
    expected = hours.read("books", HOUR)
    assert expected is not None and expected is not everything
    assert expected.fragments == {(2, 4): {"value  @id": b""}}
    assert hours.provenance("books", (HOUR, 2, 4)).source == "b.xml"
    with pytest.raises(ValueError, match="message 0 of books 2026-05-01T08 was not expected"):
        hours.provenance("books", (HOUR, 0, 1))  # a bug of the caller's, never a silent empty result
    hours.expect({})
    assert hours.read("books", HOUR).fragments == {}  # type: ignore[union-attr]


def test_an_hour_rewritten_between_pairing_and_delivering_is_an_error_it_is_retried_on(
    tmp_path: Path,
) -> None:
    """Pairs from one writing of an hour are never delivered from another (a review delivered a
    pair that is none, and met an IndexError): the hour's messages are compared, FR609 (transient)."""
    from feedrouter.errors import WitnessesNotReady

    store = open_store(tmp_path.as_uri())
    write_hour(store, hour_of_witnesses())
    hours = WitnessHours(store)
    assert hours.joinable("books", HOUR) is not None
    hours.forget_joinable()
    rewritten = hour_of_witnesses()
    rewritten.messages.reverse()  # routed again from other inputs
    write_hour(store, rewritten)
    with pytest.raises(WitnessesNotReady, match="books 2026-05-01T08 were rewritten while") as caught:
        hours.read("books", HOUR)
    assert caught.value.code == "FR609" and caught.value.transient
    # a node past the messages of the hour as read to deliver (paired from other witnesses)
    unpaired = WitnessHours(store)
    with pytest.raises(WitnessesNotReady, match="were rewritten while"):
        unpaired.provenance("books", (HOUR, 3, 0))
    # the same bytes again (a re-run of the same inputs) are no change
    again = WitnessHours(store)
    again.joinable("books", HOUR)
    write_hour(store, rewritten)
    assert again.read("books", HOUR) is not None


@pytest.mark.parametrize("after", ["fragments.parquet", "messages.parquet"])
def test_a_rewrite_landing_while_delivering_reads_an_hour_is_never_mixed_with_it(
    tmp_path: Path, after: str
) -> None:
    """Delivering reads an hour's fragments, then its messages (written first): a rewrite landing
    between the two gives the new messages, whose digest is not the paired one (FR609); one landing
    after both leaves what was read whole. A review had the old messages read with the new
    fragments, delivered without an error."""
    from feedrouter.errors import WitnessesNotReady
    from feedrouter.storage import FileStore

    rewritten = hour_of_witnesses()
    rewritten.messages.reverse()
    rewritten.fragments = {node: {"nodes  title": b"<title>NEW</title>"} for node in rewritten.fragments}

    class Racing(FileStore):
        armed = False

        def get(self, key: str) -> bytes:
            data = super().get(key)
            if self.armed and key.endswith(after):
                self.armed = False
                write_hour(self, rewritten)
            return data

    store = Racing(tmp_path)
    write_hour(store, hour_of_witnesses())
    hours = WitnessHours(store, {("books", HOUR)})
    hours.joinable("books", HOUR)
    hours.forget_joinable()
    store.armed = True
    if after == "fragments.parquet":
        with pytest.raises(WitnessesNotReady, match="were rewritten while"):
            hours.read("books", HOUR)
    else:
        read = hours.read("books", HOUR)
        assert read is not None and read.fragments == hour_of_witnesses().fragments
        assert hours.provenance("books", (HOUR, 0, 1)).source == "a.xml"


def test_the_spark_engine_s_hours_are_fenced_before_it_pairs(tmp_path: Path) -> None:
    """Spark SQL pairs from the store itself: the digests are recorded before, from the hours it
    is to read, and delivering from a rewrite of one is FR609 as after pairing here."""
    from feedrouter.errors import WitnessesNotReady

    store = open_store(tmp_path.as_uri())
    write_hour(store, hour_of_witnesses())
    hours = WitnessHours(store, {("books", HOUR)})
    hours.fence([("books", HOUR), ("books", HOUR - timedelta(hours=1))])  # one hour has no witnesses
    rewritten = hour_of_witnesses()
    rewritten.messages.reverse()
    write_hour(store, rewritten)
    with pytest.raises(WitnessesNotReady, match="were rewritten while"):
        hours.read("books", HOUR)


def test_rewriting_an_hour_takes_its_marker_away_before_its_tables(tmp_path: Path) -> None:
    """No reader takes an hour being rewritten for a whole one: its ``_SUCCESS`` goes first, comes
    back last (as deleting it does, ``_SUCCESS`` first)."""
    from feedrouter.storage import FileStore

    calls: list[str] = []

    class Recording(FileStore):
        def put(self, key: str, data: bytes) -> None:  # type: ignore[override]
            calls.append(f"put {key.rsplit('/', 1)[-1]}")
            super().put(key, data)

        def delete(self, key: str) -> None:
            calls.append(f"delete {key.rsplit('/', 1)[-1]}")
            super().delete(key)

    store = Recording(tmp_path)
    write_hour(store, hour_of_witnesses())
    assert "delete _SUCCESS" not in calls and calls[-1] == "put _SUCCESS"
    calls.clear()
    write_hour(store, hour_of_witnesses())
    assert calls[0] == "delete _SUCCESS" and calls[-1] == "put _SUCCESS"
    assert calls.count("put _SUCCESS") == 1 and has_hour(store, "books", HOUR)


@pytest.mark.parametrize("gone", ["whole", "a table"])
def test_an_hour_the_stage_found_written_and_is_gone_is_an_error_it_is_retried_on(
    tmp_path: Path, gone: str
) -> None:
    """An hour the join stage found written before it began (``required``) and deleted since (the
    retention DAG), whole or while it was read, is FR609 (transient: the retried stage back-fills
    it), never an hour without witnesses; an hour not required reads as before."""
    from feedrouter.errors import ObjectNotFoundError, WitnessesNotReady
    from feedrouter.spark.witnesses import delete_hour, witness_dir

    store = open_store(tmp_path.as_uri())
    write_hour(store, hour_of_witnesses())
    if gone == "whole":
        delete_hour(store, "books", HOUR)
    else:  # the marker still there, a table not: what a read in the middle of a deletion meets
        store.delete(f"{witness_dir('books', HOUR)}/messages.parquet")  # read to pair and to deliver
    required = WitnessHours(store, {("books", HOUR)})
    gone_now = r"books 2026-05-01T08 were written .* are gone"
    for read in (required.joinable, required.read):
        with pytest.raises(WitnessesNotReady, match=gone_now) as caught:
            read("books", HOUR)
        assert caught.value.code == "FR609" and caught.value.transient
    if gone == "whole":  # an hour paired from but not required (before the stream's start) is gone too
        with pytest.raises(WitnessesNotReady, match=gone_now):
            WitnessHours(store).provenance("books", (HOUR, 0, 1))
    plain = WitnessHours(store, {("books", HOUR - timedelta(hours=1))})
    if gone == "whole":
        assert plain.joinable("books", HOUR) is None and plain.read("books", HOUR) is None
    else:
        with pytest.raises(ObjectNotFoundError):
            plain.joinable("books", HOUR)


DAMAGE = {
    "truncated": lambda data: data[: len(data) // 2],
    "garbage": lambda data: b"PAR1" + bytes(range(256)) * 4 + b"PAR1",
    "empty": lambda data: b"",
}


@pytest.mark.parametrize("table", ["messages", "roots", "values", "fragments"])
@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_a_damaged_table_is_refused_naming_it_and_how_to_recover(
    tmp_path: Path, table: str, damage: str
) -> None:
    store = open_store(tmp_path.as_uri())
    write_hour(store, hour_of_witnesses())
    key = f"witnesses/books/dt=2026-05-01/hour=08/{table}.parquet"
    store.put(key, DAMAGE[damage](store.get(key)))
    with pytest.raises(WitnessesUnreadable) as raised:
        read_hour(store, "books", HOUR)
    message = str(raised.value)
    assert raised.value.code == "FR611"
    assert f"{table}.parquet of the join witnesses of books 2026-05-01T08" in message
    assert "delete the hour's folder witnesses/books/dt=2026-05-01/hour=08/" in message
    if table in ("roots", "values", "messages"):  # what the engines read
        with pytest.raises(WitnessesUnreadable, match=rf"{table}\.parquet"):
            read_relation(store, "books", HOUR, "values" if table == "values" else "roots")
        with pytest.raises(WitnessesUnreadable, match=rf"{table}\.parquet"):
            read_joinable(store, "books", HOUR)


def test_an_hour_records_what_each_blocks_rows_hold(tmp_path: Path) -> None:
    """``blocks.json`` names each block with the leaves and fragments its rows hold (in any order
    given, the same bytes); an hour written without them (as before they were recorded) names the
    ids alone, and says nothing about what they hold."""
    from feedrouter.spark.witnesses import coverage_of_hour

    store = open_store(tmp_path.as_uri())
    written = hour_of_witnesses()
    written.blocks = ("block-2", "block-1")
    covered = (("block-2", ("@id",), ()), ("block-1", ("author",), ("nodes  title",)))
    write_hour(store, written, covered)
    data = store.get("witnesses/books/dt=2026-05-01/hour=08/blocks.json")
    write_hour(store, written, covered[::-1])
    assert store.get("witnesses/books/dt=2026-05-01/hour=08/blocks.json") == data
    assert coverage_of_hour(store, "books", HOUR) == (
        frozenset({"block-1", "block-2"}),
        {
            "block-1": (frozenset({"author"}), frozenset({"nodes  title"})),
            "block-2": (frozenset({"@id"}), frozenset()),
        },
    )
    assert blocks_of_hour(store, "books", HOUR) == {"block-1", "block-2"}
    back = read_hour(store, "books", HOUR)
    assert back is not None and set(back.blocks) == {"block-1", "block-2"}
    write_hour(store, written)
    assert coverage_of_hour(store, "books", HOUR) == (frozenset({"block-1", "block-2"}), None)
    with pytest.raises(ValueError, match="no coverage for blocks"):
        write_hour(store, written, covered[:1])


@pytest.mark.parametrize(
    "data",
    [
        b"{not json",
        b'{"a": 1}',
        b'["block-1", 2]',
        b'{"a": [["x"]]}',
        b'{"a": [["x"], [1]]}',
        b'{"format": 2, "shapes": [[["x"], []]], "plans": [["p", 1]], "blocks": {"a": [0, 0]}}',
        b'{"format": 2, "shapes": [[["x"], []]], "plans": [["p", 0]], "blocks": {"a": [0, 1]}}',
        b'{"format": 2, "shapes": [[["x"], []]], "plans": [["p", 0]], "blocks": {"a": [0, true]}}',
        b'{"format": 2, "shapes": [[["x"]]], "plans": [["p", 0]], "blocks": {"a": [0, 0]}}',
        b'{"format": 2, "shapes": [[["x"], [1]]], "plans": [["p", 0]], "blocks": {"a": [0, 0]}}',
        b'{"format": 2, "shapes": [], "plans": [], "blocks": ["a"]}',
        b'{"format": 2, "plans": [], "blocks": {}}',
        # one plan with two shapes: which its rows have would be a guess (adopting trusted the last)
        b'{"format": 2, "shapes": [[["x"], []], [["x", "y"], []]], "plans": [["p", 0], ["p", 1]],'
        b' "blocks": {"a": [0, 0]}}',
        b"[" * 5000 + b"]" * 5000,  # json's parser recurses: RecursionError, not a crash without a code
    ],
)
def test_a_damaged_block_list_is_refused(tmp_path: Path, data: bytes) -> None:
    store = open_store(tmp_path.as_uri())
    write_hour(store, hour_of_witnesses())
    store.put("witnesses/books/dt=2026-05-01/hour=08/blocks.json", data)
    with pytest.raises(WitnessesUnreadable, match=r"blocks\.json of the join witnesses of books"):
        blocks_of_hour(store, "books", HOUR)
    with pytest.raises(WitnessesUnreadable, match=r"blocks\.json"):
        read_hour(store, "books", HOUR)


def test_a_table_of_another_shape_is_refused(tmp_path: Path) -> None:
    """Readable Parquet, but not the table feedrouter writes there (a column missing)."""
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    store = open_store(tmp_path.as_uri())
    write_hour(store, hour_of_witnesses())
    sink = io.BytesIO()
    pq.write_table(pa.table({"block": ["block-1"], "message": [0]}), sink)
    store.put("witnesses/books/dt=2026-05-01/hour=08/roots.parquet", sink.getvalue())
    with pytest.raises(WitnessesUnreadable, match="the tables of the join witnesses of books"):
        read_hour(store, "books", HOUR)


#: Readable tables that are not what stage 1 writes: the columnar reader refuses each at once
#: (never an IndexError, or a wrong pair, later in the join).
WRONG = {
    "a root of no message": ("roots", {"block": ["b"], "message": [7], "node": [1]}),
    "a root with a negative message": ("roots", {"block": ["b"], "message": [-1], "node": [1]}),
    "an element id below -1": ("roots", {"block": ["b"], "message": [0], "node": [-5]}),
    "a null node": ("roots", {"block": ["b"], "message": [0], "node": [None]}),
    "a null value": ("values", {"leaf": ["a"], "value": [None], "message": [0], "node": [1]}),
    "times that are not timestamps": ("messages", {"message": [0, 1, 2], "time": [1, 2, 3]}),
    "messages out of order": ("messages", {"message": [0, 2, 1], "time": [None, None, None]}),
}


@pytest.mark.parametrize("wrong", sorted(WRONG))
def test_a_wrong_table_is_refused_by_the_columnar_reader(tmp_path: Path, wrong: str) -> None:
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    store = open_store(tmp_path.as_uri())
    write_hour(store, hour_of_witnesses())
    table, columns = WRONG[wrong]
    if table == "messages" and columns["time"][0] is None:
        columns = {**columns, "time": pa.array(columns["time"], pa.timestamp("us", tz="UTC"))}
    sink = io.BytesIO()
    pq.write_table(pa.table(columns), sink)
    store.put(f"witnesses/books/dt=2026-05-01/hour=08/{table}.parquet", sink.getvalue())
    with pytest.raises(WitnessesUnreadable, match="of the join witnesses of books 2026-05-01T08"):
        read_joinable(store, "books", HOUR)


def test_an_hour_read_as_columns_gives_stage_2_the_views_the_rows_give(tmp_path: Path) -> None:
    """What the engines pair from (:func:`read_joinable`): the same joinable nodes, times, block
    memberships and leaf entries as the hour read row by row; a node of a message without a
    time is in neither, a block the hour lacks is not found, a leaf it lacks has no entries; the
    document node (element id -1) comes before its message's elements."""
    import numpy as np

    store = open_store(tmp_path.as_uri())
    assert read_joinable(store, "books", HOUR) is None  # not written yet
    witnesses = hour_of_witnesses()
    witnesses.roots["block-3"] = [(1, 2), (0, 1)]  # (1, 2): a node of the message without a time
    witnesses.roots["block-4"] = [(2, -1)]  # a document node
    witnesses.values[(1, 2)] = {"author": ("cy",)}
    witnesses.values[(2, -1)] = {"author": ("bob",)}
    write_hour(store, witnesses)
    rows, columns = read_hour(store, "books", HOUR), read_joinable(store, "books", HOUR)
    assert rows is not None and columns is not None
    assert columns.blocks == rows.blocks and not columns.roots and not columns.fragments
    by_rows, by_columns = rows.arrays(), columns.arrays()
    assert by_columns.refs == by_rows.refs == [(HOUR, 0, 1), (HOUR, 2, -1), (HOUR, 2, 4)]
    assert by_columns.position == by_rows.position
    for name in ("times", "messages", "keys"):
        assert np.array_equal(getattr(by_columns, name), getattr(by_rows, name)), name
    assert sorted(by_columns.blocks) == sorted(by_rows.blocks) == [f"block-{n}" for n in range(1, 5)]
    for block in by_rows.blocks:
        assert by_columns.blocks[block].tolist() == by_rows.blocks[block].tolist(), block
    assert by_columns.blocks["block-3"].tolist() == [0] and "block-5" not in by_columns.blocks
    with pytest.raises(KeyError):
        by_columns.blocks["block-5"]
    for leaf in ("author", "@id", "title"):
        assert by_value(columns.leaf_entries(leaf)) == by_value(rows.leaf_entries(leaf)), leaf
    assert by_value(columns.leaf_entries("author")) == {"ann": [0, 2], "bob": [0, 1]}  # "cy": no time
    # ann: 2 x 2 pairs, bob: 2 x 2
    assert columns.matches("author", rows, "author") == rows.matches("author", columns, "author") == 8


def by_value(entries: LeafEntries) -> dict[str, list[int]]:
    """Leaf entries as value -> the positions holding it."""
    found, first = {}, 0
    for value, count in zip(entries.values, entries.counts.tolist(), strict=True):
        found[value] = entries.positions[first : first + count].tolist()
        first += count
    return found


def test_an_hour_of_plan_rows_records_each_shape_and_plan_once(tmp_path: Path) -> None:
    """Format 2 with what each witness plan's rows hold: a feed's thousands of blocks name a few
    distinct pairs of leaves and fragments and a few plans, each written once and named by number
    (the join stage reads this of every hour of its window); read back as written."""
    import json

    from feedrouter.spark.witnesses import blocks_json_of_hour

    store = open_store(tmp_path.as_uri())
    written = hour_of_witnesses()
    blocks = [f"block-{i}" for i in range(40)]
    written.blocks = tuple(blocks)

    def shape(i: int) -> tuple[str, ...]:
        return ("author",) if i % 2 else ("@id", "author")

    covered = tuple((block, shape(i), ()) for i, block in enumerate(blocks))
    roots = {block: "base-1" if i < 30 else block for i, block in enumerate(blocks)}
    own = tuple((block, shape(i), ()) for i, block in enumerate(blocks) if i >= 30)
    plans = (("base-1", ("@id", "author", "title"), ("nodes  title",)), *own)
    write_hour(store, written, covered, roots, plans)
    document = json.loads(store.get("witnesses/books/dt=2026-05-01/hour=08/blocks.json"))
    assert document["format"] == 2 and len(document["shapes"]) == 3 and len(document["plans"]) == 11
    found = blocks_json_of_hour(store, "books", HOUR)
    assert found is not None and found.blocks == tuple(sorted(blocks)) and found.roots == roots
    assert found.coverage == {block: (frozenset(leaves), frozenset()) for block, leaves, _ in covered}
    assert found.plans is not None and found.plans["base-1"] == (
        frozenset({"@id", "author", "title"}),
        frozenset({"nodes  title"}),
    )
    with pytest.raises(ValueError, match=r"no coverage for witness plans \['block-39'\]"):
        write_hour(store, written, covered, roots, plans[:-1])
