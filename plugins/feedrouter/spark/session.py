"""The Spark session of a batch: a local one by default, the cluster a master URL names, or a
Spark Connect server (``sc://host:port``).

Executors must run the project's Python (the one with feedrouter, lxml and boto3 installed), so
classic sessions set ``spark.pyspark.python`` to this interpreter unless ``FEEDROUTER_SPARK_PYTHON``
names another path (a cluster whose workers install the project elsewhere). A Connect server's
Python workers are the server's business (its ``PYSPARK_PYTHON`` / ``spark.pyspark.python``); the
client only sends runtime SQL conf. The pyspark Python files must also belong to the Spark JVM they
drive: the Airflow apache-spark provider pulls in ``pyspark-client``, whose files overwrite
pyspark's; :func:`check_versions` refuses such a mix with the command that repairs it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, cast

from feedrouter.spark.errors import SparkVersionError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DEFAULT_MASTER = "local[2]"
PYTHON_ENV = "FEEDROUTER_SPARK_PYTHON"
MASTER_ENV = "FEEDROUTER_SPARK_MASTER"


def is_local(master: str | None) -> bool:
    """True for the embedded default and ``local[…]`` masters."""
    return master is None or master.startswith("local")


def is_connect(master: str | None) -> bool:
    """True for a Spark Connect endpoint (``sc://host:port``)."""
    return master is not None and master.startswith("sc://")


def executor_python() -> str:
    """The interpreter executors run: ``FEEDROUTER_SPARK_PYTHON``, else this one."""
    return os.environ.get(PYTHON_ENV) or sys.executable


def session_conf(master: str | None, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The Spark settings of a batch session (``extra`` overrides them)."""
    conf = {
        "spark.pyspark.python": executor_python(),
        "spark.pyspark.driver.python": sys.executable,
        # The plan is cached in the Python worker process: reused workers load it once.
        "spark.python.worker.reuse": "true",
        # Two attempts of one delivery task would race on the same folder: never run duplicates.
        "spark.speculation": "false",
        # The CLI draws its own progress bar.
        "spark.ui.showConsoleProgress": "false",
    }
    if is_local(master):
        # One machine, no services: stay on loopback whatever the host name resolves to.
        conf |= {
            "spark.driver.host": "127.0.0.1",
            "spark.driver.bindAddress": "127.0.0.1",
            "spark.ui.enabled": "false",
        }
    return conf | dict(extra or {})


def spark_session(
    master: str | None = None, *, app_name: str = "feedrouter", conf: Mapping[str, str] | None = None
) -> SparkSession:
    """A Spark session on ``master``: ``local[…]`` (default ``local[2]``), ``spark://…`` (or any
    classic master URL), or ``sc://…`` (Spark Connect; ``conf`` then carries runtime SQL conf only),
    with pyspark checked against the server's version.

    A classic session already running in this process is returned as it is (Spark allows one per
    process); a Connect session is always a new one, on the URL given.
    """
    from pyspark.sql import SparkSession

    if master is not None and is_connect(master):
        spark = connect_session(master, conf)
    else:
        os.environ["PYSPARK_PYTHON"] = executor_python()
        builder = SparkSession.builder.master(master or DEFAULT_MASTER).appName(app_name)
        for key, value in session_conf(master, conf).items():
            builder = builder.config(key, value)
        spark = builder.getOrCreate()
        spark.sparkContext.setLogLevel("WARN")
    check_versions(spark)
    return spark


def connect_session(url: str, conf: Mapping[str, str] | None = None) -> SparkSession:
    """A new Spark Connect session on ``url``, made with the Connect builder itself: pyspark's
    generic builder would also switch the whole process to Connect mode (``SPARK_CONNECT_MODE_
    ENABLED``), and classic sessions made later in the process would then fail."""
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    builder = ConnectSession.builder.remote(url)
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    return cast("SparkSession", builder.create())


@contextmanager
def batch_session(spark: SparkSession | None, master: str | None) -> Iterator[SparkSession]:
    """``spark`` when given; otherwise the running session, or a new one stopped on exit."""
    if spark is not None:
        yield spark
        return
    from pyspark.sql import SparkSession

    active = None if is_connect(master) else SparkSession.getActiveSession()
    if active is not None:
        yield active
        return
    session = spark_session(master)
    try:
        yield session
    finally:
        session.stop()


def executor_cores(spark: SparkSession) -> int:
    """The cores of a classic session's executors (0: unknown, a Spark Connect client)."""
    try:
        return int(spark.sparkContext.defaultParallelism)
    except Exception:  # Spark Connect: no SparkContext on the client
        return 0


def check_no_speculation(spark: SparkSession) -> None:
    """Refuse a session that runs speculative task copies: two attempts of one delivery task
    would write the same folder at the same time (the sessions made here turn it off). Read
    through ``spark.conf``, which classic and Connect sessions both answer."""
    if str(spark.conf.get("spark.speculation", "false")).lower() == "true":
        raise SparkVersionError(
            "spark.speculation is on: exactly-once delivery needs it off for route-batch "
            "(two attempts of one task would write the same delivery folder at once)"
        )


def check_versions(spark: SparkSession) -> None:
    """Refuse a pyspark whose Python files are not those of the Spark JVM it started.

    A Spark Connect session drives no local JVM: its client and server may differ by design
    (the protocol is versioned), so it is not checked here.
    """
    import pyspark

    from feedrouter.spark.progress import is_connect as is_connect_session

    if is_connect_session(spark):
        return
    if pyspark.__version__ != spark.version:
        raise SparkVersionError(
            f"pyspark's Python files are version {pyspark.__version__} but its Spark JVM is "
            f"{spark.version} (pyspark-client, pulled in by the Airflow apache-spark provider, "
            f"overwrites pyspark's files): run `pip install --force-reinstall --no-deps "
            f"pyspark=={spark.version}`"
        )
