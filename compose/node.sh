#!/bin/sh
# A node of docker-compose.yml, as kind's node containers run one: containerd, then the
# proxy and the kubelet, talking only to the API server. Set by the compose file:
# NODE_NAME, NODE_IP, POD_CIDR, and PEER_ROUTES ("CIDR@IP ...": the other nodes' pods).
set -eu
BASE="/var/lib/minikube-py/$NODE_NAME"
PY=/src/.venv/bin/python
KUBECONFIG=/src/compose/kubeconfig

cd /src
$PY compose/node_config.py "$NODE_NAME" "$BASE" "$POD_CIDR" registry:5000
containerd --config "$BASE/config.toml" &
while [ ! -S "$BASE/containerd.sock" ]; do sleep 0.2; done

sysctl -q -w net.ipv4.ip_forward=1
for route in $PEER_ROUTES; do
    ip route replace "${route%@*}" via "${route#*@}"
done

$PY -m minikube_py.proxy --kubeconfig="$KUBECONFIG" --hostname-override="$NODE_NAME" \
    --cluster-cidr=10.244.0.0/16 --healthz-bind-address=0.0.0.0:10256 \
    --metrics-bind-address=0.0.0.0:10249 &
exec $PY -m minikube_py.kubelet --kubeconfig="$KUBECONFIG" --node-name="$NODE_NAME" \
    --container-runtime-endpoint="unix://$BASE/containerd.sock" --root-dir="$BASE/kubelet" \
    --pod-cidr="$POD_CIDR" --node-ip="$NODE_IP" --address=0.0.0.0 --port=10250 \
    --cluster-dns=10.96.0.10
