"""The catalog commands on a catalog database: set up, seed, build, inspect (the embedded server's
own commands: test_embedded.py)."""

from __future__ import annotations

from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from feedrouter.catalog.cli import register


@pytest.fixture
def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, catalog_db_url: str):  # type: ignore[no-untyped-def]
    monkeypatch.delenv("FEEDROUTER_PLANS_URI", raising=False)
    monkeypatch.setenv("FEEDROUTER_DATABASE_URL", catalog_db_url)
    monkeypatch.setenv("FEEDROUTER_HOME", str(tmp_path / "var"))
    group = click.Group("feedrouter")
    register(group)

    def invoke(*args: str) -> str:
        result = CliRunner().invoke(group, list(args), catch_exceptions=False)
        assert result.exit_code == 0, result.output
        return result.output

    return invoke


def test_sample_catalog_build_and_status(run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    assert "migrated the catalog" in run("db", "upgrade")
    assert "has 22 subscriptions" in run("catalog", "init-sample", "--subscriptions", "20", "--with-invalid")
    built = run("build-plan", "--feed", "news")
    assert "built plan 1 of feed news" in built and "20 valid, 2 invalid" in built
    assert "[FR108] the function 'tokenize()' is not supported" in built
    assert "reused the plan build 1" in run("build-plan", "--feed", "news")
    status = run("catalog", "status")
    assert "(up to date)" in status and "broken-001: line 3, column 8: [FR106]" in status
    assert len(list((tmp_path / "var" / "plans" / "news").glob("*.plan"))) == 1


def test_errors_are_one_clean_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, catalog_db_url: str
) -> None:
    monkeypatch.setenv("FEEDROUTER_DATABASE_URL", catalog_db_url)
    monkeypatch.setenv("FEEDROUTER_HOME", str(tmp_path))
    group = click.Group("feedrouter")
    register(group)
    result = CliRunner().invoke(group, ["build-plan", "--feed", "nope"])
    assert result.exit_code == 1 and "Error: [FR405] no feed named 'nope'" in result.output
