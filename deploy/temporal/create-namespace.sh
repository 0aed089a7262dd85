#!/bin/sh
# Registers the namespace Threadline runs in, unless it exists, with the Temporal CLI. Safe to run again.
# Then `threadline setup` registers Threadline's search attributes in it.
#
# Used by docker-compose.yml (the temporal-namespace service) and by the tests and chaos harness
# (test/support/production-temporal.ts).
#   TEMPORAL_CLI=temporal TEMPORAL_ADDRESS=127.0.0.1:7233 TEMPORAL_NAMESPACE=default sh deploy/temporal/create-namespace.sh
set -eu

cli=${TEMPORAL_CLI:-temporal}
address=${TEMPORAL_ADDRESS:-127.0.0.1:7233}
namespace=${TEMPORAL_NAMESPACE:-default}
# How long Temporal keeps a closed run's history (a thread's runs before each continue-as-new, finished threads).
retention=${NAMESPACE_RETENTION:-72h}

if "$cli" operator namespace describe --namespace "$namespace" --address "$address" >/dev/null 2>&1; then
  echo "Namespace $namespace exists"
else
  "$cli" operator namespace create --namespace "$namespace" --retention "$retention" --address "$address"
fi
