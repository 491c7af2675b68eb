"""Stage 2 (feedrouter.join.stage) on hand-made witness relations: the temporal terms' bounds, the
hour a pair is delivered in, the cap, the order of the results."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta, timezone

import pytest

from feedrouter.join.plan import JoinPlan, JoinSet, lookback
from feedrouter.join.relations import HourWitnesses, MessageRef, admitted
from feedrouter.join.stage import JoinStage
from feedrouter.lang import parse
from feedrouter.lang.ast import TemporalKind
from feedrouter.limits import JoinLimits

H0 = datetime(2026, 5, 1, 8, tzinfo=timezone.utc)
H1 = H0 + timedelta(hours=1)
PROLOG = 'import module namespace fr = "urn:feedrouter:stream:1";\n'


def join(kind: str, window: str = "PT1H") -> str:
    return PROLOG + (
        "for $a in fr:stream()//item, $b in fr:stream()//item where $a/k = $b/k "
        f"and fr:{kind}($a, $b, '{window}') return <p>{{ $a/n }}{{ $b/n }}</p>"
    )


def stage_of(texts: dict[str, str], cap: int = 1000) -> tuple[JoinStage, str]:
    joins = JoinSet()
    for sid, text in texts.items():
        joins.add(sid, parse(text), "f")
    (block,) = {b for plan in joins.plans.values() for b in plan.blocks}
    return JoinStage(joins.plans.values(), joins.specs, limits=JoinLimits(pairs_per_hour=cap)), block


def hour(when: datetime, block: str, items: Sequence[tuple[str, str, int | None]]) -> HourWitnesses:
    """One message per item: (key value, name, minutes after the hour's start or None: no time)."""
    found = HourWitnesses("f", when, (block,))
    for number, (key, name, minutes) in enumerate(items):
        time = when + timedelta(minutes=minutes) if minutes is not None else None
        found.messages.append(MessageRef(f"m{number}.xml", 0, time))
        found.roots.setdefault(block, []).append((number, 0))
        found.values[(number, 0)] = {"k": (key,)}
        found.fragments[(number, 0)] = {"nodes  n": f"<n>{name}</n>".encode()}
    return found


def count_matches(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the node pairs stage 2 enumerates from its value slices (a one-item list, updated)."""
    import feedrouter.join.stage as stage_module

    enumerated = [0]
    original = stage_module._Slice.chunks

    def counted(self):
        for chunk in original(self):
            enumerated[0] += len(chunk)
            yield chunk

    monkeypatch.setattr(stage_module._Slice, "chunks", counted)
    return enumerated


def test_followed_by_excludes_equal_times_and_pairs_past_the_window() -> None:
    stage, block = stage_of({"s": join("followed-by")})
    store = {("f", H0): hour(H0, block, [("x", "a", 0), ("x", "b", 0), ("x", "c", 60 - 1), ("x", "d", None)])}
    found = stage.run(H0, lambda feed, h: store.get((feed, h)))["s"]
    # a, b at :00 (equal: not followed), c at :59 follows both within the hour, d has no time
    assert found.results == [b"<p><n>a</n><n>c</n></p>", b"<p><n>b</n><n>c</n></p>"]


def test_within_takes_both_orders_but_never_a_message_with_itself() -> None:
    stage, block = stage_of({"s": join("within", "PT10M")})
    store = {("f", H0): hour(H0, block, [("x", "a", 0), ("x", "b", 10), ("x", "c", 21)])}
    found = stage.run(H0, lambda feed, h: store.get((feed, h)))["s"]
    assert found.results == [b"<p><n>a</n><n>b</n></p>", b"<p><n>b</n><n>a</n></p>"]


def test_a_pair_is_delivered_in_the_hour_of_its_later_message_once() -> None:
    stage, block = stage_of({"s": join("within")})
    store = {
        ("f", H0): hour(H0, block, [("x", "a", 50)]),
        ("f", H1): hour(H1, block, [("x", "b", 5), ("y", "c", 6)]),
    }
    read = lambda feed, h: store.get((feed, h))  # noqa: E731
    assert stage.run(H0, read)["s"].results == []  # a alone
    assert stage.run(H1, read)["s"].results == [b"<p><n>a</n><n>b</n></p>", b"<p><n>b</n><n>a</n></p>"]
    assert stage.run(H1 + timedelta(hours=1), read)["s"].results == []  # nothing new arrived


def test_a_subscription_past_its_cap_is_withheld_and_says_why() -> None:
    stage, block = stage_of({"s": join("within")}, cap=1)
    store = {("f", H0): hour(H0, block, [("x", "a", 0), ("x", "b", 1)])}
    found = stage.run(H0, lambda feed, h: store.get((feed, h)))["s"]
    assert (found.results, found.count) == ([], 2)
    assert found.withheld is not None and "FR313" in found.withheld


def test_a_subscription_past_its_bytes_of_results_is_withheld_and_says_why() -> None:
    """Results are held in bytes up to the cap (each ``<p><n>a</n><n>b</n></p>`` is 23): past it
    the subscription is withheld (FR313) as past its pairs, and nothing more is held."""
    joins = JoinSet()
    joins.add("s", parse(join("within")), "f")
    (block,) = {b for plan in joins.plans.values() for b in plan.blocks}
    store = {("f", H0): hour(H0, block, [("x", "a", 0), ("x", "b", 1)])}
    for cap, withheld in ((46, False), (45, True)):
        stage = JoinStage(joins.plans.values(), joins.specs, limits=JoinLimits(bytes_per_hour=cap))
        found = stage.run(H0, lambda feed, h: store.get((feed, h)))["s"]
        assert found.count == 2 and (found.withheld is not None) == withheld
        if withheld:
            assert "FR313" in (found.withheld or "") and "more than 45 bytes" in (found.withheld or "")
            assert found.results == [] and found.pairs == []
        else:
            assert [len(result) for result in found.results] == [23, 23]


def test_a_pair_whose_result_alone_is_too_large_is_left_out_and_the_others_delivered() -> None:
    """One pair's result is held to the feed's max_result_bytes, as one document's result for one
    subscription is (FR310): that pair is left out, counted and named; the others are delivered in
    order and count toward the hour's bytes as before."""
    joins = JoinSet()
    joins.add("s", parse(join("within")), "f")
    (block,) = {b for plan in joins.plans.values() for b in plan.blocks}
    store = {("f", H0): hour(H0, block, [("x", "a", 0), ("x", "bbbbbbbbbb", 1), ("x", "c", 2)])}
    read = lambda feed, h: store.get((feed, h))  # noqa: E731
    everything = JoinStage(joins.plans.values(), joins.specs).run(H0, read)["s"]
    assert [len(r) for r in everything.results] == [32, 23, 32, 32, 23, 32]  # a-b a-c b-a b-c c-a c-b
    stage = JoinStage(joins.plans.values(), joins.specs, limits=JoinLimits(per_pair=31, bytes_per_hour=46))
    found = stage.run(H0, read)["s"]
    assert found.results == [b"<p><n>a</n><n>c</n></p>", b"<p><n>c</n><n>a</n></p>"]
    assert [(left[1], right[1]) for left, right in found.pairs] == [(0, 2), (2, 0)]
    assert (found.count, found.refused, found.withheld) == (6, 4, None)
    assert found.refusal == (
        "[FR310] the result of the pair of f 2026-05-01T08 message 0 node 0 and f 2026-05-01T08 "
        "message 1 node 0 is 32 bytes, more than the feed's max_result_bytes (31); return less of "
        "each message"
    )
    # the hour's bytes count the delivered results only: one byte less and it is withheld
    tight = JoinStage(joins.plans.values(), joins.specs, limits=JoinLimits(per_pair=31, bytes_per_hour=45))
    withheld = tight.run(H0, read)["s"]
    assert withheld.withheld is not None and "FR313" in withheld.withheld
    assert (withheld.results, withheld.pairs, withheld.refused, withheld.refusal) == ([], [], 0, None)


@pytest.mark.parametrize(
    ("minutes", "admitted_"),
    [(-61, False), (-60, True), (0, True), (59, True), (60, False)],
)
def test_a_message_joins_when_its_time_is_within_the_lateness_before_its_hour(
    minutes: int, admitted_: bool
) -> None:
    time = H0 + timedelta(minutes=minutes)
    assert (admitted(time, H0, timedelta(hours=1)) is not None) is admitted_


def test_the_lookback_covers_the_window_and_the_lateness() -> None:
    assert lookback(timedelta(hours=6), timedelta(hours=1)) == 7
    assert lookback(timedelta(minutes=90), timedelta(minutes=30)) == 2


def test_a_plan_reads_its_own_lateness_even_when_it_is_none_at_all() -> None:
    stage, _ = stage_of({"s": join("within", "PT2H")})
    (plan,) = stage.plans
    assert plan.reach(timedelta(hours=1)) == 3  # the stage's lateness: the plan has none of its own
    plan.lateness = timedelta(0)  # its feeds admit no late message: nothing further back to read
    assert plan.reach(timedelta(hours=1)) == 2


def test_a_slice_whose_subscriptions_are_all_past_the_cap_stops_enumerating(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import feedrouter.join.stage as stage_module

    monkeypatch.setattr(stage_module, "_CHUNK", 1)  # a chunk per left node: 30 matches each
    stage, block = stage_of({"s": join("within")}, cap=2)
    store = {("f", H0): hour(H0, block, [("x", str(i), i) for i in range(30)])}  # 870 pairs
    enumerated = count_matches(monkeypatch)
    found = stage.run(H0, lambda feed, h: store.get((feed, h)))["s"]
    assert found.withheld is not None and enumerated[0] == 30  # the first node's chunk gave 3


def brute_force(plan: JoinPlan, when: datetime, store: dict) -> list:
    """A subscription's pairs delivered in ``when``, every node pair of the store checked alone."""

    def nodes(block: str) -> list:
        return [
            ((h, m, n), hw.values[(m, n)], hw.messages[m].time)
            for (_, h), hw in sorted(store.items())
            for m, n in hw.roots.get(block, ())
            if hw.messages[m].time is not None
        ]

    found = []
    for left, left_values, left_time in nodes(plan.blocks[0]):
        for right, right_values, right_time in nodes(plan.blocks[1]):
            if when not in (left[0], right[0]) or max(left[0], right[0]) != when:
                continue
            if not all(set(left_values[a]) & set(right_values[b]) for a, b in plan.joins):
                continue
            first, second = (left_time, right_time) if plan.left_first else (right_time, left_time)
            gap = second - first
            if plan.kind is TemporalKind.FOLLOWED_BY:
                holds = timedelta(0) < gap <= plan.window
            else:
                holds = abs(gap) <= plan.window and left[:2] != right[:2]
            if holds:
                found.append((left, right))
    return sorted(found)


def test_subscriptions_differing_only_in_their_window_find_their_pairs_by_bisection() -> None:
    """Forty variants of one join (both kinds, both orientations, windows of 1 to 100 minutes) share
    one group; each gets exactly the pairs its own temporal term admits."""
    texts = {}
    for i in range(40):
        kind = ("followed-by", "within")[i % 2]
        first, second = ("$a", "$b") if i % 4 < 2 else ("$b", "$a")
        texts[f"s{i}"] = PROLOG + (
            "for $a in fr:stream()//item, $b in fr:stream()//item where $a/k = $b/k "
            f"and fr:{kind}({first}, {second}, 'PT{1 + (i * 37) % 100}M') return <p>{{ $a/n }}</p>"
        )
    stage, block = stage_of(texts)
    minutes = [0, 3, 3, 10, 25, 47, 59]
    store = {
        ("f", H0): hour(H0, block, [("x", f"a{m}", m) for m in minutes]),
        ("f", H1): hour(H1, block, [("x", f"b{m}", m) for m in minutes] + [("y", "c", 5)]),
    }
    found = stage.pairs(H1, lambda feed, h: store.get((feed, h)))
    for plan in stage.plans:
        assert found[plan.sid] == brute_force(plan, H1, store), plan.sid
    assert len({len(pairs) for pairs in found.values()}) > 5  # the windows do tell them apart


def two_leaf_hour(when: datetime, block: str, items: list[tuple[str, str, int]]) -> HourWitnesses:
    """One message per item: (lang, id, minutes after the hour's start)."""
    found = HourWitnesses("f", when, (block,))
    for number, (lang, ident, minutes) in enumerate(items):
        found.messages.append(MessageRef(f"m{number}.xml", 0, when + timedelta(minutes=minutes)))
        found.roots.setdefault(block, []).append((number, 0))
        found.values[(number, 0)] = {"@lang": (lang,), "id": (ident,)}
        found.fragments[(number, 0)] = {}
    return found


def test_a_group_is_enumerated_from_its_most_selective_join(monkeypatch: pytest.MonkeyPatch) -> None:
    """``@lang`` (one value) and ``id`` (distinct values): enumerating ``@lang`` would pair every
    message with every other; ``id`` pairs only the ones that match."""
    text = PROLOG + (
        "for $a in fr:stream()//item, $b in fr:stream()//item where $b/@lang = $a/@lang "
        "and $b/id = $a/id and fr:within($a, $b, 'PT1H') return <p/>"
    )
    stage, block = stage_of({"s": text})
    items = [("en", f"i{i % 10}", i) for i in range(40)]
    store = {("f", H0): two_leaf_hour(H0, block, items)}
    enumerated = count_matches(monkeypatch)
    found = stage.pairs(H0, lambda feed, h: store.get((feed, h)))["s"]
    (plan,) = stage.plans
    assert found == brute_force(plan, H0, store) and len(found) == 10 * 4 * 3
    assert enumerated[0] == 10 * 4 * 4  # the id slice (each message with itself too), not 40 x 40


def test_nodes_with_several_values_pair_once_each_in_order_without_a_sort() -> None:
    """Items with zero to three categories over three hours: a pair sharing two categories comes
    once, and every list is in XQuery's order as found (the stage does not sort them)."""
    texts = {
        f"s{i}": PROLOG
        + (
            "for $a in fr:stream()//item, $b in fr:stream()//item where $a/k = $b/k "
            f"and fr:{kind}($a, $b, 'PT{window}M') return <p/>"
        )
        for i, (kind, window) in enumerate(
            [("within", 90), ("followed-by", 90), ("within", 150), ("followed-by", 20)]
        )
    }
    stage, block = stage_of(texts)
    keys = [("x",), ("x", "y"), ("y", "x", "z"), (), ("z",), ("y", "y"), ("z", "x")]
    store = {}
    for h, when in enumerate([H0 - timedelta(hours=1), H0, H1]):
        found = HourWitnesses("f", when, (block,))
        for number in range(12):
            found.messages.append(MessageRef(f"m{number}.xml", 0, when + timedelta(minutes=5 * number)))
            found.roots.setdefault(block, []).append((number, 0))
            found.values[(number, 0)] = {"k": keys[(number * 3 + h) % len(keys)]}
            found.fragments[(number, 0)] = {}
        store[("f", when)] = found
    for when in (H0, H1):
        found_pairs = stage.pairs(when, lambda feed, h: store.get((feed, h)))
        for plan in stage.plans:
            expected = brute_force(plan, when, store)
            assert found_pairs[plan.sid] == expected and expected, plan.sid


def test_a_list_past_the_cap_keeps_its_first_pairs_and_never_grows_past_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A broad subscription past its cap beside a narrow one (so the slice is not stopped), over
    chunks of a few matches: its list never holds more than ``cap + 1`` pairs, the first in
    order; the narrow one gets all of its pairs."""
    import feedrouter.join.stage as stage_module

    monkeypatch.setattr(stage_module, "_CHUNK", 4)
    stage, block = stage_of({"broad": join("within", "PT2H"), "narrow": join("followed-by", "PT1M")}, cap=5)
    minutes = [0, 1, *range(10, 64, 3)]  # 20 items: 380 pairs for the broad one, 1 for the narrow
    store = {("f", H0): hour(H0, block, [("x", str(m), m) for m in minutes])}
    longest = [0]
    original = stage_module._Slice._extend

    def watched(self, chunk, chosen) -> None:
        original(self, chunk, chosen)
        longest[0] = max([longest[0], *(len(pairs) for pairs, _ in chosen)])

    monkeypatch.setattr(stage_module._Slice, "_extend", watched)
    found = stage.run(H0, lambda feed, h: store.get((feed, h)))
    broad, narrow = (next(p for p in stage.plans if p.sid == sid) for sid in ("broad", "narrow"))
    assert found["broad"].withheld is not None and found["broad"].count == 6
    assert stage.pairs(H0, lambda feed, h: store.get((feed, h)))["broad"] == brute_force(broad, H0, store)[:6]
    assert found["narrow"].withheld is None and found["narrow"].pairs == brute_force(narrow, H0, store)
    assert len(found["narrow"].pairs) == 1
    assert longest[0] == 6  # the cap and one more


def test_the_pairs_are_the_same_whichever_side_a_group_finds_its_candidates_from(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A group's candidates come from its left block's matches, or from its right block's when
    those are fewer; in chunks of one left node each, from either side, with the pairs made after
    every group, the stage finds the same pairs (three blocks, so nodes have different block sets)."""
    import feedrouter.join.stage as stage_module

    bindings = ["//item", '//item[n != "a3"]', '//item[n != "b25"]']
    joins = JoinSet()
    for i in range(24):
        left, right = bindings[i % 3], bindings[(i // 3) % 3]
        text = PROLOG + (
            f"for $a in fr:stream(){left}, $b in fr:stream(){right} where $a/k = $b/k "
            f"and fr:{('followed-by', 'within')[i % 2]}($a, $b, 'PT{1 + (i * 37) % 100}M') return <p/>"
        )
        joins.add(f"s{i}", parse(text), "f")
    stage = JoinStage(joins.plans.values(), joins.specs)
    blocks = {spec.text: block for block, spec in joins.specs.items()}
    store = {}
    for when, names in ((H0, ["a0", "a3", "a10", "a47"]), (H1, ["b3", "b25", "b59", "b5"])):
        found = HourWitnesses("f", when, tuple(joins.specs))
        for number, name in enumerate(names):
            found.messages.append(MessageRef(f"{name}.xml", 0, when + timedelta(minutes=int(name[1:]))))
            for binding, block in blocks.items():
                if name not in binding:
                    found.roots.setdefault(block, []).append((number, 0))
            found.values[(number, 0)] = {"k": ("x",)}
            found.fragments[(number, 0)] = {}
        store[("f", when)] = found
    read = lambda feed, h: store.get((feed, h))  # noqa: E731
    kept = stage.pairs(H1, read)
    for plan in stage.plans:
        assert kept[plan.sid] == brute_force(plan, H1, store), plan.sid
    assert sum(map(len, kept.values())) > 40
    monkeypatch.setattr(stage_module, "_CHUNK", 1)
    monkeypatch.setattr(stage_module, "_PENDING", 0)
    assert stage.pairs(H1, read) == kept
    monkeypatch.setattr(stage_module, "_LOOK_RIGHT", 0)
    assert stage.pairs(H1, read) == kept


def test_a_slice_enumerates_only_the_nodes_its_blocks_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """Thirty items share one value; a subscription binds one of them on its left side: its slice
    pairs that one node with the others, not every node with every other (the nodes of a broad
    block of another slice serve none of its subscriptions)."""
    texts = {
        "narrow": PROLOG
        + (
            'for $a in fr:stream()//item[n = "i3"], $b in fr:stream()//item where $a/k = $b/k '
            "and fr:within($a, $b, 'PT2H') return <p/>"
        ),
        "broad": PROLOG
        + (
            "for $a in fr:stream()//item, $b in fr:stream()//item where $a/t = $b/t "
            "and fr:within($a, $b, 'PT2H') return <p/>"
        ),
    }
    joins = JoinSet()
    for sid, text in texts.items():
        joins.add(sid, parse(text), "f")
    stage = JoinStage(joins.plans.values(), joins.specs)
    found = HourWitnesses("f", H0, tuple(joins.specs))
    for number in range(30):
        found.messages.append(MessageRef(f"i{number}.xml", 0, H0 + timedelta(minutes=number)))
        for block, spec in joins.specs.items():
            if "i3" not in spec.text or number == 3:
                found.roots.setdefault(block, []).append((number, 0))
        found.values[(number, 0)] = {"k": ("x",), "t": (f"t{number}",)}
        found.fragments[(number, 0)] = {}
    store = {("f", H0): found}
    enumerated = count_matches(monkeypatch)
    kept = stage.pairs(H0, lambda feed, h: store.get((feed, h)))
    for plan in stage.plans:
        assert kept[plan.sid] == brute_force(plan, H0, store), plan.sid
    assert len(kept["narrow"]) == 29 and len(kept["broad"]) == 0
    assert enumerated[0] == 30 + 30  # the narrow slice: i3 with all 30; the broad: each with itself


@pytest.mark.parametrize("columns", [1, 2, 4])
def test_a_node_with_more_values_than_columns_is_checked_on_all_of_them(
    monkeypatch: pytest.MonkeyPatch, columns: int
) -> None:
    """The other value join's values are held in a few columns per node; a node with more (one
    document can hold thousands) is checked on every value it has: the same pairs as brute force."""
    import feedrouter.join.stage as stage_module

    monkeypatch.setattr(stage_module, "_COLUMNS", columns)
    text = PROLOG + (
        "for $a in fr:stream()//item, $b in fr:stream()//item where $a/k = $b/k "
        "and $a/t = $b/t and fr:within($a, $b, 'PT2H') return <p/>"
    )
    stage, block = stage_of({"s": text})
    tags = [("a", "b"), ("b", "c", "d"), ("e", "f", "g", "a", "c"), (), ("x", "y", "z", "w", "g")]
    found = HourWitnesses("f", H0, (block,))
    for number in range(20):  # k: 5 nodes each (the driving join); t: shared by many
        found.messages.append(MessageRef(f"m{number}.xml", 0, H0 + timedelta(minutes=number)))
        found.roots.setdefault(block, []).append((number, 0))
        found.values[(number, 0)] = {"k": (f"k{number % 4}",), "t": tags[number % len(tags)]}
        found.fragments[(number, 0)] = {}
    store = {("f", H0): found}
    (plan,) = stage.plans
    enumerated = count_matches(monkeypatch)
    kept = stage.pairs(H0, lambda feed, h: store.get((feed, h)))["s"]
    assert kept == brute_force(plan, H0, store) and kept
    assert enumerated[0] == 4 * 5 * 5  # driven by k: t is the join checked on the columns


def test_deliveries_come_one_at_a_time_in_the_order_asked_taking_their_pairs_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The hour's deliveries are drawn one subscription at a time (the caller writes each before
    the next is assembled), in the order asked, and each takes its pairs out of the mapping."""
    texts = {sid: join("within") for sid in ("10", "9", "x")}
    stage, block = stage_of(texts)
    store = {("f", H0): hour(H0, block, [("x", "a", 0), ("x", "b", 1)])}
    read = lambda feed, h: store.get((feed, h))  # noqa: E731
    pairs = stage.pairs(H0, read)
    expected = stage.deliver(H0, read, pairs)
    assert len(pairs) == 3  # deliver() leaves the caller's mapping alone
    numeric = lambda sid: (int(sid), sid) if sid.isdigit() else (0, sid)  # noqa: E731
    drawn = stage.deliveries(H0, read, pairs, order=numeric)
    first = next(drawn)
    assert first.sid == "x" and first.results == expected["x"].results and first.assembler is None
    assert sorted(pairs) == ["10", "9"]  # the others' pairs are still there, not yet assembled
    # past the bytes a delivery holds, its results are made again as they are written, the same
    import feedrouter.join.stage as stage_module

    monkeypatch.setattr(stage_module, "HELD_RESULT_BYTES", 30)  # one result of 23 bytes held, not two
    rest = list(drawn)
    assert [found.sid for found in rest] == ["9", "10"] and pairs == {}
    assert all(found.results == [] and found.assembler is not None for found in rest)
    assert all(list(found.each_result()) == expected[found.sid].results for found in rest)
    assert [found.size for found in rest] == [46, 46]


def test_a_results_size_is_known_without_making_it() -> None:
    """The limits are checked on sizes: ``assembled_size`` is ``len(assemble(...))`` for every kind
    of return item (constants, copies, attribute values, elements whose slots are all empty)."""
    from feedrouter.join.plan import compile_join
    from feedrouter.join.stage import assemble, assembled_size

    text = PROLOG + (
        "for $a in fr:stream()//item, $b in fr:stream()//item where $a/k = $b/k and "
        "fr:within($a, $b, 'PT1H') return <p x='{ $a/@id }'>{ $a/n }<q>{ $b/m }</q>{ $b/n }</p>"
    )
    plan, _ = compile_join("s", parse(text), "f")
    keys = sorted({key for op in plan.code for key in _keys(op)})
    assert len(keys) >= 3
    for mask in range(1 << len(keys)):
        filled = {key: f"<v{n}>{'x' * n}</v{n}>".encode() for n, key in enumerate(keys) if mask >> n & 1}
        for sides in ((filled, filled), (filled, {}), ({}, filled)):
            assert assembled_size(plan.code, sides) == len(assemble(plan.code, sides)), (mask, sides)


def _keys(op: object) -> list[str]:
    from feedrouter.join.plan import Use

    if isinstance(op, Use):
        return [op.key]
    return [use.key for use in getattr(op, "slots", ())]


def test_delivering_needs_the_messages_of_the_pairs_it_delivers_only() -> None:
    stage, block = stage_of({"s": join("within"), "t": join("within", "PT2M")}, cap=2)
    store = {("f", H0): hour(H0, block, [("x", "a", 0), ("x", "b", 1), ("y", "c", 2), ("x", "d", 50)])}
    pairs = stage.pairs(H0, lambda feed, h: store.get((feed, h)))
    assert len(pairs["s"]) > 2  # a-b, a-d, b-d both ways: withheld, its messages not read
    assert sorted(pairs["t"]) == pairs["t"] and len(pairs["t"]) == 2  # a-b, b-a within 2 minutes
    assert stage.messages_needed(pairs) == {("f", H0): {0, 1}}


def test_each_feed_is_read_back_over_the_longest_reach_of_the_joins_reading_it() -> None:
    """A feed only a short join reads is not read over another's long window (a review found every
    feed read over the longest: hours no join of it needs, unchecked, and deleted by retention)."""
    joins = JoinSet()
    joins.add("long", parse(join("within", "PT5H")), "f")
    short = PROLOG + (
        "for $a in fr:stream()//item, $b in fr:stream('g')//item where $a/k = $b/k "
        "and fr:within($a, $b, 'PT1H') return <p>{ $a/n }</p>"
    )
    joins.add("short", parse(short), "f")
    stage = JoinStage(joins.plans.values(), joins.specs)
    asked: set[tuple[str, datetime]] = set()

    def read(feed: str, when: datetime) -> HourWitnesses | None:
        asked.add((feed, when))
        return None

    stage.pairs(H0, read)
    assert stage.reach_of_feeds() == {"f": 6, "g": 2}  # window + lateness (1 h), whole hours
    assert {when for feed, when in asked if feed == "g"} == {H0 - timedelta(hours=k) for k in range(3)}
    assert min(when for feed, when in asked if feed == "f") == H0 - timedelta(hours=6)
