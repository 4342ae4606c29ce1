"""The control plane's static pods, as kubeadm's phases/controlplane (manifests.go,
volumes.go) and phases/etcd (local.go) write them, starting our processes with the flags
`minikube-py up` gives them (cluster/cli.py components()).

Inside the pods the files are at kubeadm's paths, each mounted from the node's folder
that `HostPaths` names:

    /etc/kubernetes/pki/                  HostPaths.pki
    /etc/kubernetes/pki/etcd/             HostPaths.etcd_pki (pki/etcd/, or with `up --ha`
                                          the member's own, nodes/<node>/pki/etcd/)
    /etc/kubernetes/<component>.conf      HostPaths.kubeconfigs/<component>.conf
    /etc/kubernetes/tracing.yaml          HostPaths.tracing_config
    /var/lib/etcd                         HostPaths.etcd_data
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from minikube_py.api import Obj
from minikube_py.cluster.kubeadm.staticpod import (
    component_pod,
    host_path_volume,
    liveness_probe,
    readiness_probe,
    startup_probe,
    write_static_pod,
)

KUBERNETES_DIR = "/etc/kubernetes"
PKI = f"{KUBERNETES_DIR}/pki"
ETCD_PKI = f"{PKI}/etcd"
ETCD_DATA = "/var/lib/etcd"
TRACING_CONFIG = f"{KUBERNETES_DIR}/tracing.yaml"
LOOPBACK = "127.0.0.1"
ETCD_METRICS_PORT = 2381
ETCD_NAME = "minikube-py"
# kubeadm's CPU (and etcd's memory) requests
REQUESTS = {"etcd": {"cpu": "100m", "memory": "100Mi"}, "kube-apiserver": {"cpu": "250m"},
            "kube-controller-manager": {"cpu": "200m"}, "kube-scheduler": {"cpu": "100m"}}


@dataclass(frozen=True)
class HostPaths:
    """The node's folders that hold what kubeadm keeps under /etc/kubernetes and
    /var/lib/etcd."""

    pki: Path
    kubeconfigs: Path
    etcd_data: Path
    tracing_config: Path
    etcd_pki: Path | None = None
    """etcd's certificates: pki/etcd/, unless a stacked member has its own (`up --ha`)."""


@dataclass(frozen=True)
class EtcdMember:
    """One member of a stacked etcd cluster (`up --ha`): its node's name and address."""

    name: str
    address: str


@dataclass(frozen=True)
class ControlPlane:
    """What the manifests depend on: where the API server listens and is advertised,
    the components' ports (cli.py's DEFAULT_PORTS names), the images per component,
    log verbosity, --extra-config per component, where spans go, the LoadBalancer range;
    with `up --ha`, every control-plane node's etcd member (this node's is the one at the
    advertise address): none, one etcd of its own on loopback."""

    advertise_address: str
    ports: Mapping[str, int]
    images: Mapping[str, str]
    tracing_endpoint: str
    load_balancer_range: str
    verbosity: int = 2
    extra_config: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    etcd_members: tuple[EtcdMember, ...] = ()

    def extra(self, component: str) -> tuple[str, ...]:
        """What --extra-config set for the component (after its own flags: it wins)."""
        return tuple(f"--{flag}={value}"
                     for flag, value in (self.extra_config.get(component) or {}).items())

    @property
    def etcd_client_url(self) -> str:
        return f"https://{LOOPBACK}:{self.ports['etcd-client']}"

    @property
    def etcd_peer_url(self) -> str:
        return self.peer_url(self.advertise_address if self.etcd_members else LOOPBACK)

    def peer_url(self, address: str) -> str:
        return f"https://{address}:{self.ports['etcd-peer']}"

    def client_url(self, address: str) -> str:
        return f"https://{address}:{self.ports['etcd-client']}"

    @property
    def etcd_advertise_client_url(self) -> str:
        """Where clients are told to reach this node's member: its node's address in a
        stacked cluster, loopback for the one member."""
        return (self.client_url(self.advertise_address) if self.etcd_members
                else self.etcd_client_url)

    @property
    def etcd_name(self) -> str:
        """This node's member: its node's name (kubeadm's), else the one member's."""
        return next((member.name for member in self.etcd_members
                     if member.address == self.advertise_address), ETCD_NAME)

    @property
    def etcd_servers(self) -> list[str]:
        """The API server's --etcd-servers: this node's member on loopback first, then the
        other members (kubeadm's stacked etcd names only the local one; with all of
        them, an API server whose member dies moves to another at once instead of
        failing its requests until the load balancer's check takes it out)."""
        return [self.etcd_client_url, *(self.client_url(member.address)
                                        for member in self.etcd_members
                                        if member.address != self.advertise_address)]


def etcd_flags(plane: ControlPlane) -> list[str]:
    """etcd as `up` runs it (TLS with its own CA), with kubeadm's plain-HTTP metrics
    listener on 127.0.0.1:2381 that its probes ask: one member on loopback, or (`up
    --ha`) this node's member of the stacked cluster, serving clients on loopback and
    its node's address, its peers over TLS at its node's address. The members start
    together, each naming all of them (kubeadm adds them one by one, `existing`).

    Raft's Pre-Vote is on, as in the etcd kubeadm runs (3.5 on: `--pre-vote` defaults
    to true; Debian's 3.4 has it off): a member whose election timer fires first asks
    whether it could win before it raises the term. Without it, when the leader dies,
    a follower that still holds the dead leader's lease (it heard a heartbeat less
    than an election timeout ago) ignores the first candidate's vote, then campaigns
    itself at the same term: a split vote, and another 1-2 s election round
    (docs/decisions.md)."""
    client_urls = list(dict.fromkeys((plane.etcd_client_url,
                                      plane.etcd_advertise_client_url)))
    initial_cluster = ",".join(f"{member.name}={plane.peer_url(member.address)}"
                               for member in plane.etcd_members
                               ) or f"{ETCD_NAME}={plane.etcd_peer_url}"
    return [f"--name={plane.etcd_name}", f"--data-dir={ETCD_DATA}",
            f"--listen-client-urls={','.join(client_urls)}",
            f"--advertise-client-urls={plane.etcd_advertise_client_url}",
            f"--listen-peer-urls={plane.etcd_peer_url}",
            f"--initial-advertise-peer-urls={plane.etcd_peer_url}",
            f"--initial-cluster={initial_cluster}",
            "--initial-cluster-state=new", "--pre-vote=true", "--logger=zap",
            "--log-level=warn",
            "--log-outputs=stderr",
            f"--cert-file={ETCD_PKI}/server.crt", f"--key-file={ETCD_PKI}/server.key",
            f"--trusted-ca-file={ETCD_PKI}/ca.crt", "--client-cert-auth=true",
            f"--peer-cert-file={ETCD_PKI}/peer.crt", f"--peer-key-file={ETCD_PKI}/peer.key",
            f"--peer-trusted-ca-file={ETCD_PKI}/ca.crt", "--peer-client-cert-auth=true",
            f"--listen-metrics-urls=http://{LOOPBACK}:{ETCD_METRICS_PORT}"]


def apiserver_flags(plane: ControlPlane) -> list[str]:
    """The API server as `up` runs it: TLS, Node and RBAC authorization, etcd over TLS,
    every request traced. It listens on every address of its node, as kubeadm's (no
    --bind-address: 0.0.0.0), so `curl -k https://127.0.0.1:6443/healthz` answers on
    the node too, and advertises the node's."""
    return [f"--etcd-servers={','.join(plane.etcd_servers)}",
            "--bind-address=0.0.0.0", f"--advertise-address={plane.advertise_address}",
            f"--port={plane.ports['apiserver']}",
            f"--tls-cert-file={PKI}/apiserver.crt",
            f"--tls-private-key-file={PKI}/apiserver.key", f"--client-ca-file={PKI}/ca.crt",
            "--authorization-mode=Node,RBAC", "--enable-admission-plugins=NodeRestriction",
            "--enable-bootstrap-token-auth",
            f"--service-account-signing-key-file={PKI}/sa.key",
            f"--kubelet-client-certificate={PKI}/apiserver-kubelet-client.crt",
            f"--kubelet-client-key={PKI}/apiserver-kubelet-client.key",
            f"--kubelet-certificate-authority={PKI}/ca.crt",
            f"--proxy-client-cert-file={PKI}/front-proxy-client.crt",
            f"--proxy-client-key-file={PKI}/front-proxy-client.key",
            f"--etcd-cafile={ETCD_PKI}/ca.crt",
            f"--etcd-certfile={PKI}/apiserver-etcd-client.crt",
            f"--etcd-keyfile={PKI}/apiserver-etcd-client.key",
            f"--tracing-config-file={TRACING_CONFIG}",
            *plane.extra("apiserver")]


def controller_manager_flags(plane: ControlPlane) -> list[str]:
    """The controller-manager as `up` runs it: leader-elected, each controller its own
    ServiceAccount, signing with the cluster CA."""
    return [f"--kubeconfig={KUBERNETES_DIR}/controller-manager.conf",
            f"--bind-address={LOOPBACK}", f"--port={plane.ports['controller-manager']}",
            "--leader-elect", f"--loadbalancer-ip-range={plane.load_balancer_range}",
            f"--root-ca-file={PKI}/ca.crt", "--use-service-account-credentials",
            f"--cluster-signing-cert-file={PKI}/ca.crt",
            f"--cluster-signing-key-file={PKI}/ca.key",
            "--controllers=*,bootstrapsigner,tokencleaner",
            f"--tracing-endpoint={plane.tracing_endpoint}", f"--v={plane.verbosity}",
            *plane.extra("controller-manager")]


def scheduler_flags(plane: ControlPlane) -> list[str]:
    """The scheduler as `up` runs it: leader-elected, traced."""
    return [f"--kubeconfig={KUBERNETES_DIR}/scheduler.conf", f"--bind-address={LOOPBACK}",
            f"--port={plane.ports['scheduler']}", "--leader-elect",
            f"--tracing-endpoint={plane.tracing_endpoint}", f"--v={plane.verbosity}",
            *plane.extra("scheduler")]


def _container(name: str, plane: ControlPlane, image: str, flags: list[str],
               probes: dict[str, Obj]) -> Obj:
    return {"name": name, "image": plane.images[image], "command": [name, *flags],
            "resources": {"requests": REQUESTS[name]}, **probes}


def etcd_pod(plane: ControlPlane, paths: HostPaths) -> Obj:
    """phases/etcd/local.go: etcd, its data and certificates mounted, probed on its
    metrics listener."""
    health = (LOOPBACK, ETCD_METRICS_PORT, "HTTP")
    volumes = [host_path_volume("etcd-certs", paths.etcd_pki or paths.pki / "etcd", ETCD_PKI,
                                "DirectoryOrCreate", False),
               host_path_volume("etcd-data", paths.etcd_data, ETCD_DATA,
                                "DirectoryOrCreate", False)]
    container = _container("etcd", plane, "etcd", etcd_flags(plane), {
        "livenessProbe": liveness_probe(health[0], "/health?exclude=NOSPACE&serializable=true",
                                        *health[1:]),
        "startupProbe": startup_probe(health[0], "/health?serializable=false", *health[1:])})
    return component_pod(container, volumes, {
        "kubeadm.kubernetes.io/etcd.advertise-client-urls": plane.etcd_advertise_client_url})


def apiserver_pod(plane: ControlPlane, paths: HostPaths) -> Obj:
    """manifests.go's kube-apiserver: probed over HTTPS at the advertise address."""
    health = (plane.advertise_address, plane.ports["apiserver"], "HTTPS")
    volumes = [host_path_volume("k8s-certs", paths.pki, PKI, "DirectoryOrCreate", True),
               host_path_volume("tracing-config", paths.tracing_config, TRACING_CONFIG,
                                "FileOrCreate", True)]
    container = _container("kube-apiserver", plane, "kube-apiserver", apiserver_flags(plane), {
        "livenessProbe": liveness_probe(health[0], "/livez", *health[1:]),
        "readinessProbe": readiness_probe(health[0], "/readyz", *health[1:]),
        "startupProbe": startup_probe(health[0], "/livez", *health[1:])})
    return component_pod(container, volumes, {
        "kubeadm.kubernetes.io/kube-apiserver.advertise-address.endpoint":
            f"{plane.advertise_address}:{plane.ports['apiserver']}"})


def _client_pod(name: str, conf: str, plane: ControlPlane, paths: HostPaths,
                flags: list[str], port: int, readiness: bool) -> Obj:
    """A control-plane client of the API server: its kubeconfig and the pki mounted, its
    plain-HTTP /healthz (ours serve no TLS) on 127.0.0.1 probed."""
    volumes = [host_path_volume("k8s-certs", paths.pki, PKI, "DirectoryOrCreate", True),
               host_path_volume("kubeconfig", paths.kubeconfigs / conf,
                                f"{KUBERNETES_DIR}/{conf}", "FileOrCreate", True)]
    probes = {"livenessProbe": liveness_probe(LOOPBACK, "/healthz", port, "HTTP"),
              "startupProbe": startup_probe(LOOPBACK, "/healthz", port, "HTTP")}
    if readiness:
        probes["readinessProbe"] = readiness_probe(LOOPBACK, "/healthz", port, "HTTP")
    return component_pod(_container(name, plane, name, flags, probes), volumes)


def controller_manager_pod(plane: ControlPlane, paths: HostPaths) -> Obj:
    """manifests.go's kube-controller-manager (liveness and startup probes, as kubeadm)."""
    return _client_pod("kube-controller-manager", "controller-manager.conf", plane, paths,
                       controller_manager_flags(plane), plane.ports["controller-manager"],
                       readiness=False)


def scheduler_pod(plane: ControlPlane, paths: HostPaths) -> Obj:
    """manifests.go's kube-scheduler (liveness, readiness and startup probes, as kubeadm)."""
    return _client_pod("kube-scheduler", "scheduler.conf", plane, paths,
                       scheduler_flags(plane), plane.ports["scheduler"], readiness=True)


def static_pods(plane: ControlPlane, paths: HostPaths) -> list[Obj]:
    """The four static pods, in kubeadm's order of writing them."""
    return [etcd_pod(plane, paths), apiserver_pod(plane, paths),
            controller_manager_pod(plane, paths), scheduler_pod(plane, paths)]


def write_static_pods(manifest_dir: Path, plane: ControlPlane, paths: HostPaths) -> list[Path]:
    """Write the four manifests into the kubelet's --pod-manifest-path, each whole."""
    return [write_static_pod(manifest_dir, pod) for pod in static_pods(plane, paths)]
