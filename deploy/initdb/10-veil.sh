#!/bin/sh
# Runs once, as the superuser, when the database volume is first created (documentation:
# see deploy/compose.yaml). The server connects as `veil`, an ordinary role that owns the
# database, so the row-level-security policies Veil creates apply to it.
set -eu
psql -v ON_ERROR_STOP=1 -U "$POSTGRES_USER" -d "$POSTGRES_DB" <<SQL
CREATE ROLE veil LOGIN PASSWORD '${VEIL_APP_PASSWORD}' NOSUPERUSER NOBYPASSRLS;
ALTER DATABASE veil OWNER TO veil;
ALTER SCHEMA public OWNER TO veil;
CREATE EXTENSION IF NOT EXISTS vector;
SQL
