"""The shared NFA: prefix sharing, '*' and '//' states, incremental changes equal to fresh builds."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from feedrouter.engine.nfa import NavStep, Nfa
from feedrouter.lang.ast import Axis


def nav(text: str) -> tuple[NavStep, ...]:
    """'/a//b/*' -> NavSteps (test shorthand)."""
    steps, i = [], 0
    while i < len(text):
        axis = Axis.DESCENDANT if text.startswith("//", i) else Axis.CHILD
        i += len(axis.value)
        j = i
        while j < len(text) and text[j] != "/":
            j += 1
        steps.append(NavStep(axis, text[i:j]))
        i = j
    return tuple(steps)


# The example of the YFilter papers (paper 004, slide 11): 8 paths, 22 location steps, 13 states.
YFILTER_EXAMPLE = ["/a/b", "/a/c", "/a/b/c", "/a//b/c", "/a/*/c", "/a//c", "/a/*/*/c", "/a/b/c"]


def build(paths: list[str]) -> Nfa:
    nfa = Nfa()
    for p in paths:
        nfa.add_path(nav(p))
    return nfa


def test_yfilter_example_shares_prefixes_as_the_paper_shows() -> None:
    nfa = build(YFILTER_EXAMPLE)
    assert sum(len(nav(p)) for p in YFILTER_EXAMPLE) == 22
    assert nfa.state_count == 13  # the root state included, as in the figure
    assert nfa.path_count == 7  # Q3 and Q8 are the same path: one accepting state, one stream


def test_identical_paths_share_their_accepting_state_and_path_id() -> None:
    nfa = Nfa()
    assert nfa.add_path(nav("/a/b/c")) == nfa.add_path(nav("/a/b/c"))


def test_common_prefix_states_are_shared() -> None:
    nfa = build(["/a/b/c", "/a/b/d"])
    s1, s2 = nfa.states_of(nav("/a/b/c")), nfa.states_of(nav("/a/b/d"))
    assert s1[:3] == s2[:3] and s1[3] != s2[3]
    assert nfa.sharing_of(s1[2]) == 2


def test_descendant_steps_from_one_state_share_one_self_loop_state() -> None:
    nfa = build(["/a//b/c", "/a//c"])
    s1, s2 = nfa.states_of(nav("/a//b/c")), nfa.states_of(nav("/a//c"))
    assert s1[2] == s2[2]  # the '//' state under /a


def accepted_after(nfa: Nfa, tags: list[str]) -> set[str]:
    states = nfa.initial()
    for tag in tags:
        states = nfa.step(states, tag)
    return {"".join(str(s) for s in nfa.path(pid)) for pid in nfa.accepted(states)}


def test_wildcard_matches_exactly_one_level() -> None:
    nfa = build(["/a/*/c"])
    assert accepted_after(nfa, ["a", "x", "c"]) == {"/a/*/c"}
    assert accepted_after(nfa, ["a", "c"]) == set()
    assert accepted_after(nfa, ["a", "x", "y", "c"]) == set()


def test_descendant_matches_any_depth_including_direct_children() -> None:
    nfa = build(["/a//c", "//a"])
    assert accepted_after(nfa, ["a", "c"]) == {"/a//c"}
    assert accepted_after(nfa, ["a", "x", "y", "c"]) == {"/a//c"}
    assert accepted_after(nfa, ["a"]) == {"//a"}
    assert accepted_after(nfa, ["r", "x", "a"]) == {"//a"}


def test_removal_prunes_states_nobody_needs() -> None:
    nfa = build(["/a/b/c", "/a//d"])
    nfa.release_path(nav("/a/b/c"))
    nfa.release_path(nav("/a//d"))
    assert nfa.state_count == 1 and nfa.path_count == 0


def test_release_keeps_a_path_until_its_last_reference_goes() -> None:
    nfa = build(["/a/b", "/a/b"])
    nfa.release_path(nav("/a/b"))
    assert nfa.path_id(nav("/a/b")) is not None
    nfa.release_path(nav("/a/b"))
    assert nfa.path_id(nav("/a/b")) is None


_step = st.tuples(st.sampled_from(["/", "//"]), st.sampled_from(["a", "b", "c", "*"]))
_path = st.lists(_step, min_size=1, max_size=4).map(lambda steps: "".join(a + t for a, t in steps))


@settings(max_examples=150, deadline=None)
@given(st.lists(_path, min_size=1, max_size=12), st.data())
def test_incremental_add_and_remove_equal_a_fresh_build(paths: list[str], data: st.DataObject) -> None:
    nfa = build(paths)
    removed = data.draw(st.lists(st.sampled_from(paths), unique=True))
    for p in removed:
        for _ in range(paths.count(p)):
            nfa.release_path(nav(p))
    remaining = [p for p in paths if p not in removed]
    assert nfa.canonical() == build(remaining).canonical()
    assert nfa.state_count == build(remaining).state_count
