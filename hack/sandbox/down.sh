#!/usr/bin/env bash
# Stops every sandbox process started by up.sh (pid files first, then any leftover process
# of ours whose command line names the state dir), of every cluster (CLUSTERS=N or not).
# Idempotent; exits 0 when nothing runs.
#   down.sh           stop, keep the state dir (etcd data, certs, token) for the next up.sh
#   down.sh --purge   stop and remove the state dir
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

purge=0
case "${1:-}" in
  "") ;;
  --purge) purge=1 ;;
  *) echo "usage: $0 [--purge]" >&2; exit 2 ;;
esac

# stop_pids NAME PID...: SIGTERM, wait up to 10 s, then SIGKILL.
stop_pids() {
  local name=$1; shift
  [ $# -gt 0 ] || return 0
  log "stopping $name (pid $*)"
  kill -TERM "$@" 2>/dev/null || true
  local p alive
  for _ in $(seq 100); do
    alive=()
    for p in "$@"; do [ -d "/proc/$p" ] && alive+=("$p"); done
    [ ${#alive[@]} -gt 0 ] || return 0
    sleep 0.1
  done
  log "killing $name (pid ${alive[*]})"
  kill -KILL "${alive[@]}" 2>/dev/null || true
}

# leftovers NAME: pids of processes running binary NAME whose command line names the state dir.
# (bash builtins only: this scans every process on the machine)
leftovers() {
  local name=$1 p args
  for p in /proc/[0-9]*; do
    [ "${p#/proc/}" != $$ ] || continue
    { mapfile -d '' args <"$p/cmdline"; } 2>/dev/null || continue
    if [ ${#args[@]} -eq 0 ] || [ "${args[0]##*/}" != "$name" ]; then continue; fi
    [[ "${args[*]}" == *"$STATE"* ]] && echo "${p#/proc/}"
  done
  return 0
}

# stop_group NAME...: stop these components of all clusters together.
stop_group() {
  local c n p pids=()
  for c in "$@"; do
    for n in $CLUSTER_LIST; do
      use_cluster "$n"
      if pid_alive "$c"; then pids+=("$(cat "$RUN/$c.pid")"); fi
    done
    # (the leftovers of cluster 1, whose state dir is the top one, include the other clusters')
    use_cluster 1
    for p in $(leftovers "$c"); do
      [[ " ${pids[*]} " == *" $p "* ]] || pids+=("$p")
    done
  done
  stop_pids "$*" "${pids[@]}"
  for c in "$@"; do
    for n in $CLUSTER_LIST; do use_cluster "$n"; rm -f "$RUN/$c.pid"; done
  done
  use_cluster 1
}

if [ -d "$STATE" ]; then
  CLUSTER_LIST=$(all_clusters)
  # the clients first (the controller-manager must not outlive kwok by long, or it marks the
  # node and its pods NotReady), then the apiserver, etcd last
  stop_group kube-controller-manager kube-scheduler kwok
  stop_group kube-apiserver
  stop_group etcd
fi

if [ $purge = 1 ] && [ -d "$STATE" ]; then
  log "removing $STATE"
  rm -rf "$STATE"
fi
exit 0
