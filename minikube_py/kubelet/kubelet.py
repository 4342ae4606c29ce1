"""The kubelet: the node agent that turns the pods bound to its node into containers.

Upstream `pkg/kubelet/kubelet.go`. What runs, and where each step lives:

    node_status.py   register the Node, report its status; lease.py: heartbeat Lease
    config_file.py   static pods from --pod-manifest-path, before and without any API
                     server                               -> pod_workers.update_pod(uid)
    informers        pods with spec.nodeName=<node> (plus ConfigMaps/Secrets/Services
                     their env and volumes read)          -> pod_workers.update_pod(uid)
                     (a mirror pod wakes its static pod's worker instead)
    pleg.py          relist CRI every second              -> pod_workers.update_pod(uid)
    probe_workers.py liveness/readiness/startup results   -> pod_workers.update_pod(uid)
    pod_workers.py   one task per pod, each running Kubelet.sync_pod(uid):
        admission -> volumes (volumes/) -> RuntimeManager.sync_pod (kuberuntime.py)
        -> a static pod's mirror pod (mirror_client.py)
        -> generate_pod_status (pod_status.py) -> StatusManager writes it
        or, once the pod is being deleted: kill, final status, remove, DELETE (grace 0)
        (a static pod whose manifest is gone: kill, final status, remove)
    eviction.py      hard eviction thresholds             -> evict a pod
    housekeeping     resync every pod; delete mirror pods whose static pod is gone
    server.py        :10250 /healthz /pods /containerLogs /stats/summary
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from minikube_py.api import Obj
from minikube_py.api.podutil import pod_key
from minikube_py.client import retry
from minikube_py.client.errors import NotFound
from minikube_py.client.events import EventRecorder
from minikube_py.client.informer import EventHandler, SharedInformer, SharedInformerFactory
from minikube_py.client.logs import kv, log_v
from minikube_py.client.rest import Client
from minikube_py.cri import CRIError, RuntimeService, RuntimeUnavailable
from minikube_py.gen.cri import api_pb2
from minikube_py.kubelet.auth import KubeletAuth, KubeletAuthConfig
from minikube_py.kubelet.backoff import Backoff
from minikube_py.kubelet.config_file import FILE_CHECK_FREQUENCY, FileSource
from minikube_py.kubelet.envvars import make_environment
from minikube_py.kubelet.eviction import (
    EvictionManager,
    PodUsage,
    observe_host,
    parse_thresholds,
)
from minikube_py.kubelet.host_interface import HostInterface
from minikube_py.kubelet.images import ImageManager
from minikube_py.kubelet.kuberuntime import RuntimeManager
from minikube_py.kubelet.kuberuntime_sandbox import DNSSettings, pod_log_directory
from minikube_py.kubelet.lease import NodeLease
from minikube_py.kubelet.mirror_client import (
    CONFIG_FIRST_SEEN_ANNOTATION,
    FILE_SOURCE,
    MirrorClient,
    is_mirror_pod,
    is_mirror_pod_of,
    is_static_pod,
    pod_full_name,
)
from minikube_py.kubelet.node_status import (
    HostInfo,
    NodeStatusManager,
    node_allocatable,
    node_capacity,
)
from minikube_py.kubelet.objectcache import ObjectCache
from minikube_py.kubelet.pleg import GenericPLEG
from minikube_py.kubelet.pod_status import (
    KUBELET_CONDITIONS,
    StatusInputs,
    generate_pod_status,
)
from minikube_py.kubelet.pod_workers import DONE, PodWorkers
from minikube_py.kubelet.podstate import PodRuntimeStatus, RuntimeView, runtime_view
from minikube_py.kubelet.probe_workers import ProbeManager, RunningContainer
from minikube_py.kubelet.resources import ContainerResources, container_resources
from minikube_py.kubelet.server import KubeletServer
from minikube_py.kubelet.status_manager import StatusManager
from minikube_py.kubelet.volumes.emptydir import disk_usage
from minikube_py.kubelet.volumes.manager import ContainerMount, VolumeError, VolumeManager
from minikube_py.lifecycle import Component
from minikube_py.security.pki import server_ssl_context
from minikube_py.tracing import context as tracing_context
from minikube_py.tracing.tracer import DISABLED, Tracer

log = logging.getLogger(__name__)
RESYNC_SECONDS = 60.0
HOUSEKEEPING_SECONDS = 2.0
VOLUME_RETRY_SECONDS = 2.0
RUNTIME_RETRY_SECONDS = 1.0
"""How soon a pod whose sync found the runtime unavailable (containerd restarting) syncs
again: nothing wakes it when the runtime is back, as the PLEG sees no change then."""
# How soon a static pod's sync runs again when the API server answers but its mirror
# pod could not be made (the Node not registered yet, the create refused).
MIRROR_RETRY_SECONDS = 2.0


@dataclass
class KubeletConfig:
    """The kubelet's flags (upstream's KubeletConfiguration, the part used here)."""

    node_name: str
    root_dir: Path
    logs_root: Path
    pod_cidr: str | None = None
    address: str = "0.0.0.0"
    port: int = 10250
    cluster_dns: list[str] = field(default_factory=list)
    cluster_domain: str = "cluster.local"
    kube_reserved: dict[str, str] = field(default_factory=dict)
    system_reserved: dict[str, str] = field(default_factory=dict)
    eviction_hard: str = "memory.available<100Mi,nodefs.available<10%"
    node_labels: dict[str, str] = field(default_factory=dict)
    register_taints: list[Obj] = field(default_factory=list)
    max_parallel_starts: int = 3
    # CrashLoopBackOff and image pull back-off: 10 s doubling to 5 min (upstream's
    # crashLoopBackOff settings; tests shorten them).
    backoff_initial: float = 10.0
    backoff_max: float = 300.0
    pleg_period: float = 1.0
    sync_frequency: float = RESYNC_SECONDS
    # Hollow nodes (kubemark) share informers, skip volumes, eviction and the HTTP server.
    hollow: bool = False
    # The API's TLS and who may use it (auth.py): --tls-cert-file, --tls-private-key-file,
    # --client-ca-file; anonymous requests, bearer tokens, Webhook authorization.
    tls_cert_file: str = ""
    tls_private_key_file: str = ""
    client_ca_file: str = ""
    auth: KubeletAuthConfig = field(default_factory=KubeletAuthConfig)
    healthz_port: int = 0  # /healthz alone on plain HTTP (upstream: 10248); 0: none
    # --rotate-server-certificates: without --tls-cert-file, the serving pair comes from
    # a kubelet-serving CSR (certificate.serving_certificate), in this directory
    serving_cert_dir: Path | None = None
    # --pod-manifest-path (staticPodPath): static pods, one per file (config_file.py),
    # looked at every file_check_frequency seconds
    static_pod_path: Path | None = None
    file_check_frequency: float = FILE_CHECK_FREQUENCY


class Kubelet(Component):
    """One node's agent: registers the Node, keeps its Lease, and runs the pods bound to it
    through CRI. `await run()` in its process, or `async with Kubelet(...)`."""

    def __init__(self, config: KubeletConfig, client: Client, runtime: RuntimeService,
                 host: HostInfo, *, factory: SharedInformerFactory | None = None,
                 tracer: Tracer = DISABLED) -> None:
        self.config = config
        self.client = client
        self.tracer = tracer
        self.runtime = runtime
        self.host = host
        self.node_name = config.node_name
        self.factory = factory or SharedInformerFactory(client)
        self._own_factory = factory is None
        self.recorder = EventRecorder(client, "kubelet", config.node_name)
        self.pods: dict[str, Obj] = {}  # uid -> the latest pod from the API, or static pod
        # static pods: the API's copies by full name (from the pod informer), the static
        # pods whose manifest is gone until they have stopped (uid -> pod), and the file
        # source; sources_ready once every source has told its pods (upstream's
        # sourcesReady: until then nothing unknown is removed)
        self.mirror_pods: dict[str, Obj] = {}
        self._static_stopping: dict[str, Obj] = {}
        self.mirror_client = MirrorClient(client, config.node_name)
        self.file_source = (FileSource(config.static_pod_path, config.node_name,
                                       self.static_pods_seen,
                                       period=config.file_check_frequency)
                            if config.static_pod_path is not None else None)
        self._sources_ready = False
        self.workers = PodWorkers(self.sync_pod)
        # The back-off of a container that ran 10 minutes without crashing starts afresh.
        self.crash_backoff = Backoff(initial=config.backoff_initial,
                                     maximum=config.backoff_max, reset_after=600.0)
        self.images = ImageManager(runtime, self.record_event,
                                   Backoff(initial=config.backoff_initial,
                                           maximum=config.backoff_max))
        self.probes = ProbeManager(self.exec_sync, on_change=self.workers.update_pod,
                                   record_event=self.record_event)
        self.runtime_manager = RuntimeManager(
            runtime, images=self.images, logs_root=config.logs_root,
            dns=DNSSettings(cluster_dns=config.cluster_dns,
                            cluster_domain=config.cluster_domain),
            record_event=self.record_event, crash_backoff=self.crash_backoff,
            container_options=self.container_options, exec_sync=self.exec_sync,
            start_slots=asyncio.Semaphore(config.max_parallel_starts),
            make_log_dirs=not config.hollow)
        self.pleg = GenericPLEG(runtime, self._runtime_changed, period=config.pleg_period)
        self._synced_views: dict[str, RuntimeView] = {}  # uid -> runtime view at last sync
        self.status_manager = StatusManager(client, mirror_pod_of=self.mirror_pod_of)
        self.node_status = NodeStatusManager(
            client, config.node_name, runtime, host=host, pod_cidr=config.pod_cidr,
            kubelet_port=config.port, kube_reserved=config.kube_reserved,
            system_reserved=config.system_reserved,
            eviction_hard=parse_thresholds(config.eviction_hard),
            labels=config.node_labels, taints=config.register_taints,
            pressure=self._pressure)
        self.lease = NodeLease(client, config.node_name)
        self.allocatable = node_allocatable(
            node_capacity(host), config.kube_reserved, config.system_reserved,
            parse_thresholds(config.eviction_hard))
        self.eviction: EvictionManager | None = None
        self.volumes: VolumeManager | None = None
        self.server: KubeletServer | None = None
        # each Secret and ConfigMap a pod uses, watched on its own (the Node authorizer
        # lets a kubelet read no other)
        self._config_maps = ObjectCache(client, "configmaps", self._referenced_changed)
        self._secrets = ObjectCache(client, "secrets", self._referenced_changed)
        self._evicted: dict[str, str] = {}  # uid -> eviction message
        self._volume_paths: dict[str, dict[str, Path]] = {}  # uid -> volume name -> path
        self._runtime_name = "containerd"
        self._tasks: list[asyncio.Task[None]] = []
        self.pod_informer: SharedInformer | None = None
        self.ready = asyncio.Event()

    # -- wiring -------------------------------------------------------------------------

    async def run(self) -> None:
        """Set everything up, then keep running until cancelled."""
        try:
            await self._set_up()
            await asyncio.Event().wait()
        finally:
            await self._tear_down()

    async def wait_started(self) -> None:
        """The node status loop runs, the pods' caches synced, the PLEG relists. (Static
        pods run before that: they wait for no API server.)"""
        await self.ready.wait()

    async def _set_up(self) -> None:
        version = await self.runtime.version(api_pb2.VersionRequest())
        self._runtime_name = version.runtime_name
        self._services = self.factory.informer("services")
        if not self.config.hollow:
            self.volumes = VolumeManager(
                self.config.root_dir / "pods",
                get_config_map=self._get_config_map, get_secret=self._get_secret,
                get_claim=self._get_claim, get_volume=self._get_volume,
                get_node_labels=self._node_labels, allocatable=self.allocatable,
                get_service_account_token=self._service_account_token,
                node_name=self.node_name, update_claim_status=self._update_claim_status,
                record_event=self.recorder.event)
            self.eviction = EvictionManager(
                parse_thresholds(self.config.eviction_hard),
                observe=lambda: observe_host(self.config.root_dir),
                active_pods=self.active_pods, pod_usage=self._pod_usage, evict=self.evict_pod,
                volume_usage=self.volumes.ephemeral_volume_usage)
            self.server = KubeletServer(
                HostInterface(self), self.config.address, self.config.port,
                auth=KubeletAuth(self.config.auth, self.client, self.node_name),
                ssl_context=server_ssl_context(
                    Path(self.config.tls_cert_file), Path(self.config.tls_private_key_file),
                    self._client_ca())
                if self.config.tls_cert_file else None,
                healthz_port=self.config.healthz_port or None)
            await self.server.start_healthz()
            if self.config.serving_cert_dir is not None and not self.config.tls_cert_file:
                # the API waits for its certificate; the node registers meanwhile, so
                # whoever approves the request can check the names against the Node
                self._tasks.append(asyncio.create_task(self._serve_when_certified(),
                                                       name="serving-certificate"))
            else:
                await self.server.start_api()
        if self._own_factory:
            self.pod_informer = SharedInformer(
                self.client, "pods", field_selector=f"spec.nodeName={self.node_name}")
            self.pod_informer.add_event_handler(EventHandler(
                on_add=self.pod_added, on_update=self.pod_updated,
                on_delete=self.pod_deleted))
            self.pod_informer.run_in_background()
            self.factory.start()
        self._tasks.append(asyncio.create_task(self.node_status.run(), name="node-status"))
        self._tasks.append(asyncio.create_task(self._heartbeat(), name="node-lease"))
        if self.file_source is not None:
            # the static pods start now, whether an API server answers or not
            self.file_source.list_config()
            self._tasks.append(asyncio.create_task(self.file_source.run(), name="file-source"))
        self.pleg.start()
        if self._own_factory:
            assert self.pod_informer is not None
            await self.pod_informer.wait_for_sync()
            await self.factory.wait_for_cache_sync()
        self._all_sources_ready()
        await self._remove_orphans()
        self._tasks.append(asyncio.create_task(self._housekeeping(), name="housekeeping"))
        if self.eviction is not None:
            self._tasks.append(asyncio.create_task(self._eviction_loop(), name="eviction"))
        self.ready.set()

    def _client_ca(self) -> Path | None:
        return Path(self.config.client_ca_file) if self.config.client_ca_file else None

    def serving_addresses(self) -> tuple[str, ...]:
        """The names a serving certificate must hold: the node's name and its address."""
        return (self.node_name, *((self.host.node_ip,) if self.host.node_ip else ()))

    async def _serve_when_certified(self) -> None:
        """--rotate-server-certificates: ask for the serving certificate, start the API
        with it, then renew it before it expires (the new one serves new connections)."""
        from minikube_py.kubelet import certificate

        assert self.server is not None and self.config.serving_cert_dir is not None
        cert_dir, addresses = self.config.serving_cert_dir, self.serving_addresses()
        # a kubelet that starts the API server itself (static pods) asks before anyone
        # answers: retry until the API server does
        pair = await retry.on_error("requesting the serving certificate", lambda: (
            certificate.serving_certificate(self.client, self.node_name, addresses, cert_dir)))
        context = server_ssl_context(pair, pair, self._client_ca())
        self.server.ssl_context = context
        await self.server.start_api()
        log.info("serving the kubelet API over TLS on port %d", self.server.port)

        def reload() -> None:
            current = certificate.current(cert_dir, certificate.SERVING)
            if current is not None:
                context.load_cert_chain(current.path, current.path)
        await certificate.CertificateRotation(self.client, self.node_name, cert_dir, reload,
                                              serving=addresses).run()

    async def _heartbeat(self) -> None:
        """The node Lease, renewed every 10 s once the Node it belongs to is registered
        (a Lease is created with the Node as its owner)."""
        await self.node_status.registered.wait()
        await self.lease.run()

    async def _tear_down(self) -> None:
        """Stop the kubelet's own tasks. Containers keep running, as upstream's do: a
        restarted kubelet adopts them."""
        self.ready.clear()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()
        await self.pleg.stop()
        await self.workers.stop()
        await self.probes.stop()
        if self.pod_informer is not None:
            await self.pod_informer.stop()
        await self._config_maps.close()
        await self._secrets.close()
        if self._own_factory:
            await self.factory.stop()
        if self.server is not None:
            await self.server.stop()
        self.node_status.stop()
        self.lease.stop()
        await self.recorder.stop()

    def record_event(self, obj: Obj, event_type: str, reason: str, message: str) -> None:
        self.recorder.event({"kind": "Pod", "apiVersion": "v1", **obj}, event_type, reason,
                            message)

    # -- pod sources --------------------------------------------------------------------

    def pod_added(self, pod: Obj) -> None:
        """SyncLoop ADD: a pod bound to this node; its worker syncs it."""
        log_v(log, 2, "SyncLoop ADD", source="api", pods=pod_key(pod))
        if is_mirror_pod(pod):
            self._handle_mirror_pod(pod)
            return
        uid = pod["metadata"]["uid"]
        self.pods[uid] = pod
        self.workers.update_pod(uid)

    def _runtime_changed(self, uid: str) -> None:
        """A PLEG event: sync, unless the worker's last sync already saw exactly this
        (the containers it started itself, for one). Asked again when the worker gets to
        it: a sync running now may be the one that makes the change. Before every source
        has told its pods, a pod none has named is left alone (it may be an API pod)."""
        if not self._sources_ready and uid not in self.pods and (
                uid not in self._static_stopping):
            return
        if not self._saw_runtime(uid):
            self.workers.update_pod(uid, unless=lambda: self._saw_runtime(uid))

    def _saw_runtime(self, uid: str) -> bool:
        """The worker's last sync saw what the PLEG's last relist saw of the pod."""
        return self._synced_views.get(uid) == self.pleg.view(uid)

    def pod_updated(self, old: Obj, new: Obj) -> None:
        """An update wakes the worker only if it matters to the node (upstream's
        checkAndUpdatePod): the kubelet's own status writes come back as updates too."""
        if is_mirror_pod(new):
            self.pods.pop(new["metadata"]["uid"], None)
            self._handle_mirror_pod(new, wake=needs_sync(old, new))
            return
        self.pods[new["metadata"]["uid"]] = new
        if needs_sync(old, new):
            log_v(log, 2, "SyncLoop UPDATE", source="api", pods=pod_key(new))
            self.workers.update_pod(new["metadata"]["uid"])

    def pod_deleted(self, pod: Obj) -> None:
        """SyncLoop REMOVE: the pod object is gone; its worker tears down what is left."""
        log_v(log, 2, "SyncLoop REMOVE", source="api", pods=pod_key(pod))
        if is_mirror_pod(pod):
            self._handle_mirror_pod(pod, deleted=True)
            return
        uid = pod["metadata"]["uid"]
        self.pods.pop(uid, None)
        self.workers.update_pod(uid)

    def static_pods_seen(self, pods: list[Obj]) -> None:
        """The file source's whole set of static pods (upstream's SET): a new one starts,
        one that is gone stops; a changed manifest is a new pod (a new uid), so the old
        one stops and the new one starts once it has."""
        seen = {pod["metadata"]["uid"]: pod for pod in pods}
        for uid, pod in list(self.pods.items()):
            if is_static_pod(pod) and uid not in seen:
                log_v(log, 2, "SyncLoop REMOVE", source=FILE_SOURCE, pods=pod_key(pod))
                del self.pods[uid]
                self._static_stopping[uid] = pod
                self.workers.update_pod(uid)
        for uid, pod in seen.items():
            known = self.pods.get(uid)
            annotations = pod["metadata"]["annotations"]
            if known is None:
                log_v(log, 2, "SyncLoop ADD", source=FILE_SOURCE, pods=pod_key(pod))
                annotations[CONFIG_FIRST_SEEN_ANNOTATION] = _first_seen()
                self.pods[uid] = pod
                self.workers.update_pod(uid)
                continue
            # the same uid: a manifest that names its uid was changed
            annotations[CONFIG_FIRST_SEEN_ANNOTATION] = (
                known["metadata"]["annotations"][CONFIG_FIRST_SEEN_ANNOTATION])
            if needs_sync(known, pod):
                log_v(log, 2, "SyncLoop UPDATE", source=FILE_SOURCE, pods=pod_key(pod))
                self.pods[uid] = {**pod, "status": known.get("status") or {}}
                self.workers.update_pod(uid)

    def _handle_mirror_pod(self, mirror: Obj, *, deleted: bool = False,
                           wake: bool = True) -> None:
        """handleMirrorPod: keep the API's copy of a static pod and let the static pod's
        worker look at it (it makes a deleted or outdated one again). A mirror pod never
        runs."""
        full_name = pod_full_name(mirror)
        if not deleted:
            self.mirror_pods[full_name] = mirror
        else:
            known = self.mirror_pods.get(full_name)
            if known is not None and known["metadata"]["uid"] == mirror["metadata"]["uid"]:
                del self.mirror_pods[full_name]
            self.status_manager.forget(mirror["metadata"]["uid"])
        if wake:
            self._wake_static_pods(full_name)

    def _wake_static_pods(self, full_name: str | None = None) -> None:
        """Sync the static pods (of one full name, or all)."""
        for uid, pod in self.pods.items():
            if is_static_pod(pod) and full_name in (None, pod_full_name(pod)):
                self.workers.update_pod(uid)

    def mirror_pod_of(self, pod: Obj) -> Obj | None:
        """GetMirrorPodByPod: the static pod's mirror pod, if it is of this version."""
        mirror = self.mirror_pods.get(pod_full_name(pod))
        return mirror if mirror is not None and is_mirror_pod_of(mirror, pod) else None

    def _all_sources_ready(self) -> None:
        """Every source has told its pods: what none of them has may now be removed, and
        the static pods may get their mirror pods (the API server answers)."""
        self._sources_ready = True
        self._wake_static_pods()

    def _referenced_changed(self, changed: Obj) -> None:
        """A ConfigMap or Secret appeared or changed: resync the pods that use it."""
        meta = changed["metadata"]
        for uid, pod in self.pods.items():
            if pod["metadata"]["namespace"] == meta["namespace"] and \
                    meta["name"] in referenced_names(pod):
                self.workers.update_pod(uid)

    def active_pods(self) -> list[Obj]:
        return [pod for pod in self.pods.values()
                if (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")]

    async def _get_config_map(self, namespace: str, name: str) -> Obj | None:
        return await self._config_maps.get(namespace, name)

    async def _get_secret(self, namespace: str, name: str) -> Obj | None:
        return await self._secrets.get(namespace, name)

    async def _service_account_token(self, pod: Obj, audience: str, expiration: int) -> str:
        """TokenRequest for the pod's account, bound to the pod (the token manager's
        request; the Node authorizer allows it for pods bound to this node)."""
        metadata = pod["metadata"]
        account = pod["spec"].get("serviceAccountName") or "default"
        spec: Obj = {"expirationSeconds": expiration,
                     "boundObjectRef": {"apiVersion": "v1", "kind": "Pod",
                                        "name": metadata["name"], "uid": metadata["uid"]}}
        if audience:
            spec["audiences"] = [audience]
        answer = await self.client.request(
            "POST", f"/api/v1/namespaces/{metadata['namespace']}/serviceaccounts/{account}"
            "/token", body={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                            "spec": spec})
        return str(answer["status"]["token"])

    async def _get_claim(self, namespace: str, name: str) -> Obj | None:
        try:
            return await self.client.resource("persistentvolumeclaims").get(name, namespace)
        except NotFound:
            return None

    async def _update_claim_status(self, claim: Obj) -> Obj:
        """A claim's /status, as the node expander writes it (NodeRestriction lets a node
        change only its capacity, conditions and allocation)."""
        saved: Obj = await self.client.resource("persistentvolumeclaims").update_status(claim)
        return saved

    async def _get_volume(self, name: str) -> Obj | None:
        """The PersistentVolume a pod's claim is bound to (the Node authorizer allows the
        get for claims of pods bound to this node)."""
        try:
            return await self.client.resource("persistentvolumes").get(name)
        except NotFound:
            return None

    async def _node_labels(self) -> dict[str, str]:
        """GetNodeLabels: the labels of this kubelet's Node, as registered."""
        node = await self.client.resource("nodes").get(self.node_name)
        return dict(node["metadata"].get("labels") or {})

    # -- runtime helpers ----------------------------------------------------------------

    async def exec_sync(self, container_id: str, command: list[str],
                        timeout: float) -> tuple[int, str]:
        """ExecSync through CRI (probes and lifecycle hooks). A command that ran answers
        its exit code; one the runtime could not run (containerd restarting, the container
        gone) raises CRIError, which an exec probe reads as "unknown", never as failed."""
        # CRI timeout 0 means none (lifecycle hooks); probes pass their timeoutSeconds.
        seconds = max(1, int(timeout)) if timeout else 0
        try:
            answer = await self.runtime.exec_sync(
                api_pb2.ExecSyncRequest(container_id=container_id, cmd=command,
                                        timeout=seconds),
                timeout=seconds + 5 if seconds else 3600.0)
        except CRIError as error:
            if error.code.name == "DEADLINE_EXCEEDED":
                raise TimeoutError(error.message) from error
            raise
        return answer.exit_code, (answer.stdout + answer.stderr).decode(errors="replace")

    async def container_options(self, pod: Obj, container: Obj, pod_ips: list[str]
                                ) -> tuple[list[tuple[str, str]], list[ContainerMount],
                                           ContainerResources]:
        """GenerateRunContainerOptions: env, mounts and resources for CreateContainer."""
        namespace = pod["metadata"]["namespace"]
        env = await make_environment(
            pod, container, get_config_map=self._get_config_map, get_secret=self._get_secret,
            # the namespace's services, and default/kubernetes for KUBERNETES_SERVICE_*
            services=self._services.store.list(namespace) + (
                [] if namespace == "default" else self._services.store.list("default")),
            allocatable=self.allocatable,
            pod_ip=pod_ips[0] if pod_ips else "", pod_ips=pod_ips,
            host_ip=self.host.node_ip, node_name=self.node_name)
        mounts: list[ContainerMount] = []
        if self.volumes is not None:
            paths = self._volume_paths.get(pod["metadata"]["uid"]) or {}
            mounts = self.volumes.container_mounts(pod, container, paths, dict(env))
        resources = container_resources(pod, container, self.host.memory_bytes)
        return env, mounts, resources

    # -- SyncPod --------------------------------------------------------------------------

    async def sync_pod(self, uid: str) -> float | None:
        """One pass of the pod worker; a span of the pod's trace when it carries one (its
        CRI calls are spans under it, minikube_py/cri.py)."""
        pod = self.pods.get(uid)
        parent = (tracing_context.of_object(pod)
                  if pod and self.tracer.enabled and not _settled(pod) else None)
        try:
            if pod is None or parent is None:
                return await self._sync_pod(uid, pod)
            metadata = pod["metadata"]
            with self.tracer.span("SyncPod", parent=parent, **{
                    "k8s.resource": "pods", "k8s.namespace": metadata.get("namespace", ""),
                    "k8s.name": metadata.get("name", ""), "k8s.uid": uid,
                    "node": self.node_name}):
                return await self._sync_pod(uid, pod)
        except RuntimeUnavailable:
            return RUNTIME_RETRY_SECONDS  # the CRI client has logged it, once

    async def _sync_pod(self, uid: str, pod: Obj | None) -> float | None:
        """The pod's whole lifecycle step by step."""
        status = await self.runtime_manager.get_pod_status(uid)
        pod = pod or self._static_stopping.get(uid)
        if pod is None:
            return await self._sync_removed_pod(uid, status)
        if (pod["metadata"].get("deletionTimestamp") or uid in self._evicted
                or uid in self._static_stopping):
            return await self._sync_terminating_pod(pod, status)
        phase = (pod.get("status") or {}).get("phase")
        if phase in ("Succeeded", "Failed"):
            return await self._sync_terminated_pod(pod, status)
        if self._waits_for_static_pod(pod):
            return None  # the static pod it replaces wakes it once it has stopped
        rejection = self._admit(pod, status)
        if rejection is not None:
            self._evicted[uid] = rejection[1]
            return await self._sync_terminating_pod(pod, status, reason=rejection[0])
        if self.volumes is not None:
            try:
                self._volume_paths[uid] = await self.volumes.mount_pod_volumes(pod)
            except VolumeError as error:
                self.record_event(pod, "Warning", "FailedMount", str(error))
                await self._write_status(pod, status, {})
                return VOLUME_RETRY_SECONDS
        result = await self.runtime_manager.sync_pod(
            pod, status,
            liveness_failure=lambda name: self.probes.liveness_failure(uid, name),
            startup_failure=lambda name: self.probes.startup_failure(uid, name))
        if result.changed:
            status = await self.runtime_manager.get_pod_status(uid)
        self.probes.update_pod(pod, {c.name: RunningContainer(c.id, c.started_at)
                                     for c in status.running_containers},
                               pod_ip=status.pod_ips[0] if status.pod_ips else "")
        mirror_pending = is_static_pod(pod) and await self._sync_mirror_pod(pod)
        written = await self._write_status(pod, status, result.waiting)
        self._synced_views[uid] = runtime_view(status)
        await self.runtime_manager.remove_dead_containers(status)
        if written.get("phase") in ("Succeeded", "Failed"):
            return 0.0  # stop what is left of a finished pod
        if mirror_pending and (result.retry_after is None
                               or result.retry_after > MIRROR_RETRY_SECONDS):
            return MIRROR_RETRY_SECONDS
        return result.retry_after

    def _waits_for_static_pod(self, pod: Obj) -> bool:
        """allowStaticPodStart: a static pod does not start while the one of the same
        full name it replaces is still stopping (both may want the same host port)."""
        if not is_static_pod(pod):
            return False
        full_name, uid = pod_full_name(pod), pod["metadata"]["uid"]
        return any(pod_full_name(other) == full_name
                   for other_uid, other in self._static_stopping.items() if other_uid != uid)

    async def _sync_mirror_pod(self, pod: Obj) -> bool:
        """SyncPod's step for a static pod: a mirror pod being deleted, or one of another
        version of the manifest, is deleted; a missing one is created. True when it is to
        be tried again soon: the API server answers, but the mirror pod could not be made
        (the Node is not registered yet, or the create failed). Until the pod informer
        has synced nothing is tried: that wakes every static pod."""
        if not self._sources_ready:
            return False
        full_name = pod_full_name(pod)
        mirror = self.mirror_pods.get(full_name)
        deleted = False
        if mirror is not None and (mirror["metadata"].get("deletionTimestamp")
                                   or not is_mirror_pod_of(mirror, pod)):
            log.info("%s", kv("Trying to delete pod", pod=pod_key(pod),
                              podUID=mirror["metadata"]["uid"]))
            deleted = await self.mirror_client.delete_mirror_pod(mirror)
            if not deleted:
                return True  # gone or replaced already: the informer will say
            log.info("%s", kv("Deleted mirror pod because it is outdated",
                              pod=pod_key(mirror)))
        if mirror is None or deleted:
            created = await self.mirror_client.create_mirror_pod(pod)
            if created is None:
                return True
            self.mirror_pods[full_name] = created
        return False

    def _admit(self, pod: Obj, status: PodRuntimeStatus) -> tuple[str, str] | None:
        """Admission, once, before anything of the pod runs on this node."""
        if status.sandboxes or status.containers or self.eviction is None:
            return None
        message = self.eviction.admit(pod)
        return ("Evicted", message) if message else None

    async def _write_status(self, pod: Obj, status: PodRuntimeStatus,
                            waiting: dict[str, tuple[str, str]], *,
                            terminating: bool = False, overrides: Obj | None = None) -> Obj:
        uid = pod["metadata"]["uid"]
        inputs = StatusInputs(node_ips=[self.host.node_ip], runtime_name=self._runtime_name,
                              waiting=waiting, terminating=terminating,
                              is_ready=lambda name: self.probes.is_ready(uid, name),
                              is_started=lambda name: self.probes.is_started(uid, name))
        new_status = {**generate_pod_status(pod, status, inputs), **(overrides or {})}
        if is_static_pod(pod):
            pod["status"] = new_status  # the kubelet's own copy: no API object to read back
        await self.status_manager.set_pod_status(pod, new_status)
        return new_status

    async def _sync_terminating_pod(self, pod: Obj, status: PodRuntimeStatus, *,
                                    reason: str = "") -> float | None:
        """SyncTerminatingPod: kill, write the final status; then remove and confirm."""
        uid = pod["metadata"]["uid"]
        self.probes.remove_pod(uid)
        grace = _grace(pod)
        if status.running_containers or status.ready_sandbox:
            await self.runtime_manager.kill_pod(pod, status, grace)
            status = await self.runtime_manager.get_pod_status(uid)
        overrides = ({"phase": "Failed", "reason": reason or "Evicted",
                      "message": self._evicted[uid]} if uid in self._evicted else None)
        await self._write_status(pod, status, {}, terminating=True, overrides=overrides)
        if uid in self._static_stopping:
            return await self._static_pod_stopped(pod, status)
        if not pod["metadata"].get("deletionTimestamp"):
            await self._cleanup(pod, status, remove_containers=False)
            return None
        await self._cleanup(pod, status, remove_containers=True)
        await self.status_manager.delete_pod(pod)
        return None

    async def _static_pod_stopped(self, pod: Obj, status: PodRuntimeStatus) -> float:
        """A static pod whose manifest is gone has stopped: remove what is left of it and
        wake the static pod that waits to replace it. Its mirror pod, now an orphan, goes
        with the next housekeeping; a manifest put back meanwhile starts it afresh."""
        uid = pod["metadata"]["uid"]
        del self._static_stopping[uid]
        done = await self._sync_removed_pod(uid, status)
        self._wake_static_pods(pod_full_name(pod))
        return 0.0 if uid in self.pods else done

    async def _sync_terminated_pod(self, pod: Obj, status: PodRuntimeStatus) -> float | None:
        """A finished pod keeps its API object; the kubelet stops its sandbox and frees
        its volumes, and keeps the containers so their logs stay readable."""
        uid = pod["metadata"]["uid"]
        self.probes.remove_pod(uid)
        if status.running_containers or status.ready_sandbox:
            await self.runtime_manager.kill_pod(pod, status, _grace(pod))
        await self._cleanup(pod, status, remove_containers=False)
        return None

    async def _sync_removed_pod(self, uid: str, status: PodRuntimeStatus) -> float:
        """The API object is gone (or never was ours): remove whatever still runs."""
        self.probes.remove_pod(uid)
        if status.running_containers or status.ready_sandbox:
            stub = {"metadata": {"uid": uid, "name": status.name,
                                 "namespace": status.namespace},
                    "spec": {"containers": [], "terminationGracePeriodSeconds": 2}}
            await self.runtime_manager.kill_pod(stub, status, 2)
        await self.runtime_manager.remove_pod(status)
        if self.volumes is not None:
            await self.volumes.teardown_pod_volumes(uid)
        self._volume_paths.pop(uid, None)
        self._synced_views.pop(uid, None)
        self.status_manager.forget(uid)
        self._evicted.pop(uid, None)
        return DONE

    async def _cleanup(self, pod: Obj, status: PodRuntimeStatus, *,
                       remove_containers: bool) -> None:
        uid = pod["metadata"]["uid"]
        if remove_containers:
            await self.runtime_manager.remove_pod(status)
        if self.volumes is not None:
            await self.volumes.teardown_pod_volumes(uid)

    async def _remove_orphans(self) -> None:
        """After a restart: adopt the containers of pods still bound here (the PLEG's first
        relist wakes their workers), remove sandboxes of pods that no longer exist."""
        for uid in await self.runtime_manager.running_pod_uids():
            if uid not in self.pods:
                self.workers.update_pod(uid)

    async def _housekeeping(self) -> None:
        """Every 2 s, delete the mirror pods whose static pod is gone; every syncFrequency,
        resync every pod: re-projects volumes and retries whatever waits on something the
        kubelet is not told about."""
        last_resync = time.monotonic()
        while True:
            await asyncio.sleep(HOUSEKEEPING_SECONDS)
            await self._delete_orphaned_mirror_pods()
            if time.monotonic() - last_resync >= self.config.sync_frequency:
                last_resync = time.monotonic()
                for uid in list(self.pods):
                    self.workers.update_pod(uid)
                if self.volumes is not None:
                    # volume dirs of pods that are neither in the API nor being torn down
                    await self.volumes.cleanup_orphans(set(self.pods) | self.workers.known())
                used = {(pod["metadata"]["namespace"], name) for pod in self.pods.values()
                        for name in referenced_names(pod)}
                await self._config_maps.keep_only(used)
                await self._secrets.keep_only(used)

    async def _delete_orphaned_mirror_pods(self) -> None:
        """deleteOrphanedMirrorPods: a mirror pod without a static pod of its full name
        (none running, none stopping) is deleted."""
        wanted = {pod_full_name(pod) for pod in [*self.pods.values(),
                                                 *self._static_stopping.values()]
                  if is_static_pod(pod)}
        for full_name, mirror in list(self.mirror_pods.items()):
            if full_name not in wanted and await self.mirror_client.delete_mirror_pod(mirror):
                if self.mirror_pods.get(full_name) is mirror:
                    del self.mirror_pods[full_name]

    # -- eviction -----------------------------------------------------------------------

    def _pressure(self) -> dict[str, bool]:
        return self.eviction.pressure() if self.eviction is not None else {}

    async def _eviction_loop(self) -> None:
        assert self.eviction is not None
        while True:
            try:
                await self.eviction.synchronize()
            except Exception:
                log.exception("eviction manager pass failed")
            await asyncio.sleep(10)

    async def evict_pod(self, pod: Obj, message: str) -> None:
        """The eviction manager picked this pod: kill it; its status says Failed/Evicted."""
        uid = pod["metadata"]["uid"]
        self.record_event(pod, "Warning", "Evicted", message)
        self._evicted[uid] = message
        self.workers.update_pod(uid)

    async def _pod_usage(self, uid: str) -> PodUsage:
        """The pod's containers' stats as the CRI stats provider makes them: of each
        container its running instance (else its newest), the memory working set, and
        as ephemeral storage its writable layer plus its log directory."""
        selector = {"io.kubernetes.pod.uid": uid}
        listed = await self.runtime.list_containers(api_pb2.ListContainersRequest(
            filter=api_pb2.ContainerFilter(label_selector=selector)))
        answer = await self.runtime.list_container_stats(api_pb2.ListContainerStatsRequest(
            filter=api_pb2.ContainerStatsFilter(label_selector=selector)))
        stats = {s.attributes.id: s for s in answer.stats}
        pod = self.pods.get(uid)
        containers: dict[str, dict[str, int]] = {}
        for container in live_containers(listed.containers):
            found = stats.get(container.id)
            if found is None:
                continue
            logs = 0
            if pod is not None:
                logs = await asyncio.to_thread(
                    disk_usage_if_present,
                    pod_log_directory(self.config.logs_root, pod) / container.metadata.name)
            containers[container.metadata.name] = {
                "memory": found.memory.working_set_bytes.value,
                "ephemeral-storage": found.writable_layer.used_bytes.value + logs}
        return {"containers": containers}


def live_containers(containers: Iterable[api_pb2.Container]) -> list[api_pb2.Container]:
    """removeTerminatedContainers: of the instances of each container name, the running
    ones, or else only the newest (a restarted container's old instances do not count)."""
    by_name: dict[str, list[api_pb2.Container]] = {}
    for container in sorted(containers, key=lambda c: c.created_at):
        by_name.setdefault(container.metadata.name, []).append(container)
    live = []
    for instances in by_name.values():
        running = [c for c in instances if c.state == api_pb2.CONTAINER_RUNNING]
        live.extend(running or instances[-1:])
    return live


def disk_usage_if_present(path: Path) -> int:
    """What a directory holds (du), 0 when it is not there (yet, or any more)."""
    try:
        return disk_usage(path)
    except FileNotFoundError:
        return 0


def _first_seen() -> str:
    """The config.seen annotation: now, RFC 3339 with sub-seconds (Go's RFC3339Nano)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _grace(pod: Obj) -> int:
    grace = pod["metadata"].get("deletionGracePeriodSeconds")
    if grace is None:
        grace = pod["spec"].get("terminationGracePeriodSeconds", 30)
    return max(2, int(grace))


def needs_sync(old: Obj, new: Obj) -> bool:
    """Did the spec, labels, annotations or deletion change, or a condition the kubelet
    does not own (a readiness gate)? A status the kubelet wrote itself needs nothing."""
    if old.get("spec") != new.get("spec"):
        return True
    watched = ("labels", "annotations", "deletionTimestamp", "deletionGracePeriodSeconds")
    old_meta, new_meta = (old.get("metadata") or {}), (new.get("metadata") or {})
    if any(old_meta.get(key) != new_meta.get(key) for key in watched):
        return True
    return _foreign_conditions(old) != _foreign_conditions(new)


def _foreign_conditions(pod: Obj) -> dict[str, str]:
    return {c.get("type", ""): c.get("status", "")
            for c in (pod.get("status") or {}).get("conditions") or []
            if c.get("type") not in KUBELET_CONDITIONS}


def referenced_names(pod: Obj) -> set[str]:
    """The ConfigMaps and Secrets the pod reads, in volumes and env (one namespace)."""
    names: set[str] = set()
    spec = pod["spec"]
    for volume in spec.get("volumes") or []:
        names.add((volume.get("configMap") or {}).get("name", ""))
        names.add((volume.get("secret") or {}).get("secretName", ""))
        for source in (volume.get("projected") or {}).get("sources") or []:
            names.add((source.get("configMap") or {}).get("name", ""))
            names.add((source.get("secret") or {}).get("name", ""))
    for container in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
        for source in container.get("envFrom") or []:
            names.add((source.get("configMapRef") or {}).get("name", ""))
            names.add((source.get("secretRef") or {}).get("name", ""))
        for var in container.get("env") or []:
            value_from = var.get("valueFrom") or {}
            names.add((value_from.get("configMapKeyRef") or {}).get("name", ""))
            names.add((value_from.get("secretKeyRef") or {}).get("name", ""))
    names.discard("")
    return names


def _settled(pod: Obj) -> bool:
    """Running and ready, not being deleted: a sync of it changes nothing worth a span
    (the periodic ones would bury the start of the pod's trace)."""
    status = pod.get("status") or {}
    ready = any(c.get("type") == "Ready" and c.get("status") == "True"
                for c in status.get("conditions") or [])
    return (status.get("phase") == "Running" and ready
            and not pod["metadata"].get("deletionTimestamp"))
