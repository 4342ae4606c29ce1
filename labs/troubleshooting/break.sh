#!/usr/bin/env bash
# Breaks the cluster `make up` started, one way at a time, for the troubleshooting lab;
# `fix` undoes whatever was broken.
#
#   break.sh apiserver   stop the API server
#   break.sh node        stop node-2's kubelet: the node goes NotReady
#   break.sh pending     a pod that asks for more CPU than any node has
#   break.sh leader      hand the controller-manager's Lease to another holder
#   break.sh fix         undo all of the above
#
# `minikube-py up` starts a supervisor that restarts a component within a second of its
# death, as systemd's Restart=always does for a kubelet. To make a stop stick, the
# scenarios that stop a component stop the supervisor first; `fix` starts both again.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
MK_HOME=${MINIKUBE_PY_HOME:-$HOME/.minikube-py}
export KUBECONFIG=${KUBECONFIG:-$MK_HOME/kubeconfig}
K="$ROOT/.venv/bin/kubectl"
MINIKUBE_PY="$ROOT/.venv/bin/python -m minikube_py.cluster"
INTRUDER=intruder-on-another-machine

# stop NAME: end the component whose pid file is run/NAME.pid with SIGTERM, as systemctl
# stop does, and wait until it is gone: every component stops within 2 s of SIGTERM.
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

case "${1:-}" in
  apiserver)
    stop supervisor
    stop apiserver
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
    # fails to renew, loses leadership and exits; the supervisor starts it again, and the
    # new one waits for a Lease that does not expire.
    now=$(date -u +%Y-%m-%dT%H:%M:%S.000000Z)
    restarts=$(grep -c "controller-manager is not running" "$MK_HOME/logs/supervisor.log" || true)
    "$K" -n kube-system patch lease kube-controller-manager --type merge -p \
      "{\"spec\": {\"holderIdentity\": \"$INTRUDER\", \"leaseDurationSeconds\": 3600,
                   \"acquireTime\": \"$now\", \"renewTime\": \"$now\"}}"
    echo "waiting for the controller-manager to lose its leadership..."
    for _ in $(seq 60); do
      [ "$(grep -c "controller-manager is not running" "$MK_HOME/logs/supervisor.log")" \
        -gt "$restarts" ] && break
      sleep 0.5
    done
    echo "kube-system/kube-controller-manager is held by $INTRUDER"
    ;;
  fix)
    since=$(date -u +%Y-%m-%dT%H:%M:%S.%6NZ)
    "$K" delete pod hungry --ignore-not-found --grace-period=0 --force 2>/dev/null || true
    if [ -s "$MK_HOME/run/apiserver.pid" ] && kill -0 "$(cat "$MK_HOME/run/apiserver.pid")" \
        2>/dev/null; then
      holder=$("$K" -n kube-system get lease kube-controller-manager \
               -o jsonpath='{.spec.holderIdentity}' 2>/dev/null || true)
      if [ "$holder" = "$INTRUDER" ]; then
        "$K" -n kube-system delete lease kube-controller-manager
      fi
    fi
    # starts whatever does not run (the API server, a kubelet) and the supervisor
    (cd "$ROOT" && $MINIKUBE_PY up >/dev/null)
    "$K" wait --for=condition=Ready node --all --timeout=90s
    # A leader that could not renew its Lease while the API server was away may still run
    # when `up` looks, and exit a moment later (the supervisor then starts it again): the
    # cluster is whole once each leader has renewed its Lease since the fix began.
    for lease in kube-controller-manager kube-scheduler; do
      for _ in $(seq 120); do
        renewed=$("$K" -n kube-system get lease "$lease" -o jsonpath='{.spec.renewTime}' \
                  2>/dev/null || true)
        [[ "$renewed" > "$since" ]] && break
        sleep 0.5
      done
      if [[ ! "$renewed" > "$since" ]]; then
        echo "no $lease leader has renewed its Lease in 60 s: see \`minikube-py logs ${lease#kube-}\`" >&2
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
