"""A secured cluster's certificates and kubeconfigs, laid out as kubeadm lays them out.

`up --secure` makes them once, in the state directory, and keeps them (a cluster's CA
does not change, and the ServiceAccount key signs tokens that must stay good):

    pki/ca.crt, ca.key                      the cluster CA: signs everything below
    pki/apiserver.crt                       the API server's serving certificate: the
                                            kubernetes.default.svc names, 127.0.0.1, the
                                            host of the kubeconfigs' server (the
                                            control-plane node's address) and the
                                            kubernetes Service IP
    pki/apiserver-kubelet-client.crt        how the API server calls kubelets
                                            (CN kube-apiserver-kubelet-client,
                                            O system:masters)
    pki/sa.key                              signs ServiceAccount tokens
    pki/front-proxy-ca.crt                  kubeadm's front-proxy CA: signs only
    pki/front-proxy-client.crt              the API server's proxy certificate
                                            (CN front-proxy-client), shown to https
                                            backends of services/proxy: the dashboard
                                            lets in only that certificate
    pki/etcd/ca.crt, server.crt, peer.crt   etcd's own CA, and its certificates: etcd
                                            serves TLS and lets in only clients of that
                                            CA (--client-cert-auth)
    pki/apiserver-etcd-client.crt           how the API server reaches etcd
    pki/<node>/kubelet.crt                  a kubelet's serving certificate (its address)
    kubeconfigs/<who>.conf                  one identity each, with its own certificate:
        admin            CN kubernetes-admin, O system:masters   (also ./kubeconfig)
        controller-manager  CN system:kube-controller-manager
        scheduler        CN system:kube-scheduler
        proxy            CN system:kube-proxy
        dns              CN system:kube-dns
        metrics          CN system:metrics-server
        cluster-autoscaler  CN cluster-autoscaler (`up --autoscale-nodes`)
    kubeconfigs/control-plane.conf          the control-plane node's kubelet (`up --layout
                                            kubeadm`): CN system:node:control-plane, issued
                                            at once, as kubeadm init's kubelet.conf
    kubeconfigs/<node>-bootstrap.conf       a node's bootstrap token (cluster/join.py);
                                            its kubelet earns CN system:node:<node>,
                                            O system:nodes with it and writes
                                            kubeconfigs/<node>.conf
    pki/bootstrap-token                     that token, while it is good (24 hours)

The roles each identity gets are the bootstrap roles the API server creates
(apiserver/auth/bootstrappolicy.py), and for DNS, metrics and the cluster autoscaler those
`up` creates (roles.py); kubeconfigs embed their certificates, as kubeadm's do,
so that one can be copied elsewhere.
"""

from __future__ import annotations

import base64
import ipaddress
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import yaml

from minikube_py.apiserver.storage.etcd import EtcdTLS
from minikube_py.cluster.etcd import EtcdServingTLS
from minikube_py.cluster.kubeconfig import CLUSTER_NAME
from minikube_py.process import LOOPBACK
from minikube_py.security import pki

ADMIN = ("kubernetes-admin", ("system:masters",))
IDENTITIES: dict[str, tuple[str, tuple[str, ...]]] = {
    "admin": ADMIN,
    "controller-manager": ("system:kube-controller-manager", ()),
    "scheduler": ("system:kube-scheduler", ()),
    "proxy": ("system:kube-proxy", ()),
    "dns": ("system:kube-dns", ()),
    "metrics": ("system:metrics-server", ()),
    "cluster-autoscaler": ("cluster-autoscaler", ()),
}
KUBELET_CLIENT = ("kube-apiserver-kubelet-client", ("system:masters",))
FRONT_PROXY_CLIENT = "front-proxy-client"
"""The CN of the API server's proxy certificate (kubeadm's), which the dashboard lets in."""
KUBERNETES_SERVICE_IP = "10.96.0.1"
"""The kubernetes Service's ClusterIP (the first of 10.96.0.0/12): where pods reach the
API server."""


def apiserver_sans(server_url: str, addresses: tuple[str, ...]
                   ) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The API server certificate's DNS names and IP addresses, as kubeadm lists them:
    the kubernetes Service's names and localhost; loopback, the kubernetes Service IP and
    `addresses`; and the host of `server_url`, where the kubeconfigs point (a name or an
    address)."""
    host = urlsplit(server_url).hostname or LOOPBACK
    try:
        ipaddress.ip_address(host)
    except ValueError:
        names: tuple[str, ...] = (host,)
    else:
        names, addresses = (), (*addresses, host)
    return (tuple(dict.fromkeys((*pki.apiserver_names(), *names))),
            tuple(dict.fromkeys((LOOPBACK, *addresses, KUBERNETES_SERVICE_IP))))


@dataclass(frozen=True)
class FrontProxy:
    """kubeadm's front-proxy CA and the one certificate it signs, the API server's proxy's
    (CN front-proxy-client): a backend that trusts only that CA lets in only the API
    server's proxy."""

    ca_file: Path
    cert_file: Path
    key_file: Path
    name: str = FRONT_PROXY_CLIENT


@dataclass(frozen=True)
class ClusterCertificates:
    """The files under one state directory; `ensure` makes what is missing."""

    state: Path

    @property
    def pki(self) -> Path:
        return self.state / "pki"

    @property
    def ca_file(self) -> Path:
        return self.pki / "ca.crt"

    @property
    def service_account_key(self) -> Path:
        return self.pki / "sa.key"

    def file(self, name: str) -> Path:
        return self.pki / name

    def kubeconfig(self, who: str) -> Path:
        return self.state / "kubeconfigs" / f"{who}.conf"

    def bootstrap_kubeconfig(self, node: str) -> Path:
        """The node's --bootstrap-kubeconfig: the token it joins with (kubeadm's
        bootstrap-kubelet.conf); its kubelet writes kubeconfigs/<node>.conf itself."""
        return self.state / "kubeconfigs" / f"{node}-bootstrap.conf"

    @property
    def etcd_pki(self) -> Path:
        return self.pki / "etcd"

    def etcd_tls(self) -> EtcdServingTLS:
        """etcd's TLS (its own CA, as kubeadm's pki/etcd/), with the readiness checks'
        client certificate."""
        etcd = self.etcd_pki
        return EtcdServingTLS(
            etcd / "ca.crt", etcd / "server.crt", etcd / "server.key", etcd / "peer.crt",
            etcd / "peer.key", EtcdTLS(str(etcd / "ca.crt"),
                                       str(etcd / "healthcheck-client.crt"),
                                       str(etcd / "healthcheck-client.key")))

    def apiserver_etcd_flags(self) -> tuple[str, ...]:
        """How the API server reaches etcd: its client certificate of etcd's CA."""
        return (f"--etcd-cafile={self.etcd_pki / 'ca.crt'}",
                f"--etcd-certfile={self.file('apiserver-etcd-client.crt')}",
                f"--etcd-keyfile={self.file('apiserver-etcd-client.key')}")

    def kubelet_serving(self, node: str) -> tuple[Path, Path]:
        return self.pki / node / "kubelet.crt", self.pki / node / "kubelet.key"

    def ensure(self, server_url: str, addresses: tuple[str, ...],
               nodes: dict[str, str]) -> None:
        """The CA, the server's certificates, the ServiceAccount key, a kubeconfig per
        identity (pointing at server_url) and each node's (`nodes`: name -> address).
        `addresses`: where else clients reach the API server (apiserver_sans)."""
        self.pki.mkdir(parents=True, exist_ok=True, mode=0o700)
        ca = self._ca()
        dns_names, ip_addresses = apiserver_sans(server_url, addresses)
        self._issue(ca, "apiserver", "kube-apiserver", dns_names=dns_names,
                    ip_addresses=ip_addresses, server=True)
        self._issue(ca, "apiserver-kubelet-client", KUBELET_CLIENT[0],
                    organizations=KUBELET_CLIENT[1], client=True)
        self._ensure_front_proxy()
        if not self.service_account_key.exists():
            # only its key is used: the API server signs and checks tokens with it
            pki.issue(ca, "service-accounts", client=True).write(self.pki, "sa-pair")
            (self.pki / "sa-pair.key").replace(self.service_account_key)
            (self.pki / "sa-pair.crt").unlink()
        for who in IDENTITIES:  # fresh at every `up`: same CA
            self.issue_kubeconfig(who, server_url, ca)
        self._ensure_etcd()
        for node, address in nodes.items():
            cert, _ = self.kubelet_serving(node)
            if not cert.exists():
                (self.pki / node).mkdir(exist_ok=True)
                pki.issue(ca, node, dns_names=(node,), ip_addresses=(address,),
                          server=True).write(self.pki / node, "kubelet")

    def issue_kubeconfig(self, who: str, server_url: str, ca: pki.KeyPair | None = None
                         ) -> Path:
        """A new certificate and kubeconfig for one of IDENTITIES."""
        user, groups = IDENTITIES[who]
        self._write_kubeconfig(who, server_url, pki.issue(
            ca or self._ca(), user, organizations=groups, client=True))
        return self.kubeconfig(who)

    def ensure_node_kubeconfig(self, node: str, server_url: str) -> Path:
        """kubeadm init's kubelet.conf for the node it runs on: CN system:node:<node>,
        O system:nodes, issued directly (that kubelet has no cluster to bootstrap from
        yet: it starts the API server)."""
        self._write_kubeconfig(node, server_url, pki.issue(
            self._ca(), f"system:node:{node}", organizations=("system:nodes",), client=True))
        return self.kubeconfig(node)

    def front_proxy(self) -> FrontProxy:
        return FrontProxy(self.file("front-proxy-ca.crt"), self.file("front-proxy-client.crt"),
                          self.file("front-proxy-client.key"))

    def front_proxy_flags(self) -> tuple[str, ...]:
        """What the API server shows its proxies' https backends (kubeadm's flags)."""
        proxy = self.front_proxy()
        return (f"--proxy-client-cert-file={proxy.cert_file}",
                f"--proxy-client-key-file={proxy.key_file}")

    def _ensure_front_proxy(self) -> None:
        """kubeadm's `init phase certs front-proxy-ca` and `front-proxy-client`."""
        if (self.pki / "front-proxy-ca.crt").exists():
            ca = pki.KeyPair.read(self.pki, "front-proxy-ca")
        else:
            ca = pki.new_ca("front-proxy-ca")
            ca.write(self.pki, "front-proxy-ca")
        self._issue(ca, "front-proxy-client", FRONT_PROXY_CLIENT, client=True)

    def _ensure_etcd(self) -> None:
        """etcd's CA; its serving, peer and health-check certificates; the API server's
        client certificate for it (kubeadm's `init phase certs etcd-*`)."""
        etcd = self.etcd_pki
        etcd.mkdir(parents=True, exist_ok=True, mode=0o700)
        if (etcd / "ca.crt").exists():
            ca = pki.KeyPair.read(etcd, "ca")
        else:
            ca = pki.new_ca("etcd-ca")
            ca.write(etcd, "ca")
        names = {"dns_names": ("localhost",), "ip_addresses": (LOOPBACK,)}
        for name, common_name, options in (
                ("server", "minikube-py", {**names, "server": True, "client": True}),
                ("peer", "minikube-py", {**names, "server": True, "client": True}),
                ("healthcheck-client", "kube-etcd-healthcheck-client", {"client": True})):
            if not (etcd / f"{name}.crt").exists():
                pki.issue(ca, common_name, **options).write(etcd, name)  # type: ignore[arg-type]
        self._issue(ca, "apiserver-etcd-client", "kube-apiserver-etcd-client", client=True)

    def _ca(self) -> pki.KeyPair:
        if self.ca_file.exists():
            return pki.KeyPair.read(self.pki, "ca")
        ca = pki.new_ca("kubernetes")
        ca.write(self.pki, "ca")
        return ca

    def _issue(self, ca: pki.KeyPair, name: str, common_name: str, **options: object) -> None:
        if not (self.pki / f"{name}.crt").exists():
            pki.issue(ca, common_name, **options).write(self.pki, name)  # type: ignore[arg-type]

    def _write_kubeconfig(self, who: str, server_url: str, cert: pki.KeyPair) -> None:
        def data(pem: bytes) -> str:
            return base64.b64encode(pem).decode()

        document = {
            "apiVersion": "v1", "kind": "Config", "current-context": CLUSTER_NAME,
            "clusters": [{"name": CLUSTER_NAME, "cluster": {
                "server": server_url,
                "certificate-authority-data": data(self.ca_file.read_bytes())}}],
            "users": [{"name": who, "user": {"client-certificate-data": data(cert.cert_pem),
                                             "client-key-data": data(cert.key_pem)}}],
            "contexts": [{"name": CLUSTER_NAME, "context": {
                "cluster": CLUSTER_NAME, "user": who, "namespace": "default"}}],
            "preferences": {},
        }
        path = self.kubeconfig(who)
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(yaml.safe_dump(document, sort_keys=False))
        tmp.chmod(0o600)
        tmp.replace(path)
