"""The PV controller's choice of a volume for a claim: upstream's binder index tables
(pkg/controller/volume/persistentvolume/index_test.go), ported case by case."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from minikube_py.api.storagehelpers import (
    BETA_STORAGE_CLASS_ANNOTATION,
    check_volume_mode_mismatches,
    check_volume_satisfies_claim,
    default_class,
    find_best_match_for_claim,
    find_matching_volume,
)

Obj = dict[str, Any]
RWO, ROX, RWX = "ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany"


def claim(size: str, modes: list[str] | None = None, *, selector: Obj | None = None,
          storage_class: str | None = None, uid: str = "claim-uid") -> Obj:
    """makePVC: claim01 in myns, ROX+RWO unless said."""
    obj: Obj = {"metadata": {"name": "claim01", "namespace": "myns", "uid": uid},
                "spec": {"accessModes": modes or [ROX, RWO],
                         "resources": {"requests": {"storage": size}}}}
    if selector is not None:
        obj["spec"]["selector"] = selector
    if storage_class is not None:
        obj["metadata"]["annotations"] = {BETA_STORAGE_CLASS_ANNOTATION: storage_class}
    return obj


def volume(name: str, size: str, modes: list[str], *, claim_ref: Obj | None = None,
           labels: dict[str, str] | None = None, storage_class: str | None = None) -> Obj:
    obj: Obj = {"metadata": {"name": name, "labels": labels or {}},
                "spec": {"capacity": {"storage": size}, "accessModes": modes},
                "status": {"phase": "Available"}}
    if claim_ref is not None:
        obj["spec"]["claimRef"] = claim_ref
    if storage_class is not None:
        obj["metadata"]["annotations"] = {BETA_STORAGE_CLASS_ANNOTATION: storage_class}
    return obj


def create_test_volumes() -> list[Obj]:
    """createTestVolumes: deliberately out of order; two pretend to be bound."""
    return [
        volume("gce-pd-10", "10G", [RWO, ROX]),
        volume("gce-pd-20", "20G", [RWO, ROX], claim_ref={"uid": "def456"}),
        volume("nfs-5", "5G", [RWO, ROX, RWX]),
        volume("gce-pd-1", "1G", [RWO, ROX], claim_ref={"uid": "abc123"}),
        volume("nfs-10", "10G", [RWO, ROX, RWX]),
        volume("gce-pd-5", "5G", [RWO, ROX]),
        volume("nfs-1", "1G", [RWO, ROX, RWX]),
        volume("gce-pd-2", "20000G", [RWO], labels={"should-exist": "true"}),
        volume("gce-pd-silver1", "10000G", [RWO], labels={"should-exist": "true"},
               storage_class="silver"),
        volume("gce-pd-silver2", "100G", [RWO], storage_class="silver"),
        volume("gce-pd-gold", "50G", [RWO], storage_class="gold"),
    ]


SHOULD_EXIST = {"matchLabels": {"should-exist": "true"}}


@pytest.mark.parametrize(("expected", "wanted"), [
    ("gce-pd-10", claim("8G")),
    ("nfs-5", claim("5G", [ROX, RWO, RWX])),
    ("gce-pd-5", claim("1G")),  # the 1G volume is bound
    (None, claim("999G")),
    (None, claim("999G", selector={"matchLabels": {"should-not-exist": "true"}})),
    (None, claim("20000G", [ROX, RWO], selector=SHOULD_EXIST)),
    ("gce-pd-2", claim("20000G", [RWO], selector=SHOULD_EXIST)),
    ("gce-pd-silver1", claim("1G", [RWO], selector=SHOULD_EXIST, storage_class="silver")),
    ("gce-pd-silver2", claim("1G", [RWO], storage_class="silver")),
], ids=["successful-match-gce-10", "successful-match-nfs-5", "successful-skip-1g-bound-volume",
        "successful-no-match", "successful-no-match-due-to-label",
        "successful-no-match-due-to-size-constraint-with-label-selector",
        "successful-match-due-with-constraint-and-label-selector",
        "successful-match-with-class", "successful-match-with-class-and-labels"])
def test_match_volume(expected: str | None, wanted: Obj) -> None:
    """TestMatchVolume."""
    found = find_best_match_for_claim(wanted, create_test_volumes())
    assert (found["metadata"]["name"] if found else None) == expected


def test_matching_with_bound_volumes() -> None:
    """TestMatchingWithBoundVolumes: of two alike volumes, the one not bound."""
    volumes = [volume("gce001", "1G", [RWO, ROX], claim_ref={"uid": "abc123"}),
               volume("gce002", "1G", [RWO, ROX])]
    assert find_best_match_for_claim(claim("1G"), volumes)["metadata"]["name"] == "gce002"


def test_finding_volume_with_different_access_modes() -> None:
    """TestFindingVolumeWithDifferentAccessModes: the volume with the fewest extra
    modes; the order of the modes asked does not matter."""
    gce = volume("gce", "10G", [RWO, ROX])
    ebs = volume("ebs", "10G", [RWO])
    nfs = volume("nfs", "10G", [RWO, ROX, RWX])
    volumes = [gce, ebs, nfs]

    def best(*modes: str) -> str:
        return find_best_match_for_claim(claim("1G", list(modes)), volumes)["metadata"]["name"]

    assert best(RWO) == "ebs"
    assert best(RWO, ROX) == "gce"
    assert best(RWX, RWO, ROX) == "nfs"
    assert best(RWX) == "nfs"
    ebs["spec"]["claimRef"] = {}  # the exact match is bound: the next level up of modes
    assert best(RWO) == "gce"
    gce["spec"]["claimRef"] = {}
    assert best(RWO) == "nfs"
    del gce["spec"]["claimRef"]
    assert best(ROX) == "gce"


@pytest.mark.parametrize("delay_binding", [False, True])
def test_finding_prebound_volumes(delay_binding: bool) -> None:
    """TestFindingPreboundVolumes: a volume pre-bound to the claim wins when it is big
    enough, whatever its access modes; with delayed binding only that volume is found."""
    wanted = claim("1Gi", [RWO])
    claim_ref = {"kind": "PersistentVolumeClaim", "namespace": "myns", "name": "claim01",
                 "uid": "claim-uid"}
    pv1, pv5, pv8 = (volume(name, size, [RWO]) for name, size in
                     (("pv1", "1Gi"), ("pv5", "5Gi"), ("pv8", "8Gi")))
    bad_size, bad_mode = volume("pvBadSize", "1Mi", [RWO]), volume("pvBadMode", "1Gi", [ROX])
    volumes = [pv1, pv5, pv8, bad_size, bad_mode]

    def best() -> str | None:
        found = find_best_match_for_claim(wanted, volumes, delay_binding=delay_binding)
        return found["metadata"]["name"] if found else None

    assert best() == (None if delay_binding else "pv1")
    pv1["spec"]["claimRef"] = {"name": "foo", "namespace": "bar"}
    assert best() == (None if delay_binding else "pv5")
    del pv1["spec"]["claimRef"]
    pv8["spec"]["claimRef"] = claim_ref
    assert best() == "pv8"
    del pv8["spec"]["claimRef"]
    bad_size["spec"]["claimRef"] = claim_ref  # too small: not the claim's after all
    assert best() == (None if delay_binding else "pv1")
    del bad_size["spec"]["claimRef"]
    bad_mode["spec"]["claimRef"] = claim_ref  # other access modes: not looked at
    assert best() == (None if delay_binding else "pv1")


def test_a_volume_not_available_or_being_deleted_is_not_matched() -> None:
    released = volume("released", "1G", [RWO])
    released["status"]["phase"] = "Released"
    deleting = volume("deleting", "1G", [RWO])
    deleting["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert find_matching_volume(claim("1G", [RWO]), [released, deleting]) is None


@pytest.mark.parametrize(("claim_mode", "volume_mode", "mismatch"), [
    (None, None, False), ("Filesystem", None, False), (None, "Filesystem", False),
    ("Block", "Block", False), ("Block", "Filesystem", True), ("Filesystem", "Block", True),
    (None, "Block", True),
])
def test_volume_mode_check(claim_mode: str | None, volume_mode: str | None,
                           mismatch: bool) -> None:
    """TestVolumeModeCheck: Filesystem unless said, and the two must agree."""
    wanted, offered = claim("1G"), volume("pv", "1G", [RWO])
    if claim_mode:
        wanted["spec"]["volumeMode"] = claim_mode
    if volume_mode:
        offered["spec"]["volumeMode"] = volume_mode
    assert check_volume_mode_mismatches(wanted, offered) is mismatch
    assert (find_matching_volume(wanted, [offered]) is None) is mismatch


@pytest.mark.parametrize(("change", "problem"), [
    ({}, ""),
    ({"size": "1M"}, "requested PV is too small"),
    ({"storage_class": "gold"}, "storageClassName does not match"),
    ({"modes": [ROX]}, "incompatible accessMode"),
])
def test_check_volume_satisfies_claim(change: Obj, problem: str) -> None:
    """checkVolumeSatisfyClaim: why a claim's named volume cannot serve it."""
    offered = volume("pv", change.get("size", "2G"), change.get("modes", [RWO, ROX]),
                     storage_class=change.get("storage_class"))
    assert check_volume_satisfies_claim(offered, claim("1G", [RWO])) == problem
    deleting = copy.deepcopy(offered)
    deleting["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert check_volume_satisfies_claim(deleting, claim("1G", [RWO])) == (
        'the volume is marked for deletion "pv"')


def test_the_newest_default_class_wins_and_a_tie_goes_to_the_first_name() -> None:
    """GetDefaultClass."""
    def storage_class(name: str, created: str, default: str = "true",
                      beta: bool = False) -> Obj:
        key = ("storageclass.beta.kubernetes.io/is-default-class" if beta
               else "storageclass.kubernetes.io/is-default-class")
        return {"metadata": {"name": name, "creationTimestamp": created,
                             "annotations": {key: default}}}

    assert default_class([storage_class("a", "2026-01-01T00:00:00Z", "false")]) is None
    classes = [storage_class("old", "2026-01-01T00:00:00Z"),
               storage_class("zeta", "2026-01-02T00:00:00Z", beta=True),
               storage_class("alpha", "2026-01-02T00:00:00Z")]
    assert default_class(classes)["metadata"]["name"] == "alpha"
    assert default_class(classes[:2])["metadata"]["name"] == "zeta"
