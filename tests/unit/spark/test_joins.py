"""The join stage's check of its window's witnesses (:func:`feedrouter.spark.joins.check_witnesses`)."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from feedrouter.catalog.joins import JoinsOfFeed
from feedrouter.errors import InputsGone, WitnessesNotReady
from feedrouter.join.plan import JoinSet
from feedrouter.spark.joins import check_witnesses
from feedrouter.spark.witnesses import coverage, write_hour
from feedrouter.storage import ObjectStore, open_store
from tests.unit.join.support import bound_hour, join_set

H0 = datetime(2026, 5, 1, 7, tzinfo=timezone.utc)
H1 = H0 + timedelta(hours=1)
LATENESS = timedelta(hours=1)
#: two joins over the same blocks (every item of the feed): the second compares and returns more
ON_K = (
    "for $a in fr:stream()//item, $b in fr:stream()//item where $a/k = $b/k and fr:within($a, $b, 'PT1H') "
    "return <p/>"
)
ON_T = (
    "for $a in fr:stream()//item, $b in fr:stream()//item where $a/t = $b/t and fr:within($a, $b, 'PT1H') "
    "return <p>{ $b/u }</p>"
)


def of_feed(joins: JoinSet) -> JoinsOfFeed:
    return JoinsOfFeed(plans=dict(joins.plans), specs=dict(joins.specs), blocks=tuple(joins.specs))


def written(tmp_path: Path, joins: JoinSet | None) -> ObjectStore:
    """Both hours written by a plan with ``joins``' blocks (None: as hours were written before
    they recorded what their blocks' rows hold)."""
    store = open_store(tmp_path.as_uri())
    for hour in (H0, H1):
        covered = () if joins is None else coverage(joins.specs.values())
        write_hour(store, bound_hour(join_set(ON_K), hour, [{"k": ("1",)}]), covered)
    return store


def test_a_block_a_later_join_reads_with_a_leaf_or_fragment_of_its_own_is_back_filled(tmp_path: Path) -> None:
    """Hours written when only the first join existed hold its leaf (``k``) alone: the second
    join's ``t`` and ``u`` are not there, though the block is, so both hours are back-filled;
    written with both joins, nothing is."""
    both = of_feed(join_set(ON_K, ON_T))
    assert set(both.specs) == set(join_set(ON_K).specs)  # the same blocks, more leaves
    lacking = check_witnesses(written(tmp_path / "old", join_set(ON_K)), both, LATENESS, H1, H0)
    assert lacking == [("f", H0), ("f", H1)]
    assert check_witnesses(written(tmp_path / "new", join_set(ON_K, ON_T)), both, LATENESS, H1, H0) == []
    assert (
        check_witnesses(written(tmp_path / "k", join_set(ON_K)), of_feed(join_set(ON_K)), LATENESS, H1, H0)
        == []
    )


def test_an_hour_written_before_coverage_was_recorded_is_taken_to_hold_its_blocks(tmp_path: Path) -> None:
    both = of_feed(join_set(ON_K, ON_T))
    assert check_witnesses(written(tmp_path, None), both, LATENESS, H1, H0) == []


def test_an_hour_not_routed_yet_is_waited_for_and_one_routed_without_witnesses_back_filled(
    tmp_path: Path,
) -> None:
    joins = of_feed(join_set(ON_K))
    store = open_store(tmp_path.as_uri())
    write_hour(store, bound_hour(join_set(ON_K), H1, [{"k": ("1",)}]), coverage(joins.specs.values()))
    with pytest.raises(WitnessesNotReady, match="f 2026-05-01T07"):
        check_witnesses(store, joins, LATENESS, H1, H0)
    assert check_witnesses(store, joins, LATENESS, H1, H0, routed=lambda feed, hour: True) == [("f", H0)]


def test_hours_still_lacking_after_their_back_fill_are_waited_for() -> None:
    """Routed again with their feeds' latest plan builds, hours that still lack blocks wait for those
    builds to be rebuilt (FR609, transient): a review found the stage failed for good (FR610)
    while another feed's plan had not yet picked up the new join subscription."""
    from feedrouter.spark.joins import back_fill

    filled: list[tuple[str, datetime]] = []
    lacking = [("blogs", H0), ("blogs", H1)]
    back_fill(lacking, lambda feed, hour: filled.append((feed, hour)), lambda: [])
    assert filled == lacking  # each back-filled, and nothing lacks afterwards: the stage goes on
    with pytest.raises(WitnessesNotReady, match=r"waiting for the plan builds of blogs") as caught:
        back_fill(lacking, lambda feed, hour: None, lambda: [("blogs", H1)])
    assert caught.value.code == "FR609" and caught.value.transient
    assert "blogs 2026-05-01T08" in str(caught.value)


def test_an_hour_whose_route_run_did_not_list_the_feed_is_not_waited_for(tmp_path: Path) -> None:
    """A feed added (or made active again) after an hour's route run listed its feeds is never
    routed for that hour by it: a join reading the feed skips the hour (a review found joins waiting
    for such hours for ever, holding the route DAG's runs), and waits for an hour no run has listed."""
    joins = of_feed(join_set(ON_K))
    store = open_store(tmp_path.as_uri())
    write_hour(store, bound_hour(join_set(ON_K), H1, [{"k": ("1",)}]), coverage(joins.specs.values()))
    listed = {H0: {"other"}}  # H0's run listed another feed only
    unlisted = lambda feed, hour: hour in listed and feed not in listed[hour]  # noqa: E731
    assert check_witnesses(store, joins, LATENESS, H1, H0, unlisted=unlisted) == []
    listed[H0] = {"other", "f"}  # listed: it will be routed, and is waited for
    with pytest.raises(WitnessesNotReady, match="f 2026-05-01T07"):
        check_witnesses(store, joins, LATENESS, H1, H0, unlisted=unlisted)
    del listed[H0]  # not listed yet: waited for
    with pytest.raises(WitnessesNotReady, match="f 2026-05-01T07"):
        check_witnesses(store, joins, LATENESS, H1, H0, unlisted=unlisted)
    listed[H0] = {"other"}  # unlisted, yet routed (a run for that feed alone): back-filled as any
    routed = lambda feed, hour: hour == H0  # noqa: E731
    assert check_witnesses(store, joins, LATENESS, H1, H0, routed, unlisted) == [("f", H0)]


#: a join over a block of its own (items with a ``c``): no hour written before it holds it
ON_C = (
    "for $a in fr:stream()//item[c], $b in fr:stream()//item where $a/k = $b/k and fr:within($a, $b, 'PT1H') "
    "return <p/>"
)


def inputs_gone(hour: datetime) -> InputsGone:
    return InputsGone(
        f"the join witnesses of f {hour:%Y-%m-%dT%H} must be back-filled, but its inputs are gone"
    )


def test_an_hour_whose_inputs_are_gone_is_handed_back_not_raised_and_the_others_still_checked() -> None:
    """A back-fill that finds an hour's inputs gone (FR612) does not stop the others being
    back-filled; the hour is handed back with its error (its joins are left out, not the stage's
    other joins), and an hour still lacking otherwise is waited for as before (FR609)."""
    from feedrouter.spark.joins import back_fill

    gone = inputs_gone(H0)
    filled: list[tuple[str, datetime]] = []

    def fill(feed: str, hour: datetime) -> None:
        if hour == H0:
            raise gone
        filled.append((feed, hour))

    lacking = [("f", H0), ("f", H1)]
    assert back_fill(lacking, fill, lambda: [("f", H0)]) == {("f", H0): gone}
    assert filled == [("f", H1)]
    with pytest.raises(WitnessesNotReady, match=r"f 2026-05-01T08"):
        back_fill(lacking, fill, lambda: [("f", H0), ("f", H1)])


def test_only_the_joins_needing_what_a_lost_hour_lacks_are_cut_off(tmp_path: Path) -> None:
    """Both hours were written when only ``s0`` (joining on ``k``) existed; then ``s1`` (the same
    blocks, joining on ``t`` and returning ``u``) and ``s2`` (a block of its own) were added, and
    the earlier hour's inputs are gone. ``s1`` and ``s2`` need what that hour lacks and are cut off
    with its error; ``s0`` reads only what the hour holds and is paired as before. A plan compiled
    before subscriptions recorded their own needs is taken to need its blocks' every leaf."""
    from feedrouter.spark.joins import cut_off

    later = join_set(ON_K, ON_T, ON_C)
    joins = of_feed(later)
    store = written(tmp_path, join_set(ON_K))
    gone = inputs_gone(H0)
    assert cut_off(store, joins, LATENESS, H1, {("f", H0): gone}) == {"s1": [gone], "s2": [gone]}
    assert cut_off(store, joins, LATENESS, H1, {}) == {}
    s0 = joins.plans["s0"]
    assert s0.needs == ((("k",), ()), (("k",), ()))
    old = replace(joins, plans={"s0": replace(s0, needs=())})
    assert cut_off(store, old, LATENESS, H1, {("f", H0): gone}) == {"s0": [gone]}
