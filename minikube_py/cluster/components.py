"""Run the controller-manager, the scheduler, a kubelet, a proxy or cluster DNS as a child
process (tests, benchmarks, the launcher).

Each takes a kubeconfig, talks only to the API server, and answers /healthz on a port of
its own; they differ in the module that runs and its flags.
"""

from __future__ import annotations

import asyncio
import ssl
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, ClassVar

from minikube_py.cluster.certs import FrontProxy
from minikube_py.process import LOOPBACK, ComponentProcess, ComponentProcessError, free_port


def kind_of(name: str) -> str:
    """The component a launcher's process name stands for: node-2/kubelet -> kubelet."""
    return name.rpartition("/")[2]


class ClientComponentProcessError(ComponentProcessError):
    """The component could not be started, or did not answer /healthz in time."""


class ClientComponentProcess(ComponentProcess):
    """`python -m <module> --kubeconfig F --bind-address A --port N ...`.

    A node's component runs in the node's network namespace (`netns`) and serves on the
    node's address; the others serve on loopback."""

    module: ClassVar[str]
    error = ClientComponentProcessError

    def __init__(self, kubeconfig: Path, log_path: Path, *, port: int | None = None,
                 pid_file: Path | None = None, extra_args: tuple[str, ...] = (),
                 start_timeout: float = 30.0, stop_timeout: float = 10.0,
                 address: str = LOOPBACK, netns: Path | None = None) -> None:
        super().__init__(log_path, start_timeout=start_timeout, stop_timeout=stop_timeout,
                         pid_file=pid_file, netns=netns, address=address)
        self.kubeconfig = kubeconfig
        self.port = port or free_port()
        self.extra_args = extra_args

    @property
    def url(self) -> str:
        """Where /healthz answers."""
        return f"http://{self.address}:{self.port}"

    def command(self) -> list[str]:
        return [sys.executable, "-m", self.module, f"--kubeconfig={self.kubeconfig}",
                f"--bind-address={self.address}", f"--port={self.port}", *self.extra_args]

    def ports(self) -> list[int]:
        return [self.port]

    async def serving(self) -> bool:
        """/healthz answers ok."""
        return await asyncio.to_thread(self.healthy)

    def healthy(self) -> bool:
        return healthz_ok(self.url)


def healthz_ok(url: str, tls: ssl.SSLContext | None = None) -> bool:
    """GET <url>/healthz answers 200 (an https url with `tls`)."""
    try:
        with urllib.request.urlopen(f"{url}/healthz", timeout=2, context=tls) as answer:
            return answer.status == 200
    except (urllib.error.URLError, OSError):
        return False


class ControllerManagerProcess(ClientComponentProcess):
    component = "the controller-manager"
    module = "minikube_py.controllers"


class SchedulerProcess(ClientComponentProcess):
    component = "the scheduler"
    module = "minikube_py.scheduler"


class KubeletProcess(ClientComponentProcess):
    """`python -m minikube_py.kubelet` for one node; /healthz is on the kubelet's port, or
    on healthz_port when its API is secured (upstream's 10248, plain HTTP)."""

    component = "the kubelet"
    module = "minikube_py.kubelet"

    def __init__(self, kubeconfig: Path, log_path: Path, *, node_name: str,
                 runtime_endpoint: str, root_dir: Path, pod_cidr: str,
                 node_ip: str = LOOPBACK, healthz_port: int | None = None,
                 bootstrap_kubeconfig: Path | None = None, **options: Any) -> None:
        """`bootstrap_kubeconfig`: the kubelet earns its client certificate (written to
        `kubeconfig`) with this one's bootstrap token, and renews it.
        `options`: those of every ClientComponentProcess (port, pid_file, ...)."""
        super().__init__(kubeconfig, log_path, **options)
        self.healthz_port = healthz_port
        self.bootstrap_kubeconfig = bootstrap_kubeconfig
        self.node_name = node_name
        self.runtime_endpoint = runtime_endpoint
        self.root_dir = root_dir
        self.pod_cidr = pod_cidr
        self.node_ip = node_ip

    def command(self) -> list[str]:
        return [sys.executable, "-m", self.module, f"--kubeconfig={self.kubeconfig}",
                f"--node-name={self.node_name}",
                f"--container-runtime-endpoint={self.runtime_endpoint}",
                f"--root-dir={self.root_dir}", f"--pod-cidr={self.pod_cidr}",
                f"--node-ip={self.node_ip}", f"--address={self.address}", f"--port={self.port}",
                *((f"--healthz-port={self.healthz_port}",) if self.healthz_port else ()),
                *((f"--bootstrap-kubeconfig={self.bootstrap_kubeconfig}",
                   "--rotate-certificates") if self.bootstrap_kubeconfig else ()),
                *self.extra_args]

    @property
    def url(self) -> str:
        return f"http://{self.address}:{self.healthz_port or self.port}"

    def ports(self) -> list[int]:
        return [self.port, *([self.healthz_port] if self.healthz_port else [])]


class HollowNodesProcess(ClientComponentProcess):
    """`python -m minikube_py.kubelet --simulate M`: M hollow nodes (hollow-node-0 ...)
    in one process, for scheduling at scale; /healthz on its port."""

    component = "the hollow nodes"
    module = "minikube_py.kubelet"

    def __init__(self, kubeconfig: Path, log_path: Path, *, count: int,
                 token_file: Path | None = None, **options: Any) -> None:
        """`token_file`: each node's bearer token, as `--simulated-token-file` reads it
        (the kubeconfig's user stays the shared informers').
        `options`: those of every ClientComponentProcess (port, pid_file, ...)."""
        super().__init__(kubeconfig, log_path, **options)
        self.count = count
        self.token_file = token_file

    def command(self) -> list[str]:
        return [sys.executable, "-m", self.module, f"--kubeconfig={self.kubeconfig}",
                f"--simulate={self.count}", "--node-name=hollow-node",
                *((f"--simulated-token-file={self.token_file}",) if self.token_file else ()),
                f"--address={self.address}", f"--port={self.port}", *self.extra_args]


class ProxyProcess(ClientComponentProcess):
    """`python -m minikube_py.proxy` for one node: /healthz on the health port, /metrics
    on the metrics port (kube-proxy's two addresses)."""

    component = "the proxy"
    module = "minikube_py.proxy"

    def __init__(self, kubeconfig: Path, log_path: Path, *, node_name: str,
                 cluster_cidr: str, metrics_port: int | None = None, **options: Any) -> None:
        """`options`: those of every ClientComponentProcess (port, pid_file, ...)."""
        super().__init__(kubeconfig, log_path, **options)
        self.node_name = node_name
        self.cluster_cidr = cluster_cidr
        self.metrics_port = metrics_port or free_port()

    def command(self) -> list[str]:
        return [sys.executable, "-m", self.module, f"--kubeconfig={self.kubeconfig}",
                f"--hostname-override={self.node_name}",
                f"--cluster-cidr={self.cluster_cidr}",
                f"--healthz-bind-address={self.address}:{self.port}",
                f"--metrics-bind-address={self.address}:{self.metrics_port}", *self.extra_args]

    def ports(self) -> list[int]:
        return [self.port, self.metrics_port]


class MetricsProcess(ClientComponentProcess):
    """`python -m minikube_py.metrics`: metrics-server's role; it serves the metrics API on
    its port and publishes itself at advertise_address for the API server to proxy to."""

    component = "the metrics server"
    module = "minikube_py.metrics"

    def __init__(self, kubeconfig: Path, log_path: Path, *, advertise_address: str,
                 **options: Any) -> None:
        """`options`: those of every ClientComponentProcess (port, pid_file, ...)."""
        super().__init__(kubeconfig, log_path, **options)
        self.advertise_address = advertise_address

    def command(self) -> list[str]:
        return [*super().command(), f"--advertise-address={self.advertise_address}"]


class ProvisionerProcess(ClientComponentProcess):
    """`python -m minikube_py.provisioner`: the local-path provisioner; the nodes' volume
    folders are under nodes_dir (one folder per node)."""

    component = "the local-path provisioner"
    module = "minikube_py.provisioner"

    def __init__(self, kubeconfig: Path, log_path: Path, *, nodes_dir: Path,
                 **options: Any) -> None:
        """`options`: those of every ClientComponentProcess (port, pid_file, ...)."""
        super().__init__(kubeconfig, log_path, **options)
        self.nodes_dir = nodes_dir

    def command(self) -> list[str]:
        return [*super().command(), f"--nodes-dir={self.nodes_dir}"]


class GatewayProcess(ClientComponentProcess):
    """`python -m minikube_py.gateway`: the gateway controller (Ingress and Gateway API);
    its nginx data plane runs as pods. `up` runs it as a Deployment in kube-system
    (kubeadm/addons.py); this runs it beside an API server of a test's own."""

    component = "the gateway controller"
    module = "minikube_py.gateway"


class ClusterAutoscalerProcess(ClientComponentProcess):
    """`python -m minikube_py.autoscaler --cloud-provider=minikube-py`: the cluster
    autoscaler (`up --autoscale-nodes MIN:MAX`), a host process: its node group's nodes
    are network namespaces, which only this machine's root can make. /healthz on its
    port."""

    component = "the cluster autoscaler"
    module = "minikube_py.autoscaler"

    def __init__(self, kubeconfig: Path, log_path: Path, *, nodes: str, cloud_config: Path,
                 **options: Any) -> None:
        """`nodes`: its --nodes MIN:MAX:NAME; `cloud_config`: the cluster's cluster.json.
        `options`: those of every ClientComponentProcess (port, pid_file, ...)."""
        super().__init__(kubeconfig, log_path, **options)
        self.nodes = nodes
        self.cloud_config = cloud_config

    def command(self) -> list[str]:
        return [sys.executable, "-m", self.module, f"--kubeconfig={self.kubeconfig}",
                f"--bind-address={self.address}", f"--port={self.port}", f"--nodes={self.nodes}",
                "--cloud-provider=minikube-py", f"--cloud-config={self.cloud_config}",
                *self.extra_args]


class DashboardProcess(ClientComponentProcess):
    """`python -m minikube_py.dashboard`: the page and its event stream over HTTPS,
    /healthz once its informers have synced. With `front_proxy`, it lets in only that
    CA's proxy certificate (the API server's), and /healthz is asked with it. The
    dashboard add-on runs it as a Deployment (cluster/addons.py); this runs it beside an
    API server of a test's or a benchmark's own."""

    component = "the dashboard"
    module = "minikube_py.dashboard"

    def __init__(self, kubeconfig: Path, log_path: Path, *,
                 front_proxy: FrontProxy | None = None, **options: Any) -> None:
        """`options`: those of every ClientComponentProcess (port, pid_file, ...)."""
        super().__init__(kubeconfig, log_path, **options)
        self.front_proxy = front_proxy

    @property
    def url(self) -> str:
        return f"https://{self.address}:{self.port}"

    def command(self) -> list[str]:
        proxy = self.front_proxy
        return [*super().command(), *((f"--client-ca-file={proxy.ca_file}",
                                       f"--allowed-names={proxy.name}") if proxy else ())]

    def healthy(self) -> bool:
        tls = ssl.create_default_context()
        tls.check_hostname = False
        tls.verify_mode = ssl.CERT_NONE  # its certificate is self-signed
        if self.front_proxy is not None:
            tls.load_cert_chain(self.front_proxy.cert_file, self.front_proxy.key_file)
        return healthz_ok(self.url, tls)


class DNSProcess(ClientComponentProcess):
    """`python -m minikube_py.dns`: answers on dns_address:dns_port (UDP and TCP; every
    address unless told), /healthz and /metrics on the metrics port, and publishes itself
    as the kube-dns Service's endpoint at advertise_address."""

    component = "cluster DNS"
    module = "minikube_py.dns"

    def __init__(self, kubeconfig: Path, log_path: Path, *, dns_port: int,
                 advertise_address: str, service_ip: str, dns_address: str = "0.0.0.0",
                 **options: Any) -> None:
        """`options`: those of every ClientComponentProcess (port, pid_file, ...)."""
        super().__init__(kubeconfig, log_path, **options)
        self.dns_address = dns_address
        self.dns_port = dns_port
        self.advertise_address = advertise_address
        self.service_ip = service_ip

    def command(self) -> list[str]:
        return [sys.executable, "-m", self.module, f"--kubeconfig={self.kubeconfig}",
                f"--bind-address={self.dns_address}", f"--port={self.dns_port}",
                f"--advertise-address={self.advertise_address}",
                f"--service-ip={self.service_ip}",
                f"--metrics-bind-address={self.address}:{self.port}", *self.extra_args]

    def ports(self) -> list[int]:
        return [self.dns_port, self.port]


class TraceReceiverProcess(ComponentProcess):
    """`python -m minikube_py.tracestore`: the OTLP/HTTP endpoint every component sends its
    spans to, kept (bounded, in data_dir) for `mkctl trace`; /healthz on its port."""

    component = "the trace receiver"
    error = ClientComponentProcessError

    def __init__(self, data_dir: Path, log_path: Path, *, port: int,
                 address: str = LOOPBACK, pid_file: Path | None = None,
                 extra_args: tuple[str, ...] = ()) -> None:
        super().__init__(log_path, start_timeout=15.0, stop_timeout=10.0, pid_file=pid_file,
                         address=address)
        self.data_dir = data_dir
        self.port = port
        self.extra_args = extra_args

    @property
    def url(self) -> str:
        return f"http://{self.address}:{self.port}"

    def command(self) -> list[str]:
        return [sys.executable, "-m", "minikube_py.tracestore", f"--data-dir={self.data_dir}",
                f"--bind-address={self.address}", f"--port={self.port}", *self.extra_args]

    def ports(self) -> list[int]:
        return [self.port]

    async def serving(self) -> bool:
        """/healthz answers ok."""
        return await asyncio.to_thread(healthz_ok, self.url)
