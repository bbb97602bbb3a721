#!/usr/bin/env bash
# Exit 0 if the sandbox is healthy: all its processes alive, kube-apiserver /readyz ok and
# the fake node Ready — for each of clusters 1..N with SEALANE_SANDBOX_CLUSTERS=N (CLUSTERS=N),
# and then also their cluster Secrets on cluster 1. Prints a one-line summary per check to stderr.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

rc=0
check() { # check WHAT CMD...
  local what=$1; shift
  if "$@"; then log "ok    $what"; else log "FAIL  $what"; rc=1; fi
}
check "state dir $STATE" test -f "$KUBECONFIG_FILE"
for n in $(seq 1 "$CLUSTERS"); do
  use_cluster "$n"
  where=""
  [ "$CLUSTERS" = 1 ] || where=" (cluster $n, context $CONTEXT)"
  for c in "${CLUSTER_COMPONENTS[@]}"; do check "process $c$where" pid_alive "$c"; done
  check "kube-apiserver https://127.0.0.1:$APISERVER_PORT/readyz$where" apiserver_ready
  check "node $NODE_NAME Ready$where" node_ready ready
done
use_cluster 1
if [ "$CLUSTERS" -gt 1 ]; then
  check "contexts sandbox-1..$CLUSTERS in $KUBECONFIG_FILE" kubeconfig_has_contexts
  check "cluster Secrets cluster-sandbox-1..$CLUSTERS in $CLUSTER_SECRETS_NAMESPACE on cluster 1" clusters_registered
fi
[ $rc = 0 ] && echo "$KUBECONFIG_FILE"
exit $rc
