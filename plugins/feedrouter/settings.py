"""Every setting feedrouter reads, in one typed, validated, frozen object.

:func:`load_settings` reads the ``FEEDROUTER_*`` environment (or a mapping given in its place)
through pydantic-settings, checks every value at once and returns a frozen :class:`Settings`. A
value that does not parse stops the process at start with a
:class:`~feedrouter.errors.SettingsError` (FR700) naming the variable and the problem, e.g.
``FEEDROUTER_S3_READ_TIMEOUT='soon': input should be a valid number``, instead of a ``ValueError``
deep inside a task. An empty variable counts as unset (the shell idiom ``FEEDROUTER_X=``).

The Airflow adapter (:mod:`feedrouter.airflow.settings`) lays the ``[feedrouter]`` section of the
Airflow configuration under this environment and passes ``origins``, so its errors name the config
option a bad value came from. docs/configuration.md lists every setting with its default.

Example:
    >>> settings = load_settings({"FEEDROUTER_HOME": "/srv/fr", "FEEDROUTER_INPUT_GRACE": "5"})
    >>> settings.home, settings.input_grace, settings.s3_read_timeout
    (PosixPath('/srv/fr'), datetime.timedelta(seconds=300), 30.0)
    >>> load_settings({"FEEDROUTER_S3_READ_TIMEOUT": "soon"})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    feedrouter.errors.SettingsError: [FR700] FEEDROUTER_S3_READ_TIMEOUT='soon': input should be a valid...
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from datetime import date, timedelta
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, EnvSettingsSource, PydanticBaseSettingsSource, SettingsConfigDict
from pydantic_settings.sources.utils import parse_env_vars

from feedrouter.errors import SettingsError, error

PREFIX = "FEEDROUTER_"
#: Settings whose values are never repeated in an error message (a URL may carry a password).
SECRET = frozenset({"database_url"})


class Settings(BaseSettings):
    """feedrouter's configuration; build it with :func:`load_settings`, never directly.

    Attributes:
        database_url: the catalog (``postgresql://user@host:5432/db``) or ``embedded``; None:
            unset (the catalog package refuses to guess, FR401).
        home: the state folder of the embedded mode (absolute); default
            ``$XDG_STATE_HOME/feedrouter``, else ``~/.local/state/feedrouter``.
        plans_uri: root of the plan artifacts; None: ``file://$FEEDROUTER_HOME/plans``.
        state_uri: root of the join state (stage 1's witnesses, read by the join stage); None:
            ``file://$FEEDROUTER_HOME/state``.
        migrations: the Alembic script folder; None: ``migrations/`` of the checkout.
        spark_master: a Spark master URL (``local[…]``, ``spark://…``, ``sc://…``); None: local.
        spark_python: the interpreter Spark's Python workers run; None: this one.
        catalog_conn_id: Airflow connection (postgres) of the catalog; None: ``database_url``.
        ui_catalog_conn_id: connection the UI page reads with; default ``catalog_conn_id``.
        s3_conn_id: Airflow connection (aws) for every ``s3://`` store; None: boto3's chain.
        spark_conn_id: Airflow connection (spark or spark_connect); None: ``spark_master``.
        s3_endpoint_url: an S3 API server (MinIO, moto); None: ``AWS_ENDPOINT_URL_S3``, …, AWS.
        s3_addressing_style: ``path``, ``virtual`` or ``auto``; None: path with an endpoint.
        s3_connect_timeout: seconds to wait for a connection to S3.
        s3_read_timeout: seconds to wait for each read from an S3 socket.
        s3_max_attempts: attempts per S3 call, the first included.
        s3_multipart_threshold: bytes from which an upload goes in parts (multipart upload).
        s3_multipart_chunk: bytes per part of a multipart upload (S3's minimum is 5 MiB).
        input_marker: object that marks an hour's input complete (``_SUCCESS``); None: none.
        input_grace: wait after an hour ends before routing it (``FEEDROUTER_INPUT_GRACE``, minutes).
        input_deadline: how long after an hour ends its marker may take (minutes in the environment).
        catalog_poll: pause between the catalog-change trigger's polls (seconds in the environment).
        route_start: the first hour the route DAG schedules (an ISO date).
        log_format: ``text`` or ``json`` (one object per record, ``extra=`` fields as keys).
        join_engine: where the join stage computes an hour's pairs, each engine giving the same:
            ``partitioned`` (the shared stage on Spark's executors, the subscriptions partitioned
            by value slice; the fastest at scale: see the README), ``spark`` (one Spark SQL query
            per template) or ``python`` (in the stage's process).
    """

    model_config = SettingsConfigDict(env_prefix=PREFIX, frozen=True, extra="forbid", env_ignore_empty=True)

    database_url: str | None = None
    home: Path
    plans_uri: str | None = None
    state_uri: str | None = None
    migrations: Path | None = None
    spark_master: str | None = None
    spark_python: str | None = None
    catalog_conn_id: str | None = None
    ui_catalog_conn_id: str | None = None
    s3_conn_id: str | None = None
    spark_conn_id: str | None = None
    s3_endpoint_url: str | None = None
    s3_addressing_style: Literal["path", "virtual", "auto"] | None = None
    s3_connect_timeout: float = Field(5.0, gt=0, allow_inf_nan=False)
    s3_read_timeout: float = Field(30.0, gt=0, allow_inf_nan=False)
    s3_max_attempts: int = Field(5, ge=1)
    s3_multipart_threshold: int = Field(64 * 1024 * 1024, ge=5 * 1024 * 1024)
    s3_multipart_chunk: int = Field(16 * 1024 * 1024, ge=5 * 1024 * 1024)
    input_marker: str | None = None
    input_grace: timedelta = timedelta(minutes=10)
    input_deadline: timedelta = timedelta(hours=6)
    catalog_poll: timedelta = timedelta(seconds=30)
    route_start: date = date(2026, 11, 1)
    log_format: Literal["text", "json"] = "text"
    join_engine: Literal["partitioned", "spark", "python"] = "partitioned"

    @classmethod
    def settings_customise_sources(
        cls, settings_cls: type[BaseSettings], init_settings: PydanticBaseSettingsSource, *_: Any, **__: Any
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # load_settings reads the environment (or the caller's mapping) itself: building a Settings
        # must never consult os.environ behind the caller's back.
        return (init_settings,)

    @field_validator("home", "migrations")
    @classmethod
    def _absolute(cls, path: Path | None) -> Path | None:
        # a relative state folder would depend on the directory a command happens to run in
        if path is not None and not path.expanduser().is_absolute():
            raise ValueError("is a relative path: set an absolute folder")
        return None if path is None else path.expanduser()

    @field_validator("input_grace", "input_deadline", mode="before")
    @classmethod
    def _minutes(cls, value: Any) -> Any:
        return _duration(value, timedelta(minutes=1))

    @field_validator("catalog_poll", mode="before")
    @classmethod
    def _seconds(cls, value: Any) -> Any:
        return _duration(value, timedelta(seconds=1))

    @field_validator("input_grace")
    @classmethod
    def _not_negative(cls, value: timedelta) -> timedelta:
        if value < timedelta(0):
            raise ValueError("must not be negative")
        return value

    @field_validator("input_deadline", "catalog_poll")
    @classmethod
    def _positive(cls, value: timedelta) -> timedelta:
        if value <= timedelta(0):
            raise ValueError("must be greater than 0")
        return value


def load_settings(
    env: Mapping[str, str] | None = None, *, origins: Mapping[str, str] | None = None, **overrides: Any
) -> Settings:
    """The validated settings from ``env`` (default ``os.environ``) and ``overrides``.

    Args:
        env: ``FEEDROUTER_*`` variables (others are ignored; ``XDG_STATE_HOME`` places the default
            home). An empty value counts as unset.
        origins: how to name a setting in errors, by field (``{"s3_read_timeout": "[feedrouter]
            s3_read_timeout"}``); default its environment variable.
        overrides: field values that win over ``env`` (a None value is ignored, so callers can
            pass optional arguments straight through).

    Raises:
        SettingsError: [FR700] every invalid value, each named with its variable and problem.
    """
    env = os.environ if env is None else env
    values = {**_read(env), **{name: value for name, value in overrides.items() if value is not None}}
    values.setdefault("home", default_home(env))
    if values.get("catalog_conn_id") and not values.get("ui_catalog_conn_id"):
        values["ui_catalog_conn_id"] = values["catalog_conn_id"]
    try:
        return Settings(**values)
    except ValidationError as exc:
        raise _settings_error(exc, values, origins or {}) from None


def env_name(field: str) -> str:
    """The environment variable of a setting: ``s3_read_timeout`` → ``FEEDROUTER_S3_READ_TIMEOUT``."""
    return PREFIX + field.upper()


def default_home(env: Mapping[str, str]) -> Path:
    """``$XDG_STATE_HOME/feedrouter`` when that is absolute, else ``~/.local/state/feedrouter``."""
    state = env.get("XDG_STATE_HOME")
    if state and Path(state).is_absolute():
        return Path(state) / "feedrouter"
    return Path.home() / ".local" / "state" / "feedrouter"


class _MappingSource(EnvSettingsSource):
    """pydantic-settings' environment source over a given mapping instead of ``os.environ``."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self._mapping = env
        super().__init__(Settings)

    def _load_env_vars(self) -> Mapping[str, str | None]:
        return parse_env_vars(
            self._mapping, self.case_sensitive, self.env_ignore_empty, self.env_parse_none_str
        )


def _read(env: Mapping[str, str]) -> dict[str, Any]:
    return dict(_MappingSource(env)())


def _duration(value: Any, unit: timedelta) -> Any:
    """A bare number (the environment's form) counts in ``unit``; a timedelta passes through."""
    if isinstance(value, str) and value.strip():
        try:
            return float(value) * unit
        except ValueError:
            raise ValueError(f"input should be a number of {_unit_name(unit)}") from None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value * unit
    return value


def _unit_name(unit: timedelta) -> str:
    return "minutes" if unit == timedelta(minutes=1) else "seconds"


def _settings_error(
    exc: ValidationError, values: Mapping[str, Any], origins: Mapping[str, str]
) -> SettingsError:
    problems = []
    for detail in exc.errors():
        field = str(detail["loc"][0]) if detail["loc"] else "?"
        name = origins.get(field, env_name(field))
        if detail["type"] == "extra_forbidden":
            problems.append(f"{field}: not a feedrouter setting")
            continue
        shown = "" if field in SECRET or field not in values else f"={values[field]!r}"
        message = str(detail["msg"]).removeprefix("Value error, ")
        problems.append(f"{name}{shown}: {message[:1].lower()}{message[1:]}")
    result = error("FR700", "; ".join(problems))
    assert isinstance(result, SettingsError)
    return result
