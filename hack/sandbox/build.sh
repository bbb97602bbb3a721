#!/usr/bin/env bash
# Builds (once, cached) everything the sandbox cluster and the interop tests need:
# kube-apiserver, kube-controller-manager, kube-scheduler (from the k8s.io/kubernetes module),
# kwok (fake kubelet), helm and helm4 (reference CLIs: Helm 3 and Helm 4) and nats-server. Installs etcd from Debian if missing.
# Binaries land in $SEALANE_CACHE/bin (default ~/.cache/sealane/bin). Safe to run repeatedly.
set -euo pipefail

K8S_VERSION=${K8S_VERSION:-v1.34.2}
KWOK_VERSION=${KWOK_VERSION:-v0.7.0}
HELM_VERSION=${HELM_VERSION:-v3.19.2}
HELM4_VERSION=${HELM4_VERSION:-v4.3.1}
NATS_VERSION=${NATS_VERSION:-v2.15.2}
CACHE=${SEALANE_CACHE:-$HOME/.cache/sealane}
BIN=$CACHE/bin
mkdir -p "$BIN"
export GOWORK=off GOFLAGS=-mod=mod

log() { echo "[sandbox-build] $*" >&2; }

need_etcd() {
  if command -v etcd >/dev/null 2>&1; then return; fi
  log "installing etcd-server from Debian"
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO=sudo; fi
  $SUDO apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq etcd-server >/dev/null
  # the package may start a system service on 2379; we run our own on other ports
  (command -v systemctl >/dev/null && $SUDO systemctl disable --now etcd >/dev/null 2>&1) || true
}

# The webhook tests serve real repositories with git-http-backend and git-upload-pack (Debian's
# git package has both).
need_git() {
  if command -v git >/dev/null 2>&1 && [ -x "$(git --exec-path)/git-http-backend" ]; then return; fi
  log "installing git from Debian (git-http-backend for the webhook tests)"
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO=sudo; fi
  $SUDO apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq git >/dev/null
}

# The console's browser tests (test/console) drive Debian's chromium headless with chromedp.
need_chromium() {
  if [ -x /usr/bin/chromium ]; then return; fi
  log "installing chromium from Debian (the console's browser tests)"
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO=sudo; fi
  $SUDO apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
}

# Built from module sources, Kubernetes would report v0.0.0-master; stamp the real version in
# (as a release build does) so that charts' kubeVersion constraints and .Capabilities behave
# as on a real cluster. The -stamped suffix keeps older unstamped builds from being reused.
KUBE_BIN_SUFFIX=$K8S_VERSION-stamped

build_kube() {
  local missing=0
  for c in kube-apiserver kube-controller-manager kube-scheduler; do
    [ -x "$BIN/$c-$KUBE_BIN_SUFFIX" ] || missing=1
  done
  [ $missing = 1 ] || return 0
  local mod=$CACHE/build/k8s-$K8S_VERSION
  mkdir -p "$mod"
  log "building kube-apiserver, kube-controller-manager, kube-scheduler $K8S_VERSION (first time: ~8 min)"
  local gomod
  gomod=$(cd "$mod" && go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
  local stagever=v0${K8S_VERSION#v1}
  {
    echo "module sealane.dev/sandbox-build"
    echo "go 1.24"
    echo "require k8s.io/kubernetes $K8S_VERSION"
    # every staging module kubernetes replaces with ./staging/... gets its published twin
    sed -n '/^replace (/,/^)/p' "$gomod" | awk '/=> \.\/staging/ {print "replace " $1 " => " $1 " '"$stagever"'"}'
  } >"$mod/go.mod"
  cat >"$mod/tools.go" <<'GO'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
)
GO
  (cd "$mod" && go mod tidy -e >/dev/null 2>&1 || true)
  local major minor vpkg=k8s.io/component-base/version
  major=${K8S_VERSION#v}; major=${major%%.*}
  minor=${K8S_VERSION#v*.}; minor=${minor%%.*}
  local ldflags="-X $vpkg.gitVersion=$K8S_VERSION -X $vpkg.gitMajor=$major -X $vpkg.gitMinor=$minor -X $vpkg.gitTreeState=clean"
  for c in kube-apiserver kube-controller-manager kube-scheduler; do
    if [ ! -x "$BIN/$c-$KUBE_BIN_SUFFIX" ]; then
      (cd "$mod" && go build -tags tools -ldflags "$ldflags" -o "$BIN/$c-$KUBE_BIN_SUFFIX.tmp" "k8s.io/kubernetes/cmd/$c")
      mv "$BIN/$c-$KUBE_BIN_SUFFIX.tmp" "$BIN/$c-$KUBE_BIN_SUFFIX"
    fi
    ln -sf "$c-$KUBE_BIN_SUFFIX" "$BIN/$c"
  done
}

go_install() { # name module version [the command's own name, when not name]
  local name=$1 pkg=$2 ver=$3 built=${4:-$1}
  if [ -x "$BIN/$name-$ver" ]; then ln -sf "$name-$ver" "$BIN/$name"; return; fi
  log "building $name $ver"
  GOBIN=$CACHE/build/gobin-$name-$ver go install "$pkg@$ver"
  mv "$CACHE/build/gobin-$name-$ver/$built" "$BIN/$name-$ver"
  ln -sf "$name-$ver" "$BIN/$name"
}

what=${1:-all}
case $what in
  etcd) need_etcd ;;
  kube) build_kube ;;
  kwok) go_install kwok sigs.k8s.io/kwok/cmd/kwok "$KWOK_VERSION" ;;
  helm) go_install helm helm.sh/helm/v3/cmd/helm "$HELM_VERSION" ;;
  helm4) go_install helm4 helm.sh/helm/v4/cmd/helm "$HELM4_VERSION" helm ;;
  nats) go_install nats-server github.com/nats-io/nats-server/v2 "$NATS_VERSION" ;;
  all)
    need_etcd
    need_git
    need_chromium
    build_kube
    go_install kwok sigs.k8s.io/kwok/cmd/kwok "$KWOK_VERSION"
    go_install helm helm.sh/helm/v3/cmd/helm "$HELM_VERSION"
    go_install helm4 helm.sh/helm/v4/cmd/helm "$HELM4_VERSION" helm
    go_install nats-server github.com/nats-io/nats-server/v2 "$NATS_VERSION"
    ;;
  *) echo "usage: $0 [all|etcd|kube|kwok|helm|helm4|nats]" >&2; exit 2 ;;
esac
