#!/usr/bin/env bash
# The demo hour on the compose stack: sample subscriptions inserted into the catalog (Postgres), one
# hour of a sample news feed uploaded to MinIO, the plan built by feedrouter_plans through the
# scheduler, and the hour routed by feedrouter_route on the Spark cluster (spark-submit from this
# container, so run it in the scheduler's container, whose hostname the executors connect back to):
#
#   docker compose exec airflow-scheduler feedrouter-demo [--hour YYYY-MM-DDTHH] [--documents N]
#
# It exits non-zero unless the hour's batch is recorded as succeeded; the Feedrouter page
# (http://localhost:8080/feedrouter/) then shows the build, the invalid subscriptions and the batch.
set -euo pipefail

documents=100
subscriptions=200
# Two hours back: the hour is complete and its grace period (FEEDROUTER_INPUT_GRACE) has passed.
hour="$(date -u -d '2 hours ago' +%Y-%m-%dT%H)"
while [ $# -gt 0 ]; do
  case "$1" in
    --hour) hour="$2"; shift 2 ;;
    --documents) documents="$2"; shift 2 ;;
    --subscriptions) subscriptions="$2"; shift 2 ;;
    *) echo "unknown argument $1: use --hour, --documents, --subscriptions" >&2; exit 2 ;;
  esac
done

# The feedrouter CLI reads the catalog from FEEDROUTER_DATABASE_URL; the stack's catalog is the
# feedrouter_catalog connection. The bucket is the one the plans live in.
export FEEDROUTER_DATABASE_URL="${FEEDROUTER_DATABASE_URL:-${AIRFLOW_CONN_FEEDROUTER_CATALOG:?not in the feedrouter stack}}"
bucket="${FEEDROUTER_PLANS_URI:?not in the feedrouter stack}"
bucket="${bucket#s3://}"
bucket="${bucket%%/*}"
input="s3://$bucket/input/news"

echo "== catalog: feed news, sample subscribers and $subscriptions subscriptions (two invalid)"
feedrouter catalog init-sample --feed news --dtd news --subscriptions "$subscriptions" \
  --input-prefix "$input" --output-base "s3://$bucket/output" --with-invalid

echo "== input: $documents messages of news for $hour under $input"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
feedrouter generate --output "$work" --dtd news --documents "$documents" --subscriptions 1 >/dev/null
python - "$work/documents" "$input" "$hour" <<'PY'
import sys
from pathlib import Path

from airflow.providers.amazon.aws.hooks.s3 import S3Hook

from feedrouter.hours import hour_path, parse_hour

folder, prefix, hour = Path(sys.argv[1]), sys.argv[2], parse_hour(sys.argv[3])
bucket, _, key_prefix = prefix.removeprefix("s3://").partition("/")
s3 = S3Hook(aws_conn_id="feedrouter_s3")
for document in sorted(folder.glob("*.xml")):
    key = f"{key_prefix}/{hour_path(hour)}/{document.name}"
    s3.load_file(str(document), key, bucket_name=bucket, replace=True)
PY

# The DAGs appear once the dag-processor has parsed them: wait until Airflow knows the DAG (unpause
# alone says nothing: it exits 0 for a DAG it does not know), then unpause it.
wait_for_dag() {
  for _ in $(seq 60); do
    if airflow dags details "$1" >/dev/null 2>&1; then
      airflow dags unpause "$1" >/dev/null
      return 0
    fi
    sleep 5
  done
  echo "DAG $1 was not parsed within 5 minutes: see docker compose logs airflow-dag-processor" >&2
  return 1
}

# The state of one run, from `airflow dags list-runs` (empty while it does not exist yet). The CLI
# may print warnings on stdout before its JSON: read the line that holds the list.
run_state() {
  airflow dags list-runs "$1" -o json 2>/dev/null | python -c '
import json, sys
listing = [line for line in sys.stdin if line.startswith("[")]
runs = {run["run_id"]: run["state"] for run in json.loads(listing[-1] if listing else "[]")}
print(runs.get(sys.argv[1], ""))' "$2"
}

echo "== feedrouter_plans through the scheduler"
wait_for_dag feedrouter_plans
run_id="demo-plans-$(date -u +%Y%m%dT%H%M%S)"
airflow dags trigger feedrouter_plans --run-id "$run_id" >/dev/null
for _ in $(seq 120); do
  state="$(run_state feedrouter_plans "$run_id")"
  case "$state" in
    success) break ;;
    failed) echo "feedrouter_plans run $run_id failed: see its task logs" >&2; exit 1 ;;
  esac
  sleep 5
done
[ "$state" = success ] || { echo "feedrouter_plans run $run_id still $state after 10 minutes" >&2; exit 1; }

# feedrouter_route stays paused: unpaused, it would catch up every hour since FEEDROUTER_ROUTE_START.
# `airflow dags test` runs one run of it here, with the stack's connections (Spark: spark-submit).
echo "== feedrouter_route for news $hour on the Spark cluster"
airflow dags test feedrouter_route "${hour}:00:00+00:00" -c "{\"feed\": \"news\", \"hour\": \"$hour\"}"

python - "$hour" <<'PY'
import sys

from feedrouter.catalog import open_catalog
from feedrouter.catalog.status import batch_deliveries, batch_ledger
from feedrouter.hours import parse_hour

hour = parse_hour(sys.argv[1])
engine = open_catalog()
with engine.connect() as conn:
    batches = batch_ledger(conn, "news", hour)
    deliveries = batch_deliveries(conn, batches[0]["id"]) if batches else []
engine.dispose()
if not batches or batches[0]["status"] != "succeeded":
    sys.exit(f"news {sys.argv[1]}: no succeeded batch in the ledger ({batches[:1]})")
batch = batches[0]
served = sum(1 for row in deliveries if row["result_count"])
print(f"news {sys.argv[1]}: batch {batch['id']} {batch['status']}, {batch['documents']} documents,"
      f" {batch['results']} results, {served} subscriptions served")
PY
