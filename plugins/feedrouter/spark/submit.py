"""What a spark-submit of the routing application carries: application, arguments, conf, environment.

Plain data and pure functions; the Airflow adapter hands a :class:`Submission` to the apache-spark
provider's ``SparkSubmitHook``, a shell hands :meth:`Submission.command` to ``spark-submit``.

Spark conf, lowest to highest (a later layer overrides a key of an earlier one):

1. feedrouter's defaults (:func:`default_conf`): no speculation, reused Python workers, and with a
   packed environment the executors' ``./environment/bin/python``;
2. the spark connection's extras: its ``conf`` object and any ``spark.*`` key;
3. the feed's ``spark_conf`` in the catalog (``feedrouter.feeds.spark_conf``);
4. the operator's ``spark_conf`` argument.

Master, deploy mode, queue and namespace are the connection's, as the hook reads them.
Settings reach the driver as environment variables (:func:`driver_environment`), never as conf:
Spark shows its conf in the UI and event logs, and secrets (the catalog's password, S3 keys) must
not land there.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from feedrouter.errors import error
from feedrouter.hours import format_hour

#: The name the packed environment gets in each container's working folder (``--archives …#environment``).
ENVIRONMENT_ALIAS = "environment"
#: The connection extras the hook itself reads (everything else that starts with ``spark.`` is conf).
HOOK_EXTRAS = frozenset({"queue", "deploy-mode", "spark-binary", "namespace", "principal", "keytab"})
#: Environment variables of the driver that hold secrets.
SECRET_VARIABLES = frozenset(
    {"FEEDROUTER_DATABASE_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"}
)


def application_path() -> str:
    """The application file spark-submit runs (:mod:`feedrouter.spark.app`, as installed)."""
    return str(Path(__file__).with_name("app.py"))


def application_args(feed: str, hour: datetime) -> list[str]:
    """The application's arguments for one batch."""
    return ["--feed", feed, "--hour", format_hour(hour)]


def default_conf(archive: str | None, deploy_mode: str | None) -> dict[str, str]:
    """feedrouter's Spark conf of a submission (the lowest layer).

    With ``archive`` (a packed environment) the executors run its Python; in client mode the
    driver is the submitting machine's Python, in cluster mode the archive's too.
    """
    conf = {"spark.speculation": "false", "spark.python.worker.reuse": "true"}
    if archive is None:
        return conf
    conf["spark.pyspark.python"] = f"./{ENVIRONMENT_ALIAS}/bin/python"
    if deploy_mode != "cluster":
        conf["spark.pyspark.driver.python"] = sys.executable
    return conf


def connection_conf(extra: Mapping[str, object]) -> dict[str, str]:
    """The Spark conf a spark connection's extras hold: its ``conf`` object and ``spark.*`` keys.

    Raises:
        SettingsError: [FR700] ``conf`` is not an object of ``spark.*`` keys.
    """
    nested = extra.get("conf") or {}
    if not isinstance(nested, Mapping):
        raise error("FR700", f"the spark connection's extra 'conf' must be a JSON object, not {nested!r}")
    flat = {key: value for key, value in extra.items() if key.startswith("spark.") and key not in HOOK_EXTRAS}
    return checked_conf({**nested, **flat}, "the spark connection's extras")


def checked_conf(conf: Mapping[str, object], source: str) -> dict[str, str]:
    """``conf`` with string values; keys must start with ``spark.``.

    Raises:
        SettingsError: [FR700] a key is not a Spark setting or a value is not a scalar.
    """
    checked: dict[str, str] = {}
    for key, value in conf.items():
        if not isinstance(key, str) or not key.startswith("spark."):
            raise error("FR700", f"{source}: {key!r} is not a Spark setting (keys start with 'spark.')")
        if isinstance(value, (dict, list, tuple)) or value is None:
            raise error("FR700", f"{source}: {key} must be a string, number or boolean, not {value!r}")
        checked[key] = str(value).lower() if isinstance(value, bool) else str(value)
    return checked


def merged_conf(*layers: Mapping[str, str]) -> dict[str, str]:
    """The layers merged, a later one overriding an earlier one's keys."""
    merged: dict[str, str] = {}
    for layer in layers:
        merged |= layer
    return merged


def driver_environment(
    catalog_url: str | None,
    plans_uri: str,
    s3: Mapping[str, str] | None = None,
    credentials: Mapping[str, str] | None = None,
    state_uri: str | None = None,
) -> dict[str, str]:
    """The driver's environment: catalog, plans, join state (``FEEDROUTER_STATE_URI``: where the
    hour's witnesses go), S3 settings (``FEEDROUTER_S3_*``/``AWS_REGION``) and S3 credentials
    (``AWS_*``). None ``catalog_url`` or ``state_uri``: the driver's own configuration."""
    env = {"FEEDROUTER_PLANS_URI": plans_uri, **(s3 or {}), **(credentials or {})}
    if state_uri is not None:
        env["FEEDROUTER_STATE_URI"] = state_uri
    if catalog_url is not None:
        env["FEEDROUTER_DATABASE_URL"] = catalog_url
    return env


def env_becomes_conf(master: str, deploy_mode: str | None) -> bool:
    """True where SparkSubmitHook passes ``env_vars`` as Spark conf (YARN's ``appMasterEnv``,
    Kubernetes' ``driverEnv``) instead of the spark-submit process's environment."""
    return master.startswith(("yarn", "k8s")) or (master.startswith("spark://") and deploy_mode == "cluster")


@dataclass(frozen=True)
class Submission:
    """One spark-submit of the routing application.

    Attributes:
        application: the application file (:func:`application_path`).
        application_args: ``--feed``, ``--hour``.
        conf: the merged Spark conf (no secret in it).
        env_vars: the driver's environment (secrets included: never logged, see ``__repr__``).
        archives: ``env.tar.gz#environment`` of a packed environment, or None (the cluster's
            image has feedrouter installed).
        name: the Spark application's name.
    """

    application: str
    application_args: list[str]
    conf: dict[str, str]
    env_vars: dict[str, str] = field(default_factory=dict)
    archives: str | None = None
    name: str = "feedrouter"

    def __repr__(self) -> str:
        hidden = sorted(name for name in self.env_vars if name in SECRET_VARIABLES)
        shown = {name: value for name, value in self.env_vars.items() if name not in SECRET_VARIABLES}
        return (
            f"Submission({self.application!r}, {self.application_args!r}, conf={self.conf!r}, "
            f"env_vars={shown!r} (+ hidden {hidden}), archives={self.archives!r}, name={self.name!r})"
        )

    __str__ = __repr__

    def command(
        self, master: str, deploy_mode: str | None = None, spark_submit: str = "spark-submit"
    ) -> list[str]:
        """The spark-submit command line (run it with :attr:`env_vars` in its environment)."""
        command = [spark_submit, "--master", master, "--name", self.name]
        if deploy_mode:
            command += ["--deploy-mode", deploy_mode]
        if self.archives:
            command += ["--archives", self.archives]
        for key, value in sorted(self.conf.items()):
            command += ["--conf", f"{key}={value}"]
        return [*command, self.application, *self.application_args]


def archive_argument(archive: str) -> str:
    """``--archives``' value for a packed environment: ``path#environment``."""
    return archive if "#" in archive else f"{archive}#{ENVIRONMENT_ALIAS}"


def submission(
    feed: str,
    hour: datetime,
    *,
    conf_layers: tuple[Mapping[str, str], ...] = (),
    env_vars: Mapping[str, str] | None = None,
    archive: str | None = None,
    deploy_mode: str | None = None,
    application: str | None = None,
) -> Submission:
    """The submission of one batch: feedrouter's defaults under ``conf_layers`` (lowest first).

    ``application``: the application file (default :func:`application_path`, e.g. the copy
    ``feedrouter spark package`` writes next to the archive)."""
    archives = archive_argument(archive) if archive else None
    conf = merged_conf(default_conf(archives, deploy_mode), *conf_layers)
    return Submission(
        application=application or application_path(),
        application_args=application_args(feed, hour),
        conf=conf,
        env_vars=dict(env_vars or {}),
        archives=archives,
        name=f"feedrouter-{feed}-{format_hour(hour)}",
    )
