"""The core imports no adapter dependency: Airflow's scheduler and Spark's executors import it."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import ROOT

FORBIDDEN = ["airflow", "pyspark", "sqlalchemy", "boto3", "botocore", "psycopg", "psycopg2", "saxonche"]


def test_importing_and_running_the_core_loads_no_adapter_dependency() -> None:
    code = (
        "import sys; sys.path.insert(0, 'plugins');"
        "import feedrouter, feedrouter.lang, feedrouter.schema, feedrouter.workload;"
        "r = feedrouter.Router.compile([('a', '//x')]); r.route(b'<x/>');"
        f"bad = [m for m in {FORBIDDEN!r} if m in sys.modules]; print(bad); sys.exit(1 if bad else 0)"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_airflow_is_told_to_ignore_the_package_folder() -> None:
    assert (ROOT / "plugins" / ".airflowignore").read_text().split() == ["feedrouter/"]
