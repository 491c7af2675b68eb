#!/usr/bin/env bash
# First start of the Postgres container: one database for Airflow's metadata, one for the
# feedrouter catalog, and a read-only role for the UI page. Passwords come from the environment
# (docker/.env), never from this file.
set -euo pipefail
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname postgres \
  -v airflow_pw="$AIRFLOW_DB_PASSWORD" \
  -v feedrouter_pw="$FEEDROUTER_DB_PASSWORD" \
  -v ui_pw="$FEEDROUTER_UI_DB_PASSWORD" <<'SQL'
CREATE ROLE airflow LOGIN PASSWORD :'airflow_pw';
CREATE DATABASE airflow OWNER airflow;
CREATE ROLE feedrouter LOGIN PASSWORD :'feedrouter_pw';
CREATE DATABASE feedrouter OWNER feedrouter;
CREATE ROLE feedrouter_ui LOGIN PASSWORD :'ui_pw';
\connect feedrouter
-- The catalog's schema and tables are created later by the migrations (as role feedrouter):
-- whatever feedrouter creates, feedrouter_ui may read and nothing more.
ALTER DEFAULT PRIVILEGES FOR ROLE feedrouter GRANT USAGE ON SCHEMAS TO feedrouter_ui;
ALTER DEFAULT PRIVILEGES FOR ROLE feedrouter GRANT SELECT ON TABLES TO feedrouter_ui;
SQL
