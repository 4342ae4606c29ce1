#!/usr/bin/env bash
# A node of docker-compose.yml: containerd and the kubelet in one privileged container, as
# kind's node containers run them (kube-proxy is a DaemonSet's pod on every node; on the
# control-plane node, CONTROL_PLANE=true, the kubelet also runs the static pods).
#
#   1. /sys, the cgroup file systems and /proc/sys writable; under cgroup v2, move this script into a leaf
#      cgroup and delegate the controllers, so that runc may create the pods' containers'
#      cgroups below this container's
#   2. forwarding on, and a route to each other node's pod CIDR through that node
#   3. the control-plane node: its kubelet.conf (kubeadm init's, from the pki service) and
#      the four static pods' manifests (python -m minikube_py.cluster.compose static-pods:
#      kubeadm's etcd and control-plane phases). A worker: kubeadm join, once: discover
#      the cluster with the bootstrap token and the CA's hash and write the kubelet's
#      bootstrap kubeconfig (python -m minikube_py.cluster.compose join); a node that has
#      joined starts again without it
#   4. containerd's config and the CNI network (python -m minikube_py.cluster.compose)
#   5. containerd, then wait until it answers on its socket
#   6. the kubelet, which (a worker's) earns its own client certificate with the bootstrap
#      kubeconfig (and renews it) and serves its API over TLS to the callers the API
#      server allows; when containerd or the kubelet exits, stop the other and exit with
#      its status (the service's restart policy starts the node again)
#
# From docker-compose.yml: NODE_NAME, POD_CIDR (this node's pods), POD_ROUTES
# ("CIDR=NODE_IP ..." for the other nodes' pods), CONTROL_PLANE or (a worker)
# BOOTSTRAP_KUBECONFIG; the pki service's
# share for this node in $CLUSTER_DIR (read-only: the CA, the kubelet's serving
# certificate; on the control-plane node the control plane's files too) and the init
# service's token in $JOIN_DIR. containerd logs to a file in $BASE_DIR (a volume); the
# kubelet logs to the container's output.
set -euo pipefail
# As PID 1, this script gets no signal it does not handle: pass docker's stop on.
trap 'kill -TERM $(jobs -p) 2>/dev/null || true; wait || true; exit 143' TERM INT

: "${NODE_NAME:?docker-compose.yml sets NODE_NAME}"
: "${POD_CIDR:?docker-compose.yml sets POD_CIDR}"
POD_ROUTES="${POD_ROUTES:-}"
# set (to anything) on the control-plane node only
CONTROL_PLANE="${CONTROL_PLANE:-}"
# a worker's: where kubeadm join writes the kubelet's bootstrap kubeconfig (none on the
# control-plane node, whose kubelet starts with kubeadm init's kubelet.conf)
BOOTSTRAP_KUBECONFIG="${BOOTSTRAP_KUBECONFIG:-}"

BASE_DIR=/var/lib/minikube-py/node
CLUSTER_DIR=/var/lib/minikube-py/cluster
JOIN_DIR=/var/lib/minikube-py/join
API_SERVER=https://10.210.0.2:6443
KUBELET_KUBECONFIG="$BASE_DIR/kubelet.conf"
REGISTRY=registry:5000
CLUSTER_DNS=10.96.0.10
# the traces service: the kubelet's and the control plane's spans (mkctl trace)
TRACING_ENDPOINT=http://10.210.0.30:4318
MANIFESTS="$BASE_DIR/manifests"
COMPONENT_IMAGES=/var/lib/minikube-py/component-images
SOCKET="$BASE_DIR/containerd.sock"
NODE_IP="$(ip -4 -o addr show dev eth0 | awk '{split($4, a, "/"); print a[1]; exit}')"
if [[ -z "$NODE_IP" ]]; then
  echo "node.sh: no IPv4 address on eth0 (is the container on docker-compose.yml's network?)" >&2
  exit 1
fi

# 1. runc creates each container's cgroup below this container's. A container that is not
# privileged (compose/unprivileged-nodes.yml) has /sys, its cgroup file systems and
# /proc/sys read-only: remount them writable (forwarding, CNI and the proxy set sysctls).
# Under cgroup v2 a cgroup that holds processes may not enable controllers for its
# children.
awk '$5 ~ "^(/sys|/sys/fs/cgroup(/.*)?|/proc/sys)$" { print $5, $6 }' /proc/self/mountinfo |
  while read -r target options; do
    if [[ ",$options," == *,ro,* ]]; then
      mount -o remount,bind,rw "$target"
    fi
  done
if [[ -f /sys/fs/cgroup/cgroup.controllers ]]; then
  mkdir -p /sys/fs/cgroup/init.scope
  for pid in $(cat /sys/fs/cgroup/cgroup.procs); do
    echo "$pid" >/sys/fs/cgroup/init.scope/cgroup.procs 2>/dev/null || true
  done
  for controller in $(cat /sys/fs/cgroup/cgroup.controllers); do
    echo "+$controller" 2>/dev/null >/sys/fs/cgroup/cgroup.subtree_control \
      || echo "node.sh: cannot delegate the $controller cgroup controller" >&2
  done
fi

# 2. Pods reach the other nodes' pods through those nodes (CNI's bridge masquerades
# what leaves this node, so the answers come back here).
echo 1 >/proc/sys/net/ipv4/ip_forward
for route in $POD_ROUTES; do
  ip route replace "${route%%=*}" via "${route#*=}"
done

# 3. The control-plane node's kubelet starts the API server, so it has no cluster to
# bootstrap from: kubeadm init gives it a kubelet.conf (copied here, where the kubelet
# renews it). kube-proxy's hostPath mounts /lib/modules, which Debian's minbase lacks.
mkdir -p /lib/modules
if [[ -n "$CONTROL_PLANE" ]]; then
  if [[ ! -f "$KUBELET_KUBECONFIG" ]]; then
    install -m 600 "$CLUSTER_DIR/kubeconfigs/$NODE_NAME.conf" "$KUBELET_KUBECONFIG"
  fi
  python -m minikube_py.cluster.compose static-pods --manifest-dir="$MANIFESTS" \
    --advertise-address="$NODE_IP" --cluster-dir="$CLUSTER_DIR" \
    --etcd-data="$BASE_DIR/etcd" --images="$COMPONENT_IMAGES" \
    --tracing-endpoint="$TRACING_ENDPOINT" --load-balancer-range=10.210.0.96-10.210.0.127
# Once a worker's kubelet has its own certificate (its kubeconfig, which it renews), the
# node needs the token no more (it expires after a day).
else
  if [[ ! -f "$KUBELET_KUBECONFIG" ]]; then
    python -m minikube_py.cluster.compose join --server="$API_SERVER" \
      --token-file="$JOIN_DIR/pki/bootstrap-token" --ca-cert="$CLUSTER_DIR/pki/ca.crt" \
      --bootstrap-kubeconfig="$BOOTSTRAP_KUBECONFIG"
  fi
fi

# 4.
python -m minikube_py.cluster.compose runtime-config --node-name="$NODE_NAME" \
  --pod-cidr="$POD_CIDR" --base-dir="$BASE_DIR" --registry="$REGISTRY"

# 5. A socket left by the container's last run would look like a running containerd.
rm -f "$SOCKET" "$SOCKET.ttrpc"
containerd --config="$BASE_DIR/config.toml" >>"$BASE_DIR/containerd.log" 2>&1 &
for _ in $(seq 300); do
  ctr --address="$SOCKET" version >/dev/null 2>&1 && break
  sleep 0.1
done
if ! ctr --address="$SOCKET" version >/dev/null 2>&1; then
  echo "node.sh: containerd did not answer on $SOCKET within 30 s; its log:" >&2
  tail -n 20 "$BASE_DIR/containerd.log" >&2
  exit 1
fi

# 6. A worker's kubelet bootstraps with the token; the control-plane node's runs the static
# pods and registers with the control-plane taint.
python -m minikube_py.kubelet --kubeconfig="$KUBELET_KUBECONFIG" --rotate-certificates \
  ${BOOTSTRAP_KUBECONFIG:+--bootstrap-kubeconfig="$BOOTSTRAP_KUBECONFIG"} \
  ${CONTROL_PLANE:+--pod-manifest-path="$MANIFESTS"} \
  ${CONTROL_PLANE:+--register-with-taints=node-role.kubernetes.io/control-plane:NoSchedule} \
  --node-name="$NODE_NAME" --node-ip="$NODE_IP" --pod-cidr="$POD_CIDR" \
  --container-runtime-endpoint="unix://$SOCKET" --root-dir="$BASE_DIR/kubelet" \
  --cluster-dns="$CLUSTER_DNS" \
  --tls-cert-file="$CLUSTER_DIR/pki/$NODE_NAME/kubelet.crt" \
  --tls-private-key-file="$CLUSTER_DIR/pki/$NODE_NAME/kubelet.key" \
  --client-ca-file="$CLUSTER_DIR/pki/ca.crt" --anonymous-auth=false \
  --authentication-token-webhook --authorization-mode=Webhook \
  --tracing-endpoint="$TRACING_ENDPOINT" --v=2 &

status=0
wait -n || status=$?
echo "node.sh: a process of node $NODE_NAME exited (status $status); stopping the node" >&2
kill -TERM $(jobs -p) 2>/dev/null || true
wait || true
exit "$status"
