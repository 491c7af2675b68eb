"""Session settings, the pyspark/JVM version check and the fault hook (no JVM is started)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from feedrouter.spark import session
from feedrouter.spark.errors import InjectedFailure, SparkVersionError
from feedrouter.spark.spec import Fault, maybe_fail


def test_local_sessions_stay_on_loopback_and_executors_run_this_python(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(session.PYTHON_ENV, raising=False)
    local = session.session_conf(None)
    assert local["spark.pyspark.python"] == session.sys.executable
    assert local["spark.driver.bindAddress"] == "127.0.0.1" and local["spark.speculation"] == "false"
    cluster = session.session_conf("spark://h:7077", {"spark.executor.memory": "2g"})
    assert "spark.driver.bindAddress" not in cluster and cluster["spark.executor.memory"] == "2g"
    monkeypatch.setenv(session.PYTHON_ENV, "/opt/project/bin/python")
    assert session.session_conf("spark://h:7077")["spark.pyspark.python"] == "/opt/project/bin/python"
    assert session.is_local(None) and session.is_local("local[2,2]") and not session.is_local("spark://h:1")
    assert session.is_connect("sc://h:15002") and not session.is_connect("spark://h:1")
    assert not session.is_connect(None) and not session.is_local("sc://h:15002")


def test_a_pyspark_that_is_not_its_jvm_is_refused() -> None:
    import pyspark

    session.check_versions(SimpleNamespace(version=pyspark.__version__))  # type: ignore[arg-type]
    with pytest.raises(SparkVersionError, match=r"pip install --force-reinstall --no-deps pyspark==0\.0\.1"):
        session.check_versions(SimpleNamespace(version="0.0.1"))  # type: ignore[arg-type]
    connect = type("SparkSession", (), {"__module__": "pyspark.sql.connect.session", "version": "3.5.0"})
    session.check_versions(connect())  # type: ignore[arg-type]  # a Connect server of another version


def test_speculation_is_refused() -> None:
    def context(value: str) -> SimpleNamespace:
        return SimpleNamespace(conf=SimpleNamespace(get=lambda key, default: value))

    session.check_no_speculation(context("false"))  # type: ignore[arg-type]
    with pytest.raises(SparkVersionError, match="speculation"):
        session.check_no_speculation(context("true"))  # type: ignore[arg-type]


def test_a_fault_fires_once(tmp_path: Path) -> None:
    flag = tmp_path / "flag"
    flag.touch()
    fault = Fault("route", str(flag))
    maybe_fail(fault, "deliver")
    with pytest.raises(InjectedFailure) as caught:
        maybe_fail(fault, "route")
    assert caught.value.transient
    maybe_fail(fault, "route")  # the flag is gone: the retry passes
    maybe_fail(None, "route")
