#!/usr/bin/env bash
# Runs the chaos suite (test/chaos) N times in a row, each run with a fresh random seed, and
# prints every seed with its result. A failing run's output is kept in $SOAK_DIR (replay it
# with SEALANE_CHAOS_SEED=<seed> go test -run <test> ./test/chaos). Exit status: the number of
# failed runs (0: all passed). Needs the sandbox cluster (make sandbox-up).
set -uo pipefail
cd "$(dirname "$0")/.."
N=${N:-20}
SOAK_DIR=${SOAK_DIR:-$(mktemp -d -t sealane-chaos-soak.XXXXXX)}
mkdir -p "$SOAK_DIR"
export PATH="$HOME/.cache/sealane/bin:$PATH"
export SEALANE_SANDBOX_DIR=${SEALANE_SANDBOX_DIR:-$PWD/.sandbox}
export SEALANE_KUBECONFIG=${SEALANE_KUBECONFIG:-$SEALANE_SANDBOX_DIR/kubeconfig}
if [ ! -f "$SEALANE_KUBECONFIG" ]; then
  echo "chaos soak: no sandbox kubeconfig at $SEALANE_KUBECONFIG: run \`make sandbox-up\`" >&2
  exit 100
fi
echo "chaos soak: $N runs, logs in $SOAK_DIR"
# One build of the CLI and of the test binary for every run.
CGO_ENABLED=0 go build -o "$SOAK_DIR/sealane" ./cmd/sealane || exit 100
go test -c -o "$SOAK_DIR/chaos.test" ./test/chaos || exit 100
export SEALANE_CHAOS_SEALANE="$SOAK_DIR/sealane"
failed=0
for i in $(seq 1 "$N"); do
  seed=$(od -An -N8 -tu8 /dev/urandom | tr -d ' ')
  log="$SOAK_DIR/run-$i-seed-$seed.log"
  start=$(date +%s)
  (cd test/chaos && SEALANE_CHAOS_SEED=$seed "$SOAK_DIR/chaos.test" -test.count=1 -test.timeout=45m -test.v) >"$log" 2>&1
  rc=$?
  took=$(( $(date +%s) - start ))
  if [ $rc -eq 0 ]; then
    echo "run $i/$N seed $seed: PASS (${took}s)"
    rm -f "$log"
  else
    failed=$((failed + 1))
    why=$(grep -E '^\s*--- FAIL' "$log" | tr -s ' ' | tr '\n' ' ')
    [ -n "$why" ] || why="$(tail -n 3 "$log" | tr '\n' ' ') "
    echo "run $i/$N seed $seed: FAIL (${took}s): ${why}log $log"
  fi
done
echo "chaos soak: $((N - failed)) of $N runs passed"
exit $failed
