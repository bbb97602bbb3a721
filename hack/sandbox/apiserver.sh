#!/usr/bin/env bash
# Runs one more kube-apiserver of sandbox cluster N on PORT, in the foreground: a second API
# server over the cluster's etcd data and keys, as in a highly available control plane. The
# outage tests (test/e2e/outage_test.go) own this process and SIGKILL it to take a cluster away
# from sealane for real, without touching the API server the rest of the suite uses.
# usage: apiserver.sh N PORT
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
[ $# -eq 2 ] || { echo "usage: $0 CLUSTER PORT" >&2; exit 2; }
use_cluster "$1"
[ -f "$CSTATE/tokens.csv" ] || { log "cluster $1 has no state in $CSTATE: run make sandbox-up CLUSTERS=$1 first"; exit 1; }
apiserver_command "$2"
exec "${APISERVER_CMD[@]}"
