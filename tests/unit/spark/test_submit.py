"""What a spark-submit of the routing application carries (conf layers, environment, command line),
the application's arguments and exit statuses, and the packaging helpers that need no network."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from datetime import datetime, timezone
from pathlib import Path

import pytest
from sqlalchemy.exc import OperationalError

from feedrouter.errors import HourError, SettingsError, TransientStorageError, error
from feedrouter.spark.app import ExitCode, main, parse_arguments, store_opener
from feedrouter.spark.package import pinned_extras, project_root
from feedrouter.spark.submit import (
    application_args,
    application_path,
    archive_argument,
    checked_conf,
    connection_conf,
    default_conf,
    driver_environment,
    env_becomes_conf,
    merged_conf,
    submission,
)

HOUR = datetime(2026, 11, 22, 16, tzinfo=timezone.utc)


# -- conf -----------------------------------------------------------------------------------------


def test_a_later_layer_overrides_an_earlier_one() -> None:
    defaults = {"spark.speculation": "false", "spark.executor.memory": "1g"}
    connection = {"spark.executor.memory": "2g", "spark.executor.cores": "2"}
    feed = {"spark.executor.memory": "4g"}
    operator = {"spark.executor.cores": "4"}

    conf = merged_conf(defaults, connection, feed, operator)

    assert conf == {"spark.speculation": "false", "spark.executor.memory": "4g", "spark.executor.cores": "4"}


def test_connection_extras_give_their_conf_object_and_spark_keys_but_not_the_hooks_own() -> None:
    extra = {
        "deploy-mode": "cluster",
        "queue": "etl",
        "conf": {"spark.dynamicAllocation.enabled": True, "spark.executor.instances": 4},
        "spark.kubernetes.container.image": "apache/spark:4.0.1",
    }

    assert connection_conf(extra) == {
        "spark.dynamicAllocation.enabled": "true",
        "spark.executor.instances": "4",
        "spark.kubernetes.container.image": "apache/spark:4.0.1",
    }


@pytest.mark.parametrize(
    ("conf", "named"),
    [
        ({"executor.memory": "2g"}, "'executor.memory'"),
        ({"spark.executor.memory": None}, "spark.executor.memory"),
    ],
)
def test_conf_that_is_no_spark_setting_is_refused_naming_the_key(conf: dict[str, object], named: str) -> None:
    with pytest.raises(SettingsError, match=r"\[FR700\] the operator's spark_conf: .*") as raised:
        checked_conf(conf, "the operator's spark_conf")
    assert named in str(raised.value)


def test_a_conf_extra_that_is_not_an_object_is_refused() -> None:
    with pytest.raises(SettingsError, match="extra 'conf' must be a JSON object"):
        connection_conf({"conf": "spark.executor.memory=2g"})


def test_a_packed_environment_sets_the_executors_python_and_keeps_the_driver_local_in_client_mode() -> None:
    client = default_conf("env.tar.gz#environment", "client")
    cluster = default_conf("env.tar.gz#environment", "cluster")

    assert client["spark.pyspark.python"] == cluster["spark.pyspark.python"] == "./environment/bin/python"
    assert client["spark.pyspark.driver.python"] == sys.executable
    assert "spark.pyspark.driver.python" not in cluster  # the driver runs in the cluster, on the archive
    assert "spark.pyspark.python" not in default_conf(None, None)  # the image's own Python
    assert client["spark.speculation"] == "false"


def test_the_archive_argument_names_the_environment_once() -> None:
    assert archive_argument("s3://b/feedrouter-env.tar.gz") == "s3://b/feedrouter-env.tar.gz#environment"
    assert archive_argument("env.tar.gz#venv") == "env.tar.gz#venv"


# -- environment and the submission ---------------------------------------------------------------


def test_the_driver_environment_carries_catalog_plans_s3_and_credentials() -> None:
    env = driver_environment(
        "postgresql+psycopg://u:pw@db/cat",
        "s3://b/plans",
        {"FEEDROUTER_S3_ENDPOINT_URL": "http://minio:9000"},
        {"AWS_ACCESS_KEY_ID": "id", "AWS_SECRET_ACCESS_KEY": "secret"},
    )

    assert env == {
        "FEEDROUTER_DATABASE_URL": "postgresql+psycopg://u:pw@db/cat",
        "FEEDROUTER_PLANS_URI": "s3://b/plans",
        "FEEDROUTER_S3_ENDPOINT_URL": "http://minio:9000",
        "AWS_ACCESS_KEY_ID": "id",
        "AWS_SECRET_ACCESS_KEY": "secret",
    }


def test_the_driver_environment_names_the_join_state_when_given() -> None:
    assert "FEEDROUTER_STATE_URI" not in driver_environment(None, "s3://b/plans")
    env = driver_environment(None, "s3://b/plans", state_uri="s3://b/state")
    assert env == {"FEEDROUTER_PLANS_URI": "s3://b/plans", "FEEDROUTER_STATE_URI": "s3://b/state"}


@pytest.mark.parametrize(
    ("master", "deploy_mode", "becomes_conf"),
    [
        ("spark://h:7077", "client", False),
        ("spark://h:7077", None, False),
        ("spark://h:7077", "cluster", True),
        ("yarn", "client", True),
        ("k8s://https://api:6443", "cluster", True),
    ],
)
def test_where_the_hook_would_turn_environment_into_conf(
    master: str, deploy_mode: str | None, becomes_conf: bool
) -> None:
    assert env_becomes_conf(master, deploy_mode) is becomes_conf


def test_a_submission_never_shows_its_secrets_and_builds_the_command_line() -> None:
    job = submission(
        "news",
        HOUR,
        conf_layers=({"spark.executor.memory": "2g"},),
        env_vars={
            "FEEDROUTER_DATABASE_URL": "postgresql://u:hunter2@db/c",
            "FEEDROUTER_PLANS_URI": "s3://b/p",
        },
        archive="dist/feedrouter-env.tar.gz",
        deploy_mode="client",
    )

    assert "hunter2" not in repr(job) and "hunter2" not in str(job)
    assert "FEEDROUTER_DATABASE_URL" in repr(job)  # named as hidden
    command = job.command("spark://h:7077", "client")
    assert command[:3] == ["spark-submit", "--master", "spark://h:7077"]
    assert command[7:9] == ["--archives", "dist/feedrouter-env.tar.gz#environment"]
    assert "spark.executor.memory=2g" in command
    assert "hunter2" not in " ".join(command)
    assert command[-5:] == [application_path(), *application_args("news", HOUR)]
    assert application_args("news", HOUR) == ["--feed", "news", "--hour", "2026-11-22T16"]
    assert job.name == "feedrouter-news-2026-11-22T16"


def test_the_application_file_is_the_installed_module() -> None:
    assert Path(application_path()).read_text().startswith('"""The routing job as a spark-submit application')


# -- the application ------------------------------------------------------------------------------


def test_the_hour_is_read_strictly() -> None:
    assert parse_arguments(["--feed", "news", "--hour", "2026-11-22T16"]).hour == HOUR
    with pytest.raises(HourError, match=r"\[FR608\] '2026-11-23' is not an hour"):
        parse_arguments(["--feed", "news", "--hour", "2026-11-23"])


def test_a_date_for_an_hour_exits_terminal_before_opening_anything(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status = main(["--feed", "news", "--hour", "2026-11-23"], env={"FEEDROUTER_DATABASE_URL": "nowhere://"})

    assert status == ExitCode.TERMINAL == 1
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("feedrouter: exit status 1 (terminal: the same on every attempt): [FR608]")


def test_a_missing_argument_exits_with_the_usage_status() -> None:
    with pytest.raises(SystemExit) as raised:
        parse_arguments(["--hour", "2026-11-22T16"])
    assert raised.value.code == ExitCode.USAGE == 2


def test_exit_statuses_say_whether_a_retry_can_help() -> None:
    assert ExitCode.of(error("FR601", "no plan build")) is ExitCode.TERMINAL
    assert ExitCode.of(TransientStorageError("throttled")) is ExitCode.TRANSIENT
    assert ExitCode.of(RuntimeError("bug")) is ExitCode.INTERNAL
    assert ExitCode.of(OperationalError("SELECT 1", {}, OSError("connection refused"))) is ExitCode.TRANSIENT
    assert ExitCode.TRANSIENT.retryable and ExitCode.INTERNAL.retryable
    assert not ExitCode.TERMINAL.retryable


def test_the_stores_take_s3_settings_from_the_environment() -> None:
    env = {
        "FEEDROUTER_S3_ENDPOINT_URL": "http://minio:9000",
        "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE",
        "AWS_SECRET_ACCESS_KEY": "hunter2",
    }
    stores = store_opener(env)

    assert stores.s3 is not None and stores.s3.endpoint_url == "http://minio:9000"
    assert "hunter2" not in repr(stores) and "AKIDEXAMPLE" not in repr(stores)


def test_the_application_runs_as_a_file_as_spark_submit_runs_it() -> None:
    done = subprocess.run(
        [sys.executable, application_path(), "--feed", "news", "--hour", "2026-11-23"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == ExitCode.TERMINAL, done.stderr
    assert "[FR608]" in done.stderr.splitlines()[-1]


# -- packaging ------------------------------------------------------------------------------------


def test_the_project_root_is_the_source_tree_and_extras_are_pinned() -> None:
    root = project_root()
    assert (root / "plugins" / "feedrouter" / "spark" / "package.py").is_file()
    pins = pinned_extras(("pyarrow", "no-such-package-for-feedrouter"))
    assert pins[0].startswith("pyarrow==") and pins[1] == "no-such-package-for-feedrouter"


def test_no_source_tree_is_a_settings_error(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match="no feedrouter source tree"):
        project_root(tmp_path / "a" / "b.py")


def test_building_the_wheel_leaves_no_build_metadata_in_the_source_tree(tmp_path: Path) -> None:
    # an egg-info in a checkout's plugins/ makes Airflow register the plugin twice
    from feedrouter.spark.package import WHEEL_SOURCES, build_wheel, project_root

    source = tmp_path / "checkout"
    for name in WHEEL_SOURCES:
        original = project_root() / name
        if original.is_dir():
            skip = shutil.ignore_patterns("*.egg-info", "__pycache__")
            shutil.copytree(original, source / name, ignore=skip)
        else:
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(original, source / name)

    wheel = build_wheel(source, tmp_path / "dist")

    assert wheel.name.startswith("feedrouter-") and wheel.suffix == ".whl"
    assert not list(source.rglob("*.egg-info")), "the build wrote into the source tree"
    with zipfile.ZipFile(wheel) as built:  # the executors get the compiled kernels, not their sources
        kernel = [name for name in built.namelist() if name.startswith("feedrouter/kernel/_children")]
    assert len(kernel) == 1 and kernel[0].endswith(".so"), kernel
