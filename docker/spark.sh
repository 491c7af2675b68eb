#!/usr/bin/env bash
# Run a Spark standalone master or worker, or a Spark Connect server, from the pyspark installed in
# this image, so the cluster runs exactly the Spark (and the Python, and the feedrouter) that the
# Airflow tasks drive.
#   feedrouter-spark master                              (web UI :8080, cluster :7077)
#   feedrouter-spark worker spark://spark-master:7077
#   feedrouter-spark connect --master spark://spark-master:7077   (Spark Connect on :15002)
set -euo pipefail
SPARK_HOME="$(python -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')"
export SPARK_HOME
role="${1:?usage: feedrouter-spark master|worker MASTER_URL|connect [spark-submit options]}"
shift
case "$role" in
  master) exec "$SPARK_HOME/bin/spark-class" org.apache.spark.deploy.master.Master \
            --host "${SPARK_MASTER_HOST:-$(hostname)}" --port 7077 --webui-port 8080 "$@" ;;
  worker) exec "$SPARK_HOME/bin/spark-class" org.apache.spark.deploy.worker.Worker \
            --webui-port 8081 "$@" ;;
  # --wait keeps the server in the foreground (the container's process); the pyspark wheel ships
  # the server's jar (spark-connect_2.13). Its executors connect back to this container's hostname.
  connect) exec "$SPARK_HOME/sbin/start-connect-server.sh" --wait \
            --conf "spark.driver.host=$(hostname)" \
            --conf spark.connect.grpc.binding.port=15002 "$@" ;;
  *) echo "unknown role $role: use master, worker or connect" >&2; exit 2 ;;
esac
