"""The hook that hands the library what it needs from Airflow connections.

Credentials stay in Airflow connections (or a secrets backend behind them): the catalog's URL is
built from a postgres connection by the postgres provider's hook, the S3 client from an aws
connection by the amazon provider's hook, the Spark master from a spark connection. They are passed
to the library as objects (an engine, a boto3 client, a URL), never written to logs: only
:meth:`FeedrouterHook.describe` output, with passwords masked, is logged.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseHook

from feedrouter.airflow.settings import CATALOG_CONN_ENV, Connections, airflow_environment, airflow_settings

if TYPE_CHECKING:
    from sqlalchemy import Engine

    from feedrouter.settings import Settings
    from feedrouter.storage import ObjectStore
    from feedrouter.storage.s3 import S3Settings


def s3_client_limits(settings: Settings | None = None) -> dict[str, Any]:
    """Retries and timeouts of S3 calls when the aws connection does not set ``config_kwargs``: the
    library's own (``s3_max_attempts``, ``s3_connect_timeout``, ``s3_read_timeout``), so a hung
    endpoint costs the same bounded time in every component."""
    settings = settings or airflow_settings()
    return {
        "retries": {"mode": "standard", "total_max_attempts": settings.s3_max_attempts},
        "connect_timeout": settings.s3_connect_timeout,
        "read_timeout": settings.s3_read_timeout,
    }


def with_env_limits(s3: S3Settings, settings: Settings | None = None) -> S3Settings:
    """A connection's endpoint and region with the settings' S3 timeouts, attempts and multipart
    sizes."""
    settings = settings or airflow_settings()
    return replace(
        s3,
        connect_timeout=settings.s3_connect_timeout,
        read_timeout=settings.s3_read_timeout,
        max_attempts=settings.s3_max_attempts,
        multipart_threshold=settings.s3_multipart_threshold,
        multipart_chunk=settings.s3_multipart_chunk,
    )


class FeedrouterHook(BaseHook):
    """The catalog engine, object stores and Spark master of one task, from Airflow connections.

    The settings (:func:`~feedrouter.airflow.settings.airflow_settings`: ``FEEDROUTER_*``
    variables over the ``[feedrouter]`` Airflow config section) are read and validated here, when
    the hook is made, so a bad value fails the task at its start naming the setting (FR700).

    Args:
        connections: the older spelling of the four ids below, as one record; prefer the keywords.
        catalog_conn_id: the catalog's postgres connection. Default: the ``catalog_conn_id``
            setting (``FEEDROUTER_CATALOG_CONN_ID``); unset: the library's
            ``FEEDROUTER_DATABASE_URL`` (``embedded`` included); neither: FR401.
        s3_conn_id: the aws connection of every ``s3://`` store. Default: the ``s3_conn_id``
            setting; unset: boto3's standard chain and the ``FEEDROUTER_S3_*`` settings.
        spark_conn_id: the spark (or spark_connect) connection. Default: the ``spark_conn_id``
            setting; unset: ``FEEDROUTER_SPARK_MASTER``, else a local session.
        ui_catalog_conn_id: the connection the UI page reads the catalog with. Default: the
            ``ui_catalog_conn_id`` setting, else the catalog connection.

    Raises:
        SettingsError: [FR700] a setting with an invalid value, named.
    """

    def __init__(
        self,
        connections: Connections | None = None,
        *,
        catalog_conn_id: str | None = None,
        s3_conn_id: str | None = None,
        spark_conn_id: str | None = None,
        ui_catalog_conn_id: str | None = None,
    ) -> None:
        super().__init__()
        given = connections or Connections()
        self.settings = airflow_settings(
            catalog_conn_id=catalog_conn_id or given.catalog,
            s3_conn_id=s3_conn_id or given.s3,
            spark_conn_id=spark_conn_id or given.spark,
            ui_catalog_conn_id=ui_catalog_conn_id or given.ui_catalog,
        )
        self.catalog_conn_id = self.settings.catalog_conn_id
        self.s3_conn_id = self.settings.s3_conn_id
        self.spark_conn_id = self.settings.spark_conn_id
        self.ui_catalog_conn_id = self.settings.ui_catalog_conn_id

    @property
    def connections(self) -> Connections:
        """The four connection ids as one record (the older spelling)."""
        return Connections.from_settings(self.settings)

    # -- catalog ----------------------------------------------------------------------------------

    def catalog_url(self, conn_id: str | None = None) -> str:
        """The catalog's SQLAlchemy URL (with its password: pass it on, never log it).

        Raises:
            CatalogError: [FR401] neither a connection id nor ``FEEDROUTER_DATABASE_URL`` is set
                (``FEEDROUTER_DATABASE_URL=embedded`` selects the embedded catalog explicitly).
        """
        conn_id = conn_id or self.catalog_conn_id
        if conn_id is None:
            return _environment_catalog_url()
        return postgres_url(conn_id)

    def catalog_engine(self, conn_id: str | None = None) -> Engine:
        """An engine on the catalog (the embedded catalog is started and migrated on first use)."""
        from feedrouter.catalog import open_catalog

        return open_catalog(self.catalog_url(conn_id))

    # -- object stores ----------------------------------------------------------------------------

    @cached_property
    def s3_client(self) -> Any | None:
        """The boto3 S3 client of the aws connection, or None to let the library build its own."""
        if self.s3_conn_id is None:
            return None
        return s3_client(self.s3_conn_id, self.settings)

    @cached_property
    def s3_access(self) -> S3Access | None:
        """Endpoint, region and credentials of the aws connection for the Spark job (whose driver
        and tasks build their own clients), or None to let them use the environment."""
        if self.s3_conn_id is None:
            return None
        return s3_access(self.s3_conn_id, self.settings)

    def store(self, uri: str) -> ObjectStore:
        """The object store rooted at ``uri``; ``s3://`` stores use the aws connection's client."""
        from feedrouter.storage import open_store

        if uri.startswith("s3://"):
            return open_store(uri, client=self.s3_client, settings=self._s3_settings())
        return open_store(uri)

    def _s3_settings(self) -> S3Settings:
        """The library's S3 settings from this hook's settings (endpoint, timeouts, multipart)."""
        from feedrouter.storage.s3 import S3Settings

        return S3Settings.from_settings(self.settings, airflow_environment())

    def plans_store(self) -> ObjectStore:
        """Where plan artifacts live (``FEEDROUTER_PLANS_URI``, default ``$FEEDROUTER_HOME/plans``)."""
        from feedrouter.catalog.settings import plans_uri

        return self.store(plans_uri(airflow_environment()))

    # -- Spark ------------------------------------------------------------------------------------

    def spark_master(self) -> str | None:
        """The master URL of the spark connection, else ``FEEDROUTER_SPARK_MASTER``, else None
        (the library's local session). A ``spark_connect`` connection gives its ``sc://`` URL as
        the apache-spark provider builds it, which may carry the connection's token: pass it on,
        never log it."""
        if self.spark_conn_id is None:
            return self.settings.spark_master
        conn = self.get_connection(self.spark_conn_id)
        if conn.conn_type == "spark_connect":
            from airflow.providers.apache.spark.hooks.spark_connect import SparkConnectHook

            return str(SparkConnectHook(conn_id=self.spark_conn_id).get_connection_url())
        return master_url(conn.conn_type, conn.host, conn.port)

    def describe(self) -> str:
        """Where the catalog and S3 credentials come from, safe to log (password masked)."""
        from sqlalchemy import make_url

        catalog = make_url(self.catalog_url()).render_as_string(hide_password=True)
        s3 = f"connection {self.s3_conn_id}" if self.s3_conn_id else "the environment"
        return f"catalog {catalog}; S3 credentials from {s3}"


def _environment_catalog_url() -> str:
    """The library's catalog URL, its FR401 naming the Airflow setting too."""
    from feedrouter.catalog.settings import DATABASE_URL_ENV, EMBEDDED, database_url
    from feedrouter.errors import CatalogError, error

    try:
        return database_url(airflow_environment())
    except CatalogError as exc:
        if exc.code != "FR401":
            raise
        raise error(
            "FR401",
            f"no catalog configured: set {CATALOG_CONN_ENV} to the Airflow connection of the catalog, "
            f"or {DATABASE_URL_ENV} to its URL ('{EMBEDDED}' for the embedded catalog)",
        ) from None


def postgres_url(conn_id: str) -> str:
    """The SQLAlchemy URL (psycopg 3) of a postgres connection, with the connection's libpq extras
    (``sslmode``, ``options``, …) as query parameters, as the postgres provider passes them."""
    from airflow.providers.postgres.hooks.postgres import PostgresHook

    hook = PostgresHook(postgres_conn_id=conn_id, sqlalchemy_scheme="postgresql+psycopg")
    url = hook.sqlalchemy_url
    extras = {
        key: str(value)
        for key, value in hook.connection.extra_dejson.items()
        if key not in hook.ignored_extra_options and isinstance(value, (str, int, float))
    }
    return url.update_query_dict(extras).render_as_string(hide_password=False)


def s3_client(conn_id: str, settings: Settings | None = None) -> Any:
    """A boto3 S3 client from an aws connection: its credentials, region and ``endpoint_url``;
    path-style addressing with a custom endpoint (MinIO), the library's retry defaults unless the
    connection sets ``config_kwargs``."""
    from airflow.providers.amazon.aws.hooks.base_aws import AwsBaseHook
    from botocore.config import Config

    probe = AwsBaseHook(aws_conn_id=conn_id, client_type="s3")
    if probe.conn_config.botocore_config is not None:
        return probe.get_conn()
    endpoint = probe.conn_config.get_service_endpoint_url("s3")
    style = "path" if endpoint else "auto"
    config = Config(**s3_client_limits(settings), s3={"addressing_style": style})
    return AwsBaseHook(aws_conn_id=conn_id, client_type="s3", config=config).get_conn()


@dataclass(frozen=True, repr=False)
class S3Access:
    """How the Spark job reaches S3 through an aws connection.

    Attributes:
        settings: endpoint, region and addressing (no secret: shipped to the tasks as they are).
        credentials: ``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``/``AWS_SESSION_TOKEN`` as
            environment variables for boto3's standard chain (secret: never log them).
    """

    settings: S3Settings
    credentials: dict[str, str]

    def __repr__(self) -> str:
        return f"S3Access({self.settings!r}, credentials=<{len(self.credentials)} hidden>)"


def s3_access(conn_id: str, settings: Settings | None = None) -> S3Access:
    """The S3 settings and (frozen, possibly temporary) credentials of an aws connection."""
    from airflow.providers.amazon.aws.hooks.base_aws import AwsBaseHook

    from feedrouter.storage.s3 import S3Settings

    hook = AwsBaseHook(aws_conn_id=conn_id, client_type="s3")
    endpoint = hook.conn_config.get_service_endpoint_url("s3")
    s3 = S3Settings(
        endpoint_url=endpoint,
        region=hook.conn_config.region_name or "us-east-1",
        addressing_style="path" if endpoint else "auto",
    )
    s3 = with_env_limits(s3, settings)
    frozen = hook.get_session().get_credentials()
    if frozen is None:  # no key in the connection and none in the chain: an instance role later
        return S3Access(s3, {})
    frozen = frozen.get_frozen_credentials()
    credentials = {"AWS_ACCESS_KEY_ID": frozen.access_key, "AWS_SECRET_ACCESS_KEY": frozen.secret_key}
    if frozen.token:
        credentials["AWS_SESSION_TOKEN"] = frozen.token
    return S3Access(s3, credentials)


def master_url(conn_type: str | None, host: str | None, port: int | None) -> str:
    """A Spark master URL from a spark connection, read as the apache-spark provider reads it:
    a host holding a whole URL (``spark://h:7077``, ``local[4]``, ``k8s://https://h``) is used as
    is, otherwise ``spark://host:port``."""
    host = host or ""
    if conn_type in (None, "spark") and ("://" in host or host.startswith("local") or not port):
        master = host or "local[*]"
    else:
        master = f"{conn_type}://{host}"
    return f"{master}:{port}" if port and not master.startswith("local") else master
