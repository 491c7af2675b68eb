"""feedrouter's settings in Airflow: the ``[feedrouter]`` config section under the environment.

Every setting of :mod:`feedrouter.settings` can be given three ways; the first one set wins:

1. the environment variable ``FEEDROUTER_<NAME>`` (what the CLI and Spark read too);
2. the Airflow option ``[feedrouter] <name>``: in ``airflow.cfg``, as ``AIRFLOW__FEEDROUTER__<NAME>``
   (or ``…_CMD``/``…_SECRET``, resolved by Airflow), or from Airflow's secrets backend;
3. the default of :class:`~feedrouter.settings.Settings`.

The values are read and validated when a task, hook, trigger or UI request starts (never when a DAG
file is parsed), all at once: a bad value is a :class:`~feedrouter.errors.SettingsError` (FR700)
naming it as it was given (``FEEDROUTER_INPUT_GRACE='soon': …`` or ``[feedrouter] input_grace
(airflow.cfg or AIRFLOW__FEEDROUTER__INPUT_GRACE)='soon': …``); so is an option of the section
that is no feedrouter setting (a typo). The settings the adapter uses most:

================================ =================================================================
``FEEDROUTER_CATALOG_CONN_ID``    Airflow connection (type postgres) of the catalog; unset: the
                                  library's own ``FEEDROUTER_DATABASE_URL`` (``embedded`` for the
                                  embedded catalog); neither set: an error (FR401)
``FEEDROUTER_UI_CATALOG_CONN_ID`` connection the UI page reads the catalog with (a read-only role);
                                  default: ``FEEDROUTER_CATALOG_CONN_ID``
``FEEDROUTER_S3_CONN_ID``         Airflow connection (type aws) for every ``s3://`` store; unset:
                                  boto3's standard chain and ``FEEDROUTER_S3_*`` variables
``FEEDROUTER_SPARK_CONN_ID``      Airflow connection (type spark or spark_connect); unset:
                                  ``FEEDROUTER_SPARK_MASTER``, else a local Spark session
``FEEDROUTER_INPUT_MARKER``       object that marks an hour's input complete (e.g. ``_SUCCESS``);
                                  unset: an hour is complete once its grace period has passed
``FEEDROUTER_INPUT_GRACE``        minutes after an hour ends before it is routed (default 10)
``FEEDROUTER_INPUT_DEADLINE``     minutes after an hour ends by which its marker must exist (360)
``FEEDROUTER_CATALOG_POLL``       seconds between the catalog-change trigger's polls (default 30)
``FEEDROUTER_STATE_URI``          root of the join state (the witnesses stage 1 writes and the join
                                  stage reads; default ``file://$FEEDROUTER_HOME/state``): give
                                  every task and Spark driver the same shared store (``s3://…``)
``FEEDROUTER_ROUTE_START``        the first hour routed (an ISO date): catchup starts there, and a
                                  join's window finds no witnesses to wait for before it
================================ =================================================================

Operators and hooks take the connection ids as arguments too (``catalog_conn_id=…``); an argument
wins over both. A set connection id that names no connection is an error, never a silent fallback.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from feedrouter.errors import error
from feedrouter.settings import Settings, env_name, load_settings

if TYPE_CHECKING:
    from configparser import ConfigParser

SECTION = "feedrouter"
AIRFLOW_PREFIX = f"AIRFLOW__{SECTION.upper()}__"
CATALOG_CONN_ENV = env_name("catalog_conn_id")
UI_CATALOG_CONN_ENV = env_name("ui_catalog_conn_id")
S3_CONN_ENV = env_name("s3_conn_id")
SPARK_CONN_ENV = env_name("spark_conn_id")
SPARK_MASTER_ENV = env_name("spark_master")
INPUT_MARKER_ENV = env_name("input_marker")
INPUT_GRACE_ENV = env_name("input_grace")
INPUT_DEADLINE_ENV = env_name("input_deadline")
CATALOG_POLL_ENV = env_name("catalog_poll")
STATE_URI_ENV = env_name("state_uri")


def airflow_settings(
    env: Mapping[str, str] | None = None, config: ConfigParser | None = None, **overrides: Any
) -> Settings:
    """The validated settings of this Airflow component (see the module's order).

    Args:
        env: the environment; default ``os.environ``.
        config: Airflow's configuration; default ``airflow.configuration.conf``.
        overrides: values that win over both (a None value is ignored), e.g. an operator's
            ``catalog_conn_id``.

    Raises:
        SettingsError: [FR700] an invalid value, or an option of ``[feedrouter]`` that is no setting.
    """
    merged, origins = _overlay(env, config)
    return load_settings(merged, origins=origins, **overrides)


def airflow_environment(
    env: Mapping[str, str] | None = None, config: ConfigParser | None = None
) -> dict[str, str]:
    """The environment with the ``[feedrouter]`` options filled in as ``FEEDROUTER_*`` variables,
    for library functions that take an ``env`` mapping (the catalog's URL, S3 settings); validated
    first, so a bad value fails here with its name.

    Raises:
        SettingsError: [FR700] as :func:`airflow_settings`.
    """
    merged, origins = _overlay(env, config)
    load_settings(merged, origins=origins)
    return merged


def _overlay(
    env: Mapping[str, str] | None, config: ConfigParser | None
) -> tuple[dict[str, str], dict[str, str]]:
    """The section's options as ``FEEDROUTER_*`` variables under ``env``, and their origins."""
    env = os.environ if env is None else env
    section = config_section(env, config)
    merged = {**{env_name(key): value for key, value in section.items()}, **env}
    origins = {key: config_origin(key) for key in section if not env.get(env_name(key))}
    return merged, origins


def config_section(env: Mapping[str, str], config: ConfigParser | None = None) -> dict[str, str]:
    """The options of ``[feedrouter]`` (airflow.cfg, ``AIRFLOW__FEEDROUTER__*``, secrets), as
    strings (Airflow's ``getsection`` would turn ``10`` into an int and skip env-only sections).

    Raises:
        SettingsError: [FR700] an option that is no feedrouter setting.
    """
    config = config if config is not None else _airflow_config()
    keys = set(config.options(SECTION)) if config.has_section(SECTION) else set()
    keys |= {_option_of(name) for name in env if name.startswith(AIRFLOW_PREFIX)}
    unknown = sorted(keys - set(Settings.model_fields))
    if unknown:
        raise error(
            "FR700",
            f"[{SECTION}] {', '.join(unknown)}: not a feedrouter setting (known: "
            f"{', '.join(sorted(Settings.model_fields))})",
        )
    # a plain AIRFLOW__FEEDROUTER__X of ``env`` is read from it (so a given env is the whole
    # environment); Airflow resolves the rest: airflow.cfg, ``_CMD``, ``_SECRET``, secrets backends
    values = {
        key: env.get(AIRFLOW_PREFIX + key.upper()) or config.get(SECTION, key, fallback=None) for key in keys
    }
    return {key: str(value) for key, value in values.items() if value not in (None, "")}


def _airflow_config() -> ConfigParser:
    from airflow.configuration import conf  # imported when a component starts, not at DAG parsing

    return conf


def config_origin(key: str) -> str:
    """How an error names an option of the section: ``[feedrouter] s3_read_timeout (…)``."""
    return f"[{SECTION}] {key} (airflow.cfg or {AIRFLOW_PREFIX}{key.upper()})"


def _option_of(variable: str) -> str:
    option = variable[len(AIRFLOW_PREFIX) :]
    for suffix in ("_CMD", "_SECRET"):
        option = option.removesuffix(suffix)
    return option.lower()


@dataclass(frozen=True)
class Connections:
    """Airflow connection ids to use; None means "use the library's environment defaults"."""

    catalog: str | None = None
    ui_catalog: str | None = None
    s3: str | None = None
    spark: str | None = None

    @classmethod
    def from_settings(cls, settings: Settings) -> Connections:
        return cls(
            settings.catalog_conn_id, settings.ui_catalog_conn_id, settings.s3_conn_id, settings.spark_conn_id
        )

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Connections:
        return cls.from_settings(_settings(env))


@dataclass(frozen=True)
class InputPolicy:
    """When an hour's input counts as complete, and how long to wait for it at most."""

    marker: str | None = None
    grace: timedelta = timedelta(minutes=10)
    deadline: timedelta = timedelta(hours=6)

    @classmethod
    def from_settings(cls, settings: Settings) -> InputPolicy:
        return cls(settings.input_marker, settings.input_grace, settings.input_deadline)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> InputPolicy:
        return cls.from_settings(_settings(env))


def state_uri(env: Mapping[str, str] | None = None, config: ConfigParser | None = None) -> str:
    """The root URI of the join state as this component sees it (``FEEDROUTER_STATE_URI`` or
    ``[feedrouter] state_uri``, else ``file://$FEEDROUTER_HOME/state``): what the route task's
    in-task batches write witnesses to, what a submitted driver is told, what the join stage reads.

    Raises:
        SettingsError: [FR700] as :func:`airflow_settings`.
    """
    from feedrouter.catalog.settings import state_uri as library_state_uri

    return library_state_uri(airflow_environment(env, config))


def join_engine(env: Mapping[str, str] | None = None) -> str:
    """The join stage's engine (``FEEDROUTER_JOIN_ENGINE``: ``partitioned``, ``spark`` or
    ``python``)."""
    return _settings(env).join_engine


def spark_master_env(env: Mapping[str, str] | None = None) -> str | None:
    """The Spark master named by the environment, or None for the library's local default."""
    return _settings(env).spark_master


def catalog_poll_seconds(env: Mapping[str, str] | None = None) -> float:
    """Seconds between the catalog-change trigger's polls."""
    return _settings(env).catalog_poll.total_seconds()


def _settings(env: Mapping[str, str] | None) -> Settings:
    """The Airflow component's settings, or those of exactly ``env`` when one is given (tests)."""
    return airflow_settings() if env is None else load_settings(env)
