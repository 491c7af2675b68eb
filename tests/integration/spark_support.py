"""Shared pieces of the Spark batch tests: catalog rows, generated inputs, expected deliveries,
Spark sessions (local and a standalone cluster on loopback), snapshots of stores and the ledger.

The expected deliveries are built the way the local loop builds them (:mod:`feedrouter.delivery`):
same splitter, same routing, same part writer, so a Spark batch must match them byte for byte.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Connection, Engine, text

from feedrouter.catalog import CompiledPlan, build_plan
from feedrouter.catalog.builder import load_latest_plan
from feedrouter.delivery import (
    MANIFEST,
    SUCCESS,
    HourRun,
    Manifest,
    PartHeader,
    PartInfo,
    PlanRef,
    delivery_dir,
    route_locally,
    write_parts,
)
from feedrouter.join.plan import JoinPlan
from feedrouter.join.relations import HourWitnesses
from feedrouter.join.stage import JoinStage, Pair
from feedrouter.spark.joinsql import WitnessSource
from feedrouter.spark.stores import StoreOpener
from feedrouter.spark.tasks import splitter_for
from feedrouter.spark.witnesses import write_hour
from feedrouter.storage import ObjectStore, open_store
from feedrouter.workload import dtds, generate_documents, generate_subscriptions
from feedrouter.workload.joins import generate_feed_hours, generate_join_subscriptions
from tests.integration.rows import add_dtd, add_subscription

HOUR = datetime(2026, 11, 22, 16, tzinfo=timezone.utc)
HOUR_TEXT = "2026-11-22T16"
HOUR_PATH = "dt=2026-11-22/hour=16"
SUBSCRIBERS = ("alice", "bob", "carol")
#: Small parts, so that subscriptions with many results get several.
PART_BYTES = 6000
#: Credentials of moto's server, for Spark executors (the driver gets them from ``s3_bucket``).
AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "feedrouter-test",
    "AWS_SECRET_ACCESS_KEY": "feedrouter-test-secret",
    "AWS_REGION": "us-east-1",
}


# -- catalog rows, written as plain SQL the way users write them -----------------------------------


def add_feed(
    conn: Connection,
    name: str,
    input_prefix: str,
    *,
    dtd: str | None = None,
    record_element: str | None = None,
    quarantine_prefix: str | None = None,
) -> int:
    return conn.scalar(
        text(
            "INSERT INTO feedrouter.feeds (name, input_prefix, record_element, quarantine_prefix, dtd_id)"
            " VALUES (:n, :p, :r, :q, (SELECT id FROM feedrouter.dtds WHERE name = :d)) RETURNING id"
        ),
        {"n": name, "p": input_prefix, "r": record_element, "q": quarantine_prefix, "d": dtd},
    )


def add_subscriber(conn: Connection, name: str, output_prefix: str) -> int:
    return conn.scalar(
        text("INSERT INTO feedrouter.subscribers (name, output_prefix) VALUES (:n, :p) RETURNING id"),
        {"n": name, "p": output_prefix},
    )


@dataclass(frozen=True)
class NewsFeed:
    """A news feed in the catalog: where its input arrives and where its subscribers receive."""

    name: str
    input_prefix: str
    output_base: str

    @property
    def hour_prefix(self) -> str:
        return f"{self.input_prefix}/{HOUR_PATH}"


def news_catalog(
    engine: Engine,
    feed: NewsFeed,
    *,
    record_element: str | None = "nitf",
    subscriptions: int = 24,
    seed: int = 11,
) -> None:
    """The NEWS DTD, the feed, three subscribers and generated subscriptions, plus one that does
    not compile (not served) and one that can never match (served, never delivered)."""
    graph = dtds.load("news")
    texts = generate_subscriptions(graph, subscriptions, seed=seed, form="mixed")
    with engine.begin() as conn:
        add_dtd(conn, "news", graph.text, graph.root)
        add_feed(conn, feed.name, feed.input_prefix, dtd="news", record_element=record_element)
        for name in SUBSCRIBERS:
            add_subscriber(conn, name, f"{feed.output_base}/{name}")
        for i, query in enumerate(texts):
            add_subscription(conn, SUBSCRIBERS[i % 3], feed.name, f"s{i:02d}", query)
        add_subscription(conn, "alice", feed.name, "broken", "//story[@a = 1 || @b = 2]")
        add_subscription(conn, "bob", feed.name, "nothing", "//no-such-element")


def build(engine: Engine, plans: ObjectStore, feed: str = "news") -> tuple[PlanRef, CompiledPlan]:
    """Build the feed's plan; its reference and the compiled plan, as a batch will load them."""
    build_plan(engine, feed, plans)
    result, plan = load_latest_plan(engine, feed, plans)
    return PlanRef(result.id, result.digest, result.catalog_version), plan


# -- inputs ------------------------------------------------------------------------------------------


def news_inputs(count: int = 30, *, seed: int = 5, records: int = 5) -> dict[str, bytes]:
    """Generated NEWS messages as stored objects: plain, gzip'd (every fifth), in a sub-folder, and
    one container file of ``records`` messages. Keys are relative to the hour's prefix."""
    documents = generate_documents(dtds.load("news"), count + records, seed=seed)
    inputs: dict[str, bytes] = {}
    for i, document in enumerate(documents[:count]):
        if i % 5 == 4:
            inputs[f"wire/m{i:03d}.xml.gz"] = gzip.compress(document, mtime=0)
        else:
            inputs[f"m{i:03d}.xml"] = document
    inputs["batch-000.xml"] = b"<batch>\n" + b"\n".join(documents[count:]) + b"\n</batch>\n"
    return inputs


def upload(store: ObjectStore, inputs: dict[str, bytes]) -> None:
    for key, data in inputs.items():
        store.put(key, data)


# -- expectations --------------------------------------------------------------------------------


def local_run(plan: CompiledPlan, inputs: dict[str, bytes], max_message_bytes: int = 64 << 20) -> HourRun:
    """The hour routed by the single-process loop."""
    objects = [(key, io.BytesIO(inputs[key])) for key in sorted(inputs)]
    return route_locally(plan, splitter_for(plan, max_message_bytes), objects)


def expected_outputs(
    plan: CompiledPlan, ref: PlanRef, run: HourRun, feed: str, max_part_bytes: int = PART_BYTES
) -> dict[str, bytes]:
    """Every object a batch must leave below the subscribers' prefixes, by URI."""
    objects: dict[str, bytes] = {}
    for sid, results in run.results.items():
        target = plan.targets[sid]
        folder = f"{target.output_prefix}/{delivery_dir(target.subscription, feed, HOUR)}"
        header = PartHeader(feed, target.subscription, HOUR_TEXT)
        parts = list(write_parts(header, results, max_part_bytes))
        objects |= {f"{folder}/{part.name}": part.data for part in parts}
        manifest = Manifest(
            feed,
            HOUR_TEXT,
            target.subscriber,
            target.subscription,
            target.catalog_id,
            ref,
            tuple(PartInfo.of(part) for part in parts),
        )
        objects[f"{folder}/{MANIFEST}"] = manifest.to_bytes()
        objects[f"{folder}/{SUCCESS}"] = b""
    return objects


def snapshot(store: ObjectStore, prefix: str = "") -> dict[str, bytes]:
    """Every object under ``prefix`` of ``store``, by URI."""
    return {store.uri_for(key): store.get(key) for key in store.list(prefix)}


# -- the ledger ----------------------------------------------------------------------------------


def batches(engine: Engine, feed: str = "news") -> list[dict[str, Any]]:
    with engine.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT b.* FROM feedrouter.batches b JOIN feedrouter.feeds f ON f.id = b.feed_id"
                " WHERE f.name = :f ORDER BY b.id"
            ),
            {"f": feed},
        )
        return [dict(row._mapping) for row in rows]


def deliveries(engine: Engine, batch_id: int | None = None) -> list[dict[str, Any]]:
    where, params = ("WHERE batch_id = :b", {"b": batch_id}) if batch_id is not None else ("", {})
    with engine.connect() as conn:
        rows = conn.execute(text(f"SELECT * FROM feedrouter.deliveries {where} ORDER BY id"), params)
        return [dict(row._mapping) for row in rows]


def assert_ledger_matches(
    engine: Engine, plan: CompiledPlan, run: HourRun, expected: dict[str, bytes]
) -> int:
    """One succeeded batch with the loop's counts, and one delivery row per served subscription
    with its result count and objects. Returns the batch id."""
    [batch] = batches(engine)
    assert (batch["status"], batch["documents"], batch["quarantined"]) == (
        "succeeded",
        run.documents,
        len(run.rejected),
    )
    assert batch["bytes"] == run.bytes and batch["finished_at"] >= batch["started_at"]
    rows = {row["subscription_id"]: row for row in deliveries(engine, batch["id"])}
    assert set(rows) == {target.catalog_id for target in plan.targets.values()}
    for sid, target in plan.targets.items():
        row = rows[target.catalog_id]
        results = run.results.get(sid, [])
        assert (row["result_count"], row["delivery_version"]) == (len(results), 1)
        assert (row["subscriber_name"], row["subscription_name"]) == (target.subscriber, target.subscription)
        assert set(row["object_keys"]) <= set(expected)
        assert bool(row["object_keys"]) == bool(results)
    return batch["id"]


# -- Spark ---------------------------------------------------------------------------------------


#: JVM options for the tests' short-lived JVMs: no C2 compiler (starts faster), a small serial GC.
FAST_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def executor_conf() -> dict[str, str]:
    """moto's credentials for executors (a real deployment gives executors their own), and JVM
    options that start the test JVMs faster."""
    conf = {f"spark.executorEnv.{name}": value for name, value in AWS_ENV.items()}
    return conf | {"spark.driver.extraJavaOptions": FAST_JVM, "spark.executor.extraJavaOptions": FAST_JVM}


@contextmanager
def spark_for_tests(master: str, conf: dict[str, str] | None = None) -> Iterator[Any]:
    """A Spark session for one test module, stopped at its end."""
    pytest.importorskip("pyspark")
    from feedrouter.spark import spark_session

    with pytest.MonkeyPatch.context() as patch:
        for name, value in AWS_ENV.items():
            patch.setenv(name, value)
        session = spark_session(master, app_name="feedrouter-tests", conf={**executor_conf(), **(conf or {})})
        try:
            yield session
        finally:
            session.stop()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def standalone_cluster(folder: Path, workers: int = 2) -> Iterator[StandaloneCluster]:
    """A started standalone cluster in ``folder``, stopped on exit (what the module fixtures hold)."""
    pytest.importorskip("pyspark")
    cluster = StandaloneCluster(folder, workers=workers)
    try:
        yield cluster.start()
    finally:
        cluster.stop()


class StandaloneCluster:
    """A Spark standalone master and workers on loopback, from the installed pyspark's scripts."""

    def __init__(self, folder: Path, workers: int = 2) -> None:
        import pyspark

        self.home = Path(pyspark.__file__).parent
        self.folder = folder
        self.workers = workers
        self.port, self.ui_port = free_port(), free_port()
        self.processes: list[subprocess.Popen[bytes]] = []

    @property
    def master_url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    def start(self) -> StandaloneCluster:
        master = ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1"]
        self._spawn("master", [*master, "--port", str(self.port), "--webui-port", str(self.ui_port)])
        for i in range(self.workers):
            worker = ["org.apache.spark.deploy.worker.Worker", self.master_url, "--host", "127.0.0.1"]
            options = ["--cores", "1", "--memory", "1g", "--webui-port", str(free_port())]
            self._spawn(f"worker-{i}", [*worker, *options, "--work-dir", str(self.folder / f"work-{i}")])
        self._wait_for_workers()
        return self

    def stop(self) -> None:
        for process in reversed(self.processes):
            process.terminate()
        for process in self.processes:
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()

    def _spawn(self, name: str, args: list[str]) -> None:
        env = {
            **os.environ,
            **AWS_ENV,
            "SPARK_HOME": str(self.home),
            "SPARK_LOCAL_IP": "127.0.0.1",
            "SPARK_DAEMON_MEMORY": "512m",
            # Short-lived JVMs on a small machine: the C1 compiler alone starts them much faster.
            "SPARK_DAEMON_JAVA_OPTS": f"{FAST_JVM} -Dspark.master.rest.enabled=false",
            "PYSPARK_PYTHON": sys.executable,
        }
        log = (self.folder / f"{name}.log").open("wb")
        command = [str(self.home / "bin" / "spark-class"), *args]
        self.processes.append(subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT))

    def _wait_for_workers(self, timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._alive_workers() >= self.workers:
                return
            time.sleep(0.5)
        logs = {path.name: path.read_text(errors="replace")[-2000:] for path in self.folder.glob("*.log")}
        raise RuntimeError(f"the standalone cluster did not start: {json.dumps(logs, indent=1)}")

    def _alive_workers(self) -> int:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.ui_port}/json/", timeout=2) as response:
                return int(json.load(response).get("aliveworkers", 0))
        except (OSError, ValueError):
            return 0


#: AWS variables a Spark Connect server must not inherit: the test's credentials travel in the job.
AWS_VARIABLES = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE")


#: the shuffle partitions of the test's Connect server (``local[2]``; not 2 x its cores, what a
#: classic session's stage sets: the test sees that the client left it alone)
CONNECT_SHUFFLES = "6"


class ConnectServer:
    """A Spark Connect server (``local[2]`` behind it) in its own process, from the installed
    pyspark's ``SparkConnectServer``; its Python workers run this interpreter. It gets no AWS
    credentials: a batch's tasks must use those the job carries (StoreOpener.credentials)."""

    def __init__(self, folder: Path, master: str = "local[2]") -> None:
        import pyspark

        self.home = Path(pyspark.__file__).parent
        self.folder = folder
        self.master = master
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"sc://127.0.0.1:{self.port}"

    def start(self) -> ConnectServer:
        conf = {
            "spark.connect.grpc.binding.address": "127.0.0.1",
            "spark.connect.grpc.binding.port": str(self.port),
            "spark.driver.host": "127.0.0.1",
            "spark.driver.bindAddress": "127.0.0.1",
            "spark.ui.enabled": "false",
            "spark.speculation": "false",
            # sized to local[2], as an operator sizes a server's (a Connect client cannot see its
            # cores and keeps the server's setting: Spark's 200 made the join stage 4x slower here)
            "spark.sql.shuffle.partitions": CONNECT_SHUFFLES,
            "spark.python.worker.reuse": "true",
            "spark.pyspark.python": sys.executable,
            "spark.driver.extraJavaOptions": FAST_JVM,
        }
        command = [
            str(self.home / "bin" / "spark-submit"),
            "--class",
            "org.apache.spark.sql.connect.service.SparkConnectServer",
            "--master",
            self.master,
            *(item for key, value in conf.items() for item in ("--conf", f"{key}={value}")),
        ]
        env = {key: value for key, value in os.environ.items() if key not in AWS_VARIABLES}
        env |= {"SPARK_HOME": str(self.home), "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
        log = (self.folder / "connect-server.log").open("wb")
        self.process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
        self._wait_for_port()
        return self

    def stop(self) -> None:
        if self.process is None:
            return
        self.process.terminate()
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()

    def _wait_for_port(self, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                break
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(0.5)
        log = (self.folder / "connect-server.log").read_text(errors="replace")[-3000:]
        raise RuntimeError(f"the Spark Connect server did not start: {log}")


def assert_interrupted_by_its_tag(spark: Any, folder: Path) -> None:
    """A run's Spark operation that stalls is interrupted by its JobCanceller (what a lost lease
    fires), through the operation's job tag, on classic Spark and on Connect alike."""
    import threading

    from feedrouter.spark.job import tagged
    from feedrouter.spark.lease import JobCanceller

    started = folder / "started"

    def stall(batches: Any) -> Any:  # nested: pickled by value, runs in the session's Python workers
        import pathlib
        import time

        for batch in batches:
            pathlib.Path(str(started)).touch()
            time.sleep(600)
            yield batch

    canceller, outcome = JobCanceller(), {}

    def run() -> None:
        try:
            with canceller.armed(spark, "feedrouter-test-stall"), tagged(spark, "feedrouter-test-stall"):
                spark.range(1).mapInArrow(stall, "id bigint").collect()
            outcome["finished"] = True
        except Exception as exc:  # what the interrupted action raises
            outcome["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 120
    while not started.exists() and time.monotonic() < deadline and thread.is_alive():
        time.sleep(0.2)
    assert started.exists(), outcome
    canceller()  # the heartbeat's on_lost
    thread.join(180)
    assert not thread.is_alive(), "the stalled operation was not interrupted"
    assert canceller.fired.is_set() and "error" in outcome and "finished" not in outcome


def stored_witnesses(folder: Path, hours: Iterable[HourWitnesses]) -> WitnessSource:
    """Witness hours written to a file store under ``folder``, as the Spark join engine's executors
    read them."""
    uri = f"file://{folder}/state"
    store = open_store(uri)
    for witnesses in hours:
        write_hour(store, witnesses)
    return WitnessSource(StoreOpener(), uri)


@dataclass
class JoinHour:
    """The last of two generated hours of two feeds with join subscriptions of the news feed: what
    a Spark join engine gets (plans, the hour, the witnesses in a file store) and the in-process
    stage's pairs, which it must give."""

    plans: list[JoinPlan]
    hour: datetime
    source: WitnessSource
    lateness: timedelta
    in_process: dict[str, list[Pair]]
    stage: JoinStage


def generated_join_hour(folder: Path, seed: int, subscriptions: int = 80) -> JoinHour:
    from tests.differential.join_pipeline import JoinPipeline

    feeds, lateness = ("news", "blogs"), timedelta(hours=1)
    generated = generate_feed_hours(seed=seed, feeds=feeds, hours=2, items_per_hour=20, lateness=lateness)
    texts = generate_join_subscriptions(subscriptions, seed=seed, feeds=feeds, own="news")
    pipeline = JoinPipeline({f"j{i:02d}": ("news", text) for i, text in enumerate(texts)}, feeds)
    for feed, batches in generated.items():
        for batch in batches:
            pipeline.collect(feed, batch.hour, [(m.key, m.data) for m in batch.messages])
    hour = generated["news"][-1].hour  # its pairs: with this hour's and the hour before's nodes
    in_process = pipeline.stage.pairs(hour, lambda feed, h: pipeline.store.get((feed, h)))
    assert sum(len(pairs) for pairs in in_process.values()) >= 50  # not a comparison of empty sets
    source = stored_witnesses(folder, pipeline.store.values())
    return JoinHour(list(pipeline.joins.plans.values()), hour, source, lateness, in_process, pipeline.stage)


def assert_tasks_deliver_as_here(spark: Any, folder: Path, seed: int) -> None:
    """The partitioned engine's tasks write every join subscription's folder of a generated hour
    (:func:`generated_join_hour`) with the same files, byte for byte, and the same ledger rows as
    writing every subscription's pairs of the hour in this process."""
    from feedrouter.catalog import Target
    from feedrouter.delivery import PlanRef
    from feedrouter.spark.joindelivery import Written, deliver_joins
    from feedrouter.spark.joinparts import partitioned_deliveries
    from feedrouter.spark.spec import JobSpec
    from feedrouter.spark.witnesses import WitnessHours

    join = generated_join_hour(folder / "state", seed=seed)
    spec = JobSpec("news", join.hour, "", None, PlanRef(3, "d" * 64, 7), join.source.stores, 1 << 20, 1 << 20)

    def targets(root: str) -> dict[str, Target]:
        out = (folder / root).as_uri()
        return {plan.sid: Target(n, plan.sid, "alice", out) for n, plan in enumerate(join.plans, 1)}

    witnesses = WitnessHours(join.source.stores.open(join.source.state_uri))
    found = join.stage.deliveries(join.hour, witnesses.read, dict(join.in_process))
    here = deliver_joins(spec, targets("here"), {p.sid: p for p in join.plans}, found, witnesses)
    there = partitioned_deliveries(spark, join.stage, join.hour, join.source, spec, targets("there"))

    def row(one: Written) -> tuple[object, ...]:
        r = one.row
        return (one.sid, one.pairs, r.status, r.result_count, r.bytes, r.digest, len(r.object_keys))

    assert sorted(map(row, there)) == sorted(map(row, here))
    assert sum(one.row.result_count for one in here) >= 50

    def tree(root: str) -> dict[str, bytes]:
        files = (folder / root).rglob("*")
        return {str(p.relative_to(folder / root)): p.read_bytes() for p in files if p.is_file()}

    assert tree("there") == tree("here")
