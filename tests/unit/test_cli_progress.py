"""Progress bars on long CLI work, quiet when stderr is not a terminal; JSON log lines with the
batch's fields as keys (issue 17, item 5)."""

from __future__ import annotations

import io
import json
import logging
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from feedrouter.cli import main
from feedrouter.logs import JsonFormatter, configured
from feedrouter.progress import TaskBar, wanted
from tests.conftest import ROOT

BAR_GLYPHS = ("━", "╸", "╺")


def routing_args(tmp_path: Path, documents: int = 3) -> list[str]:
    (tmp_path / "in").mkdir()
    for i in range(documents):
        (tmp_path / "in" / f"d{i}.xml").write_bytes(b"<a><b/></a>")
    (tmp_path / "subs.json").write_text(json.dumps({"q": "//b"}))
    return ["route", "--subscriptions", str(tmp_path / "subs.json"), "--input", str(tmp_path / "in"),
            "--output", str(tmp_path / "out")]  # fmt: skip


def test_route_draws_no_bar_when_stderr_is_not_a_terminal(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, routing_args(tmp_path))
    assert result.exit_code == 0, result.output
    assert "routing" not in result.stderr and not any(g in result.output for g in BAR_GLYPHS)
    assert "\x1b[" not in result.output


def test_route_draws_a_bar_on_stderr_when_asked_even_off_a_terminal(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, [*routing_args(tmp_path), "--progress"])
    assert result.exit_code == 0, result.output
    assert "routing" in result.stderr and "3/3" in result.stderr
    assert "routing" not in result.stdout  # stdout keeps the command's result only


def test_route_draws_a_bar_when_stderr_is_a_terminal(tmp_path: Path) -> None:
    leader, follower = pty.openpty()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "plugins"), "COLUMNS": "100"}
    command = [sys.executable, "-m", "feedrouter.cli", *routing_args(tmp_path)]
    proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=follower)
    os.close(follower)
    drawn = _read_all(leader)
    stdout, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, drawn
    assert "routing" in drawn and "3/3" in drawn and any(g in drawn for g in BAR_GLYPHS)
    assert b"routed 3 documents" in stdout and b"routing" not in stdout


def _read_all(fd: int) -> str:
    """Everything written to a pseudo-terminal until its last writer closes it."""
    chunks = []
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # EIO: the other side is closed (Linux)
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(fd)
    return b"".join(chunks).decode("utf-8", "replace")


def test_a_bar_is_wanted_on_a_terminal_unless_the_user_said_otherwise() -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert wanted(None, Terminal()) and not wanted(None, io.StringIO())
    assert wanted(True, io.StringIO()) and not wanted(False, Terminal())


def test_a_disabled_bar_writes_nothing() -> None:
    stream = io.StringIO()
    bar = TaskBar("routing", enabled=False, stream=stream)
    bar(1, 2)
    bar.close()
    assert stream.getvalue() == ""


def test_json_log_lines_carry_the_batchs_fields_as_keys(capsys: pytest.CaptureFixture[str]) -> None:
    batch = {"feedrouter_feed": "news", "feedrouter_hour": "2026-11-22T16", "feedrouter_batch_id": 7}
    with configured("json"):
        logging.getLogger("feedrouter.spark").info("routing %d objects", 3, extra=batch)
        logging.getLogger("feedrouter.spark").debug("not at INFO")
    lines = [json.loads(line) for line in capsys.readouterr().err.splitlines()]
    assert len(lines) == 1
    assert lines[0]["message"] == "routing 3 objects" and lines[0]["level"] == "INFO"
    assert lines[0]["logger"] == "feedrouter.spark"
    assert {key: lines[0][key] for key in batch} == batch


def test_after_the_block_feedrouters_logger_is_as_it_was() -> None:
    logger = logging.getLogger("feedrouter")
    before = (list(logger.handlers), logger.level, logger.propagate)
    with configured("json"):
        assert logger.propagate is False
    assert (list(logger.handlers), logger.level, logger.propagate) == before


def test_an_exception_and_odd_extra_values_are_kept_in_the_json_line() -> None:
    try:
        raise ValueError("boom")
    except ValueError:
        record = logging.getLogger("feedrouter").makeRecord(
            "feedrouter", logging.ERROR, "f.py", 1, "failed", (), sys.exc_info(), extra={"where": Path("/x")}
        )
    line = json.loads(JsonFormatter().format(record))
    assert line["where"] == "/x" and "ValueError: boom" in line["exception"]


@pytest.mark.parametrize(
    ("args", "env", "named"),
    [
        (["--log-format", "xml"], {}, "--log-format"),
        ([], {"FEEDROUTER_LOG_FORMAT": "yaml"}, "FEEDROUTER_LOG_FORMAT"),
    ],
)
def test_an_invalid_log_format_names_the_setting(args: list[str], env: dict[str, str], named: str) -> None:
    result = CliRunner().invoke(main, [*args, "generate", "--help"], env=env)
    assert result.exit_code == 2 and f"[FR700] {named}=" in result.output
    assert "input should be 'text' or 'json'" in result.output
