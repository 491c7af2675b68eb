"""The hook turns Airflow connections into what the library takes: a catalog URL, S3 clients and
settings, a Spark master URL — and never shows a secret on the way."""

from __future__ import annotations

import json

import pytest

from tests.integration.airflow_support import *  # noqa: F403 (fixtures; configures Airflow)

pytestmark = pytest.mark.integration


@pytest.mark.parametrize(
    ("conn_type", "host", "port", "master"),
    [
        ("spark", "spark-master", 7077, "spark://spark-master:7077"),
        ("spark", "spark://spark-master", 7077, "spark://spark-master:7077"),
        ("spark", "local[4]", None, "local[4]"),
        ("spark", "yarn", None, "yarn"),
        ("spark", "k8s://https://kube:6443", None, "k8s://https://kube:6443"),
        ("spark", None, None, "local[*]"),
    ],
)
def test_a_spark_connection_names_its_master(
    conn_type: str, host: str | None, port: int | None, master: str
) -> None:
    from feedrouter.airflow.hooks import master_url

    assert master_url(conn_type, host, port) == master


def test_a_postgres_connection_becomes_a_psycopg_url_with_its_libpq_extras(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from sqlalchemy import make_url

    from feedrouter.airflow.hooks import FeedrouterHook, postgres_url

    monkeypatch.setenv(
        "AIRFLOW_CONN_CATALOG_TEST", "postgresql://fr:p%40ss%2Fw@db.example:6432/catalog?sslmode=require"
    )
    url = make_url(postgres_url("catalog_test"))

    assert (url.drivername, url.username, url.password, url.host, url.port) == (
        "postgresql+psycopg",
        "fr",
        "p@ss/w",
        "db.example",
        6432,
    )
    assert (url.database, dict(url.query)) == ("catalog", {"sslmode": "require"})
    monkeypatch.setenv("FEEDROUTER_CATALOG_CONN_ID", "catalog_test")
    assert "p@ss" not in FeedrouterHook().describe() and "***" in FeedrouterHook().describe()


def test_a_connection_id_that_names_no_connection_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow.sdk.exceptions import AirflowNotFoundException

    from feedrouter.airflow.hooks import FeedrouterHook

    monkeypatch.setenv("FEEDROUTER_CATALOG_CONN_ID", "no_such_connection")
    with pytest.raises(AirflowNotFoundException):
        FeedrouterHook().catalog_engine()


def test_an_aws_connection_gives_a_path_style_client_and_hidden_credentials(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from feedrouter.airflow.hooks import s3_access, s3_client

    extra = {"endpoint_url": "http://minio:9000", "region_name": "eu-west-1"}
    conn = {"conn_type": "aws", "login": "AKIDEXAMPLE", "password": "s3cr3t-key", "extra": extra}
    monkeypatch.setenv("AIRFLOW_CONN_S3_TEST", json.dumps(conn))

    client = s3_client("s3_test")
    access = s3_access("s3_test")

    assert client.meta.endpoint_url == "http://minio:9000"
    assert client.meta.config.s3 == {"addressing_style": "path"}
    assert client.meta.config.retries["mode"] == "standard"
    assert (access.settings.endpoint_url, access.settings.region) == ("http://minio:9000", "eu-west-1")
    assert access.credentials == {"AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": "s3cr3t-key"}
    assert "s3cr3t" not in repr(access)


def test_the_hook_takes_connection_ids_as_arguments_over_the_settings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from feedrouter.airflow.hooks import FeedrouterHook

    monkeypatch.setenv("AIRFLOW_CONN_CAT_ARG", "postgresql://fr@arg.example:5432/catalog")
    monkeypatch.setenv("AIRFLOW_CONN_CAT_ENV", "postgresql://fr@env.example:5432/catalog")
    monkeypatch.setenv(
        "AIRFLOW_CONN_SPARK_ARG", json.dumps({"conn_type": "spark", "host": "spark://m", "port": 7077})
    )
    monkeypatch.setenv("FEEDROUTER_CATALOG_CONN_ID", "cat_env")
    monkeypatch.setenv("FEEDROUTER_S3_CONN_ID", "s3_env")
    monkeypatch.delenv("FEEDROUTER_SPARK_CONN_ID", raising=False)
    monkeypatch.delenv("FEEDROUTER_UI_CATALOG_CONN_ID", raising=False)

    defaults = FeedrouterHook()
    assert (defaults.catalog_conn_id, defaults.s3_conn_id, defaults.spark_conn_id) == (
        "cat_env",
        "s3_env",
        None,
    )
    assert defaults.ui_catalog_conn_id == "cat_env"
    assert "env.example" in defaults.catalog_url()

    given = FeedrouterHook(catalog_conn_id="cat_arg", spark_conn_id="spark_arg")
    assert (given.catalog_conn_id, given.s3_conn_id, given.spark_conn_id) == (
        "cat_arg",
        "s3_env",
        "spark_arg",
    )
    assert "arg.example" in given.catalog_url()
    assert given.spark_master() == "spark://m:7077"
    assert given.connections.catalog == "cat_arg"  # the older record spelling agrees


def test_the_airflow_config_section_reaches_the_hook(monkeypatch: pytest.MonkeyPatch) -> None:
    from feedrouter.airflow.hooks import FeedrouterHook

    for name in ("FEEDROUTER_CATALOG_CONN_ID", "FEEDROUTER_DATABASE_URL", "FEEDROUTER_SPARK_CONN_ID"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AIRFLOW__FEEDROUTER__DATABASE_URL", "postgresql://fr@cfg.example/catalog")
    monkeypatch.setenv("AIRFLOW__FEEDROUTER__SPARK_MASTER", "local[3]")
    hook = FeedrouterHook()
    assert hook.catalog_url() == "postgresql+psycopg://fr@cfg.example/catalog"
    assert hook.spark_master() == "local[3]"


def test_a_bad_setting_fails_the_hook_at_start_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from feedrouter.airflow.hooks import FeedrouterHook
    from feedrouter.errors import SettingsError

    monkeypatch.setenv("AIRFLOW__FEEDROUTER__S3_MAX_ATTEMPTS", "many")
    monkeypatch.delenv("FEEDROUTER_S3_MAX_ATTEMPTS", raising=False)
    with pytest.raises(SettingsError, match=r"\[feedrouter\] s3_max_attempts .*='many': input should be"):
        FeedrouterHook()
    monkeypatch.setenv("FEEDROUTER_S3_MAX_ATTEMPTS", "0")  # the environment wins, and is checked too
    with pytest.raises(SettingsError, match=r"FEEDROUTER_S3_MAX_ATTEMPTS='0'"):
        FeedrouterHook(s3_conn_id="any")


def test_a_spark_connect_connection_names_its_sc_url(monkeypatch: pytest.MonkeyPatch) -> None:
    from feedrouter.airflow.hooks import FeedrouterHook

    connection = {"conn_type": "spark_connect", "host": "connect.example", "port": 15002}
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_CONNECT_TEST", json.dumps(connection))
    assert FeedrouterHook(spark_conn_id="spark_connect_test").spark_master() == "sc://connect.example:15002/"
