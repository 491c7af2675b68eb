"""Configuration from the environment (the feed layout: tests/unit/test_hours.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from feedrouter.catalog.settings import database_url, home, normalize_url, plans_uri
from feedrouter.errors import CatalogError, SettingsError


def test_the_plans_live_under_feedrouter_home(tmp_path: Path) -> None:
    # (the embedded server's data folder below it: test_embedded.py)
    env = {"FEEDROUTER_DATABASE_URL": "embedded", "FEEDROUTER_HOME": str(tmp_path)}
    assert plans_uri(env) == (tmp_path / "plans").as_uri()


def test_an_unset_catalog_is_an_error_naming_the_setting(tmp_path: Path) -> None:
    for env in ({}, {"FEEDROUTER_DATABASE_URL": ""}, {"FEEDROUTER_HOME": str(tmp_path)}):
        with pytest.raises(CatalogError, match=r"\[FR401\] no catalog configured: set FEEDROUTER_DATABASE"):
            database_url(env)


def test_an_unset_catalog_creates_no_file_in_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from feedrouter.catalog.database import open_catalog

    monkeypatch.chdir(tmp_path)
    for name in ("FEEDROUTER_DATABASE_URL", "FEEDROUTER_HOME"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(CatalogError, match="FR401") as caught:
        open_catalog()
    assert caught.value.code == "FR401"
    assert list(tmp_path.iterdir()) == []


def test_the_home_folder_is_never_relative_to_the_working_directory(tmp_path: Path) -> None:
    assert home({}) == Path.home() / ".local" / "state" / "feedrouter"
    assert home({"XDG_STATE_HOME": str(tmp_path)}) == tmp_path / "feedrouter"
    assert home({"XDG_STATE_HOME": "relative"}) == Path.home() / ".local" / "state" / "feedrouter"
    with pytest.raises(SettingsError, match=r"FR700.*FEEDROUTER_HOME='var'"):
        home({"FEEDROUTER_HOME": "var"})


def test_configured_urls_win_and_use_psycopg_3() -> None:
    env = {"FEEDROUTER_DATABASE_URL": "postgresql://u@db/cat", "FEEDROUTER_PLANS_URI": "s3://b/plans"}
    assert database_url(env) == "postgresql+psycopg://u@db/cat"
    assert plans_uri(env) == "s3://b/plans"
    assert normalize_url("postgres://u@db/cat") == "postgresql+psycopg://u@db/cat"
    assert normalize_url("postgresql+psycopg://u@db/cat") == "postgresql+psycopg://u@db/cat"


def test_urls_in_messages_never_show_the_password() -> None:
    from feedrouter.catalog.database import create_catalog_engine, safe_url

    engine = create_catalog_engine("postgresql://feedrouter:s3cret@db:5432/catalog")
    assert safe_url(engine) == "postgresql+psycopg://feedrouter:***@db:5432/catalog"
