"""`minikube-py up | down | status | logs | ssh`: a local cluster on this machine.

The control plane (the registry, etcd, the API server, the controller-manager, the
scheduler, cluster DNS) runs on this machine. Each node is a network namespace mk-node-N
on the bridge mk-br0 (netns.py), with its own containerd, kubelet and proxy inside (it
needs root; see node.py). The control plane listens on the bridge's address, 172.18.0.1,
where the nodes reach it. State lives in ~/.minikube-py (or $MINIKUBE_PY_HOME):

    etcd/                 etcd's data directory
    logs/*.log            one log per control-plane component
    logs/node-N/*.log     the node's containerd, kubelet and proxy
    run/...pid            the running components (run/node-N/ for a node's)
    nodes/node-N/         the node's containerd and kubelet
    images/               the pause image, loaded into every node at its start (all the
                          shipped images are pushed to the registry, where nodes pull
                          them, from ~/.cache/minikube-py, image_command.py's
                          shipped_image_cache, kept past --purge)
    registry/             the image registry's storage (docker.io, registry.k8s.io, localhost)
    cluster.json          the ports in use, the nodes and their pod CIDRs, the add-ons
                          enabled (addons.py)
    kubeconfig            what kubectl and the Python client use
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import ipaddress
import json
import logging
import os
import re
import shutil
import ssl
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from minikube_py.api.autoscaling import NODE_GROUP_LABEL
from minikube_py.client.errors import ClientError, NotFound
from minikube_py.client.kubeconfig import KubeconfigError, load_kubeconfig
from minikube_py.client.logs import setup_logging
from minikube_py.client.rest import Client
from minikube_py.cluster.addons import (
    ADDONS,
    DASHBOARD_IMAGE,
    Dashboard,
    add_addons_command,
    addons_of,
    apply_dashboard,
    remove_dashboard,
)
from minikube_py.cluster.apiserver import APIServerProcess, ServingTLS
from minikube_py.cluster.autoscaled import (
    AUTOSCALED,
    AUTOSCALED_GROUP,
    MAX_AUTOSCALED,
    autoscaled_networks,
    read_autoscaled,
    remove_node_files,
    write_autoscaled,
)
from minikube_py.cluster.certs import ClusterCertificates
from minikube_py.cluster.components import (
    ClusterAutoscalerProcess,
    ControllerManagerProcess,
    DNSProcess,
    HollowNodesProcess,
    KubeletProcess,
    MetricsProcess,
    ProxyProcess,
    SchedulerProcess,
    TraceReceiverProcess,
    kind_of,
)
from minikube_py.cluster.dashboard_command import add_dashboard_command
from minikube_py.cluster.etcd import EtcdProcess
from minikube_py.cluster.etcd_snapshot import add_etcd_bump_revision_command
from minikube_py.cluster.haproxy import HAProxyProcess
from minikube_py.cluster.image_command import add_image_command, push_shipped_images
from minikube_py.cluster.join import (
    SERVING_TIMEOUT,
    approve_serving_certificates,
    join_info,
    join_node,
    publish_cluster_objects,
)
from minikube_py.cluster.join_command import add_join_command
from minikube_py.cluster.kube_system_addons import PROVISIONER, deploy_kube_system_addons
from minikube_py.cluster.kubeadm.addons import CONTROL_PLANE_TAINT, Addons
from minikube_py.cluster.kubeadm.ha import CONTROL_PLANES, ensure_member_pki
from minikube_py.cluster.kubeadm.init import (
    CONTROL_PLANE,
    LAYOUTS,
    InitConfiguration,
    kubelet_nodes,
    manifest_dir,
    run_init,
)
from minikube_py.cluster.kubeconfig import write_kubeconfig
from minikube_py.cluster.netns import (
    DEFAULT_NODE_NETWORK,
    DEFAULT_PREFIX,
    ClusterNetwork,
    NodeNetwork,
    NodeNetworkError,
)
from minikube_py.cluster.node import load_sandbox_image, node_config, remove_kubelet_volumes
from minikube_py.cluster.registry import RegistryProcess, registry_seed
from minikube_py.cluster.runtime_setup import POD_NETWORKS as CLUSTER_CIDR
from minikube_py.cluster.runtime_setup import (
    Containerd,
    ContainerdError,
    ImageLoadError,
    free_pod_cidr,
    runtime_missing,
)
from minikube_py.cluster.ssh import add_ssh_command
from minikube_py.cluster.storage import ensure_default_storage_class
from minikube_py.cluster.supervisor import Supervisor, SupervisorProcess
from minikube_py.cluster.token_command import add_token_command
from minikube_py.cluster.tracestore import publish_trace_receiver
from minikube_py.images.components import (
    ComponentImageError,
    build_and_push_component_images,
    component_image_cache,
)
from minikube_py.images.debian import PackageError
from minikube_py.images.registry import ArchiveError, RegistryError
from minikube_py.process import (
    LOOPBACK,
    ComponentProcess,
    ComponentProcessError,
    free_port,
    names_its_process,
    port_in_use,
)

DEFAULT_PORTS = {"etcd-client": 2379, "etcd-peer": 2380, "apiserver": 6443,
                 "controller-manager": 10257, "scheduler": 10259, "registry": 5000,
                 "dns": 10053, "dns-metrics": 9153, "hollow-nodes": 10251, "metrics": 4443,
                 "tracing": 4318, "cluster-autoscaler": 8085}
NODE_PORTS = {"kubelet": 10250, "kubelet-healthz": 10248, "proxy-healthz": 10256,
              "proxy-metrics": 10249}
"""Upstream's ports, on each node's own address: every node has a network of its own."""
# Started stage by stage (the components of a stage together, on every node); stopped in
# reverse order. A node's component is named node-N/<component>.
STAGES = (("registry", "etcd", "tracing", "haproxy"), ("apiserver",),
          ("controller-manager", "scheduler", "containerd", "proxy", "dns", "metrics"),
          ("kubelet", "hollow-nodes", "cluster-autoscaler"))
COMPONENTS = tuple(name for stage in STAGES for name in stage)
NODE_COMPONENTS = ("containerd", "kubelet", "proxy")
CLUSTER_DNS = "10.96.0.10"
SERVICE_CIDR = "10.96.0.0/12"
LOAD_BALANCER_RANGE = "172.18.255.200-172.18.255.250"
LOAD_BALANCER_ROUTE = "172.18.255.192/26"
"""The Service range and the load balancers' addresses are routed from this machine
through node-1, whose proxy's rules answer them: `curl` a ClusterIP or a LoadBalancer's
address from here works, and no packet to one ever leaves the machine."""


CONFIGURABLE = ("apiserver", "controller-manager", "scheduler", "kubelet", "proxy", "dns",
                "metrics", "cluster-autoscaler")
"""The components whose flags `up --extra-config COMPONENT.FLAG=VALUE` sets."""


def parse_extra_config(settings: list[str]) -> dict[str, dict[str, str]]:
    """`controller-manager.node-monitor-grace-period=10s` ... -> {component: {flag: value}},
    as minikube's --extra-config takes them."""
    parsed: dict[str, dict[str, str]] = {}
    for setting in settings:
        key, equals, value = setting.partition("=")
        component, dot, flag = key.partition(".")
        if not equals or not dot or not flag:
            fail(f"--extra-config wants COMPONENT.FLAG=VALUE, e.g. "
                 f"controller-manager.node-monitor-grace-period=10s, not {setting!r}")
        if component not in CONFIGURABLE:
            fail(f"--extra-config: no component {component!r}; one of: "
                 f"{', '.join(CONFIGURABLE)}")
        parsed.setdefault(component, {})[flag] = value
    return parsed


def parse_autoscale_nodes(text: str) -> tuple[int, int]:
    """`--autoscale-nodes MIN:MAX` -> (MIN, MAX): the cluster autoscaler's node group
    keeps between MIN and MAX nodes of its own (besides node-1 ... node-N)."""
    low, colon, high = text.partition(":")
    try:
        bounds = int(low), int(high)
    except ValueError:
        bounds = (-1, -1)
    if not colon or not 0 <= bounds[0] <= bounds[1] or not 1 <= bounds[1] <= MAX_AUTOSCALED:
        fail(f"--autoscale-nodes wants MIN:MAX with 0 <= MIN <= MAX and 1 <= MAX <= "
             f"{MAX_AUTOSCALED} (the autoscaler's nodes besides node-1 ... node-N), e.g. "
             f"0:2, not {text!r}")
    return bounds


def home() -> Path:
    return Path(os.environ.get("MINIKUBE_PY_HOME", Path.home() / ".minikube-py"))


STARTED_HINT = " (`minikube-py down` removes what did start)"
# where a kubelet keeps its serving pair, under its root (kubelet/certificate.py)
SERVING_PAIR = "kubelet-server-current.pem"
# Where `up` records which home built the node network of each prefix (owner_file).
NETWORK_OWNERS = Path("/run/minikube-py")
# The node network of a new home: its names' prefix and its range (netns.py's defaults,
# mk- on 172.18.0.0/24, without them). A second cluster beside the first one sets both.
NETWORK_PREFIX_ENV = "MINIKUBE_PY_NETWORK_PREFIX"
NODE_NETWORK_ENV = "MINIKUBE_PY_NODE_NETWORK"


def fail(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(1)


def requested_network(state: Path) -> dict[str, str]:
    """The node network a new home's cluster is built on: $MINIKUBE_PY_NETWORK_PREFIX on
    $MINIKUBE_PY_NODE_NETWORK, else mk- on 172.18.0.0/24; a bad value is one line."""
    prefix = os.environ.get(NETWORK_PREFIX_ENV) or DEFAULT_PREFIX
    wanted = os.environ.get(NODE_NETWORK_ENV) or DEFAULT_NODE_NETWORK
    if not re.fullmatch(r"[a-z][a-z0-9]*-", prefix):
        fail(f"{NETWORK_PREFIX_ENV} must be lower-case letters and digits ending in one "
             f"'-' (e.g. mkb-), not {prefix!r}")
    try:
        network = ipaddress.IPv4Network(wanted)
    except ValueError as error:
        fail(f"{NODE_NETWORK_ENV} must be an IPv4 network such as 10.242.0.0/24, not "
             f"{wanted!r}: {error}")
    if network.prefixlen > 24:
        fail(f"{NODE_NETWORK_ENV} {network} is too small: the nodes need a /24 or larger "
             "(the host is .1, the nodes .8 upward)")
    try:
        ClusterNetwork(prefix, str(network))
    except NodeNetworkError as error:
        fail(f"{NETWORK_PREFIX_ENV}: {error}")
    return {"prefix": prefix, "nodeNetwork": str(network)}


def refuse_overlap_with_running(network: ClusterNetwork, state: Path) -> None:
    """Fail when the node network's range overlaps that of another prefix's running
    cluster (each owner file names its home, whose cluster.json has the range)."""
    for owner_of in NETWORK_OWNERS.glob("*owner") if NETWORK_OWNERS.is_dir() else ():
        other_prefix = owner_of.name.removesuffix("owner")
        try:
            other_home = Path(owner_of.read_text().strip())
            saved = json.loads((other_home / "cluster.json").read_text())
            theirs = ClusterNetwork(other_prefix, saved["network"]["nodeNetwork"])
        except (OSError, ValueError, KeyError, TypeError, NodeNetworkError):
            continue
        if (other_prefix != network.prefix and theirs.network.overlaps(network.network)
                and running_owner(theirs, state)):
            fail(f"the node network {network.network} overlaps {theirs.network}, the network "
                 f"of the cluster in {other_home}, which is running: set {NODE_NETWORK_ENV} "
                 "to another range")


def is_default_network(cluster: dict[str, Any]) -> bool:
    """Whether the cluster's nodes are on mk- (a cluster without nodes counts as that)."""
    return (cluster.get("network") or {}).get("prefix", DEFAULT_PREFIX) == DEFAULT_PREFIX


def first_pod_cidr_seed(cluster: dict[str, Any]) -> int:
    """Where the search for free pod CIDRs starts: 10.244.1.0/24 on mk-, and for another
    prefix in the upper half of 10.244.0.0/16 (by its hash), so that two clusters that
    come up at the same moment, before either has routed its pods, do not pick one range."""
    if is_default_network(cluster):
        return 1
    digest = hashlib.sha256(cluster["network"]["prefix"].encode()).digest()
    return 128 + digest[0] % 120


def _cluster(state: Path, verbosity: int, nodes: int | None, simulated_nodes: int | None,
             extra_config: dict[str, dict[str, str]] | None = None,
             secure: bool | None = None, tracing_endpoint: str | None = None,
             layout: str | None = None, ha: bool | None = None,
             autoscale_nodes: tuple[int, int] | None = None) -> dict[str, Any]:
    """This cluster's ports, nodes and their pod CIDRs: chosen once (defaults, else free
    ones) and remembered in cluster.json, with the components' log verbosity (which the
    supervisor's restarts use too), the numbers of nodes and hollow nodes and the extra
    flags (each kept when not given)."""
    saved = state / "cluster.json"
    cluster: dict[str, Any] = json.loads(saved.read_text()) if saved.exists() else {}
    cluster["verbosity"] = verbosity
    if extra_config is not None:
        cluster["extraConfig"] = extra_config
    if simulated_nodes is not None:
        cluster["simulatedNodes"] = simulated_nodes
    if secure is not None:
        cluster["secure"] = secure
    cluster.setdefault("secure", True)
    if layout is not None:
        cluster["layout"] = layout
    cluster.setdefault("layout", default_layout(cluster["secure"]))
    if ha:
        cluster["ha"] = True
    if autoscale_nodes is not None:
        cluster["autoscaleNodes"] = list(autoscale_nodes)
    if tracing_endpoint is not None:  # "": back to the cluster's own receiver
        cluster["tracingEndpoint"] = tracing_endpoint
    if nodes is not None:
        cluster["nodes"] = nodes
    cluster.setdefault("nodes", 1)
    if runtime_missing() is None and "network" not in cluster:
        cluster["network"] = requested_network(state)
    # The default ports are the default network's cluster's: a cluster on another one
    # takes free ports, not racing the first for them as both come up.
    defaults = is_default_network(cluster)
    ports = cluster.setdefault("ports", {})
    for name, port in DEFAULT_PORTS.items():
        if name not in ports:
            ports[name] = port if defaults and not port_in_use(port) else free_port()
    cluster.pop("podCIDR", None)  # a single node on the host's network, before nodes had one
    if runtime_missing() is None:
        cidrs: dict[str, str] = cluster.setdefault("podCIDRs", {})
        seed = first_pod_cidr_seed(cluster)
        names = [f"node-{index}" for index in range(1, cluster["nodes"] + 1)]
        names[:0] = control_plane_names(cluster)
        for name in names:
            while name not in cidrs:
                candidate = free_pod_cidr(seed=seed)
                seed += 1
                if candidate not in cidrs.values():
                    cidrs[name] = candidate
    saved.write_text(json.dumps(cluster, indent=2))
    return cluster


def _saved_cluster(state: Path) -> dict[str, Any]:
    """cluster.json as `up` left it (empty before the first `up`)."""
    saved = state / "cluster.json"
    return json.loads(saved.read_text()) if saved.exists() else {"ports": DEFAULT_PORTS}


def cluster_network(cluster: dict[str, Any]) -> ClusterNetwork | None:
    """The bridge and node namespaces of a cluster with real nodes (None without)."""
    network = cluster.get("network")
    if network is None or "podCIDRs" not in cluster:
        return None
    return ClusterNetwork(network["prefix"], network["nodeNetwork"])


def node_networks(cluster: dict[str, Any]) -> list[NodeNetwork]:
    """Each real node's place in the network: node-1 ... node-N."""
    network = cluster_network(cluster)
    if network is None:
        return []
    cidrs = cluster["podCIDRs"]
    control_planes = [network.control_plane(cidrs[name], name, number)
                      for number, name in enumerate(control_plane_names(cluster), 1)
                      if name in cidrs]
    return [*control_planes, *(network.node(index, cidrs[f"node-{index}"])
                              for index in range(1, cluster.get("nodes", 1) + 1)
                              if f"node-{index}" in cidrs)]


def every_node_network(state: Path, cluster: dict[str, Any]) -> list[NodeNetwork]:
    """The nodes `up` made (node_networks), then those the cluster autoscaler added and
    autoscaled.json records: what `ssh` and `logs --node` may name."""
    network = cluster_network(cluster)
    grown = autoscaled_networks(state, network) if network is not None else []
    return [*node_networks(cluster), *grown]


def default_layout(secure: bool | None) -> str:
    """The layout of a new cluster when `up` is given none: kubeadm's, where this machine
    can run nodes and the cluster is secured (its kubelets join with bootstrap tokens);
    else the control plane as processes on this machine (docs/decisions.md)."""
    return "kubeadm" if secure is not False and runtime_missing() is None else "processes"


def is_kubeadm(cluster: dict[str, Any]) -> bool:
    """Whether the control plane runs as static pods on a control-plane node."""
    return cluster.get("layout") == "kubeadm"


def is_ha(cluster: dict[str, Any]) -> bool:
    """Whether the control plane is three control-plane nodes behind haproxy (`up --ha`)."""
    return is_kubeadm(cluster) and bool(cluster.get("ha"))


def control_plane_names(cluster: dict[str, Any]) -> tuple[str, ...]:
    """The control-plane nodes: none in the processes layout, one in the kubeadm layout,
    three with --ha (kubeadm/ha.py)."""
    if is_ha(cluster):
        return CONTROL_PLANES
    return (CONTROL_PLANE,) if is_kubeadm(cluster) else ()


def apiserver_url(cluster: dict[str, Any]) -> str:
    """Where clients reach the API server: haproxy on the host's bridge address with
    --ha, the control-plane node's address in the kubeadm layout, else the host's on the
    bridge (loopback without nodes)."""
    network = cluster_network(cluster)
    scheme = "https" if cluster.get("secure", True) else "http"
    if is_kubeadm(cluster) and network is not None and not is_ha(cluster):
        address = network.control_plane("").address
    else:
        address = network.gateway if network is not None else LOOPBACK
    return f"{scheme}://{address}:{cluster['ports']['apiserver']}"


def components(state: Path, cluster: dict[str, Any], *, autoscaled: bool = False,
               ) -> dict[str, ComponentProcess]:
    """Every component of the cluster in `state` as a daemon: its log is
    logs/<name>.log and its pid file run/<name>.pid (node-N/kubelet for a node's). The
    nodes and DNS are left out where this machine cannot run containers; the control
    plane then listens on loopback only. `autoscaled`: also the containerd and kubelet
    of each node the cluster autoscaler added (which the autoscaler starts and stops,
    not `up` or the supervisor)."""
    ports = cluster["ports"]
    network = cluster_network(cluster)
    extra = cluster.get("extraConfig") or {}
    certs = ClusterCertificates(state) if cluster.get("secure") else None

    def kubeconfig_of(who: str) -> Path:
        """The component's own identity when secured; the admin's otherwise."""
        return certs.kubeconfig(who) if certs is not None else state / "kubeconfig"

    def flags(component: str) -> tuple[str, ...]:
        """The log verbosity, then what --extra-config set (a later flag wins)."""
        return (f"--v={cluster.get('verbosity', 2)}",
                *(f"--{flag}={value}" for flag, value in (extra.get(component) or {}).items()))

    address = network.gateway if network is not None else LOOPBACK

    def files(name: str) -> dict[str, Path]:
        return {"log_path": state / "logs" / f"{name}.log",
                "pid_file": state / "run" / f"{name}.pid"}

    # every component's spans go to our trace receiver, or where --tracing-endpoint says
    tracing_endpoint = (cluster.get("tracingEndpoint")
                        or f"http://{address}:{ports['tracing']}")
    traced = (f"--tracing-endpoint={tracing_endpoint}",)
    processes: dict[str, ComponentProcess] = {
        "registry": RegistryProcess(state / "registry", port=ports["registry"],
                                    address=address, seed=registry_seed(),
                                    **files("registry"))}
    kubeadm = is_kubeadm(cluster)
    etcd = EtcdProcess(state / "etcd", client_port=ports["etcd-client"],
                       peer_port=ports["etcd-peer"], name="minikube-py",
                       tls=certs.etcd_tls() if certs is not None else None, **files("etcd"))
    # the kubeadm layout: these four are static pods of the control-plane node's kubelet
    # (kubeadm/controlplane.py), DNS, metrics and the proxies add-ons (kubeadm/addons.py)
    control_plane: dict[str, ComponentProcess] = {
        "etcd": etcd,
        "apiserver": APIServerProcess(
            [etcd.client_url], port=ports["apiserver"], address=address,
            extra_args=(*secured_apiserver_flags(certs),
                        *(certs.apiserver_etcd_flags() if certs is not None else ()),
                        f"--tracing-config-file={tracing_config(state)}",
                        *flags("apiserver")[1:]),
            tls=apiserver_tls(certs) if certs is not None else None,
            **files("apiserver")),
        "controller-manager": ControllerManagerProcess(
            kubeconfig_of("controller-manager"), port=ports["controller-manager"],
            **files("controller-manager"),
            extra_args=("--leader-elect", f"--loadbalancer-ip-range={LOAD_BALANCER_RANGE}",
                        *secured_controller_manager_flags(certs), *traced,
                        *flags("controller-manager"))),
        "scheduler": SchedulerProcess(kubeconfig_of("scheduler"), port=ports["scheduler"],
                                      extra_args=("--leader-elect", *traced,
                                                  *flags("scheduler")),
                                      **files("scheduler")),
    }
    if not kubeadm:
        processes |= control_plane
    if not cluster.get("tracingEndpoint"):
        processes["tracing"] = TraceReceiverProcess(
            state / "traces", port=ports["tracing"], address=address, **files("tracing"))
    if cluster.get("simulatedNodes"):
        processes["hollow-nodes"] = HollowNodesProcess(
            state / "kubeconfig", count=cluster["simulatedNodes"], port=ports["hollow-nodes"],
            extra_args=flags("kubelet")[:1], **files("hollow-nodes"))
    if network is None or runtime_missing() is not None:
        return processes
    if not kubeadm:
        # cluster DNS publishes itself as the kube-dns Service's endpoint at the bridge's
        # address: pods reach it there, the proxies' rules send 10.96.0.10 to it
        processes["dns"] = DNSProcess(
            kubeconfig_of("dns"), dns_address=address, dns_port=ports["dns"],
            port=ports["dns-metrics"], advertise_address=address, service_ip=CLUSTER_DNS,
            extra_args=flags("dns"), **files("dns"))
        # metrics-server's role, reached by the API server through the metrics.k8s.io
        # APIService (kubectl top)
        processes["metrics"] = MetricsProcess(
            kubeconfig_of("metrics"), address=address, port=ports["metrics"],
            advertise_address=address, extra_args=flags("metrics"), **files("metrics"))
    # (the default StorageClass's local-path provisioner and the gateway controller are
    # Deployments in kube-system in both layouts, and the dashboard add-on one in
    # kubernetes-dashboard: kube_system_addons.py, kubeadm/addons.py, addons.py)
    registry = f"{address}:{ports['registry']}"
    nodes = node_networks(cluster)
    if cluster.get("autoscaleNodes") and network is not None:
        # a host process: its nodes are network namespaces (docs/decisions.md); its
        # user cluster-autoscaler has upstream's roles (roles.py)
        low, high = cluster["autoscaleNodes"]
        processes["cluster-autoscaler"] = ClusterAutoscalerProcess(
            kubeconfig_of("cluster-autoscaler"),
            nodes=f"{low}:{high}:{AUTOSCALED_GROUP}", cloud_config=state / "cluster.json",
            port=ports["cluster-autoscaler"], extra_args=flags("cluster-autoscaler"),
            **files("cluster-autoscaler"))
    grown = autoscaled_networks(state, network) if autoscaled and network is not None else []
    if is_ha(cluster):
        # the control-plane endpoint: TCP to each control-plane node's API server
        processes["haproxy"] = HAProxyProcess(
            state / "haproxy" / "haproxy.cfg", address=address, port=ports["apiserver"],
            servers=[(node.name, node.address, ports["apiserver"]) for node in nodes
                     if node.name in CONTROL_PLANES], **files("haproxy"))
    for node in [*nodes, *grown]:
        config = node_config(state, node.name, node.pod_cidr, registry, netns=node.path)
        in_node = {"address": node.address, "netns": node.path}
        processes[f"{node.name}/containerd"] = Containerd(
            config, keep_images=True, **files(f"{node.name}/containerd"))
        # kubeadm init's node (and with --ha the ones joined as control planes): no
        # bootstrap, their kubelets start the API servers
        initial = node.name in control_plane_names(cluster)
        processes[f"{node.name}/kubelet"] = KubeletProcess(
            kubeconfig_of(node.name), node_name=node.name, runtime_endpoint=config.endpoint,
            root_dir=config.base_dir / "kubelet", pod_cidr=node.pod_cidr,
            node_ip=node.address, port=NODE_PORTS["kubelet"],
            healthz_port=NODE_PORTS["kubelet-healthz"] if certs is not None else None,
            extra_args=(f"--cluster-dns={CLUSTER_DNS}",
                        *secured_kubelet_flags(certs, node.name),
                        *(("--rotate-server-certificates",) if certs is not None else ()),
                        *((f"--pod-manifest-path={manifest_dir(state, node.name)}",
                           f"--register-with-taints={CONTROL_PLANE_TAINT}:NoSchedule")
                          if initial else ()),
                        *((f"--node-labels={NODE_GROUP_LABEL}={AUTOSCALED_GROUP}",)
                          if node in grown else ()),
                        *traced, *flags("kubelet")),
            bootstrap_kubeconfig=(certs.bootstrap_kubeconfig(node.name)
                                  if certs is not None and not initial else None),
            **in_node, **files(f"{node.name}/kubelet"))
        if not kubeadm:
            processes[f"{node.name}/proxy"] = ProxyProcess(
                kubeconfig_of("proxy"), node_name=node.name, cluster_cidr=str(CLUSTER_CIDR),
                port=NODE_PORTS["proxy-healthz"], metrics_port=NODE_PORTS["proxy-metrics"],
                extra_args=(*traced, *flags("proxy")), **in_node,
                **files(f"{node.name}/proxy"))
    return processes


def tracing_config(state: Path) -> Path:
    """The API server's TracingConfiguration (written by `up`)."""
    return state / "tracing.yaml"


def write_tracing_config(state: Path, cluster: dict[str, Any]) -> None:
    """Every write traced, its spans sent to the cluster's tracing endpoint."""
    network = cluster_network(cluster)
    address = network.gateway if network is not None else LOOPBACK
    endpoint = cluster.get("tracingEndpoint") or f"{address}:{cluster['ports']['tracing']}"
    tracing_config(state).write_text(tracing_configuration(endpoint))


def tracing_configuration(endpoint: str) -> str:
    """The API server's TracingConfiguration: every request sampled, sent to `endpoint`."""
    return ("apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\n"
            f"endpoint: {endpoint}\nsamplingRatePerMillion: 1000000\n")


def apiserver_tls(certs: ClusterCertificates) -> ServingTLS:
    """The API server's serving certificate, and the CA it checks clients' against."""
    return ServingTLS(certs.file("apiserver.crt"), certs.file("apiserver.key"), certs.ca_file)


def secured_apiserver_flags(certs: ClusterCertificates | None) -> tuple[str, ...]:
    """As kubeadm runs it: Node and RBAC authorization, NodeRestriction, ServiceAccount
    tokens signed with the cluster's key, kubelets reached with a client certificate, the
    front-proxy certificate shown to its proxies' https backends (the dashboard)."""
    if certs is None:
        return ()
    return ("--authorization-mode=Node,RBAC", "--enable-admission-plugins=NodeRestriction",
            "--enable-bootstrap-token-auth",
            f"--service-account-signing-key-file={certs.service_account_key}",
            f"--kubelet-client-certificate={certs.file('apiserver-kubelet-client.crt')}",
            f"--kubelet-client-key={certs.file('apiserver-kubelet-client.key')}",
            f"--kubelet-certificate-authority={certs.ca_file}",
            *certs.front_proxy_flags())


def secured_controller_manager_flags(certs: ClusterCertificates | None) -> tuple[str, ...]:
    """As kubeadm runs it: each controller as its own ServiceAccount, the cluster CA
    published to pods and signing approved CSRs, bootstrap tokens signed and cleaned."""
    if certs is None:
        return ()
    return (f"--root-ca-file={certs.ca_file}", "--use-service-account-credentials",
            f"--cluster-signing-cert-file={certs.ca_file}",
            f"--cluster-signing-key-file={certs.file('ca.key')}",
            "--controllers=*,bootstrapsigner,tokencleaner")


def secured_kubelet_flags(certs: ClusterCertificates | None, node: str) -> tuple[str, ...]:
    """Its API asks the API server who calls and whether they may. (Its serving
    certificate: `up` has the kubelet ask the cluster for one, --rotate-server-
    certificates; the compose file's nodes are given theirs by the pki step.)"""
    if certs is None:
        return ()
    return (f"--client-ca-file={certs.ca_file}", "--anonymous-auth=false",
            "--authentication-token-webhook", "--authorization-mode=Webhook")


def up(args: argparse.Namespace) -> None:
    """Build the node network, then start the components that do not run yet, stage by
    stage, and wait until every one serves."""
    started = time.monotonic()
    state = home()
    if args.simulated_nodes is not None and args.simulated_nodes < 0:
        fail(f"--simulated-nodes must be 0 or more, not {args.simulated_nodes}")
    if args.nodes is not None and not 1 <= args.nodes <= 50:
        fail(f"--nodes must be between 1 and 50, not {args.nodes}")
    extra_config = (parse_extra_config(args.extra_config) if args.extra_config is not None
                    else None)
    autoscale_nodes = (parse_autoscale_nodes(args.autoscale_nodes)
                       if args.autoscale_nodes is not None else None)
    if autoscale_nodes is not None and (reason := runtime_missing()) is not None:
        fail(f"--autoscale-nodes: this machine cannot run a node: {reason}")
    if args.nodes is not None and (reason := runtime_missing()) is not None:
        fail(f"--nodes {args.nodes}: this machine cannot run a node: {reason}")
    saved = _saved_cluster(state)
    if args.ha:
        if args.layout == "processes":
            fail("--ha runs the control plane as static pods: it needs --layout kubeadm")
        args.layout = "kubeadm"
        if (state / "pki").exists() and not is_ha(saved):
            fail(f"the cluster in {state} was built without --ha: `minikube-py down --purge` "
                 "first to build it with three control-plane nodes")
    if args.layout is None:
        args.layout = (saved.get("layout", "processes") if (state / "cluster.json").exists()
                       else default_layout(args.secure))
    if saved.get("layout", "processes") != args.layout and (state / "pki").exists():
        fail(f"the cluster in {state} was built with --layout {saved.get('layout', 'processes')}"
             f": `minikube-py down --purge` first to build it with --layout {args.layout}")
    if args.layout == "kubeadm" and (args.secure is False or saved.get("secure") is False):
        fail("--layout kubeadm needs --secure: its kubelets join with bootstrap tokens")
    if args.layout == "kubeadm" and (reason := runtime_missing()) is not None:
        fail(f"--layout kubeadm: this machine cannot run a node: {reason}")
    known = components(state, saved)
    running = known.get("apiserver") or known.get(f"{CONTROL_PLANE}/kubelet")
    if running is not None and running.adopt():
        if args.nodes is not None and saved.get("nodes", args.nodes) != args.nodes:
            fail(f"the cluster runs with {saved['nodes']} nodes: `minikube-py down` first "
                 f"to start it with {args.nodes}")
        if extra_config is not None and (saved.get("extraConfig") or {}) != extra_config:
            fail("the cluster runs with other --extra-config settings: `minikube-py down` "
                 "first to start it with these")
        if autoscale_nodes is not None and saved.get("autoscaleNodes") != list(
                autoscale_nodes):
            fail("the cluster runs with another --autoscale-nodes: `minikube-py down` first "
                 "to start it with this one")
    # before anything is written: another home's running cluster keeps its network
    network = cluster_network(saved) if saved.get("network") else None
    if not saved.get("network") and runtime_missing() is None:
        wanted = requested_network(state)
        network = ClusterNetwork(wanted["prefix"], wanted["nodeNetwork"])
    if network is not None and (other := running_owner(network, state)) is not None:
        fail(f"the node network {network.prefix}* is the network of the cluster in {other}, "
             f"which is running: stop it first (MINIKUBE_PY_HOME={other} minikube-py down)")
    if network is not None and not saved.get("network"):
        refuse_overlap_with_running(network, state)
    for sub in ("logs", "run"):
        (state / sub).mkdir(parents=True, exist_ok=True)
    if args.tracing_endpoint and not args.tracing_endpoint.startswith(("http://", "https://")):
        fail(f"--tracing-endpoint must be an http:// or https:// URL (an OTLP/HTTP "
             f"receiver, e.g. http://127.0.0.1:4318), not {args.tracing_endpoint!r}")
    cluster = _cluster(state, args.v, args.nodes, args.simulated_nodes, extra_config,
                       args.secure, args.tracing_endpoint, args.layout, args.ha,
                       autoscale_nodes)
    if cluster.get("secure"):
        _make_certificates(state, cluster)
        print(f"certificates: {state / 'pki'} ({time.monotonic() - started:.1f} s)",
              flush=True)
    write_tracing_config(state, cluster)
    processes = components(state, cluster)
    try:
        _build_network(cluster, started)
        if is_kubeadm(cluster):
            asyncio.run(run_init(
                init_configuration(state, cluster), processes,
                lambda name: _start(state, name, processes[name], started),
                lambda timeout: _approve_serving(state, cluster, processes, timeout),
                started))
            if "cluster-autoscaler" in processes:
                asyncio.run(_start(state, "cluster-autoscaler",
                                   processes["cluster-autoscaler"], started))
        else:
            asyncio.run(_start_all(state, processes, started))
            if cluster.get("secure"):
                asyncio.run(_approve_serving(state, cluster, processes))
            if node_networks(cluster) and runtime_missing() is None:
                asyncio.run(_deploy_kube_system(state, cluster, processes, started))
        if "dashboard" in addons_of(cluster) and node_networks(cluster):
            asyncio.run(_deploy_dashboard(state, cluster, processes, started))
        asyncio.run(supervisor_process(state).start())
        registry = processes["registry"]
        assert isinstance(registry, RegistryProcess)
        registry.keep_seed()
    except (NodeNetworkError, OSError) as error:
        fail(f"cannot build the node network: {error}{STARTED_HINT}")
    except ComponentProcessError as error:
        hint = (f"; stop the program that holds it, or remove {state / 'cluster.json'} "
                "to pick new ports") if "already in use" in str(error) else ""
        fail(f"{error}{hint}{STARTED_HINT}")
    except TimeoutError as error:
        fail(f"{error}{STARTED_HINT}")
    except (ContainerdError, ImageLoadError) as error:
        fail(f"{error}; see {state / 'logs'}{STARTED_HINT}")
    except (ArchiveError, RegistryError, PackageError, ComponentImageError) as error:
        fail(f"could not build or push the shipped images: {error}{STARTED_HINT}")
    nodes = node_networks(cluster)
    if not nodes:
        print(f"no node started: {runtime_missing()}")
    for node in nodes:
        print(f"{node.name}: {node.address} (network namespace {node.namespace}), "
              f"pods on {node.pod_cidr}")
    if nodes and is_default_network(cluster):
        print(f"services: each node's proxy on its own iptables; {SERVICE_CIDR} and "
              f"{LOAD_BALANCER_ROUTE} routed from here through {nodes[0].name}; "
              f"DNS at {CLUSTER_DNS}")
    if is_kubeadm(cluster):
        planes = control_plane_names(cluster)
        print(f"minikube-py is up in {time.monotonic() - started:.1f} s: API server "
              f"{apiserver_url(cluster)}"
              f"{' (haproxy, to each control-plane node)' if is_ha(cluster) else ''}; etcd, "
              "the API server, the controller-manager and the scheduler are static pods on "
              f"{', '.join(planes)} (kubectl get pods -n kube-system)")
    else:
        api = processes["apiserver"]
        etcd = processes["etcd"]
        assert isinstance(api, APIServerProcess) and isinstance(etcd, EtcdProcess)
        print(f"minikube-py is up in {time.monotonic() - started:.1f} s: API server "
              f"{api.url}, etcd {etcd.client_url}")
    print(f"logs: {state / 'logs'}")
    print("To use it with kubectl:")
    print(f"export KUBECONFIG={state / 'kubeconfig'}")


def _make_certificates(state: Path, cluster: dict[str, Any]) -> None:
    """The CA, every component's certificate and kubeconfig (cluster/certs.py); in the
    kubeadm layout also the control-plane node's kubelet.conf; with --ha each
    control-plane node's, and its etcd member's certificates (kubeadm/ha.py)."""
    certs = ClusterCertificates(state)
    planes = [node for node in node_networks(cluster)
              if node.name in control_plane_names(cluster)]
    # no serving certificates for the kubelets: each asks the cluster for its own. With
    # --ha the API servers' one certificate also names each node's address.
    certs.ensure(apiserver_url(cluster),
                 tuple(node.address for node in planes) if is_ha(cluster) else (), {})
    for node in planes:
        certs.ensure_node_kubeconfig(node.name, apiserver_url(cluster))
        if is_ha(cluster):
            ensure_member_pki(certs, node.name, node.address)


def owner_file(network: ClusterNetwork) -> Path:
    """Which home's cluster built the node network of this prefix (a path, in a file):
    the names are fixed, so two homes would otherwise share, and tear down, one network."""
    return NETWORK_OWNERS / f"{network.prefix}owner"


def running_owner(network: ClusterNetwork, state: Path) -> Path | None:
    """The home of another cluster that owns the network and still runs a component (a
    live pid under its run/), or None: no owner, this home, or an owner that is gone."""
    try:
        owner = Path(owner_file(network).read_text().strip())
    except OSError:
        return None
    if owner == state.resolve():
        return None
    for pid_file in (owner / "run").glob("*.pid") if (owner / "run").is_dir() else ():
        try:
            pid = int(pid_file.read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue
        if names_its_process(pid_file, pid):
            return owner
    return None


def _build_network(cluster: dict[str, Any], started: float) -> None:
    """The bridge, one namespace per node, and the routes through node-1 (each kept
    when it is there already); each step said with the seconds since `up` began."""
    network = cluster_network(cluster)
    nodes = node_networks(cluster)
    if network is None or not nodes:
        return
    if shutil.which("nsenter") is None:
        raise NodeNetworkError("nsenter is not installed: apt-get install util-linux")
    NETWORK_OWNERS.mkdir(parents=True, exist_ok=True)
    owner_file(network).write_text(f"{home().resolve()}\n")
    network.create_bridge()
    print(f"network: bridge {network.bridge} at {network.gateway} "
          f"({time.monotonic() - started:.1f} s)", flush=True)
    for node in nodes:
        if network.ensure_node(node):
            print(f"network: {node.name} at {node.address} in namespace {node.namespace} "
                  f"({time.monotonic() - started:.1f} s)", flush=True)
    # The host routes each of these to one cluster: the default network's takes them,
    # a cluster on another network only when no other cluster's node has them.
    for destination in (SERVICE_CIDR, LOAD_BALANCER_ROUTE):
        if is_default_network(cluster) or not network.routed_elsewhere(destination):
            network.route_via(nodes[0], destination)
        else:
            print(f"network: {destination} stays routed to another cluster's node; this "
                  "cluster's Services are reached from its nodes", flush=True)


async def _approve_serving(state: Path, cluster: dict[str, Any],
                           processes: dict[str, ComponentProcess],
                           timeout: float = SERVING_TIMEOUT) -> None:
    """Approve each kubelet's serving-certificate request (as the admin, once checked),
    waiting up to `timeout` seconds for the pairs."""
    await approve_serving_certificates(
        ClusterCertificates(state).kubeconfig("admin"), {
            node.name: (node.address, kubelet.root_dir / "pki" / SERVING_PAIR)
            for node in node_networks(cluster)
            if isinstance(kubelet := processes.get(f"{node.name}/kubelet"), KubeletProcess)},
        timeout)


def init_configuration(state: Path, cluster: dict[str, Any]) -> InitConfiguration:
    """The saved cluster as kubeadm init's configuration."""
    network = cluster_network(cluster)
    assert network is not None
    return InitConfiguration(
        state=state, network=network,
        control_planes=tuple(node for node in node_networks(cluster)
                             if node.name in control_plane_names(cluster)),
        ports=cluster["ports"], server=apiserver_url(cluster),
        nodes=len(node_networks(cluster)), tracing_endpoint=cluster.get("tracingEndpoint"),
        tracing_config=tracing_config(state), cluster_cidr=str(CLUSTER_CIDR),
        cluster_dns=CLUSTER_DNS, load_balancer_range=LOAD_BALANCER_RANGE,
        verbosity=cluster.get("verbosity", 2), extra_config=cluster.get("extraConfig") or {})


def _stage(name: str) -> int:
    return next(i for i, stage in enumerate(STAGES) if kind_of(name) in stage)


async def _start_all(state: Path, processes: dict[str, ComponentProcess],
                     started: float) -> None:
    receiver = processes.get("tracing")
    for index in range(len(STAGES)):
        await asyncio.gather(*(_start(state, name, process, started,
                                      receiver if isinstance(receiver, TraceReceiverProcess)
                                      else None)
                               for name, process in processes.items()
                               if _stage(name) == index))


async def _start(state: Path, name: str, process: ComponentProcess, started: float,
                 receiver: TraceReceiverProcess | None = None) -> None:
    """Start one component (or wait for it, when it already runs), do what must follow
    its start, and say so."""
    was_running = process.adopt()
    if isinstance(process, KubeletProcess) and process.bootstrap_kubeconfig and (
            not was_running):
        # kubeadm join: the node trusts the cluster through the token and the CA hash
        certs = ClusterCertificates(state)
        await join_node(join_info(state, certs.kubeconfig("admin"), certs.ca_file),
                        process.bootstrap_kubeconfig)
    await process.start()
    if name == "registry":
        assert isinstance(process, RegistryProcess)
        # every shipped image, under all its names
        await asyncio.to_thread(push_shipped_images, process.host)
    elif name == "apiserver":
        assert isinstance(process, APIServerProcess)
        admin = ClusterCertificates(state).kubeconfig("admin")
        if process.tls is not None:
            shutil.copyfile(admin, state / "kubeconfig")
            (state / "kubeconfig").chmod(0o600)
            certs = ClusterCertificates(state)
            await publish_cluster_objects(admin, state, process.url,
                                          certs.ca_file.read_bytes())
        else:
            write_kubeconfig(state / "kubeconfig", process.url)
        await ensure_default_storage_class(state / "kubeconfig")
        if receiver is not None:
            await publish_trace_receiver(state / "kubeconfig", receiver.url)
    elif kind_of(name) == "containerd" and not was_running:
        assert isinstance(process, Containerd)
        await load_sandbox_image(process.config, state)
    what = "already running" if was_running else "ready"
    print(f"{name}: {what} (pid {process.pid}, {time.monotonic() - started:.1f} s)",
          flush=True)


async def _deploy_kube_system(state: Path, cluster: dict[str, Any],
                             processes: dict[str, ComponentProcess], started: float) -> None:
    """The processes layout's local-path provisioner and gateway controller: the kubeadm
    layout's add-ons, from the component images (built and pushed here), on a node of
    this machine's kubelets; say so (their pods start after `up` returns)."""
    registry = processes["registry"]
    assert isinstance(registry, RegistryProcess)
    tracing = cluster.get("tracingEndpoint") or (
        f"http://{registry.address}:{cluster['ports']['tracing']}")
    images = await deploy_kube_system_addons(state, registry.host, Addons(
        server=apiserver_url(cluster), cluster_cidr=str(CLUSTER_CIDR),
        cluster_dns=CLUSTER_DNS, images={}, tracing_endpoint=tracing,
        verbosity=cluster.get("verbosity", 2), extra_config=cluster.get("extraConfig") or {}),
        kubelet_nodes(processes))
    print(f"local-path-provisioner, gateway-controller: applied (Deployments in kube-system, "
          f"{images[PROVISIONER].rpartition(':')[2]}, {time.monotonic() - started:.1f} s); "
          "their pods start in the background", flush=True)


async def _deploy_dashboard(state: Path, cluster: dict[str, Any],
                            processes: dict[str, ComponentProcess], started: float) -> None:
    """The dashboard add-on (addons.py): its image pushed, its objects applied; its pod
    starts after this returns (`minikube-py dashboard` waits for it)."""
    registry = processes["registry"]
    assert isinstance(registry, RegistryProcess)
    images = await asyncio.to_thread(build_and_push_component_images, component_image_cache(),
                                     registry.host, (DASHBOARD_IMAGE,))
    certs = ClusterCertificates(state) if cluster.get("secure") else None
    await apply_dashboard(state / "kubeconfig", Dashboard(
        image=images[DASHBOARD_IMAGE], server=apiserver_url(cluster),
        nodes=kubelet_nodes(processes),
        front_proxy_ca=certs.front_proxy().ca_file.read_bytes() if certs else b"",
        verbosity=cluster.get("verbosity", 2)))
    print(f"dashboard: applied (a Deployment in kubernetes-dashboard, "
          f"{time.monotonic() - started:.1f} s); its pod starts in the background", flush=True)


def down(args: argparse.Namespace) -> None:
    """Stop every component and remove the node network (unless it is another running
    cluster's); --purge also deletes the cluster's data."""
    state = home()
    cluster = _saved_cluster(state)
    if read_autoscaled(state) and cluster_running(state, cluster):
        asyncio.run(_delete_nodes(state, list(read_autoscaled(state))))
    asyncio.run(_stop_all(state, components(state, cluster, autoscaled=True)))
    for name in read_autoscaled(state):  # gone with their namespaces below
        remove_node_files(state, name)
    (state / AUTOSCALED).unlink(missing_ok=True)
    network = cluster_network(cluster)
    if network is not None and state.exists():
        other = running_owner(network, state)
        if other is not None:
            print(f"left the node network {network.prefix}* alone: it is the network of the "
                  f"cluster in {other}, which is running")
        else:
            removed = network.remove_all()
            owner_file(network).unlink(missing_ok=True)
            if removed:
                print(f"removed the node network: {', '.join(removed)}")
    if args.purge and state.exists():
        shutil.rmtree(state)
        print(f"deleted {state}")


def reserve_autoscaled_node(state: Path, group: str) -> str:
    """The cluster autoscaler's IncreaseSize, first step: a name (the lowest free index)
    and a pod CIDR nobody routes, recorded in autoscaled.json."""
    cluster = _saved_cluster(state)
    recorded = read_autoscaled(state)
    taken = {node["index"] for node in recorded.values() if node["group"] == group}
    index = next(i for i in range(1, len(taken) + 2) if i not in taken)
    used = {*cluster.get("podCIDRs", {}).values(), *(n["podCIDR"] for n in recorded.values())}
    seed = first_pod_cidr_seed(cluster) + 64 + index
    while (cidr := free_pod_cidr(seed=seed)) in used:
        seed += 1
    name = f"{group}-{index}"
    recorded[name] = {"group": group, "index": index, "podCIDR": cidr}
    write_autoscaled(state, recorded)
    return name


def _autoscaled_processes(state: Path, name: str) -> tuple[NodeNetwork, Containerd,
                                                             KubeletProcess]:
    cluster = _saved_cluster(state)
    network = cluster_network(cluster)
    assert network is not None
    node = next(node for node in autoscaled_networks(state, network) if node.name == name)
    processes = components(state, cluster, autoscaled=True)
    containerd, kubelet = processes[f"{name}/containerd"], processes[f"{name}/kubelet"]
    assert isinstance(containerd, Containerd) and isinstance(kubelet, KubeletProcess)
    return node, containerd, kubelet


async def start_autoscaled_node(state: Path, name: str) -> None:
    """IncreaseSize for one reserved node, as `up` starts a worker: its namespace, its
    containerd (the pause image loaded), its kubelet joined with the bootstrap token,
    its serving certificate approved. What already runs is kept (a restarted autoscaler)."""
    node, containerd, kubelet = _autoscaled_processes(state, name)
    network = cluster_network(_saved_cluster(state))
    assert network is not None
    started = time.monotonic()
    if await asyncio.to_thread(network.ensure_node, node):
        print(f"network: {name} at {node.address} in namespace {node.namespace}", flush=True)
    await _start(state, f"{name}/containerd", containerd, started)
    await _start(state, f"{name}/kubelet", kubelet, started)
    if kubelet.bootstrap_kubeconfig is not None:
        await approve_serving_certificates(ClusterCertificates(state).kubeconfig("admin"), {
            name: (node.address, kubelet.root_dir / "pki" / SERVING_PAIR)})


async def stop_autoscaled_node(state: Path, name: str) -> None:
    """DeleteNodes for one node (drained, its Node object deleted): its kubelet and
    containerd stopped (the pods, shims and mounts cleared), its namespace, veth and
    route removed, its files deleted, and its record."""
    node, containerd, kubelet = _autoscaled_processes(state, name)
    await _stop(f"{name}/kubelet", kubelet)
    await _stop(f"{name}/containerd", containerd)
    network = cluster_network(_saved_cluster(state))
    assert network is not None
    await asyncio.to_thread(network.remove_node, node)
    remove_node_files(state, name)
    recorded = read_autoscaled(state)
    recorded.pop(name, None)
    write_autoscaled(state, recorded)


def autoscaled_node(args: argparse.Namespace) -> None:
    """`minikube-py autoscaled-node add GROUP | list GROUP | start NAME | remove NAME`:
    the cloud's API the cluster autoscaler calls for its node group
    (autoscaler/netns_nodegroup.py); `add` says `added NAME` last, and removes what it
    made when the node fails to start; `list` prints the group's nodes, one a line."""
    state = home()
    if not cluster_running(state, _saved_cluster(state)):
        fail(f"no running cluster in {state}: `minikube-py up` first")
    if args.action == "add":
        name = reserve_autoscaled_node(state, args.name)
        try:
            asyncio.run(start_autoscaled_node(state, name))
        except (ComponentProcessError, ImageLoadError, NodeNetworkError, ClientError,
                OSError, TimeoutError) as error:
            asyncio.run(stop_autoscaled_node(state, name))
            fail(f"node {name} did not start (it is removed again): {error}")
        print(f"added {name}", flush=True)
    elif args.action == "list":
        for name, node in read_autoscaled(state).items():
            if node["group"] == args.name:
                print(name)
    elif args.name not in read_autoscaled(state):
        fail(f"no node {args.name!r} of the cluster autoscaler in {state / AUTOSCALED}")
    elif args.action == "start":
        asyncio.run(start_autoscaled_node(state, args.name))
    else:
        asyncio.run(stop_autoscaled_node(state, args.name))


async def _delete_nodes(state: Path, names: list[str]) -> None:
    """The Node objects of the cluster autoscaler's nodes, which `down` removes for good
    (a cloud's node lifecycle controller deletes those whose instance is gone); a
    cluster that does not answer keeps them, and its autoscaler deletes them when it
    starts again."""
    try:
        async with asyncio.timeout(15), Client.from_kubeconfig(
                ClusterCertificates(state).kubeconfig("admin")
                if _saved_cluster(state).get("secure") else state / "kubeconfig") as client:
            for name in names:
                with contextlib.suppress(NotFound):
                    await client.resource("nodes").delete(name)
                print(f"deleted node {name}", flush=True)
    except (ClientError, KubeconfigError, OSError, TimeoutError) as error:
        print(f"left the Node objects of {', '.join(names)}: {error}", flush=True)


def cluster_running(state: Path, cluster: dict[str, Any]) -> bool:
    """Whether the cluster in `state` runs: its API server (in the kubeadm layout, the
    control-plane node's kubelet, which runs it)."""
    if not (state / "cluster.json").exists():
        return False
    known = components(state, cluster)
    running = known.get("apiserver") or known.get(f"{CONTROL_PLANE}/kubelet")
    return running is not None and running.adopt()


def set_addon(name: str, enabled: bool) -> None:
    """`addons enable|disable NAME`: remember it in cluster.json, apply its objects (or
    delete them)."""
    state = home()
    if name not in ADDONS:
        fail(f"no add-on named {name!r}; add-ons: {', '.join(ADDONS)}")
    cluster = _saved_cluster(state)
    if not cluster_running(state, cluster):
        fail(f"no running cluster in {state}: `minikube-py up` first")
    if cluster_network(cluster) is None or runtime_missing() is not None:
        fail(f"the {name} add-on runs as a pod, and this cluster has no nodes: "
             f"{runtime_missing() or 'it was made where none could run'}")
    cluster.setdefault("addons", {})[name] = enabled
    (state / "cluster.json").write_text(json.dumps(cluster, indent=2))
    try:
        if enabled:
            asyncio.run(_deploy_dashboard(state, cluster, components(state, cluster),
                                          time.monotonic()))
        else:
            asyncio.run(remove_dashboard(state / "kubeconfig"))
    except (ComponentImageError, RegistryError) as error:
        fail(f"could not build or push the {name} image: {error}")
    except (ClientError, OSError) as error:
        fail(f"cannot reach the cluster's API server: {error}")
    print(f"{name}: {'enabled' if enabled else 'disabled'}", flush=True)


def deploy_dashboard(state: Path) -> None:
    """What `minikube-py dashboard` does first in a minikube-py cluster: enable the
    dashboard add-on unless it is enabled (`up` applied it then; a home with only a
    kubeconfig, of another cluster, is left as it is). Its progress goes to stderr:
    stdout is the URL's."""
    if not (state / "cluster.json").exists():
        return
    cluster = _saved_cluster(state)
    if "dashboard" in addons_of(cluster):
        return
    if not cluster_running(state, cluster):
        fail(f"no running cluster in {state}: `minikube-py up` first")
    print("enabling the dashboard add-on ...", file=sys.stderr, flush=True)
    with contextlib.redirect_stdout(sys.stderr):
        set_addon("dashboard", True)


def supervisor_process(state: Path) -> SupervisorProcess:
    return SupervisorProcess(state / "logs" / "supervisor.log",
                             state / "run" / "supervisor.pid")


def supervise(args: argparse.Namespace) -> None:
    """`minikube-py supervise` (started by `up`): restart components that die."""
    setup_logging(0, logging.WARNING)
    state = home()
    supervisor = Supervisor(components(state, _saved_cluster(state)))
    try:
        asyncio.run(supervisor.run())
    except KeyboardInterrupt:
        pass


async def _stop_all(state: Path, processes: dict[str, ComponentProcess]) -> None:
    if not state.exists():
        print(f"no cluster to stop: {state} does not exist")
        return
    supervisor = supervisor_process(state)
    if supervisor.adopt():  # first, so that it restarts nothing being stopped
        pid = supervisor.pid
        await supervisor.stop()
        print(f"stopped the supervisor (pid {pid})")
    elif not any(process.adopt() for process in processes.values()):
        print(f"nothing was running from {state}; cleaning up what a crash may have left")
    for index in reversed(range(len(STAGES))):
        await asyncio.gather(*(_stop(name, process) for name, process in processes.items()
                               if _stage(name) == index))


async def _stop(name: str, process: ComponentProcess) -> None:
    pid = process.pid if process.adopt() else None
    # containerd's stop() also clears what a crashed node left: pods, shims, mounts,
    # the bridge, CNI's rules
    if pid is not None or isinstance(process, Containerd):
        await process.stop()
    if pid is not None:
        print(f"stopped {name} (pid {pid})")
    if isinstance(process, Containerd):
        remove_kubelet_volumes(process.config)


def status(args: argparse.Namespace) -> None:
    """Each component: running or not, and whether it answers its readiness check; then
    the nodes with their Ready condition and pods. Exit 1 unless everything runs."""
    state = home()
    cluster = _saved_cluster(state)
    processes = components(state, cluster, autoscaled=True)
    node_reason = runtime_missing()
    checks = asyncio.run(_readiness(processes))
    running = True
    for name in processes:
        pid, ready = checks[name]
        print(f"{name}: " + (f"running (pid {pid}), {'ready' if ready else 'NOT READY'}"
                             if pid else "stopped"))
        running = running and pid is not None
    if node_reason is not None:
        print(f"nodes: not started ({node_reason})")
    supervisor = supervisor_process(state)
    print("supervisor: " + (f"running (pid {supervisor.pid})" if supervisor.adopt()
                            else "stopped"))
    api = processes.get("apiserver")
    if is_kubeadm(cluster):
        _print_nodes(apiserver_url(cluster), _admin_tls(state))
    elif checks.get("apiserver", (None, False))[1] and isinstance(api, APIServerProcess):
        _print_nodes(api.url, _admin_tls(state))
    if not running:
        raise SystemExit(1)


async def _readiness(processes: dict[str, ComponentProcess]) -> dict[str, tuple[int | None,
                                                                               bool]]:
    """name -> (pid, answers its readiness check), for the components that run."""
    async def check(process: ComponentProcess) -> tuple[int | None, bool]:
        if not process.adopt():
            return None, False
        try:
            async with asyncio.timeout(5):
                return process.pid, await process.serving()
        except (TimeoutError, OSError, ComponentProcessError):
            return process.pid, False
    names = list(processes)
    answers = await asyncio.gather(*(check(processes[name]) for name in names))
    return dict(zip(names, answers, strict=True))


def _admin_tls(state: Path) -> ssl.SSLContext | None:
    """The admin's TLS settings from the cluster's kubeconfig (None for plain HTTP)."""
    try:
        return load_kubeconfig(state / "kubeconfig").tls_context()
    except (KubeconfigError, OSError, ssl.SSLError):
        return None


def _print_nodes(api_url: str, tls: ssl.SSLContext | None = None) -> None:
    """The nodes, Ready or not, with how many pods each runs (as kubectl would count)."""
    try:
        nodes = _get_json(f"{api_url}/api/v1/nodes", tls)["items"]
        pods = _get_json(f"{api_url}/api/v1/pods", tls)["items"]
    except (OSError, ValueError, KeyError) as error:
        print(f"nodes: cannot list them: {error}")
        return
    per_node: dict[str, int] = {}
    for pod in pods:
        node = (pod.get("spec") or {}).get("nodeName") or ""
        if (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
            per_node[node] = per_node.get(node, 0) + 1
    print(f"nodes: {len(nodes)}")
    for node in nodes:
        name = node["metadata"]["name"]
        ready = next((c.get("status") for c in (node.get("status") or {}).get("conditions")
                      or () if c.get("type") == "Ready"), "Unknown")
        state = "Ready" if ready == "True" else "NotReady"
        print(f"  {name}: {state}, {per_node.get(name, 0)} pods")
    if per_node.get(""):
        print(f"  (not scheduled yet: {per_node['']} pods)")


def _get_json(url: str, tls: ssl.SSLContext | None = None) -> Any:
    with urllib.request.urlopen(url, timeout=5, context=tls) as answer:
        return json.loads(answer.read())


def etcdctl_env(_: argparse.Namespace) -> None:
    """`minikube-py etcdctl-env`: the environment etcdctl reads, for this cluster's etcd
    (TLS with a client certificate of etcd's CA, in a secured cluster)."""
    state = home()
    if not (state / "cluster.json").exists():
        fail(f"no cluster in {state}: `minikube-py up` first")
    cluster = _saved_cluster(state)
    if is_ha(cluster):
        # the stacked members serve clients at their nodes' addresses too
        certs = ClusterCertificates(state)
        endpoints = ",".join(f"https://{node.address}:{cluster['ports']['etcd-client']}"
                             for node in node_networks(cluster) if node.name in CONTROL_PLANES)
        for name, value in {"ETCDCTL_API": "3", "ETCDCTL_ENDPOINTS": endpoints,
                            "ETCDCTL_CACERT": certs.etcd_pki / "ca.crt",
                            "ETCDCTL_CERT": certs.file("apiserver-etcd-client.crt"),
                            "ETCDCTL_KEY": certs.file("apiserver-etcd-client.key")}.items():
            print(f"export {name}={value}")
        return
    if is_kubeadm(cluster):
        # kubeadm's etcd serves clients on its node's loopback only; the variables are the
        # flags kubeadm's guides give etcdctl there, with this machine's paths
        certs = ClusterCertificates(state)
        print(f"# etcd is a static pod of {CONTROL_PLANE}, on its loopback: run etcdctl "
              f"there, `minikube-py ssh {CONTROL_PLANE} -- etcdctl endpoint health`")
        for name, value in {"ETCDCTL_API": "3",
                            "ETCDCTL_ENDPOINTS": f"https://{LOOPBACK}:"
                                                 f"{cluster['ports']['etcd-client']}",
                            "ETCDCTL_CACERT": certs.etcd_pki / "ca.crt",
                            "ETCDCTL_CERT": certs.file("apiserver-etcd-client.crt"),
                            "ETCDCTL_KEY": certs.file("apiserver-etcd-client.key")}.items():
            print(f"export {name}={value}")
        return
    etcd = components(state, cluster)["etcd"]
    assert isinstance(etcd, EtcdProcess)
    variables = {"ETCDCTL_API": "3", "ETCDCTL_ENDPOINTS": etcd.client_url}
    if etcd.tls is not None:
        certs = ClusterCertificates(state)
        variables |= {"ETCDCTL_CACERT": str(etcd.tls.ca_file),
                      "ETCDCTL_CERT": str(certs.file("apiserver-etcd-client.crt")),
                      "ETCDCTL_KEY": str(certs.file("apiserver-etcd-client.key"))}
    for name, value in variables.items():
        print(f"export {name}={value}")


def logs(args: argparse.Namespace) -> None:
    """`minikube-py logs COMPONENT [-f] [--node N]`: a component's log file (or the
    supervisor's: which component died, and when it was started again); N may be a node
    the cluster autoscaler added."""
    state = home()
    if args.component not in (*COMPONENTS, "supervisor"):
        fail(f"no component named {args.component!r}; components: {', '.join(COMPONENTS)}"
             ", and the supervisor")
    name = args.component
    pods = {"etcd": "etcd", "apiserver": "kube-apiserver",
            "controller-manager": "kube-controller-manager", "scheduler": "kube-scheduler"}
    if is_kubeadm(_saved_cluster(state)) and args.component in pods:
        fail(f"{args.component} is a static pod on {CONTROL_PLANE}: kubectl logs -n "
             f"kube-system {pods[args.component]}-{CONTROL_PLANE}")
    if args.component in NODE_COMPONENTS:
        nodes = [node.name for node in every_node_network(state, _saved_cluster(state))
                 ] or ["node-1"]
        if args.node is None and len(nodes) > 1:
            fail(f"{args.component} runs on every node: say which with --node "
                 f"({', '.join(nodes)})")
        node = args.node or nodes[0]
        if node not in nodes:
            fail(f"no node named {node!r}; nodes: {', '.join(nodes)}")
        name = f"{node}/{args.component}"
    elif args.node is not None:
        fail(f"{args.component} runs on the host, not on a node: leave out --node")
    path = state / "logs" / f"{name}.log"
    if not path.exists():
        fail(f"no log of {name} in {path.parent}: has `minikube-py up` run?")
    with path.open("rb") as log:
        while chunk := log.read(1 << 16):
            sys.stdout.buffer.write(chunk)
        sys.stdout.flush()
        if not args.follow:
            return
        try:
            while True:  # as tail -f: wait for more
                chunk = log.read(1 << 16)
                if chunk:
                    sys.stdout.buffer.write(chunk)
                    sys.stdout.flush()
                else:
                    time.sleep(0.2)
        except KeyboardInterrupt:
            pass


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="minikube-py",
                                     description="A local minikube-py cluster.")
    commands = parser.add_subparsers(dest="command", required=True)
    start = commands.add_parser("up", help="start the cluster")
    start.add_argument("-v", "--v", dest="v", type=int, default=2,
                       help="the components' log verbosity (klog's -v; default 2: each "
                            "decision is logged)")
    start.add_argument("--nodes", type=int, default=None, metavar="N",
                       help="run N real nodes, node-1 ... node-N, each a network namespace "
                            "with its own containerd, kubelet and proxy (default 1); "
                            "remembered for later `up`s (to change it, `down` first)")
    start.add_argument("--extra-config", action="append", default=None,
                       metavar="COMPONENT.FLAG=VALUE",
                       help="a flag for a component, as minikube's: e.g. controller-manager."
                            "node-monitor-grace-period=10s (repeat it for more); remembered "
                            "for later `up`s (to change them, `down` first)")
    start.add_argument("--simulated-nodes", type=int, default=None, metavar="M",
                       help="also run M hollow nodes (a simulated runtime, no containers) "
                            "for scheduling at scale; remembered for later `up`s (to change "
                            "it, `down` first)")
    start.add_argument("--secure", action=argparse.BooleanOptionalAction, default=None,
                       help="TLS everywhere, each component its own certificate and "
                            "least-privilege roles (Node,RBAC authorization, "
                            "NodeRestriction), kubelets that authorize callers, "
                            "ServiceAccount tokens mounted in pods (the default); "
                            "--no-secure: plain HTTP where anyone may do anything; "
                            "remembered for later `up`s (to change it, `down --purge` "
                            "first)")
    start.add_argument("--tracing-endpoint", default=None, metavar="URL",
                       help="send every component's spans to this OTLP/HTTP receiver (a "
                            "collector, Jaeger, Tempo) instead of the cluster's own, which "
                            "`mkctl trace` reads; \"\" goes back to the cluster's own")
    start.add_argument("--layout", choices=LAYOUTS, default=None,
                       help="kubeadm: etcd, the API server, the controller-manager and the "
                            "scheduler as static pods of a control-plane node, kube-proxy "
                            "as a DaemonSet and DNS as a Deployment, as kubeadm builds a "
                            "cluster (the default); processes: all of them as processes "
                            "on this machine (the default with --no-secure, or where this "
                            "machine cannot run nodes); remembered for later `up`s (to "
                            "change it, `down --purge` first)")
    start.add_argument("--ha", action="store_true", default=False,
                       help="a highly available control plane (implies --layout kubeadm): "
                            "three control-plane nodes, control-plane, control-plane2 and "
                            "control-plane3, each with an etcd member, an API server, a "
                            "controller-manager and a scheduler, behind haproxy on this "
                            "machine; remembered for later `up`s (to change it, `down "
                            "--purge` first)")
    start.add_argument("--autoscale-nodes", default=None, metavar="MIN:MAX",
                       help="run the cluster autoscaler, whose node group adds real nodes "
                            "(autoscaled-1, -2, ..., network namespaces like node-N) for "
                            "pods that fit no node and removes them when they idle, keeping "
                            "between MIN and MAX of them; its flags with --extra-config "
                            "cluster-autoscaler.FLAG=VALUE (e.g. scale-down-unneeded-time="
                            "20s); remembered for later `up`s (to change it, `down` first)")
    start.set_defaults(run=up)
    stop = commands.add_parser("down", help="stop the cluster")
    stop.add_argument("--purge", action="store_true", help="also delete the cluster's data")
    stop.set_defaults(run=down)
    commands.add_parser("status", help="show what runs, what is ready, the nodes"
                        ).set_defaults(run=status)
    show = commands.add_parser("logs", help="print a component's log")
    show.add_argument("component", help=f"one of: {', '.join(COMPONENTS)}, supervisor")
    show.add_argument("-f", "--follow", action="store_true", help="keep printing new lines")
    show.add_argument("--node", help="the node, for containerd, kubelet and proxy (node-1, "
                      "..., or autoscaled-1, ... the cluster autoscaler added)")
    show.set_defaults(run=logs)
    commands.add_parser("supervise", help="restart components that die (`up` starts it)"
                        ).set_defaults(run=supervise)
    grow = commands.add_parser("autoscaled-node", help="add, list, start or remove the "
                               "nodes of the cluster autoscaler's group (it calls this)")
    grow.add_argument("action", choices=("add", "list", "start", "remove"))
    grow.add_argument("name", help="add, list: the node group; start, remove: the node")
    grow.set_defaults(run=autoscaled_node)
    commands.add_parser("etcdctl-env", help="print the environment etcdctl needs for "
                        "this cluster's etcd: source <(minikube-py etcdctl-env)"
                        ).set_defaults(run=etcdctl_env)
    add_etcd_bump_revision_command(commands)
    add_image_command(commands, home)
    add_dashboard_command(commands, home, deploy_dashboard)
    add_addons_command(commands, set_addon,
                       lambda: addons_of(_saved_cluster(home())))
    add_ssh_command(commands, home,
                    lambda: every_node_network(home(), _saved_cluster(home())))
    add_token_command(commands, home)
    add_join_command(commands, home, down=stop)
    args = parser.parse_args(argv)
    args.run(args)


if __name__ == "__main__":
    main()
