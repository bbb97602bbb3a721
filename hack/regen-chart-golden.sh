#!/usr/bin/env bash
# Regenerates the golden files of the chart rendering corpus with the real helm CLI.
#
#   hack/regen-chart-golden.sh            # every case
#   hack/regen-chart-golden.sh webapp ... # only these cases
#
# Every case is a chart directory pkg/chart/testdata/corpus/<case>/ holding
# sealane-test.args: the `helm template` arguments, one per line and verbatim (no shell
# quoting); blank lines and lines starting with '#' are skipped ('#!' lines are
# directives for pkg/chart/corpus_test.go). helm runs in the case directory with the
# chart given as ".", so --values and --set-file paths are relative to the chart:
#
#   (cd pkg/chart/testdata/corpus/<case> && helm template <args...> .) > <case>.golden
#
# A case directory without Chart.yaml is a werf-style project with the chart in .helm/:
# helm gets ".helm" as the chart (paths stay relative to the project directory).
#
# <case>.golden is helm's stdout; for a case marked '#!expect-error' it is helm's stderr
# (and helm must fail). helm is $HELM_BIN, else ~/.cache/sealane/bin/helm (built by
# hack/sandbox/build.sh), else helm on PATH -- the order test/e2e uses, plus $HELM_BIN.
# helm runs with empty config/cache/data dirs and no HELM_* or KUBECONFIG settings of
# the caller, so nothing but the arguments can change its output.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
corpus=$repo/pkg/chart/testdata/corpus

helm=${HELM_BIN:-}
if [[ -z $helm ]]; then
  if [[ -x $HOME/.cache/sealane/bin/helm ]]; then
    helm=$HOME/.cache/sealane/bin/helm
  elif command -v helm >/dev/null 2>&1; then
    helm=$(command -v helm)
  else
    echo "regen-chart-golden: no helm binary: run hack/sandbox/build.sh helm (or set HELM_BIN)" >&2
    exit 1
  fi
fi
echo "regen-chart-golden: using $helm ($("$helm" version --short 2>/dev/null || echo unknown version))" >&2

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
while IFS= read -r var; do unset "$var"; done < <(compgen -e | grep '^HELM_' || true)
export HELM_CONFIG_HOME=$tmp/config HELM_CACHE_HOME=$tmp/cache HELM_DATA_HOME=$tmp/data
export KUBECONFIG=$tmp/kubeconfig

if (($# > 0)); then
  cases=("$@")
else
  cases=()
  for f in "$corpus"/*/sealane-test.args; do
    cases+=("$(basename "$(dirname "$f")")")
  done
fi

failed=0
for name in "${cases[@]}"; do
  dir=$corpus/$name
  spec=$dir/sealane-test.args
  if [[ ! -f $spec ]]; then
    echo "regen-chart-golden: $spec: no such file" >&2
    exit 1
  fi
  args=()
  while IFS= read -r line || [[ -n $line ]]; do
    line=${line%$'\r'}
    [[ -z $line || $line == \#* ]] && continue
    args+=("$line")
  done < "$spec"
  expect_error=false
  grep -qx '#!expect-error' "$spec" && expect_error=true

  chart=.
  [[ -f $dir/Chart.yaml ]] || chart=.helm

  echo "(cd pkg/chart/testdata/corpus/$name && helm template ${args[*]@Q} $chart) > $name.golden" >&2
  rc=0
  (cd "$dir" && "$helm" template "${args[@]}" "$chart") > "$tmp/stdout" 2> "$tmp/stderr" || rc=$?
  if $expect_error; then
    if ((rc == 0)); then
      echo "regen-chart-golden: $name: helm succeeded, but the case expects an error" >&2
      failed=1
      continue
    fi
    cp "$tmp/stderr" "$corpus/$name.golden"
  else
    if ((rc != 0)); then
      echo "regen-chart-golden: $name: helm failed (exit $rc):" >&2
      cat "$tmp/stderr" >&2
      failed=1
      continue
    fi
    sed 's/^/  helm stderr: /' "$tmp/stderr" >&2
    cp "$tmp/stdout" "$corpus/$name.golden"
  fi
done
exit $failed
