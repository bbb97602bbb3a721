#!/usr/bin/env bash
# Starts the local sandbox Kubernetes control plane (etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler, kwok as fake kubelet with one fake node).
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

# ---------------------------------------------------------------- fast path
# one up.sh at a time per state dir (e.g. `make -j test demo`)
mkdir -p "$STATE"
exec 9>"$STATE/.up.lock"
flock 9
"$SANDBOX_HACK/build.sh" >&2 || die "build.sh failed"
if sandbox_healthy; then
  log "already up and healthy"
  echo "$KUBECONFIG_FILE"
  exit 0
fi

# Something is missing or broken: stop whatever is left and start all from the state dir
# (etcd data, certificates and the token are reused when present).
"$SANDBOX_HACK/down.sh" >&2

ETCD=$(command -v etcd) || die "etcd not found (build.sh installs etcd-server)"
for b in kube-apiserver kube-controller-manager kube-scheduler kwok; do
  [ -x "$BIN/$b" ] || die "$BIN/$b missing (run build.sh)"
done
for p in "$ETCD_PORT" "$ETCD_PEER_PORT" "$APISERVER_PORT" "$KWOK_PORT"; do
  port_free "$p" || die "port 127.0.0.1:$p is in use by another process (see README.md for the port variables)"
done

# ---------------------------------------------------------------- state dir
mkdir -p "$STATE" "$LOGS" "$RUN" "$STATE/pki/apiserver" "$STATE/kwok" "$STATE/etcd"
chmod 700 "$STATE/pki"
log "state dir $STATE"

# service-account signing key pair
if [ ! -s "$STATE/pki/sa.key" ]; then
  openssl genrsa -out "$STATE/pki/sa.key" 2048 2>/dev/null
  openssl rsa -in "$STATE/pki/sa.key" -pubout -out "$STATE/pki/sa.pub" 2>/dev/null
fi
# self-signed serving pair for kwok's kubelet port (the apiserver does not verify it)
if [ ! -s "$STATE/pki/kwok.key" ]; then
  openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=$NODE_NAME" \
    -addext "subjectAltName=IP:127.0.0.1,DNS:$NODE_NAME,DNS:localhost" \
    -keyout "$STATE/pki/kwok.key" -out "$STATE/pki/kwok.crt" 2>/dev/null
fi
# static admin token
if [ ! -s "$STATE/tokens.csv" ]; then
  echo "$(openssl rand -hex 24),admin,admin,system:masters" >"$STATE/tokens.csv"
  chmod 600 "$STATE/tokens.csv"
fi

cat >"$KUBECONFIG_FILE" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: sandbox
  cluster:
    server: https://127.0.0.1:$APISERVER_PORT
    insecure-skip-tls-verify: true
users:
- name: admin
  user:
    token: $(sandbox_token)
contexts:
- name: sandbox
  context:
    cluster: sandbox
    user: admin
    namespace: default
current-context: sandbox
EOF
chmod 600 "$KUBECONFIG_FILE"

# one small CRI-format log file that kwok serves for every container (kubectl logs)
now() { date -u +%Y-%m-%dT%H:%M:%S.%NZ; }
{
  echo "$(now) stdout F sealane sandbox container started"
  echo "$(now) stdout F this is a fake container run by kwok; no process is running"
  echo "$(now) stdout F level=info msg=\"listening on :8080\""
  echo "$(now) stdout F level=debug msg=\"config loaded\""
  echo "$(now) stdout F level=error msg=\"upstream unavailable, retrying\""
  echo "$(now) stderr F sealane sandbox: example stderr line"
} >"$STATE/kwok/container.log"

# kwok config: its default stages (taken from the kwok module source, since any Stage in
# --config replaces the built-in ones), our own stages, and the ClusterLogs for all pods.
KWOK_DIR=$(cd "$CACHE" && GOWORK=off GOFLAGS=-mod=mod go mod download -json "sigs.k8s.io/kwok@$KWOK_VERSION" |
  sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p')
[ -d "$KWOK_DIR/kustomize/stage" ] || die "kwok $KWOK_VERSION module source not found (go mod download failed?)"
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
  - logsFile: $STATE/kwok/container.log
    follow: true
EOF
} >"$STATE/kwok/kwok.yaml"

# ---------------------------------------------------------------- processes
start etcd "$ETCD" --name sandbox --data-dir "$STATE/etcd" \
  --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
  --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
  --initial-cluster "sandbox=http://127.0.0.1:$ETCD_PEER_PORT" --logger zap --log-level warn
etcd_ok() { curl -sf --max-time 2 "http://127.0.0.1:$ETCD_PORT/health" | grep -q '"health":"true"'; }
wait_for 30 "etcd health" etcd etcd_ok

# WatchList=false: with the gate on, 1.34 turns every watch from resourceVersion "" or "0"
# (kwok's kind) into a watch-list stream, which etcd 3.4 cannot serve; such watches then fail
# at once and clients only catch up on relists with backoff (pods took 10-20 s to start).
start kube-apiserver "$BIN/kube-apiserver" \
  --etcd-servers="http://127.0.0.1:$ETCD_PORT" \
  --bind-address=127.0.0.1 --secure-port="$APISERVER_PORT" \
  --cert-dir="$STATE/pki/apiserver" \
  --service-account-key-file="$STATE/pki/sa.pub" \
  --service-account-signing-key-file="$STATE/pki/sa.key" \
  --service-account-issuer=https://kubernetes.default.svc \
  --token-auth-file="$STATE/tokens.csv" \
  --authorization-mode=RBAC \
  --service-cluster-ip-range=10.0.0.0/16 \
  --allow-privileged=true \
  --kubelet-preferred-address-types=InternalIP \
  --feature-gates=WatchList=false \
  --profiling=false
wait_for 120 "kube-apiserver /readyz" kube-apiserver apiserver_ready

start kube-controller-manager "$BIN/kube-controller-manager" \
  --kubeconfig="$KUBECONFIG_FILE" \
  --authentication-kubeconfig="$KUBECONFIG_FILE" --authorization-kubeconfig="$KUBECONFIG_FILE" \
  --service-account-private-key-file="$STATE/pki/sa.key" \
  --root-ca-file="$STATE/pki/apiserver/apiserver.crt" \
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
  --kubeconfig="$KUBECONFIG_FILE" \
  --leader-elect=false --secure-port=0 \
  --kube-api-qps=1000 --kube-api-burst=2000

start kwok "$BIN/kwok" \
  --kubeconfig="$KUBECONFIG_FILE" \
  --config="$STATE/kwok/kwok.yaml" \
  --manage-all-nodes=false \
  --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake \
  --node-ip=127.0.0.1 --node-port="$KWOK_PORT" --server-address="127.0.0.1:$KWOK_PORT" \
  --tls-cert-file="$STATE/pki/kwok.crt" --tls-private-key-file="$STATE/pki/kwok.key" \
  --cidr=10.244.0.0/16 \
  --node-lease-duration-seconds=40
kwok_ok() { curl -skf --max-time 2 "https://127.0.0.1:$KWOK_PORT/healthz" >/dev/null; }
wait_for 30 "kwok /healthz" kwok kwok_ok

# ---------------------------------------------------------------- the fake node
# Created only now: kwok fills in its addresses and kubelet port when it initializes it.
# A node kept from an earlier run with another kubelet port is recreated.
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

node_untainted() { node_ready untainted; }
wait_for 120 "node $NODE_NAME Ready and untainted" "kwok kube-controller-manager" node_untainted
sa_ok() { api GET /api/v1/namespaces/default/serviceaccounts/default | grep -qF '"kind":"ServiceAccount"'; }
wait_for 60 "ServiceAccount default/default" kube-controller-manager sa_ok

log "up in $(($(date +%s) - START))s: https://127.0.0.1:$APISERVER_PORT (kubeconfig below)"
echo "$KUBECONFIG_FILE"
