"""Progress bars for long command-line work (``feedrouter route``, ``route-batch``), drawn with rich.

A bar goes to stderr, and only when stderr is a terminal unless the user asked for it
(``--progress``): output piped to a file or a log collector stays free of redraw sequences, and
stdout keeps only the command's result. This module imports rich only when a bar is drawn, so the
commands stay cheap to register.

Example:
    >>> with task_bar("routing", enabled=False) as bar:
    ...     bar(1, 2)  # a disabled bar accepts reports and draws nothing
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO


def wanted(requested: bool | None, stream: TextIO | None = None) -> bool:
    """Whether to draw: what the user asked for, else whether ``stream`` (stderr) is a terminal."""
    if requested is not None:
        return requested
    stream = sys.stderr if stream is None else stream
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


class TaskBar:
    """A progress callback ``(finished, total)`` drawing one bar; nothing is drawn before the first
    report, so an empty hour or a refused batch shows no bar at all."""

    def __init__(self, label: str, enabled: bool, stream: TextIO | None = None) -> None:
        self.label = label
        self.enabled = enabled
        self._stream = stream
        self._progress: Any = None
        self._task: Any = None

    def __call__(self, finished: int, total: int) -> None:
        if not self.enabled:
            return
        if self._progress is None:
            self._start(total)
        self._progress.update(self._task, completed=finished, total=total)

    def _start(self, total: int) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        # a bar the user forced onto a non-terminal is still drawn, as plain text at the end
        console = Console(file=self._stream or sys.stderr, force_terminal=wanted(None, self._stream) or None)
        columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
        self._progress = Progress(*columns, console=console, transient=False)
        self._progress.start()
        self._task = self._progress.add_task(self.label, total=total)

    def close(self) -> None:
        """Stop drawing (the last frame stays on screen)."""
        if self._progress is not None:
            self._progress.stop()
            self._progress = None


@contextmanager
def task_bar(label: str, enabled: bool, stream: TextIO | None = None) -> Iterator[TaskBar]:
    """A :class:`TaskBar` that is closed however the block ends."""
    bar = TaskBar(label, enabled, stream)
    try:
        yield bar
    finally:
        bar.close()
