"""With the catalog down, every catalog command prints the code and what to check, never a
traceback and never the password (issue 18, item 13)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

from feedrouter.cli import main
from tests.conftest import ROOT

#: Nothing listens on port 1: the connection is refused at once.
CLOSED = "postgresql://feedrouter:hunter2@127.0.0.1:1/catalog"

COMMANDS = [
    ["catalog", "status"],
    ["db", "upgrade"],
    ["db", "downgrade", "--revision", "base"],
    ["build-plan", "--feed", "news"],
    ["catalog", "init-sample"],
    ["route-batch", "--feed", "news", "--hour", "2026-11-22T16", "--no-progress"],
]


@pytest.mark.parametrize("args", COMMANDS, ids=[" ".join(a[:2]) for a in COMMANDS])
def test_an_unreachable_catalog_is_fr402_with_the_host_to_check(
    args: list[str], monkeypatch: pytest.MonkeyPatch, tmp_path: object
) -> None:
    monkeypatch.setenv("FEEDROUTER_DATABASE_URL", CLOSED)
    monkeypatch.setenv("FEEDROUTER_HOME", str(tmp_path))
    result = CliRunner().invoke(main, args)
    assert isinstance(result.exception, SystemExit) and result.exit_code == 1, result.exception
    assert "[FR402]" in result.output
    assert "is the database at 127.0.0.1:1 running? check FEEDROUTER_DATABASE_URL" in result.output
    assert "feedrouter:***@127.0.0.1:1/catalog" in result.output
    assert "hunter2" not in result.output and "Traceback" not in result.output


def test_an_unset_catalog_is_fr401_naming_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FEEDROUTER_DATABASE_URL", raising=False)
    result = CliRunner().invoke(main, ["catalog", "status"])
    assert isinstance(result.exception, SystemExit) and result.exit_code == 1
    assert "[FR401]" in result.output and "FEEDROUTER_DATABASE_URL" in result.output


def test_a_url_sqlalchemy_cannot_parse_is_fr401_without_echoing_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FEEDROUTER_DATABASE_URL", "postgresql://u:hunter2@host:notaport/x")
    result = CliRunner().invoke(main, ["catalog", "status"])
    assert isinstance(result.exception, SystemExit) and result.exit_code == 1, result.exception
    assert "[FR401]" in result.output and "hunter2" not in result.output


def test_a_real_run_against_a_closed_port_prints_no_traceback() -> None:
    env = {**os.environ, "FEEDROUTER_DATABASE_URL": CLOSED}
    code = "import sys; sys.path.insert(0, 'plugins'); from feedrouter.cli import main; main()"
    proc = subprocess.run(
        [sys.executable, "-c", code, "catalog", "status"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert proc.stderr.startswith("Error: [FR402] the catalog postgresql://feedrouter:***@127.0.0.1:1/")
    assert "Traceback" not in proc.stderr and "hunter2" not in proc.stderr
