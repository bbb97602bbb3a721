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

# Number of control planes (make sandbox-up CLUSTERS=N). Cluster 1 is the single sandbox, with
# its ports, state layout, etcd prefix (/registry) and context "sandbox" unchanged; cluster n>1
# shares etcd (prefix /registry-n) and keeps its state in $STATE/clusters/n. See README.md.
CLUSTERS=${SEALANE_SANDBOX_CLUSTERS:-1}
case $CLUSTERS in
  [1-9]) ;;
  *) echo "[sandbox] SEALANE_SANDBOX_CLUSTERS/CLUSTERS must be 1..9, not '$CLUSTERS'" >&2; exit 2 ;;
esac
# namespace of the sealane cluster Secrets registered on cluster 1 (the home cluster) when N>1
CLUSTER_SECRETS_NAMESPACE=sealane-system

KUBECONFIG_FILE=$STATE/kubeconfig # the user's kubeconfig: all contexts

# Components in start order; down.sh stops them in reverse. etcd runs once, with cluster 1.
COMPONENTS=(etcd kube-apiserver kube-controller-manager kube-scheduler kwok)

# use_cluster N: point the per-cluster variables at cluster N (1 = the single sandbox):
# CSTATE (its state dir), LOGS, RUN, APISERVER_PORT, KWOK_PORT, NODE_NAME, CONTEXT,
# ETCD_PREFIX, CLUSTER_KUBECONFIG (the components' kubeconfig) and CLUSTER_COMPONENTS.
BASE_APISERVER_PORT=$APISERVER_PORT BASE_KWOK_PORT=$KWOK_PORT BASE_NODE_NAME=$NODE_NAME
use_cluster() {
  CLUSTER=$1
  APISERVER_PORT=$((BASE_APISERVER_PORT + CLUSTER - 1))
  KWOK_PORT=$((BASE_KWOK_PORT + CLUSTER - 1))
  if [ "$CLUSTER" = 1 ]; then
    CSTATE=$STATE NODE_NAME=$BASE_NODE_NAME CONTEXT=sandbox ETCD_PREFIX=/registry
    CLUSTER_KUBECONFIG=$KUBECONFIG_FILE
    CLUSTER_COMPONENTS=("${COMPONENTS[@]}")
  else
    CSTATE=$STATE/clusters/$CLUSTER NODE_NAME=$BASE_NODE_NAME-$CLUSTER CONTEXT=sandbox-$CLUSTER
    ETCD_PREFIX=/registry-$CLUSTER CLUSTER_KUBECONFIG=$CSTATE/kubeconfig
    CLUSTER_COMPONENTS=("${COMPONENTS[@]:1}")
  fi
  LOGS=$CSTATE/logs RUN=$CSTATE/run
}
use_cluster 1

# all_clusters: 1..N, plus any cluster with a state dir (so that down.sh stops them all).
all_clusters() {
  local d n max=$CLUSTERS
  for d in "$STATE"/clusters/[0-9]*; do
    [ -d "$d" ] || continue
    n=${d##*/}
    [ "$n" -gt "$max" ] && max=$n
  done
  seq 1 "$max"
}

# apiserver_command PORT: set APISERVER_CMD to the current cluster's kube-apiserver command
# serving on PORT (up.sh runs it on APISERVER_PORT; apiserver.sh runs a second one).
apiserver_command() {
  local prefix=()
  [ "$CLUSTER" = 1 ] || prefix=(--etcd-prefix="$ETCD_PREFIX")
  APISERVER_CMD=("$BIN/kube-apiserver"
    --etcd-servers="http://127.0.0.1:$ETCD_PORT" "${prefix[@]}"
    --bind-address=127.0.0.1 --secure-port="$1"
    --cert-dir="$CSTATE/pki/apiserver"
    --service-account-key-file="$CSTATE/pki/sa.pub"
    --service-account-signing-key-file="$CSTATE/pki/sa.key"
    --service-account-issuer=https://kubernetes.default.svc
    --token-auth-file="$CSTATE/tokens.csv"
    --authorization-mode=RBAC
    --service-cluster-ip-range=10.0.0.0/16
    --allow-privileged=true
    --kubelet-preferred-address-types=InternalIP
    --feature-gates=WatchList=false
    --profiling=false)
}

log() { echo "[sandbox] $*" >&2; }

# sandbox_token prints the current cluster's admin bearer token (empty if none yet).
sandbox_token() { [ -f "$CSTATE/tokens.csv" ] && cut -d, -f1 "$CSTATE/tokens.csv" | head -n1; }

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
  # guard against pid reuse: our processes all mention their cluster's state dir
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$CSTATE"
}

apiserver_ready() { [ "$(api GET /readyz 2>/dev/null)" = ok ]; }

# node_ready [untainted]: the fake node is Ready (and, if asked, carries no taint).
node_ready() {
  local want=${1:-ready} body
  body=$(api GET "/api/v1/nodes/$NODE_NAME" 2>/dev/null) || return 1
  grep -qF '"type":"Ready","status":"True"' <<<"$body" || return 1
  if [ "$want" = untainted ]; then ! grep -qF '"taints":' <<<"$body"; fi
}

# cluster_healthy: the current cluster's processes alive, apiserver ready, node Ready.
cluster_healthy() {
  local c
  [ -f "$CLUSTER_KUBECONFIG" ] || return 1
  for c in "${CLUSTER_COMPONENTS[@]}"; do pid_alive "$c" || return 1; done
  apiserver_ready && node_ready ready
}

# kubeconfig_has_contexts: the user's kubeconfig names every context of clusters 1..N.
kubeconfig_has_contexts() {
  local n
  [ "$CLUSTERS" = 1 ] && return 0
  for n in $(seq 1 "$CLUSTERS"); do
    grep -qx -- "- name: sandbox-$n" "$KUBECONFIG_FILE" || return 1
  done
}

# sandbox_healthy: clusters 1..N healthy (leaves cluster 1 selected).
sandbox_healthy() {
  local n rc=0
  [ -f "$KUBECONFIG_FILE" ] || return 1
  for n in $(seq 1 "$CLUSTERS"); do
    use_cluster "$n"
    cluster_healthy || { rc=1; break; }
  done
  use_cluster 1
  [ $rc = 0 ] && kubeconfig_has_contexts
}

# clusters_registered: (N>1) cluster 1 holds the cluster Secret of every cluster 1..N.
clusters_registered() {
  local n body
  [ "$CLUSTERS" = 1 ] && return 0
  use_cluster 1
  body=$(api GET "/api/v1/namespaces/$CLUSTER_SECRETS_NAMESPACE/secrets?labelSelector=sealane.dev%2Fcluster" 2>/dev/null) || return 1
  for n in $(seq 1 "$CLUSTERS"); do
    grep -qF "\"name\":\"cluster-sandbox-$n\"" <<<"$body" || return 1
  done
}
