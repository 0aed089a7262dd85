#!/bin/sh
# Creates Temporal's two PostgreSQL databases (main and visibility) and brings both schemas to the version this
# server release needs, with the server's own SQL tool and the schema files it embeds. Safe to run again: an
# existing database is kept and only missing schema versions are applied (run it again after a server upgrade).
#
# Used by docker-compose.yml (the temporal-schema service) and by the tests and chaos harness
# (test/support/production-temporal.ts). The variables are the ones deploy/temporal/production.yaml reads.
#   TEMPORAL_SQL_TOOL=temporal-sql-tool POSTGRES_SEEDS=127.0.0.1 DB_PORT=5432 POSTGRES_USER=temporal \
#   POSTGRES_PWD=temporal sh deploy/temporal/setup-schema.sh
set -eu

sql_tool=${TEMPORAL_SQL_TOOL:-temporal-sql-tool}

setup() {
  database=$1
  schema=$2
  set -- "$sql_tool" --plugin postgres12 --ep "${POSTGRES_SEEDS:-127.0.0.1}" -p "${DB_PORT:-5432}" \
    -u "${POSTGRES_USER:-temporal}" --pw "${POSTGRES_PWD:-temporal}" --db "$database"
  # Keeps an existing database; an unreachable server is reported by the next step.
  "$@" create-database >/dev/null 2>&1 || true
  "$@" setup-schema -v 0.0
  "$@" update-schema --schema-name "$schema"
  echo "Database $database: schema $schema is current"
}

setup "${DBNAME:-temporal}" postgresql/v12/temporal
setup "${VISIBILITY_DBNAME:-temporal_visibility}" postgresql/v12/visibility
