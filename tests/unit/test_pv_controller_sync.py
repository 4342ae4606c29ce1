"""The PV controller's syncClaim and syncVolume, one call each, on upstream's table
(pkg/controller/volume/persistentvolume/binder_test.go, TestSync sets 1 to 4 and 13).

The controller's informer stores hold the initial objects; its two API clients are
replaced by a fake that applies each write to the store the way the API server would
(an update keeps the stored status, a status update keeps the rest) and bumps the
resourceVersion; its event recorder by a list.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from minikube_py.api.storagehelpers import (
    ANN_BIND_COMPLETED,
    ANN_BOUND_BY_CONTROLLER,
    BETA_STORAGE_CLASS_ANNOTATION,
)
from minikube_py.client.errors import NotFound
from minikube_py.client.informer import SharedInformerFactory
from minikube_py.client.kubeconfig import ClientConfig
from minikube_py.client.rest import Client
from minikube_py.client.store import Indexer
from minikube_py.controllers.base import ControllerContext, ExpectedSyncError
from minikube_py.controllers.volume.persistentvolume import PersistentVolumeController

Obj = dict[str, Any]
BOUND_BY_CONTROLLER, BIND_COMPLETED, CLASS = "bound-by-controller", "bind-completed", "class"
_ANNOTATIONS = {BOUND_BY_CONTROLLER: (ANN_BOUND_BY_CONTROLLER, "yes"),
                BIND_COMPLETED: (ANN_BIND_COMPLETED, "yes"),
                CLASS: (BETA_STORAGE_CLASS_ANNOTATION, "gold")}


def new_volume(name: str, size: str, claim_uid: str, claim_name: str, phase: str,
               *annotations: str, policy: str = "Retain") -> Obj:
    """newVolume: ROX+RWO, a claimRef in "default" when a claim is named."""
    volume: Obj = {"apiVersion": "v1", "kind": "PersistentVolume",
                   "metadata": {"name": name, "uid": f"{name}-uid", "resourceVersion": "1",
                                "annotations": dict(_ANNOTATIONS[a] for a in annotations)},
                   "spec": {"capacity": {"storage": size}, "hostPath": {"path": "/tmp"},
                            "accessModes": ["ReadWriteOnce", "ReadOnlyMany"],
                            "persistentVolumeReclaimPolicy": policy},
                   "status": {"phase": phase}}
    if claim_name:
        volume["spec"]["claimRef"] = {"kind": "PersistentVolumeClaim", "apiVersion": "v1",
                                      "namespace": "default", "name": claim_name,
                                      "uid": claim_uid}
    if CLASS in annotations:
        volume["spec"]["storageClassName"] = "gold"
    return volume


def new_claim(name: str, uid: str, size: str, volume_name: str, phase: str,
              *annotations: str) -> Obj:
    """newClaim: ROX+RWO; a Bound claim's status carries its request as capacity."""
    claim: Obj = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                  "metadata": {"name": name, "namespace": "default", "uid": uid,
                               "resourceVersion": "1",
                               "annotations": dict(_ANNOTATIONS[a] for a in annotations)},
                  "spec": {"accessModes": ["ReadWriteOnce", "ReadOnlyMany"],
                           "resources": {"requests": {"storage": size}},
                           "volumeName": volume_name},
                  "status": {"phase": phase}}
    if phase == "Bound":
        claim["status"].update(accessModes=["ReadWriteOnce", "ReadOnlyMany"],
                               capacity={"storage": size})
    if CLASS in annotations:
        claim["spec"]["storageClassName"] = "gold"
    return claim


def with_capacity(size: str, claim: Obj) -> Obj:
    """withExpectedCapacity."""
    claim["status"]["capacity"] = {"storage": size}
    return claim


def with_class(storage_class: str, obj: Obj) -> Obj:
    """volumeWithClass / claimWithClass: spec.storageClassName, even ""."""
    obj["spec"]["storageClassName"] = storage_class
    return obj


class FakeResource:
    """Writes applied to an informer's store as the API server applies them."""

    def __init__(self, store: Indexer) -> None:
        self.store = store

    async def get(self, name: str, namespace: str | None = None) -> Obj:
        found = self.store.get_by_name(namespace or "", name)
        if found is None:
            raise NotFound({"reason": "NotFound", "message": f'"{name}" not found'}, 404)
        return copy.deepcopy(found)

    async def update(self, obj: Obj) -> Obj:
        return self._write(obj, keep="status")

    async def update_status(self, obj: Obj) -> Obj:
        return self._write(obj, keep="rest")

    def _write(self, obj: Obj, keep: str) -> Obj:
        meta = obj["metadata"]
        stored = self.store.get_by_name(meta.get("namespace", ""), meta["name"])
        assert stored is not None
        assert meta["resourceVersion"] == stored["metadata"]["resourceVersion"], "conflict"
        if keep == "status":
            written = {**copy.deepcopy(obj), "status": copy.deepcopy(stored.get("status"))}
        else:
            written = {**copy.deepcopy(stored), "status": copy.deepcopy(obj.get("status"))}
        written["metadata"]["resourceVersion"] = str(int(meta["resourceVersion"]) + 1)
        self.store.put(written)
        return copy.deepcopy(written)


class Events:
    """The recorder: "Type Reason" of each event, as upstream's tests compare them."""

    def __init__(self) -> None:
        self.recorded: list[str] = []

    def event(self, obj: Obj, event_type: str, reason: str, message: str) -> None:
        self.recorded.append(f"{event_type} {reason}")


def controller_with(volumes: list[Obj], claims: list[Obj]
                    ) -> tuple[PersistentVolumeController, Events]:
    client = Client(ClientConfig(server="http://127.0.0.1:1"))
    controller = PersistentVolumeController(ControllerContext(client,
                                                              SharedInformerFactory(client)))
    for volume in volumes:
        controller.volumes.store.put(copy.deepcopy(volume))
    for claim in claims:
        controller.claims.store.put(copy.deepcopy(claim))
    controller.volumes_client = FakeResource(controller.volumes.store)  # type: ignore[assignment]
    controller.claims_client = FakeResource(controller.claims.store)  # type: ignore[assignment]
    events = Events()
    controller.recorder = events  # type: ignore[assignment]
    return controller, events


def essence(obj: Obj) -> Obj:
    """What upstream's tests compare: spec, phase, capacity and annotations."""
    spec = copy.deepcopy(obj["spec"])
    if "claimRef" in spec:
        spec["claimRef"] = {key: spec["claimRef"].get(key, "")
                            for key in ("namespace", "name", "uid")}
    status = obj.get("status") or {}
    return {"annotations": obj["metadata"].get("annotations") or {}, "spec": spec,
            "phase": status.get("phase"), "capacity": status.get("capacity")}


SYNC_CLAIM, SYNC_VOLUME, SYNC_CLAIM_ERROR = "claim", "volume", "claim-error"
TESTS = [
    # [Unit test set 1] User did not care which PV they get.
    ("1-1 - successful bind",
     [new_volume("volume1-1", "1Gi", "", "", "Available")],
     [new_volume("volume1-1", "1Gi", "uid1-1", "claim1-1", "Bound", BOUND_BY_CONTROLLER)],
     [new_claim("claim1-1", "uid1-1", "1Gi", "", "Pending")],
     [new_claim("claim1-1", "uid1-1", "1Gi", "volume1-1", "Bound", BOUND_BY_CONTROLLER,
                BIND_COMPLETED)], [], SYNC_CLAIM),
    ("1-2 - noop",
     [new_volume("volume1-2", "1Gi", "", "", "Available")],
     [new_volume("volume1-2", "1Gi", "", "", "Available")],
     [new_claim("claim1-2", "uid1-2", "10Gi", "", "Pending")],
     [new_claim("claim1-2", "uid1-2", "10Gi", "", "Pending")],
     ["Normal FailedBinding"], SYNC_CLAIM),
    ("1-3 - reset to Pending",
     [new_volume("volume1-3", "1Gi", "", "", "Available")],
     [new_volume("volume1-3", "1Gi", "", "", "Available")],
     [new_claim("claim1-3", "uid1-3", "10Gi", "", "Bound")],
     [{**new_claim("claim1-3", "uid1-3", "10Gi", "", "Pending")}],
     ["Normal FailedBinding"], SYNC_CLAIM),
    ("1-4 - smallest volume",
     [new_volume("volume1-4_1", "10Gi", "", "", "Available"),
      new_volume("volume1-4_2", "1Gi", "", "", "Available")],
     [new_volume("volume1-4_1", "10Gi", "", "", "Available"),
      new_volume("volume1-4_2", "1Gi", "uid1-4", "claim1-4", "Bound", BOUND_BY_CONTROLLER)],
     [new_claim("claim1-4", "uid1-4", "1Gi", "", "Pending")],
     [new_claim("claim1-4", "uid1-4", "1Gi", "volume1-4_2", "Bound", BOUND_BY_CONTROLLER,
                BIND_COMPLETED)], [], SYNC_CLAIM),
    ("1-5 - prebound volume by name - success",
     [new_volume("volume1-5_1", "10Gi", "", "claim1-5", "Available"),
      new_volume("volume1-5_2", "1Gi", "", "", "Available")],
     [new_volume("volume1-5_1", "10Gi", "uid1-5", "claim1-5", "Bound"),
      new_volume("volume1-5_2", "1Gi", "", "", "Available")],
     [new_claim("claim1-5", "uid1-5", "1Gi", "", "Pending")],
     [with_capacity("10Gi", new_claim("claim1-5", "uid1-5", "1Gi", "volume1-5_1", "Bound",
                                      BOUND_BY_CONTROLLER, BIND_COMPLETED))], [], SYNC_CLAIM),
    ("1-6 - prebound volume by UID - success",
     [new_volume("volume1-6_1", "10Gi", "uid1-6", "claim1-6", "Available"),
      new_volume("volume1-6_2", "1Gi", "", "", "Available")],
     [new_volume("volume1-6_1", "10Gi", "uid1-6", "claim1-6", "Bound"),
      new_volume("volume1-6_2", "1Gi", "", "", "Available")],
     [new_claim("claim1-6", "uid1-6", "1Gi", "", "Pending")],
     [with_capacity("10Gi", new_claim("claim1-6", "uid1-6", "1Gi", "volume1-6_1", "Bound",
                                      BOUND_BY_CONTROLLER, BIND_COMPLETED))], [], SYNC_CLAIM),
    ("1-7 - prebound volume to different claim",
     [new_volume("volume1-7", "10Gi", "uid1-777", "claim1-7", "Available")],
     [new_volume("volume1-7", "10Gi", "uid1-777", "claim1-7", "Available")],
     [new_claim("claim1-7", "uid1-7", "1Gi", "", "Pending")],
     [new_claim("claim1-7", "uid1-7", "1Gi", "", "Pending")],
     ["Normal FailedBinding"], SYNC_CLAIM),
    ("1-8 - complete bind after crash - PV bound",
     [new_volume("volume1-8", "1Gi", "uid1-8", "claim1-8", "Pending", BOUND_BY_CONTROLLER)],
     [new_volume("volume1-8", "1Gi", "uid1-8", "claim1-8", "Bound", BOUND_BY_CONTROLLER)],
     [new_claim("claim1-8", "uid1-8", "1Gi", "", "Pending")],
     [new_claim("claim1-8", "uid1-8", "1Gi", "volume1-8", "Bound", BOUND_BY_CONTROLLER,
                BIND_COMPLETED)], [], SYNC_CLAIM),
    ("1-9 - complete bind after crash - PV status saved",
     [new_volume("volume1-9", "1Gi", "uid1-9", "claim1-9", "Bound", BOUND_BY_CONTROLLER)],
     [new_volume("volume1-9", "1Gi", "uid1-9", "claim1-9", "Bound", BOUND_BY_CONTROLLER)],
     [new_claim("claim1-9", "uid1-9", "1Gi", "", "Pending")],
     [new_claim("claim1-9", "uid1-9", "1Gi", "volume1-9", "Bound", BOUND_BY_CONTROLLER,
                BIND_COMPLETED)], [], SYNC_CLAIM),
    ("1-10 - complete bind after crash - PVC bound",
     [new_volume("volume1-10", "1Gi", "uid1-10", "claim1-10", "Bound", BOUND_BY_CONTROLLER)],
     [new_volume("volume1-10", "1Gi", "uid1-10", "claim1-10", "Bound", BOUND_BY_CONTROLLER)],
     [new_claim("claim1-10", "uid1-10", "1Gi", "volume1-10", "Pending", BOUND_BY_CONTROLLER,
                BIND_COMPLETED)],
     [new_claim("claim1-10", "uid1-10", "1Gi", "volume1-10", "Bound", BOUND_BY_CONTROLLER,
                BIND_COMPLETED)], [], SYNC_CLAIM),
    # [Unit test set 2] User asked for a specific PV.
    ("2-1 - claim prebound to non-existing volume - noop", [], [],
     [new_claim("claim2-1", "uid2-1", "10Gi", "volume2-1", "Pending")],
     [new_claim("claim2-1", "uid2-1", "10Gi", "volume2-1", "Pending")], [], SYNC_CLAIM),
    ("2-2 - claim prebound to non-existing volume - reset status", [], [],
     [new_claim("claim2-2", "uid2-2", "10Gi", "volume2-2", "Bound")],
     [new_claim("claim2-2", "uid2-2", "10Gi", "volume2-2", "Pending")], [], SYNC_CLAIM),
    ("2-3 - claim prebound to unbound volume",
     [new_volume("volume2-3", "1Gi", "", "", "Available")],
     [new_volume("volume2-3", "1Gi", "uid2-3", "claim2-3", "Bound", BOUND_BY_CONTROLLER)],
     [new_claim("claim2-3", "uid2-3", "1Gi", "volume2-3", "Pending")],
     [new_claim("claim2-3", "uid2-3", "1Gi", "volume2-3", "Bound", BIND_COMPLETED)], [],
     SYNC_CLAIM),
    ("2-4 - claim prebound to prebound volume by name",
     [new_volume("volume2-4", "1Gi", "", "claim2-4", "Available")],
     [new_volume("volume2-4", "1Gi", "uid2-4", "claim2-4", "Bound")],
     [new_claim("claim2-4", "uid2-4", "1Gi", "volume2-4", "Pending")],
     [new_claim("claim2-4", "uid2-4", "1Gi", "volume2-4", "Bound", BIND_COMPLETED)], [],
     SYNC_CLAIM),
    ("2-5 - claim prebound to prebound volume by UID",
     [new_volume("volume2-5", "1Gi", "uid2-5", "claim2-5", "Available")],
     [new_volume("volume2-5", "1Gi", "uid2-5", "claim2-5", "Bound")],
     [new_claim("claim2-5", "uid2-5", "1Gi", "volume2-5", "Pending")],
     [new_claim("claim2-5", "uid2-5", "1Gi", "volume2-5", "Bound", BIND_COMPLETED)], [],
     SYNC_CLAIM),
    ("2-6 - claim prebound to already bound volume",
     [new_volume("volume2-6", "1Gi", "uid2-6_1", "claim2-6_1", "Bound")],
     [new_volume("volume2-6", "1Gi", "uid2-6_1", "claim2-6_1", "Bound")],
     [new_claim("claim2-6", "uid2-6", "1Gi", "volume2-6", "Bound")],
     [new_claim("claim2-6", "uid2-6", "1Gi", "volume2-6", "Pending")],
     ["Warning FailedBinding"], SYNC_CLAIM),
    ("2-7 - claim bound by controller to already bound volume",
     [new_volume("volume2-7", "1Gi", "uid2-7_1", "claim2-7_1", "Bound")],
     [new_volume("volume2-7", "1Gi", "uid2-7_1", "claim2-7_1", "Bound")],
     [new_claim("claim2-7", "uid2-7", "1Gi", "volume2-7", "Bound", BOUND_BY_CONTROLLER)],
     [new_claim("claim2-7", "uid2-7", "1Gi", "volume2-7", "Bound", BOUND_BY_CONTROLLER)],
     ["Warning FailedBinding"], SYNC_CLAIM_ERROR),
    # [Unit test set 3] Syncing bound claim
    ("3-1 - bound claim with missing VolumeName", [], [],
     [new_claim("claim3-1", "uid3-1", "10Gi", "", "Bound", BOUND_BY_CONTROLLER,
                BIND_COMPLETED)],
     [new_claim("claim3-1", "uid3-1", "10Gi", "", "Lost", BOUND_BY_CONTROLLER,
                BIND_COMPLETED)], ["Warning ClaimLost"], SYNC_CLAIM),
    ("3-2 - bound claim with missing volume", [], [],
     [new_claim("claim3-2", "uid3-2", "10Gi", "volume3-2", "Bound", BOUND_BY_CONTROLLER,
                BIND_COMPLETED)],
     [new_claim("claim3-2", "uid3-2", "10Gi", "volume3-2", "Lost", BOUND_BY_CONTROLLER,
                BIND_COMPLETED)], ["Warning ClaimLost"], SYNC_CLAIM),
    ("3-3 - bound claim with unbound volume",
     [new_volume("volume3-3", "10Gi", "", "", "Available")],
     [new_volume("volume3-3", "10Gi", "uid3-3", "claim3-3", "Bound", BOUND_BY_CONTROLLER)],
     [new_claim("claim3-3", "uid3-3", "10Gi", "volume3-3", "Pending", BOUND_BY_CONTROLLER,
                BIND_COMPLETED)],
     [new_claim("claim3-3", "uid3-3", "10Gi", "volume3-3", "Bound", BOUND_BY_CONTROLLER,
                BIND_COMPLETED)], [], SYNC_CLAIM),
    ("3-4 - bound claim with prebound volume",
     [new_volume("volume3-4", "10Gi", "claim3-4-x", "claim3-4", "Pending")],
     [new_volume("volume3-4", "10Gi", "claim3-4-x", "claim3-4", "Pending")],
     [new_claim("claim3-4", "uid3-4", "10Gi", "volume3-4", "Pending", BOUND_BY_CONTROLLER,
                BIND_COMPLETED)],
     [new_claim("claim3-4", "uid3-4", "10Gi", "volume3-4", "Lost", BOUND_BY_CONTROLLER,
                BIND_COMPLETED)], ["Warning ClaimMisbound"], SYNC_CLAIM),
    ("3-5 - bound claim with bound volume",
     [new_volume("volume3-5", "10Gi", "uid3-5", "claim3-5", "Pending")],
     [new_volume("volume3-5", "10Gi", "uid3-5", "claim3-5", "Bound")],
     [new_claim("claim3-5", "uid3-5", "10Gi", "volume3-5", "Pending", BIND_COMPLETED)],
     [new_claim("claim3-5", "uid3-5", "10Gi", "volume3-5", "Bound", BIND_COMPLETED)], [],
     SYNC_CLAIM),
    ("3-6 - bound claim with bound volume",
     [new_volume("volume3-6", "10Gi", "uid3-6-x", "claim3-6-x", "Pending")],
     [new_volume("volume3-6", "10Gi", "uid3-6-x", "claim3-6-x", "Pending")],
     [new_claim("claim3-6", "uid3-6", "10Gi", "volume3-6", "Pending", BIND_COMPLETED)],
     [new_claim("claim3-6", "uid3-6", "10Gi", "volume3-6", "Lost", BIND_COMPLETED)],
     ["Warning ClaimMisbound"], SYNC_CLAIM),
    # [Unit test set 4] All syncVolume tests.
    ("4-1 - pending volume",
     [new_volume("volume4-1", "10Gi", "", "", "Pending")],
     [new_volume("volume4-1", "10Gi", "", "", "Available")], [], [], [], SYNC_VOLUME),
    ("4-2 - pending prebound volume",
     [new_volume("volume4-2", "10Gi", "", "claim4-2", "Pending")],
     [new_volume("volume4-2", "10Gi", "", "claim4-2", "Available")], [], [], [],
     SYNC_VOLUME),
    ("4-3 - bound volume with missing claim",
     [new_volume("volume4-3", "10Gi", "uid4-3", "claim4-3", "Bound")],
     [new_volume("volume4-3", "10Gi", "uid4-3", "claim4-3", "Released")], [], [], [],
     SYNC_VOLUME),
    ("4-4 - volume bound to claim with different UID",
     [new_volume("volume4-4", "10Gi", "uid4-4", "claim4-4", "Bound")],
     [new_volume("volume4-4", "10Gi", "uid4-4", "claim4-4", "Released")],
     [new_claim("claim4-4", "uid4-4-x", "10Gi", "volume4-4", "Bound", BIND_COMPLETED)],
     [new_claim("claim4-4", "uid4-4-x", "10Gi", "volume4-4", "Bound", BIND_COMPLETED)], [],
     SYNC_VOLUME),
    ("4-5 - volume bound by controller to unbound claim",
     [new_volume("volume4-5", "10Gi", "uid4-5", "claim4-5", "Bound", BOUND_BY_CONTROLLER)],
     [new_volume("volume4-5", "10Gi", "uid4-5", "claim4-5", "Bound", BOUND_BY_CONTROLLER)],
     [new_claim("claim4-5", "uid4-5", "10Gi", "", "Pending")],
     [new_claim("claim4-5", "uid4-5", "10Gi", "", "Pending")], [], SYNC_VOLUME),
    ("4-6 - volume bound by to bound claim",
     [new_volume("volume4-6", "10Gi", "uid4-6", "claim4-6", "Available")],
     [new_volume("volume4-6", "10Gi", "uid4-6", "claim4-6", "Bound")],
     [new_claim("claim4-6", "uid4-6", "10Gi", "volume4-6", "Bound")],
     [new_claim("claim4-6", "uid4-6", "10Gi", "volume4-6", "Bound")], [], SYNC_VOLUME),
    ("4-7 - volume bound by controller to claim bound somewhere else",
     [new_volume("volume4-7", "10Gi", "uid4-7", "claim4-7", "Bound", BOUND_BY_CONTROLLER)],
     [new_volume("volume4-7", "10Gi", "", "", "Available")],
     [new_claim("claim4-7", "uid4-7", "10Gi", "volume4-7-x", "Bound")],
     [new_claim("claim4-7", "uid4-7", "10Gi", "volume4-7-x", "Bound")], [], SYNC_VOLUME),
    ("4-8 - volume bound by user to claim bound somewhere else",
     [new_volume("volume4-8", "10Gi", "uid4-8", "claim4-8", "Bound")],
     [new_volume("volume4-8", "10Gi", "", "claim4-8", "Available")],
     [new_claim("claim4-8", "uid4-8", "10Gi", "volume4-8-x", "Bound")],
     [new_claim("claim4-8", "uid4-8", "10Gi", "volume4-8-x", "Bound")], [], SYNC_VOLUME),
    # PVC with class
    ("13-1 - binding to class",
     [new_volume("volume13-1-1", "1Gi", "", "", "Available"),
      new_volume("volume13-1-2", "10Gi", "", "", "Available", CLASS)],
     [new_volume("volume13-1-1", "1Gi", "", "", "Available"),
      new_volume("volume13-1-2", "10Gi", "uid13-1", "claim13-1", "Bound",
                 BOUND_BY_CONTROLLER, CLASS)],
     [new_claim("claim13-1", "uid13-1", "1Gi", "", "Pending", CLASS)],
     [with_capacity("10Gi", new_claim("claim13-1", "uid13-1", "1Gi", "volume13-1-2", "Bound",
                                      BOUND_BY_CONTROLLER, CLASS, BIND_COMPLETED))], [],
     SYNC_CLAIM),
    ("13-2 - binding without a class",
     [new_volume("volume13-2-1", "1Gi", "", "", "Available", CLASS),
      new_volume("volume13-2-2", "10Gi", "", "", "Available")],
     [new_volume("volume13-2-1", "1Gi", "", "", "Available", CLASS),
      new_volume("volume13-2-2", "10Gi", "uid13-2", "claim13-2", "Bound",
                 BOUND_BY_CONTROLLER)],
     [new_claim("claim13-2", "uid13-2", "1Gi", "", "Pending")],
     [with_capacity("10Gi", new_claim("claim13-2", "uid13-2", "1Gi", "volume13-2-2", "Bound",
                                      BOUND_BY_CONTROLLER, BIND_COMPLETED))], [], SYNC_CLAIM),
    ("13-4 - empty class",
     [with_class("", new_volume("volume13-4", "1Gi", "", "", "Available"))],
     [with_class("", new_volume("volume13-4", "1Gi", "uid13-4", "claim13-4", "Bound",
                                BOUND_BY_CONTROLLER))],
     [with_class("", new_claim("claim13-4", "uid13-4", "1Gi", "", "Pending"))],
     [with_class("", new_claim("claim13-4", "uid13-4", "1Gi", "volume13-4", "Bound",
                               BOUND_BY_CONTROLLER, BIND_COMPLETED))], [], SYNC_CLAIM),
    ("13-6 - nil class in PV, '' class in claim",
     [new_volume("volume13-6", "1Gi", "", "", "Available")],
     [new_volume("volume13-6", "1Gi", "uid13-6", "claim13-6", "Bound", BOUND_BY_CONTROLLER)],
     [with_class("", new_claim("claim13-6", "uid13-6", "1Gi", "", "Pending"))],
     [with_class("", new_claim("claim13-6", "uid13-6", "1Gi", "volume13-6", "Bound",
                               BOUND_BY_CONTROLLER, BIND_COMPLETED))], [], SYNC_CLAIM),
]


@pytest.mark.parametrize(("initial_volumes", "expected_volumes", "initial_claims",
                          "expected_claims", "expected_events", "call"),
                         [case[1:] for case in TESTS], ids=[case[0] for case in TESTS])
async def test_sync(initial_volumes: list[Obj], expected_volumes: list[Obj],
                    initial_claims: list[Obj], expected_claims: list[Obj],
                    expected_events: list[str], call: str) -> None:
    """TestSync: one syncClaim (of the first claim) or syncVolume (of the first volume)."""
    controller, events = controller_with(initial_volumes, initial_claims)

    if call == SYNC_VOLUME:
        await controller.sync_volume(controller.volumes.store.list()[0])
    elif call == SYNC_CLAIM:
        await controller.sync_claim(controller.claims.store.list()[0])
    else:
        with pytest.raises(ExpectedSyncError, match="volume already claimed by"):
            await controller.sync_claim(controller.claims.store.list()[0])

    volumes = sorted(controller.volumes.store.list(), key=lambda v: v["metadata"]["name"])
    claims = controller.claims.store.list()
    assert [essence(v) for v in volumes] == [essence(v) for v in expected_volumes]
    assert [essence(c) for c in claims] == [essence(c) for c in expected_claims]
    assert events.recorded == expected_events
