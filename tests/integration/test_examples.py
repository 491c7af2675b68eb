"""sql/examples.sql (the SQL of the README's catalog section) works as documented, run with psql semantics."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest
from sqlalchemy import Engine, make_url, text

from feedrouter.catalog import build_plan, load_latest_plan
from feedrouter.storage import FileStore
from tests.conftest import ROOT

pytestmark = pytest.mark.integration

DOCUMENT = (
    b'<!DOCTYPE nitf SYSTEM "wire.dtd"><nitf><head><title>Caf&eacute;</title>'
    b'<pubdata edition.area="SF"/></head><body><story lang="en">Hello</story></body></nitf>'
)


def test_the_documented_sql_gives_the_documented_catalog(
    catalog: Engine, catalog_url: str, tmp_path: Path
) -> None:
    dsn = make_url(catalog_url).set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute((ROOT / "sql" / "examples.sql").read_text(encoding="utf-8"))  # no parameters: psql-like
    store = FileStore(tmp_path / "plans")
    result = build_plan(catalog, "wire", store)
    assert (result.valid, result.invalid) == (2, 1)
    with catalog.connect() as conn:
        problem = conn.execute(
            text("SELECT * FROM feedrouter.subscription_problems WHERE feed = 'wire'")
        ).one()
        status = conn.execute(text("SELECT * FROM feedrouter.feed_status WHERE feed = 'wire'")).one()
    assert (problem.subscription, problem.error_code, problem.error_line, problem.error_column) == (
        "tokenized",
        "FR108",
        1,
        9,
    )
    assert status.up_to_date and status.catalog_version == result.catalog_version
    _, plan = load_latest_plan(catalog, "wire", store)
    routed = {plan.targets[sid].subscription: data for sid, data in plan.route(DOCUMENT).items()}
    assert routed["english-stories"] == b"<story>Hello</story>"
    assert set(routed) == {"sf-editions", "english-stories"}
