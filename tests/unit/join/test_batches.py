"""A routing task's witnesses as columns (:mod:`feedrouter.join.batches`): the hour written from
batches is the hour written from messages filed one by one, byte for byte."""

from __future__ import annotations

import contextlib
import random
from array import array
from typing import Any

import pyarrow as pa
import pytest

from feedrouter import Router, kernel
from feedrouter.errors import DocumentError
from feedrouter.join.batches import BatchBuilder, BatchedHour, RowSink, WitnessBatch
from feedrouter.join.clock import microseconds
from feedrouter.join.plan import BlockSpec, JoinSet
from feedrouter.join.selections import WitnessPlans, witness_plans
from feedrouter.join.witness import RowReader
from feedrouter.lang import parse
from feedrouter.spark import witnesses as witnesses_module
from feedrouter.spark.witnesses import encode
from tests.unit.join.test_filing import HOUR, generated_items, hour_of_plan_rows, message_ref, routed
from tests.unit.join.test_selections import CONDITIONS, PROLOG, block, generated_blocks


def plans_and_hour(seed: int, messages: int) -> tuple[WitnessPlans, list[dict]]:
    """Generated blocks over two bindings (two witness plans: ``//item``'s base and every
    element's), one of them returning fragments, and an hour of generated messages routed by their
    router."""
    rng = random.Random(seed)
    plans = witness_plans([*generated_blocks(rng, 20), block("//*"), returning_fragments()])
    assert len(plans.bases) >= 2
    return plans, routed(plans, [generated_items(rng) for _ in range(messages)])


def returning_fragments() -> BlockSpec:
    """A block of ``//item`` whose result copies its title and author (fragments in its rows)."""
    text = PROLOG + (
        "for $a in fr:stream()//item, $b in fr:stream()//item "
        'where $a/title = $b/title and fr:within($a, $b, "PT1H") '
        'return <r>{ $a/title }{ $a/author }<a n="{ $a/category }"/></r>'
    )
    joins = JoinSet()
    spec = joins.specs[joins.add("1", parse(text), "f").blocks[0]]
    assert spec.fragments
    return spec


def batched(
    plans: WitnessPlans, witnesses: list[dict], tasks: int, size: int, seed: int
) -> list[WitnessBatch]:
    """The hour's messages (one an object, ordinal = its number) dealt to ``tasks`` tasks in turns,
    as Spark deals a batch's objects; each task sends a batch every ``size`` messages. The batches
    come shuffled."""
    names = {plan: plans.names(plan) for plan in plans.served}
    found = []
    for task in range(tasks):
        builder = BatchBuilder(names)
        for ordinal in range(task, len(witnesses), tasks):
            ref = message_ref(ordinal)
            time = None if ref.time is None else microseconds(ref.time)
            builder.add(ordinal, ref.key, ref.index, time, ref.digest, witnesses[ordinal])
            if len(builder) == size:
                found.append(builder.batch())
                builder = BatchBuilder(names)
        if len(builder):
            found.append(builder.batch())
    random.Random(seed).shuffle(found)
    return found


@pytest.mark.parametrize("turned_off", [False, True])
@pytest.mark.parametrize("seed", range(4))
def test_an_hour_of_batches_from_interleaved_tasks_is_the_hour_of_its_messages(
    seed: int, turned_off: bool
) -> None:
    """Tasks' batches hold messages that are not neighbours in the stream, and come in any order:
    the writer numbers the messages by their place in the stream, and writes the tables that
    messages filed one by one in stream order give (with the kernels and without)."""
    plans, witnesses = plans_and_hour(seed, 45)
    expected = encode(hour_of_plan_rows(plans, witnesses, ()))
    with kernel.turned_off() if turned_off else contextlib.nullcontext():
        found = batched(plans, witnesses, tasks=3, size=4, seed=seed)
    hour = BatchedHour("f", HOUR, (), found)
    assert encode(hour) == expected
    assert hour.message_count == 45 and hour.timed_count == 45


def test_an_hour_without_batches_writes_empty_tables() -> None:
    plans, _ = plans_and_hour(1, 3)
    empty = BatchedHour("f", HOUR, (), [])
    assert encode(empty) == encode(hour_of_plan_rows(plans, [], ()))
    assert empty.message_count == 0 and empty.timed_count == 0


def test_packed_items_past_an_arrays_bytes_are_written_in_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Batches' values and fragments are joined in one Arrow array while their bytes fit its
    32-bit offsets, and in several past that: the tables are the same either way; a single batch
    past what an array holds is refused by name."""
    plans, witnesses = plans_and_hour(2, 45)
    found = batched(plans, witnesses, tasks=3, size=4, seed=2)
    expected = encode(BatchedHour("f", HOUR, (), found))
    largest = max(len(batch.fragments) for batch in found)
    monkeypatch.setattr(witnesses_module, "_ARRAY_BYTES", largest)
    columns = BatchedHour("f", HOUR, (), found).fragment_columns()
    chunked = witnesses_module._item_array(pa, columns.items, pa.binary())
    assert isinstance(chunked, pa.ChunkedArray) and chunked.num_chunks > 1
    assert chunked.to_pylist() == pa.array([f for b in found for f in _unpacked(b)], pa.binary()).to_pylist()
    assert encode(BatchedHour("f", HOUR, (), found)) == expected
    monkeypatch.setattr(witnesses_module, "_ARRAY_BYTES", largest - 1)
    with pytest.raises(ValueError, match="more than an Arrow array holds"):
        encode(BatchedHour("f", HOUR, (), found))


def _unpacked(batch: WitnessBatch) -> list[bytes]:
    """A batch's fragments, each on its own."""
    ends = list(batch.fragment_ends)
    return [bytes(batch.fragments[start:end]) for start, end in zip([0, *ends], ends, strict=False)]


def walked_plans() -> WitnessPlans:
    """Blocks of every generated condition a walk reads (not ``text()``: the general path's) and
    ``//*``'s: the ``//item`` base is read off the tree, with fragments."""
    blocks = [block("//item", condition) for condition in CONDITIONS if "text()" not in condition]
    return witness_plans([*blocks, block("//*"), returning_fragments()])


def _router(plans: WitnessPlans) -> Router:
    router = Router()
    for spec in plans.bases.values():
        router.add_witness(spec)
    return router


def _hour_as_a_task(router: Router, plans: WitnessPlans, documents: list[bytes], sink: bool) -> BatchedHour:
    """``documents`` routed as a routing task routes them, a batch every 16 (a refused document
    files no rows), its walked blocks' rows packed as they are routed (``sink``) or kept as rows."""
    names = {plan: plans.names(plan) for plan in plans.served}
    packing = RowSink(names) if sink else None
    builder, batches = BatchBuilder(names, packing), []
    for ordinal, document in enumerate(documents):
        if packing is not None:
            packing.message = len(builder)
        try:
            witnesses = router.route_outcome(document, sink=packing).witnesses
        except DocumentError:
            witnesses = {}
        ref = message_ref(ordinal)
        builder.add(ordinal, ref.key, ref.index, None, ref.digest, witnesses)
        if len(builder) == 16:
            batches.append(builder.batch())
            builder = BatchBuilder(names, packing)
    batches.append(builder.batch())
    return BatchedHour("f", HOUR, (), batches)


@pytest.mark.parametrize("turned_off", [False, True])
def test_rows_packed_as_their_messages_are_routed_make_the_same_hour(turned_off: bool) -> None:
    """A routing task's walked blocks pack their rows into the batch as each message is routed
    (no row objects): the hour is byte for byte the hour of the same messages' rows kept whole
    (with the kernels and without, where nothing is packed early)."""
    plans = walked_plans()
    rng = random.Random(5)
    documents = [generated_items(rng) for _ in range(40)]
    documents[7] = b"<rss><item>"  # malformed: refused before any row
    router = _router(plans)
    assert router._walked  # the //item base is read by a walk
    expected = encode(_hour_as_a_task(router, plans, documents, sink=False))
    with kernel.turned_off() if turned_off else contextlib.nullcontext():
        packed = _hour_as_a_task(router, plans, documents, sink=True)
    assert encode(packed) == expected


def test_a_message_refused_after_its_rows_were_packed_leaves_none(monkeypatch: pytest.MonkeyPatch) -> None:
    """A document refused after its walked rows were packed (past its work budget later on)
    takes them back: the batch holds the other messages' rows alone, as if it had none."""
    plans = walked_plans()
    rng = random.Random(6)
    documents = [generated_items(rng) for _ in range(20)]
    documents[5] = b"<rss><channel><item><author>A1</author><refuse/></item></channel></rss>"
    router = _router(plans)
    real = Router._read_off_tree

    def refused_after_reading(
        self: Router, root: Any, ctx: Any, outcome: Any, budget: Any, sink: Any
    ) -> None:
        real(self, root, ctx, outcome, budget, sink)
        if root.find(".//refuse") is not None:
            assert sink is None or len(sink.arrays[0]) > 0  # its rows were packed by now
            raise DocumentError("past its work budget", code="FR205")

    monkeypatch.setattr(Router, "_read_off_tree", refused_after_reading)
    expected = encode(_hour_as_a_task(router, plans, documents, sink=False))
    assert encode(_hour_as_a_task(router, plans, documents, sink=True)) == expected


def test_a_sink_takes_back_the_rows_of_its_message_and_no_others() -> None:
    names = {"p": (("l",), ("f",))}
    sink = RowSink(names)
    code = sink.code("p")
    assert code == (0, (0,), (0,)) and sink.code("another build's") is None
    for message, value in ((0, b"kept"), (1, b"dropped")):
        sink.message = message
        roots, value_rows, values, value_ends, fragment_rows, fragments, fragment_ends = sink.arrays
        roots.extend((0, message, 3))
        value_rows.extend((0, message, 3, 1))
        values.frombytes(value)
        value_ends.append(len(values))
        fragment_rows.extend((0, message, 3))
        fragments.frombytes(b"<f>" + value + b"</f>")
        fragment_ends.append(len(fragments))
    sink.drop_message()
    assert [list(a) if a.typecode == "q" else bytes(a) for a in sink.arrays] == [
        [0, 0, 3],
        [0, 0, 3, 1],
        b"kept",
        [4],
        [0, 0, 3],
        b"<f>kept</f>",
        [11],
    ]
    mark = tuple(map(len, sink.arrays))
    sink.arrays[2].frombytes(b"more")
    sink.truncate(mark)
    assert bytes(sink.arrays[2]) == b"kept"
    assert sink.take()[0] == ["p"] and sink.arrays[0] == array("q") and sink.codes == {}


def test_a_block_that_fails_after_packing_leaves_no_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    """A walked block whose rest (elements the kernel declines) fails to be read fails alone: the
    rows the kernel packed for it before are taken back, the message is routed, the block's
    failure is reported."""
    plans = walked_plans()
    router = _router(plans)
    block = next(iter(router._walked))
    names = {plan: plans.names(plan) for plan in plans.served}
    sink = RowSink(names)
    document = (
        b"<rss><channel><item><author>A1</author></item><item><author><b/>A2</author></item></channel></rss>"
    )

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("a bug in the general path")

    assert kernel.walked_into is not None
    monkeypatch.setattr(RowReader, "rows_of", broken)
    outcome = router.route_outcome(document, sink=sink)
    assert block in outcome.failures and block not in outcome.witnesses
    assert all(len(numbers) == 0 for numbers in sink.arrays)
