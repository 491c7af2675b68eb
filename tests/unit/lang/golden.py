"""Read ``tests/golden/lang/must_fail.txt``: subscription texts with the problems they must report."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

MUST_FAIL = Path(__file__).resolve().parents[2] / "golden" / "lang" / "must_fail.txt"


@dataclass
class FailCase:
    """One must-fail text and its expected problems: (code, line, column, message), first one first."""

    text: str = ""
    problems: list[tuple[str, int, int, str]] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)


def _problem(header: str) -> tuple[str, int, int, str]:
    _, code, position, message = header.split(" ", 3)
    line, column = position.split(":")
    return code, int(line), int(column), message


def load_must_fail(path: Path = MUST_FAIL) -> list[FailCase]:
    """The cases of the file, in order (see the file's header for the format)."""
    cases: list[FailCase] = []
    current: FailCase | None = None
    for line in path.read_text(encoding="utf-8").split("\n"):
        if line.startswith("=== "):
            current = FailCase(problems=[_problem(line)])
            cases.append(current)
        elif line.startswith("+++ ") and current is not None and not current.lines:
            current.problems.append(_problem(line))
        elif line.startswith(("# ", "#### ")) or line == "#":
            current = None
        elif current is not None:
            current.lines.append(line)
    for case in cases:
        while case.lines and not case.lines[-1]:
            case.lines.pop()
        case.text = "\n".join(case.lines)
    return cases
