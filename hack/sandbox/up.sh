#!/usr/bin/env bash
# Starts the local sandbox Kubernetes control plane (etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler, kwok as fake kubelet with one fake node).
# SEALANE_SANDBOX_CLUSTERS=N (make sandbox-up CLUSTERS=N): N control planes on one etcd, with
# contexts sandbox-1..N in one kubeconfig, registered as sealane clusters on cluster 1.
# Idempotent: if it is already up and healthy this only prints the kubeconfig path.
# The kubeconfig path is the last line on stdout; everything else goes to stderr.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

START=$(date +%s)
STARTED=0 # set once a process has been started

# die MSG [COMPONENT...]: print MSG and the log tails of COMPONENTs, exit 1.
die() {
  local msg=$1 c; shift
  log "ERROR: $msg"
  for c in "$@"; do
    if [ -f "$LOGS/$c.log" ]; then
      echo "----- last lines of $LOGS/$c.log -----" >&2
      tail -n 40 "$LOGS/$c.log" >&2
    fi
  done
  if [ "$STARTED" = 1 ]; then
    log "processes and state left in $STATE for inspection; '$SANDBOX_HACK/down.sh' stops them"
  fi
  exit 1
}

# wait_for SECONDS WHAT "COMPONENTS" CMD...: retry CMD until it succeeds or time runs out;
# fail early if one of COMPONENTS exits, and show their logs on failure.
# shellcheck disable=SC2086 # $comps is a word list
wait_for() {
  local secs=$1 what=$2 comps=$3 c; shift 3
  local deadline=$((SECONDS + secs))
  until "$@"; do
    if [ $SECONDS -ge $deadline ]; then die "timed out after ${secs}s waiting for $what" $comps; fi
    for c in $comps; do
      pid_alive "$c" || die "$c exited while waiting for $what" $comps
    done
    sleep 0.5
  done
}

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# start NAME BINARY ARGS...: run detached in its own session, log and pid file in the state dir.
start() {
  local name=$1; shift
  log "starting $name"
  STARTED=1
  [ ! -f "$LOGS/$name.log" ] || mv "$LOGS/$name.log" "$LOGS/$name.log.prev"
  rm -f "$RUN/$name.pid"
  # the inner shell records its own pid and then becomes the component (exec);
  # fd 9 (the lock) is closed so that the daemon does not hold it
  # shellcheck disable=SC2016 # expanded by the inner shell
  setsid nohup bash -c 'echo $$ >"$0"; exec "$@"' "$RUN/$name.pid" "$@" \
    >"$LOGS/$name.log" 2>&1 </dev/null 9>&- &
  for _ in $(seq 50); do pid_alive "$name" && return 0; sleep 0.1; done
  die "$name did not start" "$name"
}

# build_sealane_cli: the CLI from this tree, in the state dir (it registers the clusters).
SEALANE_CLI=$STATE/bin/sealane
build_sealane_cli() {
  mkdir -p "$STATE/bin"
  (cd "$REPO_ROOT" && CGO_ENABLED=0 go build -o "$SEALANE_CLI" ./cmd/sealane)
}

# register_clusters: (N>1) a sealane cluster Secret for each of clusters 1..N in namespace
# $CLUSTER_SECRETS_NAMESPACE of cluster 1, by `sealane cluster add` (which checks that the
# cluster answers and stores its self-contained kubeconfig); labels env=staging for cluster 1,
# env=prod for the others. --overwrite: after a restart the Secret is surely current.
register_clusters() {
  local n env out
  [ "$CLUSTERS" -gt 1 ] || return 0
  [ -x "$SEALANE_CLI" ] || build_sealane_cli >&2 || die "building the sealane CLI failed"
  use_cluster 1
  out=$(api POST /api/v1/namespaces -H 'Content-Type: application/json' \
    -d "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"$CLUSTER_SECRETS_NAMESPACE\"}}") ||
    die "creating namespace $CLUSTER_SECRETS_NAMESPACE failed" kube-apiserver
  grep -qE '"kind":"Namespace"|AlreadyExists' <<<"$out" || die "creating namespace $CLUSTER_SECRETS_NAMESPACE failed: $out"
  for n in $(seq 1 "$CLUSTERS"); do
    env=prod
    [ "$n" = 1 ] && env=staging
    "$SEALANE_CLI" cluster add "sandbox-$n" --kubeconfig "$KUBECONFIG_FILE" --context "sandbox-$n" \
      --label "env=$env" --overwrite \
      --home-kubeconfig "$KUBECONFIG_FILE" --home-context sandbox \
      --sealane-namespace "$CLUSTER_SECRETS_NAMESPACE" >&2 ||
      die "sealane cluster add sandbox-$n failed"
  done
}

# ---------------------------------------------------------------- fast path
# one up.sh at a time per state dir (e.g. `make -j test demo`)
mkdir -p "$STATE"
exec 9>"$STATE/.up.lock"
flock 9
"$SANDBOX_HACK/build.sh" >&2 || die "build.sh failed"
if sandbox_healthy; then
  clusters_registered || register_clusters
  log "already up and healthy"
  echo "$KUBECONFIG_FILE"
  exit 0
fi

# Something is missing or broken: stop whatever is left (of every cluster) and start all from
# the state dir (etcd data, certificates and tokens are reused when present).
"$SANDBOX_HACK/down.sh" >&2

ETCD=$(command -v etcd) || die "etcd not found (build.sh installs etcd-server)"
for b in kube-apiserver kube-controller-manager kube-scheduler kwok; do
  [ -x "$BIN/$b" ] || die "$BIN/$b missing (run build.sh)"
done
ports=("$ETCD_PORT" "$ETCD_PEER_PORT")
for n in $(seq 1 "$CLUSTERS"); do use_cluster "$n"; ports+=("$APISERVER_PORT" "$KWOK_PORT"); done
use_cluster 1
for p in "${ports[@]}"; do
  port_free "$p" || die "port 127.0.0.1:$p is in use by another process (see README.md for the port variables)"
done

# the CLI that registers the clusters builds while the control planes start
if [ "$CLUSTERS" -gt 1 ]; then
  mkdir -p "$LOGS"
  build_sealane_cli >"$LOGS/sealane-build.log" 2>&1 9>&- &
  CLI_BUILD=$!
fi

# ---------------------------------------------------------------- state dir
mkdir -p "$STATE/etcd"
log "state dir $STATE"

# kwok's default stages are taken from the kwok module source, since any Stage in --config
# replaces the built-in ones
KWOK_DIR=$(cd "$CACHE" && GOWORK=off GOFLAGS=-mod=mod go mod download -json "sigs.k8s.io/kwok@$KWOK_VERSION" |
  sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p')
[ -d "$KWOK_DIR/kustomize/stage" ] || die "kwok $KWOK_VERSION module source not found (go mod download failed?)"

# prepare_cluster: keys, token, components' kubeconfig, container log and kwok config of the
# current cluster.
prepare_cluster() {
  mkdir -p "$CSTATE" "$LOGS" "$RUN" "$CSTATE/pki/apiserver" "$CSTATE/kwok"
  chmod 700 "$CSTATE/pki"
  # service-account signing key pair
  if [ ! -s "$CSTATE/pki/sa.key" ]; then
    openssl genrsa -out "$CSTATE/pki/sa.key" 2048 2>/dev/null
    openssl rsa -in "$CSTATE/pki/sa.key" -pubout -out "$CSTATE/pki/sa.pub" 2>/dev/null
  fi
  # self-signed serving pair for kwok's kubelet port (the apiserver does not verify it)
  if [ ! -s "$CSTATE/pki/kwok.key" ]; then
    openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=$NODE_NAME" \
      -addext "subjectAltName=IP:127.0.0.1,DNS:$NODE_NAME,DNS:localhost" \
      -keyout "$CSTATE/pki/kwok.key" -out "$CSTATE/pki/kwok.crt" 2>/dev/null
  fi
  # static admin token
  if [ ! -s "$CSTATE/tokens.csv" ]; then
    echo "$(openssl rand -hex 24),admin,admin,system:masters" >"$CSTATE/tokens.csv"
    chmod 600 "$CSTATE/tokens.csv"
  fi
  # cluster n>1: its components' own kubeconfig (cluster 1's is the user's, write_kubeconfig)
  if [ "$CLUSTER" != 1 ]; then
    cat >"$CLUSTER_KUBECONFIG" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: $CONTEXT
  cluster:
    server: https://127.0.0.1:$APISERVER_PORT
    insecure-skip-tls-verify: true
users:
- name: admin
  user:
    token: $(sandbox_token)
contexts:
- name: $CONTEXT
  context:
    cluster: $CONTEXT
    user: admin
    namespace: default
current-context: $CONTEXT
EOF
    chmod 600 "$CLUSTER_KUBECONFIG"
  fi

  # one small CRI-format log file that kwok serves for every container (kubectl logs)
  now() { date -u +%Y-%m-%dT%H:%M:%S.%NZ; }
  {
    echo "$(now) stdout F sealane sandbox container started"
    echo "$(now) stdout F this is a fake container run by kwok; no process is running"
    echo "$(now) stdout F level=info msg=\"listening on :8080\""
    echo "$(now) stdout F level=debug msg=\"config loaded\""
    echo "$(now) stdout F level=error msg=\"upstream unavailable, retrying\""
    echo "$(now) stderr F sealane sandbox: example stderr line"
  } >"$CSTATE/kwok/container.log"

  # kwok config: its default stages, our own stages, and the ClusterLogs for all pods.
  {
    for f in pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml \
      node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml; do
      echo "# from sigs.k8s.io/kwok@$KWOK_VERSION kustomize/stage/$f"
      cat "$KWOK_DIR/kustomize/stage/$f"
      echo "---"
    done
    cat "$SANDBOX_HACK/stages-sandbox.yaml"
    echo "---"
    cat "$SANDBOX_HACK/stages-test.yaml"
    cat <<EOF
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterLogs
metadata:
  name: sealane-sandbox-logs
spec:
  logs:
  - logsFile: $CSTATE/kwok/container.log
    follow: true
EOF
  } >"$CSTATE/kwok/kwok.yaml"
}

# write_kubeconfig: the user's kubeconfig. One cluster: context "sandbox", as always.
# N clusters: also contexts sandbox-1..N (sandbox-1 is sandbox); current context "sandbox".
write_kubeconfig() {
  local n clusters="" users="" contexts=""
  if [ "$CLUSTERS" -gt 1 ]; then
    contexts="- name: sandbox-1
  context:
    cluster: sandbox
    user: admin
    namespace: default
"
    for n in $(seq 2 "$CLUSTERS"); do
      use_cluster "$n"
      clusters+="- name: $CONTEXT
  cluster:
    server: https://127.0.0.1:$APISERVER_PORT
    insecure-skip-tls-verify: true
"
      users+="- name: admin-$n
  user:
    token: $(sandbox_token)
"
      contexts+="- name: $CONTEXT
  context:
    cluster: $CONTEXT
    user: admin-$n
    namespace: default
"
    done
  fi
  use_cluster 1
  cat >"$KUBECONFIG_FILE" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: sandbox
  cluster:
    server: https://127.0.0.1:$APISERVER_PORT
    insecure-skip-tls-verify: true
${clusters}users:
- name: admin
  user:
    token: $(sandbox_token)
${users}contexts:
- name: sandbox
  context:
    cluster: sandbox
    user: admin
    namespace: default
${contexts}current-context: sandbox
EOF
  chmod 600 "$KUBECONFIG_FILE"
}

for n in $(seq 1 "$CLUSTERS"); do use_cluster "$n"; prepare_cluster; done
write_kubeconfig

# ---------------------------------------------------------------- processes
use_cluster 1
start etcd "$ETCD" --name sandbox --data-dir "$STATE/etcd" \
  --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
  --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
  --initial-cluster "sandbox=http://127.0.0.1:$ETCD_PEER_PORT" --logger zap --log-level warn
etcd_ok() { curl -sf --max-time 2 "http://127.0.0.1:$ETCD_PORT/health" | grep -q '"health":"true"'; }
wait_for 30 "etcd health" etcd etcd_ok

# WatchList=false: with the gate on, 1.34 turns every watch from resourceVersion "" or "0"
# (kwok's kind) into a watch-list stream, which etcd 3.4 cannot serve; such watches then fail
# at once and clients only catch up on relists with backoff (pods took 10-20 s to start).
# Cluster 1 keeps the default etcd prefix /registry (the single sandbox's data), cluster n
# has /registry-n.
start_apiserver() {
  apiserver_command "$APISERVER_PORT"
  start kube-apiserver "${APISERVER_CMD[@]}"
}

# start_clients: the current cluster's controller-manager, scheduler and kwok.
start_clients() {
  start kube-controller-manager "$BIN/kube-controller-manager" \
    --kubeconfig="$CLUSTER_KUBECONFIG" \
    --authentication-kubeconfig="$CLUSTER_KUBECONFIG" --authorization-kubeconfig="$CLUSTER_KUBECONFIG" \
    --service-account-private-key-file="$CSTATE/pki/sa.key" \
    --root-ca-file="$CSTATE/pki/apiserver/apiserver.crt" \
    --leader-elect=false --secure-port=0 \
    --controllers='*,-nodeipam,-serviceaccount-token' \
    --kube-api-qps=1000 --kube-api-burst=2000 \
    --concurrent-deployment-syncs=50 --concurrent-replicaset-syncs=50 \
    --concurrent-statefulset-syncs=20 --concurrent-daemonset-syncs=20 \
    --concurrent-job-syncs=20 --concurrent-cron-job-syncs=20 \
    --concurrent-endpoint-syncs=20 --concurrent-service-endpoint-syncs=20 \
    --concurrent-gc-syncs=50 --concurrent-namespace-syncs=20 \
    --concurrent-rc-syncs=20 --concurrent-resource-quota-syncs=20 \
    --concurrent-ttl-after-finished-syncs=20

  start kube-scheduler "$BIN/kube-scheduler" \
    --kubeconfig="$CLUSTER_KUBECONFIG" \
    --leader-elect=false --secure-port=0 \
    --kube-api-qps=1000 --kube-api-burst=2000

  start kwok "$BIN/kwok" \
    --kubeconfig="$CLUSTER_KUBECONFIG" \
    --config="$CSTATE/kwok/kwok.yaml" \
    --manage-all-nodes=false \
    --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake \
    --node-ip=127.0.0.1 --node-port="$KWOK_PORT" --server-address="127.0.0.1:$KWOK_PORT" \
    --tls-cert-file="$CSTATE/pki/kwok.crt" --tls-private-key-file="$CSTATE/pki/kwok.key" \
    --cidr=10.244.0.0/16 \
    --node-lease-duration-seconds=40
}
kwok_ok() { curl -skf --max-time 2 "https://127.0.0.1:$KWOK_PORT/healthz" >/dev/null; }

# ---------------------------------------------------------------- the fake node
# ensure_node: the current cluster's node, created only once kwok runs: kwok fills in its
# addresses and kubelet port when it initializes it. A node kept from an earlier run with
# another kubelet port is recreated.
ensure_node() {
  local node out
  node=$(api GET "/api/v1/nodes/$NODE_NAME") || die "cannot read nodes" kube-apiserver
  if grep -qF '"kind":"Node"' <<<"$node" && ! grep -qF "\"kubeletEndpoint\":{\"Port\":$KWOK_PORT}" <<<"$node"; then
    log "recreating node $NODE_NAME (stale kubelet endpoint)"
    api DELETE "/api/v1/nodes/$NODE_NAME" >/dev/null
    node=
    for _ in $(seq 20); do
      api GET "/api/v1/nodes/$NODE_NAME" | grep -qF '"kind":"Node"' || break
      sleep 0.5
    done
  fi
  if ! grep -qF '"kind":"Node"' <<<"$node"; then
    log "creating node $NODE_NAME"
    out=$(api POST /api/v1/nodes -H 'Content-Type: application/json' -d @- <<EOF
{
  "apiVersion": "v1",
  "kind": "Node",
  "metadata": {
    "name": "$NODE_NAME",
    "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
    "labels": {
      "kubernetes.io/hostname": "$NODE_NAME",
      "kubernetes.io/os": "linux",
      "kubernetes.io/arch": "amd64",
      "node-role.kubernetes.io/agent": "",
      "type": "kwok"
    }
  },
  "status": {
    "capacity": {"cpu": "32", "memory": "256Gi", "pods": "1000", "ephemeral-storage": "1Ti"},
    "allocatable": {"cpu": "32", "memory": "256Gi", "pods": "1000", "ephemeral-storage": "1Ti"}
  }
}
EOF
    ) || die "creating the node failed: $out" kube-apiserver
    grep -qF '"kind":"Node"' <<<"$out" || die "creating the node failed: $out" kube-apiserver
  fi
}
node_untainted() { node_ready untainted; }
sa_ok() { api GET /api/v1/namespaces/default/serviceaccounts/default | grep -qF '"kind":"ServiceAccount"'; }

# The apiservers (the slowest) start together, then each cluster's clients, then the nodes.
for n in $(seq 1 "$CLUSTERS"); do use_cluster "$n"; start_apiserver; done
for n in $(seq 1 "$CLUSTERS"); do
  use_cluster "$n"
  wait_for 120 "kube-apiserver /readyz (cluster $n)" kube-apiserver apiserver_ready
  start_clients
done
for n in $(seq 1 "$CLUSTERS"); do
  use_cluster "$n"
  wait_for 30 "kwok /healthz (cluster $n)" kwok kwok_ok
  ensure_node
done
for n in $(seq 1 "$CLUSTERS"); do
  use_cluster "$n"
  wait_for 120 "node $NODE_NAME Ready and untainted" "kwok kube-controller-manager" node_untainted
  wait_for 60 "ServiceAccount default/default (cluster $n)" kube-controller-manager sa_ok
done
use_cluster 1

if [ "$CLUSTERS" -gt 1 ]; then
  wait "$CLI_BUILD" || { cat "$LOGS/sealane-build.log" >&2; die "building the sealane CLI failed"; }
  register_clusters
  log "up in $(($(date +%s) - START))s: $CLUSTERS clusters, https://127.0.0.1:$BASE_APISERVER_PORT..$((BASE_APISERVER_PORT + CLUSTERS - 1)) (kubeconfig below)"
else
  log "up in $(($(date +%s) - START))s: https://127.0.0.1:$APISERVER_PORT (kubeconfig below)"
fi
echo "$KUBECONFIG_FILE"
