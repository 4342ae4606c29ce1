"""`minikube-py up` (its default layout, `--layout kubeadm`): the cluster built in kubeadm
init's phases, run in order by run_init (cli.py only hands it the saved cluster as an
InitConfiguration).

    kubeadm init phase          here
    certs, kubeconfig           cli.py, before run_init: ClusterCertificates.ensure, plus
                                the control-plane node's kubelet.conf (node_kubeconfig)
    (the images)                run_init: the registry and the trace receiver, the
                                component images built and pushed
    etcd local, control-plane   write_control_plane: the four static pods into the
                                control-plane node's --pod-manifest-path (`up --ha`: into
                                each of the three's, one etcd member each, ha.py)
    kubelet-start               run_init: containerd of each node and the control-plane
                                kubelet(s), host processes the supervisor watches
                                (systemd's role); with --ha, haproxy too
    wait-control-plane          wait_for_apiserver: /readyz through the admin's TLS (each
                                control-plane node's API server)
    upload-config, bootstrap-   join.py: publish_cluster_objects (cluster-info, the
    token                       bootstrap token and its RBAC)
    mark-control-plane          mark_control_plane: the role label and the NoSchedule taint
    addon kube-proxy, coredns   apply_addons: addons.py's objects, server-side applied
                                (and our metrics server, local-path provisioner and
                                gateway controller)
    (kubeadm join)              run_init: the workers' kubelets join with the token

`up` then waits until every node is Ready and every kube-system pod is Running and ready
(wait_for_cluster), which kubeadm leaves to the user.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from minikube_py.api import Obj
from minikube_py.api.autoscaling import NODE_GROUP_LABEL
from minikube_py.api.meta import parse_rfc3339
from minikube_py.api.resources import RESOURCES, Resource
from minikube_py.client.errors import ClientError
from minikube_py.client.rest import Client
from minikube_py.cluster.certs import ClusterCertificates
from minikube_py.cluster.components import TraceReceiverProcess, kind_of
from minikube_py.cluster.join import publish_cluster_objects
from minikube_py.cluster.kubeadm.addons import (
    CONTROL_PLANE_TAINT,
    Addons,
    addon_objects,
    gateway_controller_objects,
    local_path_provisioner_objects,
)
from minikube_py.cluster.kubeadm.controlplane import (
    ControlPlane,
    EtcdMember,
    HostPaths,
    write_static_pods,
)
from minikube_py.cluster.kubeadm.ha import member_data, member_pki
from minikube_py.cluster.netns import ClusterNetwork, NodeNetwork
from minikube_py.cluster.registry import RegistryProcess
from minikube_py.cluster.storage import ensure_default_storage_class
from minikube_py.cluster.tracestore import publish_trace_receiver
from minikube_py.images.components import (
    IMAGE_REPOSITORY,
    build_and_push_component_images,
    component_image_cache,
)
from minikube_py.process import ComponentProcess

log = logging.getLogger(__name__)

CONTROL_PLANE = "control-plane"
"""The control-plane node's name (kind's is <cluster>-control-plane)."""
ROLE_LABEL = "node-role.kubernetes.io/control-plane"
FIELD_MANAGER = "kubeadm"
LAYOUTS = ("processes", "kubeadm")
"""`processes`: the control plane as host processes, DNS and proxy too; `kubeadm`: static
pods on a control-plane node, kube-proxy and DNS as add-ons."""
KUBEADM_TIMEOUT = 600.0
"""How long `up --layout kubeadm` waits for the cluster to settle: a first `up` builds
the component images (minutes), a later one only checks them."""

Start = Callable[[str], Awaitable[None]]
"""Start one of `up`'s components by name (or adopt it when it runs), and say so."""


@dataclass(frozen=True)
class InitConfiguration:
    """What kubeadm init is told (upstream's InitConfiguration and ClusterConfiguration,
    as far as this cluster has them): where, on which network, with which settings."""

    state: Path
    network: ClusterNetwork
    control_planes: tuple[NodeNetwork, ...]
    """The control-plane node (`up --ha`: the three of them)."""
    ports: dict[str, int]
    server: str
    """The API server's URL, as the nodes reach it."""
    nodes: int
    tracing_endpoint: str | None
    """--tracing-endpoint, or None: the cluster's own trace receiver."""
    tracing_config: Path
    cluster_cidr: str
    cluster_dns: str
    load_balancer_range: str
    verbosity: int
    extra_config: dict[str, dict[str, str]]


def manifest_dir(state: Path, node: str = CONTROL_PLANE) -> Path:
    """A control-plane kubelet's --pod-manifest-path (kubeadm's /etc/kubernetes/manifests)."""
    return state / "nodes" / node / "manifests"


def nodes_folder(state: Path) -> Path:
    """Where the nodes keep their files on this machine (their volumes' folders too): the
    local-path provisioner's pod mounts it."""
    return (state / "nodes").resolve()


def kubelet_nodes(processes: Mapping[str, ComponentProcess]) -> list[str]:
    """The nodes this machine runs a kubelet for (node-1/kubelet -> node-1): not the
    hollow nodes."""
    return [name.partition("/")[0] for name in processes if kind_of(name) == "kubelet"]


def host_paths(state: Path, tracing_config: Path, node: str, stacked: bool) -> HostPaths:
    """Where the static pods' hostPath volumes point: the cluster's own folders; a
    member of a stacked etcd cluster (`stacked`) has its etcd certificates and data in
    its node's folder (ha.py)."""
    return HostPaths(pki=state / "pki", kubeconfigs=state / "kubeconfigs",
                     etcd_data=member_data(state, node) if stacked else state / "etcd",
                     tracing_config=tracing_config,
                     etcd_pki=member_pki(state, node) if stacked else None)


def write_control_plane(state: Path, node: str, plane: ControlPlane,
                        tracing_config: Path) -> list[Path]:
    """kubeadm's etcd and control-plane phases on one node: the four manifests, each
    written whole."""
    return write_static_pods(manifest_dir(state, node), plane, host_paths(
        state, tracing_config, node, stacked=bool(plane.etcd_members)))


async def wait_for_apiserver(admin: Path, node: str, image: str, deadline: float) -> None:
    """kubeadm's wait-control-plane: until /readyz answers ok and the API server's mirror
    pod shows `image` running. The second part matters on a later `up` whose code
    changed: the old API server answers until its kubelet replaces it with the new
    image's (which could not bind the port while the old one held it). Not its Ready
    condition: kubeadm's startup probe waits 10 s before its first look."""
    async with Client.from_kubeconfig(admin) as client:
        last = "no answer yet"
        while time.monotonic() < deadline:
            try:
                answer = await client.pool.request("GET", "/readyz", params=None, body=None,
                                                   headers={}, timeout=5)
                if answer.status != 200:
                    last = f"/readyz answered {answer.status}: {answer.body[:200]!r}"
                else:
                    mirror = await client.resource("pods").get(f"kube-apiserver-{node}",
                                                               "kube-system")
                    if mirror["spec"]["containers"][0]["image"] == image and _running(mirror):
                        return
                    last = "the API server's pod does not run the new image yet"
            except (ClientError, TimeoutError, OSError) as error:
                last = str(error) or type(error).__name__
            await asyncio.sleep(0.5)
    raise TimeoutError(f"the API server's static pod did not become ready: {last}")


async def mark_control_plane(admin: Path, node: str) -> None:
    """kubeadm's mark-control-plane: the role label and the NoSchedule taint, as the admin
    (NodeRestriction keeps a kubelet from giving itself a node-role label). The Node may
    not be registered yet: wait for it."""
    async with Client.from_kubeconfig(admin) as client:
        nodes = client.resource("nodes")
        while True:
            try:
                current = await nodes.get(node)
                break
            except ClientError:
                await asyncio.sleep(0.3)
        taints = [taint for taint in (current.get("spec") or {}).get("taints") or []
                  if taint.get("key") != CONTROL_PLANE_TAINT]
        taints.append({"key": CONTROL_PLANE_TAINT, "effect": "NoSchedule"})
        await nodes.patch(node, {"metadata": {"labels": {ROLE_LABEL: ""}},
                                 "spec": {"taints": taints}})


def _resource_of(obj: Obj) -> Resource:
    group, _, version = obj["apiVersion"].rpartition("/")
    return next(resource for resource in RESOURCES
                if resource.kind == obj["kind"] and resource.group == group
                and resource.version == version)


WORKLOADS = ("DaemonSet", "Deployment", "APIService")
"""What is applied after the rest: pods need their ServiceAccounts and RBAC, and an
APIService its Service."""


async def apply_addons(admin: Path, objects: list[Obj]) -> None:
    """kubeadm's addon phase, as server-side apply (its field manager `kubeadm`), so a
    later `up` with other flags updates what it owns and leaves the rest: the accounts,
    RBAC, configuration and Services together, then the workloads together."""
    async with Client.from_kubeconfig(admin) as client:
        async def apply(obj: Obj) -> None:
            resource = _resource_of(obj)
            metadata = obj["metadata"]
            path = client.resource(resource.plural, resource.group).path(
                metadata.get("namespace") if resource.namespaced else None, metadata["name"])
            await client.request("PATCH", path, body=obj,
                                 params={"fieldManager": FIELD_MANAGER, "force": "true"},
                                 content_type="application/apply-patch+yaml")

        for workloads in (False, True):
            await asyncio.gather(*(apply(obj) for obj in objects
                                   if (obj["kind"] in WORKLOADS) == workloads))


def _running(pod: Obj, since: datetime | None = None) -> bool:
    """Every container of the pod runs (whatever its probes say yet), started `since`
    when given: after a `down`, what etcd still says of the pods is their old life."""
    status = pod.get("status") or {}
    statuses = status.get("containerStatuses") or []
    started = [((container.get("state") or {}).get("running") or {}).get("startedAt")
               for container in statuses]
    return status.get("phase") == "Running" and bool(statuses) and all(
        at and (since is None or parse_rfc3339(at) >= since) for at in started)


def _node_ready(node: Obj, since: datetime | None) -> bool:
    """Ready, said by a kubelet that has posted since `since` (when given)."""
    return any(condition.get("type") == "Ready" and condition.get("status") == "True"
               and (since is None or parse_rfc3339(
                   condition.get("lastHeartbeatTime") or "1970-01-01T00:00:00Z") >= since)
               for condition in (node.get("status") or {}).get("conditions") or ())


async def wait_for_cluster(admin: Path, nodes: int, deadline: float,
                           since: datetime | None = None) -> None:
    """Until `nodes` nodes are Ready and every kube-system pod runs: the static pods'
    mirrors, the DaemonSet's pods, DNS and the metrics server. Running, not Ready: a
    readiness probe looks every 10 s (kubeadm's static pods' first look is at 10 s), so
    DNS, say, joins its Service a few seconds after `up` returns, as on a kubeadm
    cluster whose `kubeadm init` has just returned. `since`: when the kubelets were
    started, if this `up` started them (their earlier statuses do not count)."""
    async with Client.from_kubeconfig(admin) as client:
        waiting: Any = "nothing listed yet"
        while time.monotonic() < deadline:
            try:
                listed = (await client.resource("nodes").list())["items"]
                pods = (await client.resource("pods").list("kube-system"))["items"]
            except ClientError as error:
                waiting = error
            else:
                # the cluster autoscaler's nodes come and go with it (it starts after)
                theirs = {node["metadata"]["name"] for node in listed
                          if NODE_GROUP_LABEL in (node["metadata"].get("labels") or {})}
                listed = [node for node in listed if node["metadata"]["name"] not in theirs]
                pods = [pod for pod in pods
                        if (pod.get("spec") or {}).get("nodeName") not in theirs]
                not_ready = [node["metadata"]["name"] for node in listed
                             if not _node_ready(node, since)]
                pending = [pod["metadata"]["name"] for pod in pods
                           if not _running(pod, since)]
                if len(listed) >= nodes and not not_ready and pods and not pending:
                    return
                waiting = (f"{len(listed)}/{nodes} nodes registered, not Ready: "
                           f"{', '.join(not_ready) or 'none'}; kube-system pods not running: "
                           f"{', '.join(pending) or 'none'}")
            await asyncio.sleep(0.5)
    raise TimeoutError(f"the cluster did not settle: {waiting}")


async def run_init(config: InitConfiguration, processes: dict[str, ComponentProcess],
                   start: Start, approve_serving: Callable[[float], Awaitable[None]],
                   started: float) -> None:
    """kubeadm init's phases, then the workers join: the registry and the trace receiver,
    the component images pushed, the static pods' manifests, each node's containerd, the
    control-plane node's kubelet (which starts the static pods), the cluster objects and
    add-ons once the API server is ready, the workers' kubelets; then every node Ready
    and every kube-system pod running."""
    deadline = time.monotonic() + KUBEADM_TIMEOUT
    state, network, ports = config.state, config.network, config.ports
    await asyncio.gather(*(start(name) for name in ("registry", "tracing")
                           if name in processes))
    registry = processes["registry"]
    assert isinstance(registry, RegistryProcess)
    images = await asyncio.to_thread(build_and_push_component_images,
                                     component_image_cache(), registry.host)
    print(f"component images: {images['kube-apiserver'].rpartition(':')[2]} in "
          f"{registry.host}/{IMAGE_REPOSITORY} ({time.monotonic() - started:.1f} s)",
          flush=True)
    tracing_endpoint = (config.tracing_endpoint
                        or f"http://{network.gateway}:{ports['tracing']}")
    planes = config.control_planes
    members = tuple(EtcdMember(plane.name, plane.address)
                    for plane in planes) if len(planes) > 1 else ()
    for plane in planes:
        write_control_plane(state, plane.name, ControlPlane(
            advertise_address=plane.address, ports=ports, images=images,
            tracing_endpoint=tracing_endpoint, load_balancer_range=config.load_balancer_range,
            verbosity=config.verbosity, extra_config=config.extra_config,
            etcd_members=members), config.tracing_config)
    await asyncio.gather(*(start(name) for name in processes
                           if kind_of(name) in ("containerd", "haproxy")))
    firsts = [f"{plane.name}/kubelet" for plane in planes]
    # a whole second back: the API's times have whole seconds
    since = None if processes[firsts[0]].adopt() else datetime.now(UTC).replace(
        microsecond=0) - timedelta(seconds=1)
    # together: a stacked etcd member waits for the others to have a quorum
    await asyncio.gather(*(start(name) for name in firsts))
    certs = ClusterCertificates(state)
    admin = certs.kubeconfig("admin")
    await asyncio.gather(*(wait_for_apiserver(admin, plane.name, images["kube-apiserver"],
                                              deadline) for plane in planes))
    print(f"apiserver: ready, a static pod on {', '.join(plane.name for plane in planes)} "
          f"({time.monotonic() - started:.1f} s)", flush=True)
    shutil.copyfile(admin, state / "kubeconfig")
    (state / "kubeconfig").chmod(0o600)
    await publish_cluster_objects(admin, state, config.server, certs.ca_file.read_bytes())
    if isinstance(receiver := processes.get("tracing"), TraceReceiverProcess):
        await publish_trace_receiver(state / "kubeconfig", receiver.url)
    await asyncio.gather(*(mark_control_plane(admin, plane.name) for plane in planes))
    addons = Addons(
        server=config.server, cluster_cidr=config.cluster_cidr,
        cluster_dns=config.cluster_dns, images=images, tracing_endpoint=tracing_endpoint,
        verbosity=config.verbosity, extra_config=config.extra_config)
    nodes = kubelet_nodes(processes)
    await apply_addons(admin, [*addon_objects(addons), *local_path_provisioner_objects(
        addons, nodes_folder(state), nodes), *gateway_controller_objects(addons, nodes)])
    await ensure_default_storage_class(admin)
    await asyncio.gather(*(start(name) for name in processes
                           if kind_of(name) in ("kubelet", "hollow-nodes")
                           and name not in firsts))
    # within up's one deadline: the signer is the controller-manager, a static pod whose
    # start a loaded machine stretches past any shorter window of its own
    await approve_serving(deadline - time.monotonic())
    await wait_for_cluster(admin, config.nodes, deadline, since)
    print(f"every node Ready, every kube-system pod running "
          f"({time.monotonic() - started:.1f} s)", flush=True)
