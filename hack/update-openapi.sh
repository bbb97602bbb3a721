#!/usr/bin/env bash
# Regenerates the Kubernetes OpenAPI v2 schema embedded in pkg/validate for offline validation
# (`sealane render`): pkg/validate/schema/kubernetes.pb.gz and kubernetes-version.txt.
#
#   hack/update-openapi.sh                        # from the local sandbox (started if needed)
#   hack/update-openapi.sh --kubeconfig FILE      # from another cluster
#   K8S_VERSION=v1.35.0 hack/update-openapi.sh    # record this version instead of the detected one
#
# The schema is fetched from the cluster's /openapi/v2 as protobuf; only definitions of the
# built-in API groups are kept (CRDs installed in the cluster are dropped), and paths,
# descriptions, defaults and vendor extensions other than x-kubernetes-group-version-kind are
# stripped, so the file stays small (~30 KB) and parses in milliseconds. The work is done by
# pkg/validate/internal/openapigen; output is deterministic, so re-running against the same
# Kubernetes version leaves git clean.
#
# With the sandbox (the default) the version recorded is hack/sandbox/build.sh's K8S_VERSION,
# because the sandbox apiserver is built from source and reports v0.0.0-master in /version.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"

kubeconfig=""
while (($# > 0)); do
  case $1 in
    --kubeconfig) kubeconfig=${2:?--kubeconfig needs a file}; shift 2 ;;
    --kubeconfig=*) kubeconfig=${1#--kubeconfig=}; shift ;;
    -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "update-openapi: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

version=${K8S_VERSION:-}
if [[ -z $kubeconfig ]]; then
  # up.sh is a no-op when the sandbox is healthy; its last stdout line is the kubeconfig path.
  kubeconfig=$(make -s sandbox-up | tail -n 1)
  if [[ -z $version ]]; then
    version=$(sed -n 's/^K8S_VERSION=\${K8S_VERSION:-\(v[0-9][^}]*\)}$/\1/p' hack/sandbox/build.sh)
  fi
fi
if [[ ! -f $kubeconfig ]]; then
  echo "update-openapi: kubeconfig $kubeconfig: no such file" >&2
  exit 1
fi

GOWORK=off go run ./pkg/validate/internal/openapigen \
  -kubeconfig "$kubeconfig" -out pkg/validate/schema ${version:+-version "$version"}
