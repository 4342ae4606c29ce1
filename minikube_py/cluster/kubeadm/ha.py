"""`minikube-py up --ha`: three control-plane nodes behind haproxy, as kubeadm builds a
highly available cluster with stacked etcd (kubeadm's "Creating Highly Available
Clusters with kubeadm", `kubeadm init --control-plane-endpoint` then `kubeadm join
--control-plane` twice).

    node             address       runs (static pods, from nodes/<node>/manifests/)
    control-plane    172.18.0.10   etcd member, kube-apiserver, controller-manager, scheduler
    control-plane2   172.18.0.9    the same
    control-plane3   172.18.0.8    the same
    (this machine)   172.18.0.1    haproxy: the control-plane endpoint, in every kubeconfig

(the addresses on the default node network; on another, the same hosts of its range, and
the ports the cluster took, kept in cluster.json). The names are kind's
(`kind-control-plane`, `kind-control-plane2`, ...). What each node keeps of its own, as
kubeadm's join --control-plane makes it there:

    nodes/<node>/pki/etcd/   etcd's CA (shared) and the member's own server and peer
                             certificates (CN the node, SANs its name, its address,
                             localhost, 127.0.0.1), kubeadm's `certs etcd-server` and
                             `etcd-peer` phases run on that node
    nodes/<node>/etcd/       the member's data
    kubeconfigs/<node>.conf  its kubelet's identity, issued at once as kubeadm's
                             kubelet.conf (its kubelet starts the static pods)

The rest of the pki (the cluster CA, the ServiceAccount key, the API server's certificate,
which names every node's address and haproxy's) is the one copy kubeadm's upload-certs
hands to the joining nodes. The controller-managers and schedulers elect a leader
(their Leases in kube-system); the API servers keep the `kubernetes` Service's endpoints
(the lease reconciler, apiserver/registry/lease_reconciler.py).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from minikube_py.cluster.certs import ClusterCertificates
from minikube_py.process import LOOPBACK
from minikube_py.security import pki

CONTROL_PLANES = ("control-plane", "control-plane2", "control-plane3")
"""The control-plane nodes of `up --ha`, in kubeadm's order of joining them."""
SHARED_ETCD_FILES = ("ca.crt", "healthcheck-client.crt", "healthcheck-client.key")


def node_dir(state: Path, node: str) -> Path:
    return state / "nodes" / node


def member_pki(state: Path, node: str) -> Path:
    """The node's /etc/kubernetes/pki/etcd."""
    return node_dir(state, node) / "pki" / "etcd"


def member_data(state: Path, node: str) -> Path:
    """The node's /var/lib/etcd."""
    return node_dir(state, node) / "etcd"


def ensure_member_pki(certs: ClusterCertificates, node: str, address: str) -> Path:
    """kubeadm's etcd certificate phases on a control-plane node: the shared etcd CA
    (and health-check client) copied, the member's server and peer certificates issued
    for its name and address (kept when there)."""
    folder = member_pki(certs.state, node)
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    for name in SHARED_ETCD_FILES:
        shutil.copyfile(certs.etcd_pki / name, folder / name)
    ca = pki.KeyPair.read(certs.etcd_pki, "ca")
    for name in ("server", "peer"):
        if not (folder / f"{name}.crt").exists():
            pki.issue(ca, node, dns_names=(node, "localhost"),
                      ip_addresses=(address, LOOPBACK), server=True, client=True
                      ).write(folder, name)
    return folder
