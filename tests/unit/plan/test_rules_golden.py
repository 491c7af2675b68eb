"""Golden input/expected pairs for each rewrite rule, under ``tests/golden/rules/<rule>/<dtd>.txt``.

Each rule of :data:`feedrouter.plan.rules.RULES` has a directory named after it (``pipeline/`` runs
them all, in order); each file in it is named after a DTD of :mod:`feedrouter.workload.dtds`, which
its cases are rewritten under. A case is a block of lines (blocks are separated by blank lines,
``#`` lines are comments):

* ``in:`` a subscription, written as :func:`feedrouter.lang.to_xquery` prints it (the lines up to
  ``out:`` are all its text: a FLWR or a namespace declaration takes several);
* ``out:`` the pattern of its path (a filter) or of its binding and where clause (a FLWR) after the
  rule, as :func:`feedrouter.plan.patterns.format_pattern` prints it;
* ``return:`` for each return path of a FLWR, its pattern after the rule (lowered below the rewritten
  binding, as the planner does) and the field of the bound node it starts below (``$1`` the first);
* ``note:`` each rewrite the rule reported, in the order ``explain()`` lists them.

There is no update switch: on a mismatch the test prints the case as the rule gives it, to be read and
pasted into the file by hand.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from feedrouter import Router
from feedrouter.lang import ast, parse, to_xquery
from feedrouter.output.factory import compile_constructor
from feedrouter.plan.optimize import Optimize, RuleContext
from feedrouter.plan.patterns import PathPattern, absolute_pattern, format_pattern, relative_pattern
from feedrouter.plan.rules import RULES, Rule, rewrite
from feedrouter.workload import dtds

GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "rules"

#: The directory of each rule, and ``pipeline`` for all of them in their order.
RULE_DIRS: dict[str, tuple[Rule, ...]] = {rule.__name__: (rule,) for rule in RULES} | {"pipeline": RULES}


@dataclass
class Case:
    """One golden case: where it is written, its input text and its expected lines."""

    rule: str
    dtd: str
    line: int
    text: str
    expected: list[str]

    @property
    def id(self) -> str:
        return f"{self.rule}/{self.dtd}:{self.line}"


def load_cases(directory: Path = GOLDEN) -> list[Case]:
    """Every case of every file, in order."""
    cases: list[Case] = []
    for path in sorted(directory.glob("*/*.txt")):
        cases.extend(_file_cases(path))
    return cases


def _file_cases(path: Path) -> list[Case]:
    cases: list[Case] = []
    block: list[tuple[int, str]] = []
    for number, line in enumerate([*path.read_text(encoding="utf-8").split("\n"), ""], start=1):
        if line.startswith("#"):
            continue
        if line.strip():
            block.append((number, line))
        elif block:
            cases.append(_case(path, block))
            block = []
    return cases


def _case(path: Path, block: list[tuple[int, str]]) -> Case:
    line, first = block[0]
    if not first.startswith("in: "):
        raise ValueError(f"{path}, line {line}: a case starts with 'in: ', not {first!r}")
    lines = [text for _, text in block]
    end = next((i for i, text in enumerate(lines) if text.startswith("out: ")), len(lines))
    text = "\n".join(lines[:end]).removeprefix("in: ")
    return Case(path.parent.name, path.stem, line, text, lines[end:])


def rewritten(case: Case) -> list[str]:
    """The lines of ``case`` as the rule (or the pipeline) gives them."""
    rules = RULE_DIRS[case.rule]
    graph = dtds.load(case.dtd)
    body = parse(case.text).body
    notes: list[str] = []
    if isinstance(body, ast.Filter):
        main = _run(absolute_pattern(body.path), rules, graph, notes)
        return [f"out: {format_pattern(main)}", *(f"note: {n}" for n in notes)]
    assert isinstance(body, ast.Flwr)
    main = _run(absolute_pattern(body.binding, body.where), rules, graph, notes)
    lines = [f"out: {format_pattern(main)}"]
    for path in _return_paths(body):
        if path.steps:
            returned = _run(relative_pattern(main.nav, path), rules, graph, notes)
            lines.append(f"return: {format_pattern(returned)} (below ${returned.base})")
    return lines + [f"note: {n}" for n in notes]


def _run(pattern: PathPattern, rules: tuple[Rule, ...], graph, notes: list[str]) -> PathPattern:  # type: ignore[no-untyped-def]
    context = RuleContext(Optimize.DTD, graph)
    pattern = rewrite(pattern, context, rules)
    notes.extend(n for n in context.applied() if n not in notes)  # one list per subscription
    return pattern


def _return_paths(body: ast.Flwr) -> list[ast.RelPath]:
    if not isinstance(body.ret, ast.Constructor):
        return [body.ret]
    slots: list[ast.RelPath] = []
    compile_constructor(body.ret, slots)
    return slots


CASES = load_cases()


def test_every_rule_has_golden_cases_and_every_directory_is_a_rule() -> None:
    directories = {path.name for path in GOLDEN.iterdir() if path.is_dir()}
    assert directories == set(RULE_DIRS)
    assert {case.rule for case in CASES} == set(RULE_DIRS)


def test_the_files_are_named_after_project_dtds() -> None:
    for path in GOLDEN.glob("*/*"):
        assert path.suffix == ".txt" and path.stem.upper() in dtds.FILES, path


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_the_rule_gives_the_expected_output(case: Case) -> None:
    assert to_xquery(parse(case.text)) == case.text, f"{case.id}: write the input as to_xquery prints it"
    actual = rewritten(case)
    shown = "\n".join([f"in: {case.text}", *actual])
    assert actual == case.expected, f"{case.id}: the rule gives\n{shown}"


PIPELINE = [case for case in CASES if case.rule == "pipeline"]


@pytest.mark.parametrize("case", PIPELINE, ids=[case.id for case in PIPELINE])
def test_explain_lists_the_rewrites_of_the_pipeline_cases(case: Case) -> None:
    """The planner runs the pipeline: a router at the dtd level notes what the golden file says."""
    router = Router.compile([("s", case.text)], dtd=dtds.load(case.dtd), optimize="dtd")
    noted = [line.strip() for line in router.explain("s").splitlines() if line.startswith("  rewrite: ")]
    assert noted == [line.removeprefix("note: ") for line in case.expected if line.startswith("note: ")]
