"""VolumeBinding (upstream plugins/volumebinding and its binder, binder.go): a pod's claims
decide where it may run, and the scheduler binds the WaitForFirstConsumer ones.

    PreFilter   the pod's claims: bound ones, WaitForFirstConsumer ones still unbound
                (delayed), and unbound Immediate ones, which the PV controller binds:
                the pod waits (UnschedulableAndUnresolvable)
    Filter      a bound claim's volume must allow the node (its node affinity); each
                delayed claim needs a free matching volume the node may use
                (api/storagehelpers.find_matching_volume), or a class that can provision
                there; a claim whose node was selected before fits that node only
    Reserve     assume the choices: the volume's claimRef, the claim's selected node,
                so the next pod does not take the same volume (Unreserve forgets them)
    PreBind     write them (the PV's claimRef, the claim's volume.kubernetes.io/
                selected-node annotation), then wait until the PV controller (and the
                provisioner) bound every claim: a span "PreBind VolumeBinding" of the
                pod's trace, under the scheduler's "bind", when the pod has one; an
                event "bound" per claim, naming its volume
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import time
from dataclasses import dataclass, field
from typing import Any

from minikube_py.api import Obj
from minikube_py.api.storagehelpers import (
    ANN_BIND_COMPLETED,
    ANN_BOUND_BY_CONTROLLER,
    ANN_SELECTED_NODE,
    check_node_affinity,
    claim_class,
    claim_names_of_pod,
    requested_storage,
    volume_class,
)
from minikube_py.api.storagehelpers import find_matching_volume as _find_matching_volume
from minikube_py.client.errors import ClientError
from minikube_py.client.informer import EventHandler
from minikube_py.client.store import Indexer
from minikube_py.scheduler.framework.interface import (
    SUCCESS,
    ClusterEvent,
    CycleState,
    FilterPlugin,
    PreBindPlugin,
    PreFilterPlugin,
    PreFilterResult,
    ReservePlugin,
    Status,
)
from minikube_py.scheduler.framework.types import NodeInfo, PodInfo
from minikube_py.tracing.tracer import child_span, current_span

STATE_KEY = "VolumeBinding"
ERR_REASON_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
ERR_REASON_NODE_CONFLICT = "node(s) had volume node affinity conflict"
ERR_REASON_PV_NOT_EXIST = ("node(s) unavailable due to one or more pvc(s) bound to "
                           "non-existent pv(s)")
ERR_UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
NOT_SUPPORTED_PROVISIONER = "kubernetes.io/no-provisioner"
DEFAULT_BIND_TIMEOUT_SECONDS = 600
BIND_POLL_SECONDS = 1.0
STORAGE_GROUP = "storage.k8s.io"


@dataclass
class PodVolumes:
    """What binding the pod on `node` takes: free volumes to claim, claims to have
    provisioned there."""

    node: Obj
    static_bindings: list[tuple[Obj, Obj]] = field(default_factory=list)  # (volume, claim)
    dynamic_provisions: list[Obj] = field(default_factory=list)  # claims


@dataclass
class _State:
    """PreFilter's findings, Filter's choices per node (upstream's stateData)."""

    bound_claims: list[Obj] = field(default_factory=list)
    delayed_claims: list[Obj] = field(default_factory=list)
    # the volumes of each delayed claim's class, listed once (unboundVolumesDelayBinding)
    volumes_by_class: dict[str, list[Obj]] = field(default_factory=dict)
    volumes_by_node: dict[str, PodVolumes] = field(default_factory=dict)

    def clone(self) -> _State:
        return self  # as upstream: preemption's copies share it


def _key(obj: Obj) -> str:
    meta = obj["metadata"]
    return f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else meta["name"]


def _annotations(obj: Obj) -> dict[str, str]:
    return obj["metadata"].get("annotations") or {}


def is_claim_fully_bound(claim: Obj) -> bool:
    """isPVCFullyBound: the PV controller finished binding it."""
    return bool((claim.get("spec") or {}).get("volumeName")) and (
        ANN_BIND_COMPLETED in _annotations(claim))


def match_topology(terms: list[Obj] | None, labels: dict[str, str]) -> bool:
    """MatchTopologySelectorTerms: no terms match every node; else one term whose every
    expression has the node's label among its values."""
    if not terms:
        return True
    return any(all(labels.get(expression["key"]) in (expression.get("values") or [])
                   for expression in term.get("matchLabelExpressions") or [])
               for term in terms)


def claim_reference(claim: Obj) -> Obj:
    meta = claim["metadata"]
    return {"kind": "PersistentVolumeClaim", "namespace": meta["namespace"],
            "name": meta["name"], "uid": meta["uid"], "apiVersion": "v1",
            "resourceVersion": meta.get("resourceVersion", "")}


class VolumeBinding(PreFilterPlugin, FilterPlugin, ReservePlugin, PreBindPlugin):
    """Schedules a pod where its claims' volumes are, and binds its delayed claims."""

    name = "VolumeBinding"

    def __init__(self, args: Obj | None = None, handle: Any = None) -> None:
        super().__init__(args, handle)
        timeout = self.args.get("bindTimeoutSeconds", DEFAULT_BIND_TIMEOUT_SECONDS)
        if not isinstance(timeout, int) or timeout < 0:
            raise ValueError(f"bindTimeoutSeconds: Invalid value: {timeout}: invalid "
                             "BindTimeoutSeconds, should not be a negative value")
        self.bind_timeout = float(timeout)
        informers = getattr(handle, "informers", None)
        # Registered now, so that the scheduler starts them with its other informers.
        # PreBind's waits wake on any claim or volume change (and at least each
        # BIND_POLL_SECONDS, upstream's poll), not on a timer of their own per pod
        self._changed = asyncio.Event()
        if informers is not None:
            claim_informer = informers.informer("persistentvolumeclaims")
            volume_informer = informers.informer("persistentvolumes")
            self.claims, self.volumes = claim_informer.store, volume_informer.store
            self.classes = informers.informer("storageclasses", STORAGE_GROUP).store
            for informer in (claim_informer, volume_informer):
                informer.add_event_handler(EventHandler(
                    on_add=self._notify, on_update=lambda _old, _new: self._notify(),
                    on_delete=self._notify))
        else:
            self.claims, self.volumes, self.classes = Indexer(), Indexer(), Indexer()
        # the assume cache: what Reserve decided, until the informers show newer objects
        self._assumed_volumes: dict[str, Obj] = {}
        self._assumed_claims: dict[str, Obj] = {}

    def _notify(self, _obj: Obj | None = None) -> None:
        """Wake every PreBind waiting for a binding: a claim or volume changed."""
        self._changed.set()
        self._changed = asyncio.Event()

    # -- the assume cache -----------------------------------------------------------------

    @staticmethod
    def _newest(cached: Obj | None, assumed: Obj | None) -> Obj | None:
        """The assumed object while the informer still holds the version it came from."""
        if assumed is None or cached is None:
            return cached
        if cached["metadata"].get("resourceVersion") != assumed["metadata"].get(
                "resourceVersion"):
            return cached
        return assumed

    def claim(self, key: str) -> Obj | None:
        return self._newest(self.claims.get(key), self._assumed_claims.get(key))

    def volume(self, name: str) -> Obj | None:
        return self._newest(self.volumes.get(name), self._assumed_volumes.get(name))

    def _volumes_of_class(self, class_name: str) -> list[Obj]:
        found = []
        for cached in self.volumes.list():
            volume = self.volume(cached["metadata"]["name"])
            if volume is not None and volume_class(volume) == class_name:
                found.append(volume)
        return found

    # -- PreFilter ------------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]
                   ) -> tuple[PreFilterResult | None, Status]:
        """GetPodVolumeClaims: sort the pod's claims; unbound Immediate ones wait."""
        names = claim_names_of_pod(pod.pod)
        if not names:
            state.write(STATE_KEY, _State())
            return None, Status.skip()
        found = _State()
        immediate = False
        for name in names:
            claim = self.claim(f"{pod.namespace}/{name}")
            if claim is None:
                return None, Status.unschedulable(
                    f'persistentvolumeclaim "{name}" not found', unresolvable=True)
            if claim["metadata"].get("deletionTimestamp"):
                return None, Status.unschedulable(
                    f'persistentvolumeclaim "{name}" is being deleted', unresolvable=True)
            if is_claim_fully_bound(claim):
                found.bound_claims.append(claim)
                continue
            class_name = claim_class(claim)
            if not class_name:
                immediate = True
                continue
            storage_class = self.classes.get(class_name)
            if storage_class is None:
                return None, Status.error(
                    f'storageclass.storage.k8s.io "{class_name}" not found')
            if storage_class.get("volumeBindingMode") == "WaitForFirstConsumer":
                found.delayed_claims.append(claim)
            else:
                immediate = True
        if immediate:
            return None, Status.unschedulable(ERR_UNBOUND_IMMEDIATE, unresolvable=True)
        for claim in found.delayed_claims:
            class_name = claim_class(claim)
            if class_name not in found.volumes_by_class:
                found.volumes_by_class[class_name] = self._volumes_of_class(class_name)
        state.write(STATE_KEY, found)
        return None, SUCCESS

    # -- Filter ---------------------------------------------------------------------------

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status:
        """FindPodVolumes for one node."""
        found: _State = state.read(STATE_KEY)
        node = node_info.node
        reasons: list[str] = []
        for claim in found.bound_claims:
            volume = self.volume(claim["spec"]["volumeName"])
            if volume is None:
                return Status.unschedulable(ERR_REASON_PV_NOT_EXIST, unresolvable=True)
            if not check_node_affinity(volume, node):
                reasons.append(ERR_REASON_NODE_CONFLICT)
                break
        pod_volumes = PodVolumes(node)
        if found.delayed_claims:
            satisfied, status = self._find_delayed(found.delayed_claims,
                                                   found.volumes_by_class, pod_volumes)
            if status is not None:
                return status
            if not satisfied:
                reasons.append(ERR_REASON_BIND_CONFLICT)
        if reasons:
            return Status.unschedulable(*reasons, unresolvable=True)
        found.volumes_by_node[node_info.name] = pod_volumes
        return SUCCESS

    def _find_delayed(self, claims: list[Obj], volumes_by_class: dict[str, list[Obj]],
                      pod_volumes: PodVolumes) -> tuple[bool, Status | None]:
        """findMatchingVolumes, then checkVolumeProvisions for the rest, filling
        pod_volumes: whether the node can serve every claim, and a Status for an error
        (a selector that does not parse, a class that is gone)."""
        node = pod_volumes.node
        node_name = node["metadata"]["name"]
        to_match, to_provision = [], []
        for claim in claims:
            selected = _annotations(claim).get(ANN_SELECTED_NODE)
            if selected:
                if selected != node_name:
                    return False, None
                to_provision.append(claim)
            else:
                to_match.append(claim)
        chosen: set[str] = set()
        for claim in sorted(to_match, key=requested_storage):
            try:
                volume = _find_matching_volume(
                    claim, volumes_by_class[claim_class(claim)], node,
                    frozenset(chosen), delay_binding=True)
            except ValueError as error:
                return False, Status.error(str(error))
            if volume is None:
                to_provision.append(claim)
                continue
            chosen.add(volume["metadata"]["name"])
            pod_volumes.static_bindings.append((volume, claim))
        labels = node["metadata"].get("labels") or {}
        for claim in to_provision:
            storage_class = self.classes.get(claim_class(claim))
            if storage_class is None:
                return False, Status.error(
                    f'failed to find storage class "{claim_class(claim)}"')
            provisioner = storage_class.get("provisioner", "")
            if (not provisioner or provisioner == NOT_SUPPORTED_PROVISIONER
                    or not match_topology(storage_class.get("allowedTopologies"), labels)):
                return False, None
            pod_volumes.dynamic_provisions.append(claim)
        return True, None

    def events_to_register(self) -> list[ClusterEvent]:
        """A claim, volume or class appears or changes, or a node's labels."""
        return [ClusterEvent("PersistentVolumeClaim", "Add"),
                ClusterEvent("PersistentVolumeClaim", "Update"),
                ClusterEvent("PersistentVolume", "Add"),
                ClusterEvent("PersistentVolume", "Update"),
                ClusterEvent("StorageClass", "Add"),
                ClusterEvent("StorageClass", "Update"),
                ClusterEvent("Node", "Add"), ClusterEvent("Node", "UpdateNodeLabel")]

    # -- Reserve ----------------------------------------------------------------------------

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        """AssumePodVolumes: the volumes claimed and claims' nodes, as if written."""
        found: _State | None = state.get(STATE_KEY)
        pod_volumes = found.volumes_by_node.get(node_name) if found is not None else None
        if pod_volumes is None:
            return SUCCESS
        assumed = PodVolumes(pod_volumes.node)
        for volume, claim in pod_volumes.static_bindings:
            if volume["spec"].get("claimRef") is None:
                volume = copy.deepcopy(volume)
                volume["spec"]["claimRef"] = claim_reference(claim)
                volume["metadata"].setdefault("annotations", {})[ANN_BOUND_BY_CONTROLLER] = "yes"
                self._assumed_volumes[volume["metadata"]["name"]] = volume
            assumed.static_bindings.append((volume, claim))
        for claim in pod_volumes.dynamic_provisions:
            if _annotations(claim).get(ANN_SELECTED_NODE) != node_name:
                claim = copy.deepcopy(claim)
                claim["metadata"].setdefault("annotations", {})[ANN_SELECTED_NODE] = node_name
                self._assumed_claims[_key(claim)] = claim
            assumed.dynamic_provisions.append(claim)
        found.volumes_by_node[node_name] = assumed
        return SUCCESS

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        """RevertAssumedPodVolumes."""
        found: _State | None = state.get(STATE_KEY)
        pod_volumes = found.volumes_by_node.get(node_name) if found is not None else None
        if pod_volumes is None:
            return
        for volume, _claim in pod_volumes.static_bindings:
            self._assumed_volumes.pop(volume["metadata"]["name"], None)
        for claim in pod_volumes.dynamic_provisions:
            self._assumed_claims.pop(_key(claim), None)

    # -- PreBind ----------------------------------------------------------------------------

    async def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        """BindPodVolumes: write the assumed objects, then wait for every claim bound."""
        found: _State | None = state.get(STATE_KEY)
        pod_volumes = found.volumes_by_node.get(node_name) if found is not None else None
        if pod_volumes is None or not (pod_volumes.static_bindings
                                       or pod_volumes.dynamic_provisions):
            return SUCCESS
        namespace, _, name = pod.key.partition("/")
        with child_span("PreBind VolumeBinding", **{
                "k8s.resource": "pods", "k8s.namespace": namespace, "k8s.name": name,
                "k8s.uid": pod.uid, "node": node_name}) as span:
            status = await self._bind_pod_volumes(pod_volumes)
            if not status.is_success() and span.recording:
                span.fail(status.message())
            return status

    async def _bind_pod_volumes(self, pod_volumes: PodVolumes) -> Status:
        """BindPodVolumes: the API writes, then checkBindings until all are bound."""
        assert self.handle is not None and self.handle.client is not None
        client = self.handle.client
        try:
            for volume, _claim in pod_volumes.static_bindings:
                await client.resource("persistentvolumes").update(volume)
            for claim in pod_volumes.dynamic_provisions:
                await client.resource("persistentvolumeclaims").update(claim)
        except ClientError as error:
            return Status.error(f"binding volumes: {error}")
        claims = [claim for _volume, claim in pod_volumes.static_bindings]
        claims += pod_volumes.dynamic_provisions
        deadline = time.monotonic() + self.bind_timeout
        while True:
            changed = self._changed
            try:
                if self._check_bindings(claims, pod_volumes):
                    span = current_span()
                    for claim in claims:
                        bound = self.claim(_key(claim))
                        span.event("bound", claim=_key(claim),
                                   volume=bound["spec"]["volumeName"] if bound else "")
                    return SUCCESS
            except ValueError as error:
                return Status.error(f"binding volumes: {error}")
            if time.monotonic() > deadline:
                return Status.error("binding volumes: context deadline exceeded")
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(BIND_POLL_SECONDS):
                    await changed.wait()

    def _check_bindings(self, claims: list[Obj], pod_volumes: PodVolumes) -> bool:
        """checkBindings: every claim bound to a volume the node may use. Reads go through
        the assume cache, so a claim whose selected-node write the informer has not shown
        yet reads as written. ValueError when binding cannot finish (a claim gone, a
        provisioner that gave the node back)."""
        provisioned = {_key(claim) for claim in pod_volumes.dynamic_provisions}
        node_name = pod_volumes.node["metadata"]["name"]
        for wanted in claims:
            key = _key(wanted)
            claim = self.claim(key)
            if claim is None:
                raise ValueError(f'failed to get PVC "{key}": not found')
            if key in provisioned and not is_claim_fully_bound(claim):
                selected = _annotations(claim).get(ANN_SELECTED_NODE)
                if selected is None:
                    raise ValueError(f'selectedNode annotation reset for PVC "{key}"')
                if selected != node_name:
                    raise ValueError(f'provisioning failed for PVC "{key}"')
            if not is_claim_fully_bound(claim):
                return False
            volume = self.volume(claim["spec"]["volumeName"])
            if volume is None:
                return False
            if not check_node_affinity(volume, pod_volumes.node):
                raise ValueError(f'pv "{volume["metadata"]["name"]}" node affinity doesn\'t '
                                 f'match node "{node_name}"')
        return True
