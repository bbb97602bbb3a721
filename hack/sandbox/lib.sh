# shellcheck shell=bash disable=SC2034  # variables are used by the scripts that source this
# Shared settings and helpers for the sandbox scripts (sourced, not executed).
# Everything can be overridden from the environment; see README.md.

SANDBOX_HACK=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$SANDBOX_HACK/../.." && pwd)

STATE=${SEALANE_SANDBOX_DIR:-$REPO_ROOT/.sandbox}
CACHE=${SEALANE_CACHE:-$HOME/.cache/sealane}
BIN=$CACHE/bin
KWOK_VERSION=${KWOK_VERSION:-v0.7.0}

ETCD_PORT=${SEALANE_SANDBOX_ETCD_PORT:-23790}
ETCD_PEER_PORT=${SEALANE_SANDBOX_ETCD_PEER_PORT:-23800}
APISERVER_PORT=${SEALANE_SANDBOX_APISERVER_PORT:-16443}
KWOK_PORT=${SEALANE_SANDBOX_KWOK_PORT:-20250} # fake kubelet API (logs), TLS
NODE_NAME=${SEALANE_SANDBOX_NODE:-sandbox-node}

KUBECONFIG_FILE=$STATE/kubeconfig
LOGS=$STATE/logs
RUN=$STATE/run

# Components in start order; down.sh stops them in reverse.
COMPONENTS=(etcd kube-apiserver kube-controller-manager kube-scheduler kwok)

log() { echo "[sandbox] $*" >&2; }

# sandbox_token prints the admin bearer token (empty if none yet).
sandbox_token() { [ -f "$STATE/tokens.csv" ] && cut -d, -f1 "$STATE/tokens.csv" | head -n1; }

# api METHOD PATH [curl args...]: call the sandbox apiserver as admin, print the body.
# A non-curl user agent keeps the JSON compact (the apiserver pretty-prints for curl).
api() {
  local method=$1 path=$2; shift 2
  curl -sS -k --max-time 10 -A sealane-sandbox -X "$method" \
    -H "Authorization: Bearer $(sandbox_token)" "$@" \
    "https://127.0.0.1:$APISERVER_PORT$path"
}

# pid_alive NAME: the pid file for NAME points at a live process of ours.
pid_alive() {
  local f=$RUN/$1.pid pid
  [ -f "$f" ] || return 1
  pid=$(cat "$f")
  [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
  # guard against pid reuse: our processes all mention the state dir
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$STATE"
}

apiserver_ready() { [ "$(api GET /readyz 2>/dev/null)" = ok ]; }

# node_ready [untainted]: the fake node is Ready (and, if asked, carries no taint).
node_ready() {
  local want=${1:-ready} body
  body=$(api GET "/api/v1/nodes/$NODE_NAME" 2>/dev/null) || return 1
  grep -qF '"type":"Ready","status":"True"' <<<"$body" || return 1
  if [ "$want" = untainted ]; then ! grep -qF '"taints":' <<<"$body"; fi
}

# sandbox_healthy: every process alive, apiserver ready, node Ready.
sandbox_healthy() {
  local c
  [ -f "$KUBECONFIG_FILE" ] || return 1
  for c in "${COMPONENTS[@]}"; do pid_alive "$c" || return 1; done
  apiserver_ready && node_ready ready
}
