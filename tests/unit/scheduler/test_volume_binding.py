"""VolumeBinding on plain data: PreFilter's sorting of a pod's claims, Filter per node
(bound volumes' node affinity, delayed claims matched to free volumes or provisioned),
Reserve and Unreserve through the assume cache. Cases follow upstream's
volume_binding_test.go and binder_test.go (pkg/scheduler/framework/plugins/volumebinding)."""

from __future__ import annotations

import asyncio
import copy
from types import SimpleNamespace
from typing import Any

import pytest

from minikube_py.api import Obj
from minikube_py.api.storagehelpers import ANN_SELECTED_NODE
from minikube_py.client.informer import EventHandler
from minikube_py.client.store import Indexer
from minikube_py.scheduler.framework.interface import Code, CycleState
from minikube_py.scheduler.framework.types import NodeInfo, PodInfo
from minikube_py.scheduler.plugins.volume_binding import (
    BIND_POLL_SECONDS,
    ERR_REASON_BIND_CONFLICT,
    ERR_REASON_NODE_CONFLICT,
    ERR_REASON_PV_NOT_EXIST,
    ERR_UNBOUND_IMMEDIATE,
    VolumeBinding,
)

WAIT = "wait"  # a WaitForFirstConsumer class with a provisioner
WAIT_NO_PROVISIONER = "wait-no-provisioner"
IMMEDIATE = "immediate"
NODES = ("node-1", "node-2")


class FakeInformers:
    """SharedInformerFactory stand-in: an Indexer per resource, whose handlers hear of
    what `add` puts there."""

    def __init__(self) -> None:
        self.stores: dict[str, Indexer] = {}
        self.handlers: dict[str, list[EventHandler]] = {}

    def informer(self, plural: str, group: str | None = None) -> SimpleNamespace:
        return SimpleNamespace(
            store=self.stores.setdefault(plural, Indexer()),
            add_event_handler=self.handlers.setdefault(plural, []).append)

    def add(self, plural: str, *objects: Obj) -> None:
        for obj in objects:
            self.informer(plural).store.put(obj)
            for handler in self.handlers.get(plural, []):
                if handler.on_add is not None:
                    handler.on_add(obj)


def storage_class(name: str, mode: str, provisioner: str = "example.com/local",
                  **extra: Any) -> Obj:
    return {"metadata": {"name": name}, "provisioner": provisioner,
            "volumeBindingMode": mode, **extra}


def claim(name: str, class_name: str, *, volume: str = "", size: str = "1Gi",
          selected_node: str = "") -> Obj:
    annotations = {}
    if volume:
        annotations["pv.kubernetes.io/bind-completed"] = "yes"
    if selected_node:
        annotations["volume.kubernetes.io/selected-node"] = selected_node
    return {"metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}",
                         "resourceVersion": "1", "annotations": annotations},
            "spec": {"storageClassName": class_name, "volumeName": volume,
                     "accessModes": ["ReadWriteOnce"],
                     "resources": {"requests": {"storage": size}}},
            "status": {"phase": "Bound" if volume else "Pending"}}


def volume(name: str, class_name: str, *, node: str = "", size: str = "1Gi",
           claim_ref: Obj | None = None) -> Obj:
    spec: Obj = {"storageClassName": class_name, "capacity": {"storage": size},
                 "accessModes": ["ReadWriteOnce"], "hostPath": {"path": f"/v/{name}"}}
    if node:
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}]}}
    if claim_ref is not None:
        spec["claimRef"] = claim_ref
    return {"metadata": {"name": name, "resourceVersion": "1"}, "spec": spec,
            "status": {"phase": "Bound" if claim_ref else "Available"}}


def pod(*claims: str, name: str = "web") -> PodInfo:
    return PodInfo.of({"metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}"},
                       "spec": {"containers": [{"name": "c", "image": "i"}], "volumes": [
                           {"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}}
                           for i, c in enumerate(claims)]}})


def node_infos() -> list[NodeInfo]:
    return [NodeInfo.of({"metadata": {"name": name, "labels": {
        "kubernetes.io/hostname": name, "zone": f"zone-{name[-1]}"}}}) for name in NODES]


@pytest.fixture
def informers() -> FakeInformers:
    informers = FakeInformers()
    informers.add("storageclasses", storage_class(WAIT, "WaitForFirstConsumer"),
                  storage_class(WAIT_NO_PROVISIONER, "WaitForFirstConsumer",
                                "kubernetes.io/no-provisioner"),
                  storage_class(IMMEDIATE, "Immediate"))
    return informers


def plugin_of(informers: FakeInformers) -> VolumeBinding:
    return VolumeBinding(None, SimpleNamespace(informers=informers, client=None))


def run(plugin: VolumeBinding, info: PodInfo) -> tuple[CycleState, Code, dict[str, str]]:
    """PreFilter, then Filter on every node: the state, PreFilter's code, and each
    rejected node's reasons (or PreFilter's, under "")."""
    state = CycleState()
    _, status = plugin.pre_filter(state, info, node_infos())
    if not status.is_success():
        return state, status.code, {"": status.message()}
    rejected = {}
    for node_info in node_infos():
        answer = plugin.filter(state, info, node_info)
        if not answer.is_success():
            assert answer.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
            rejected[node_info.name] = answer.message()
    return state, status.code, rejected


def test_a_pod_without_claims_is_skipped(informers: FakeInformers) -> None:
    _, code, rejected = run(plugin_of(informers), pod())
    assert (code, rejected) == (Code.SKIP, {"": ""})


@pytest.mark.parametrize(("claims", "code", "message"), [
    ([], Code.UNSCHEDULABLE_AND_UNRESOLVABLE, 'persistentvolumeclaim "data" not found'),
    ([claim("data", IMMEDIATE)], Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_UNBOUND_IMMEDIATE),
    ([claim("data", "")], Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_UNBOUND_IMMEDIATE),
    ([claim("data", "gone")], Code.ERROR, 'storageclass.storage.k8s.io "gone" not found'),
    ([{**claim("data", WAIT), "metadata": {**claim("data", WAIT)["metadata"],
                                           "deletionTimestamp": "2026-01-01T00:00:00Z"}}],
     Code.UNSCHEDULABLE_AND_UNRESOLVABLE, 'persistentvolumeclaim "data" is being deleted'),
])
def test_pre_filter_turns_down_pods_whose_claims_cannot_be_bound_here(
        informers: FakeInformers, claims: list[Obj], code: Code, message: str) -> None:
    informers.add("persistentvolumeclaims", *claims)
    _, got, rejected = run(plugin_of(informers), pod("data"))
    assert (got, rejected) == (code, {"": message})


def test_a_bound_claim_fits_only_where_its_volume_may_be_used(
        informers: FakeInformers) -> None:
    informers.add("persistentvolumeclaims", claim("data", WAIT, volume="pv-1"),
                  claim("free", WAIT, volume="pv-any"), claim("lost", WAIT, volume="gone"))
    informers.add("persistentvolumes", volume("pv-1", WAIT, node="node-1"),
                  volume("pv-any", WAIT))
    plugin = plugin_of(informers)
    assert run(plugin, pod("data"))[2] == {"node-2": ERR_REASON_NODE_CONFLICT}
    assert run(plugin, pod("free"))[2] == {}
    assert run(plugin, pod("lost"))[2] == {name: ERR_REASON_PV_NOT_EXIST for name in NODES}


def test_a_delayed_claim_takes_a_free_volume_the_node_may_use_or_is_provisioned(
        informers: FakeInformers) -> None:
    informers.add("persistentvolumeclaims", claim("static", WAIT_NO_PROVISIONER),
                  claim("dynamic", WAIT), claim("too-big", WAIT_NO_PROVISIONER, size="5Gi"))
    informers.add("persistentvolumes", volume("pv-1", WAIT_NO_PROVISIONER, node="node-1"))
    plugin = plugin_of(informers)
    state, _, rejected = run(plugin, pod("static"))
    assert rejected == {"node-2": ERR_REASON_BIND_CONFLICT}
    chosen = state.read("VolumeBinding").volumes_by_node["node-1"]
    assert [v["metadata"]["name"] for v, _ in chosen.static_bindings] == ["pv-1"]
    state, _, rejected = run(plugin, pod("dynamic"))
    assert rejected == {}
    assert [c["metadata"]["name"] for c in
            state.read("VolumeBinding").volumes_by_node["node-2"].dynamic_provisions] == [
        "dynamic"]
    assert run(plugin, pod("too-big"))[2] == {name: ERR_REASON_BIND_CONFLICT for name in NODES}
    assert run(plugin, pod("static", "too-big"))[2] == {
        name: ERR_REASON_BIND_CONFLICT for name in NODES}
    # two claims of one pod never share a volume
    informers.add("persistentvolumeclaims", claim("static-2", WAIT_NO_PROVISIONER))
    assert run(plugin, pod("static", "static-2"))[2] == {
        name: ERR_REASON_BIND_CONFLICT for name in NODES}


def test_a_claim_whose_node_was_selected_fits_that_node_only(informers: FakeInformers) -> None:
    informers.add("persistentvolumeclaims", claim("data", WAIT, selected_node="node-2"))
    assert run(plugin_of(informers), pod("data"))[2] == {"node-1": ERR_REASON_BIND_CONFLICT}


def test_a_class_provisions_only_in_its_allowed_topologies(informers: FakeInformers) -> None:
    informers.add("storageclasses", storage_class(
        "zonal", "WaitForFirstConsumer", allowedTopologies=[{"matchLabelExpressions": [
            {"key": "zone", "values": ["zone-2", "zone-3"]}]}]))
    informers.add("persistentvolumeclaims", claim("data", "zonal"))
    assert run(plugin_of(informers), pod("data"))[2] == {"node-1": ERR_REASON_BIND_CONFLICT}


def test_reserve_assumes_the_volume_and_unreserve_gives_it_back(
        informers: FakeInformers) -> None:
    informers.add("persistentvolumeclaims", claim("a", WAIT_NO_PROVISIONER),
                  claim("b", WAIT_NO_PROVISIONER), claim("c", WAIT))
    informers.add("persistentvolumes", volume("pv-1", WAIT_NO_PROVISIONER, node="node-1"))
    plugin = plugin_of(informers)
    first = pod("a", name="first")
    state, _, _ = run(plugin, first)
    assert plugin.reserve(state, first, "node-1").is_success()
    assumed = plugin.volume("pv-1")
    assert assumed is not None and assumed["spec"]["claimRef"]["name"] == "a"
    assert assumed["metadata"]["annotations"]["pv.kubernetes.io/bound-by-controller"] == "yes"
    # the next pod's claim cannot take the volume the first one was given
    assert run(plugin, pod("b", name="second"))[2] == {
        name: ERR_REASON_BIND_CONFLICT for name in NODES}
    plugin.unreserve(state, first, "node-1")
    assert run(plugin, pod("b", name="second"))[2] == {"node-2": ERR_REASON_BIND_CONFLICT}

    third = pod("c", name="third")
    state, _, _ = run(plugin, third)
    assert plugin.reserve(state, third, "node-2").is_success()
    selected = plugin.claim("ns/c")
    assert selected is not None and selected["metadata"]["annotations"][
        "volume.kubernetes.io/selected-node"] == "node-2"
    # once the informer holds a newer claim, the assumed one is forgotten
    newer = claim("c", WAIT)
    newer["metadata"]["resourceVersion"] = "2"
    informers.add("persistentvolumeclaims", newer)
    assert plugin.claim("ns/c") is newer


def test_a_negative_bind_timeout_is_refused() -> None:
    with pytest.raises(ValueError, match="invalid BindTimeoutSeconds"):
        VolumeBinding({"bindTimeoutSeconds": -1}, None)


class FakeClaimsClient:
    """client.resource(...) stand-in: an update returns the object one version on, and
    the informer does not see it (the watch is behind)."""

    def __init__(self) -> None:
        self.updated: list[Obj] = []

    def resource(self, _plural: str) -> FakeClaimsClient:
        return self

    async def update(self, obj: Obj) -> Obj:
        self.updated.append(obj)
        written = copy.deepcopy(obj)
        written["metadata"]["resourceVersion"] = str(
            int(obj["metadata"]["resourceVersion"]) + 1)
        return written


def bound_after(informers: FakeInformers, name: str, node: str, version: str) -> None:
    """The PV controller's work as the informer shows it: the claim bound to a volume of
    `node`, at resourceVersion `version`."""
    bound = claim(name, WAIT, volume=f"pvc-{name}", selected_node=node)
    bound["metadata"]["resourceVersion"] = version
    informers.add("persistentvolumeclaims", bound)
    informers.add("persistentvolumes", volume(f"pvc-{name}", WAIT, node=node, claim_ref={
        "namespace": "ns", "name": name, "uid": f"uid-{name}"}))


async def test_pre_bind_waits_for_the_claim_its_informer_has_not_shown_written(
        informers: FakeInformers) -> None:
    informers.add("persistentvolumeclaims", claim("c", WAIT))
    client = FakeClaimsClient()
    plugin = VolumeBinding(None, SimpleNamespace(informers=informers, client=client))
    info = pod("c")
    state, _, _ = run(plugin, info)
    assert plugin.reserve(state, info, "node-1").is_success()
    binding = asyncio.create_task(plugin.pre_bind(state, info, "node-1"))
    while not client.updated:
        await asyncio.sleep(0.01)
    # the informer still holds the claim without its selected node: PreBind keeps waiting
    await asyncio.sleep(0.3)
    assert not binding.done()
    assert client.updated[0]["metadata"]["annotations"][ANN_SELECTED_NODE] == "node-1"
    bound_after(informers, "c", "node-1", "3")
    # woken by the informer's change, not by its next look a BIND_POLL_SECONDS later
    async with asyncio.timeout(BIND_POLL_SECONDS / 2):
        assert (await binding).is_success()


@pytest.mark.parametrize(("annotations", "message"), [
    ({}, 'selectedNode annotation reset for PVC "ns/c"'),
    ({ANN_SELECTED_NODE: "node-2"}, 'provisioning failed for PVC "ns/c"')])
async def test_pre_bind_fails_when_the_provisioner_gives_the_node_back(
        informers: FakeInformers, annotations: dict[str, str], message: str) -> None:
    informers.add("persistentvolumeclaims", claim("c", WAIT))
    plugin = VolumeBinding(None, SimpleNamespace(informers=informers,
                                                 client=FakeClaimsClient()))
    info = pod("c")
    state, _, _ = run(plugin, info)
    assert plugin.reserve(state, info, "node-1").is_success()
    given_back = claim("c", WAIT)
    given_back["metadata"].update(resourceVersion="3", annotations=annotations)
    informers.add("persistentvolumeclaims", given_back)
    async with asyncio.timeout(5):
        status = await plugin.pre_bind(state, info, "node-1")
    assert status.code is Code.ERROR and status.message() == f"binding volumes: {message}"
