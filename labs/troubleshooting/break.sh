#!/usr/bin/env bash
# Breaks the troubleshooting lab's cluster (kubeadm's layout), one way at a time; `fix`
# undoes whatever was broken.
#
#   break.sh apiserver   stop the API server's static pod
#   break.sh node        stop node-2's kubelet: the node goes NotReady
#   break.sh pending     a pod that asks for more CPU than any node has
#   break.sh leader      hand the controller-manager's Lease to another holder
#   break.sh fix         undo all of the above
#
# The control plane runs as static pods of the control-plane node's kubelet, as kubeadm
# lays it out: an administrator stops one by moving its manifest out of the kubelet's
# staticPodPath (kubeadm's /etc/kubernetes/manifests, here the node's folder), and starts
# it again by moving it back. The kubelets and containerd run under `minikube-py up`'s
# supervisor, which plays systemd's part (Restart=always): to make a kubelet's stop
# stick, `node` stops the supervisor first; `fix` starts both again.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
MK_HOME=${MINIKUBE_PY_HOME:-$HOME/.minikube-py}
export KUBECONFIG=${KUBECONFIG:-$MK_HOME/kubeconfig}
K="$ROOT/.venv/bin/kubectl"
MINIKUBE_PY="$ROOT/.venv/bin/python -m minikube_py.cluster"
MANIFESTS="$MK_HOME/nodes/control-plane/manifests"
PARKED="$MK_HOME/parked-manifests"  # where a stopped static pod's manifest waits
INTRUDER=intruder-on-another-machine

# stop NAME: end the host process whose pid file is run/NAME.pid with SIGTERM, as
# systemctl stop does, and wait until it is gone: every component stops within 2 s.
stop() {
  local name=$1 pid_file="$MK_HOME/run/$1.pid" pid
  if [ ! -s "$pid_file" ] || ! kill -0 "$(cat "$pid_file")" 2>/dev/null; then
    echo "$name is not running"
    return
  fi
  pid=$(cat "$pid_file")
  kill -TERM "$pid"
  for _ in $(seq 100); do
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "stopped $name"
      return
    fi
    sleep 0.1
  done
  echo "$name (pid $pid) is still running 10 s after SIGTERM" >&2
  exit 1
}

# answers: whether the API server answers its health check (the kubeconfig's address)
answers() {
  "$K" get --raw /healthz >/dev/null 2>&1
}

# restarts: how often the controller-manager's container has been started again
restarts() {
  "$K" -n kube-system get pod kube-controller-manager-control-plane \
    -o jsonpath='{.status.containerStatuses[0].restartCount}'
}

case "${1:-}" in
  apiserver)
    mkdir -p "$PARKED"
    mv "$MANIFESTS/kube-apiserver.yaml" "$PARKED/"
    echo "moved kube-apiserver.yaml out of the kubelet's staticPodPath"
    for _ in $(seq 300); do
      answers || { echo "the kubelet stopped kube-apiserver-control-plane"; exit 0; }
      sleep 0.1
    done
    echo "the API server still answers 30 s after its manifest went" >&2
    exit 1
    ;;
  node)
    stop supervisor
    stop node-2/kubelet
    ;;
  pending)
    "$K" apply -f - <<'EOF'
apiVersion: v1
kind: Pod
metadata:
  name: hungry
spec:
  containers:
  - name: app
    image: registry.k8s.io/pause:3.10
    resources:
      requests:
        cpu: "64"
EOF
    ;;
  leader)
    # A holder that renewed just now and keeps the Lease for an hour: the controller-manager
    # fails to renew, loses leadership and exits; the kubelet starts its container again,
    # and the new one waits for a Lease that does not expire.
    now=$(date -u +%Y-%m-%dT%H:%M:%S.000000Z)
    before=$(restarts)
    "$K" -n kube-system patch lease kube-controller-manager --type merge -p \
      "{\"spec\": {\"holderIdentity\": \"$INTRUDER\", \"leaseDurationSeconds\": 3600,
                   \"acquireTime\": \"$now\", \"renewTime\": \"$now\"}}"
    echo "waiting for the controller-manager to lose its leadership..."
    for _ in $(seq 120); do
      [ "$(restarts)" -gt "$before" ] && break
      sleep 0.5
    done
    echo "kube-system/kube-controller-manager is held by $INTRUDER"
    ;;
  fix)
    since=$(date -u +%Y-%m-%dT%H:%M:%S.%6NZ)
    if [ -f "$PARKED/kube-apiserver.yaml" ]; then
      mv "$PARKED/kube-apiserver.yaml" "$MANIFESTS/"
      for _ in $(seq 1200); do
        answers && break
        sleep 0.1
      done
    fi
    "$K" delete pod hungry --ignore-not-found --grace-period=0 --force 2>/dev/null || true
    holder=$("$K" -n kube-system get lease kube-controller-manager \
             -o jsonpath='{.spec.holderIdentity}' 2>/dev/null || true)
    if [ "$holder" = "$INTRUDER" ]; then
      "$K" -n kube-system delete lease kube-controller-manager
    fi
    # starts whatever host process does not run (a kubelet) and the supervisor
    (cd "$ROOT" && $MINIKUBE_PY up >/dev/null)
    "$K" wait --for=condition=Ready node --all --timeout=90s
    # A leader that could not renew its Lease while the API server was away may still run
    # when `up` looks, and exit a moment later (its kubelet then starts it again): the
    # cluster is whole once each leader has renewed its Lease since the fix began.
    for lease in kube-controller-manager kube-scheduler; do
      for _ in $(seq 240); do
        renewed=$("$K" -n kube-system get lease "$lease" -o jsonpath='{.spec.renewTime}' \
                  2>/dev/null || true)
        [[ "$renewed" > "$since" ]] && break
        sleep 0.5
      done
      if [[ ! "$renewed" > "$since" ]]; then
        echo "no $lease leader has renewed its Lease in 120 s: see \`kubectl logs -n kube-system $lease-control-plane\`" >&2
        exit 1
      fi
    done
    echo "the cluster is whole again"
    ;;
  *)
    echo "usage: $0 apiserver|node|pending|leader|fix" >&2
    exit 2
    ;;
esac
