#!/usr/bin/env bash
# Exit 0 if the sandbox is healthy: all its processes alive, kube-apiserver /readyz ok and
# the fake node Ready. Prints a one-line summary per check to stderr.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

rc=0
check() { # check WHAT CMD...
  local what=$1; shift
  if "$@"; then log "ok    $what"; else log "FAIL  $what"; rc=1; fi
}
check "state dir $STATE" test -f "$KUBECONFIG_FILE"
for c in "${COMPONENTS[@]}"; do check "process $c" pid_alive "$c"; done
check "kube-apiserver https://127.0.0.1:$APISERVER_PORT/readyz" apiserver_ready
check "node $NODE_NAME Ready" node_ready ready
[ $rc = 0 ] && echo "$KUBECONFIG_FILE"
exit $rc
