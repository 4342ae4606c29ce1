"""NamesAccepted and Established: the names a definition may serve, and whether it
serves them (upstream's NamingConditionController, pkg/controller/status/
naming_controller.go, and EstablishingController, pkg/controller/establish/).

A definition's names are accepted unless another definition of the same group already
serves one of them: its plural, singular and short names share one space, its kind and
listKind another. A name already accepted for this definition stays accepted.
"""

from __future__ import annotations

import copy
from typing import Any

from minikube_py.api import Obj, meta


def _names(crd: Obj, field: str) -> Obj:
    return dict((crd.get(field) or {}).get("names") or {}) if field == "spec" else dict(
        (crd.get("status") or {}).get("acceptedNames") or {})


def used_names(crd: Obj, others: list[Obj]) -> tuple[set[str], set[str]]:
    """getAcceptedNamesForGroup: the resource names and the kinds the group's other
    definitions have been granted."""
    group = (crd.get("spec") or {}).get("group")
    resources: set[str] = set()
    kinds: set[str] = set()
    for other in others:
        if other["metadata"]["name"] == crd["metadata"]["name"] or (
                (other.get("spec") or {}).get("group") != group):
            continue
        accepted = _names(other, "status")
        resources.update(n for n in (accepted.get("plural"), accepted.get("singular")) if n)
        resources.update(accepted.get("shortNames") or ())
        kinds.update(n for n in (accepted.get("kind"), accepted.get("listKind")) if n)
    return resources, kinds


def _conflict(requested: Any, accepted: Any, used: set[str]) -> str:
    """equalToAcceptedOrFresh: "" when the name may be taken, else why not."""
    if requested == accepted or requested not in used:
        return ""
    return f'"{requested}" is already in use'


def calculate_status(crd: Obj, others: list[Obj]) -> Obj:
    """calculateNamesAndConditions, then the establishing controller's step: the
    definition's new status (acceptedNames, NamesAccepted, Established)."""
    resources, kinds = used_names(crd, others)
    requested, accepted = _names(crd, "spec"), _names(crd, "status")
    new_names = copy.deepcopy(accepted)
    reason, message = "NoConflicts", "no conflicts found"
    for key, used, why in (("plural", resources, "PluralConflict"),
                           ("singular", resources, "SingularConflict")):
        problem = _conflict(requested.get(key), accepted.get(key), used)
        if problem:
            reason, message = why, problem
        elif requested.get(key) is not None:
            new_names[key] = requested[key]
    if requested.get("shortNames") != accepted.get("shortNames"):
        mine = set(accepted.get("shortNames") or ())
        problems = [p for p in (_conflict(name, "", resources)
                                for name in requested.get("shortNames") or ()
                                if name not in mine) if p]
        if problems:
            reason = "ShortNamesConflict"
            message = problems[0] if len(problems) == 1 else f"[{', '.join(problems)}]"
        elif requested.get("shortNames") is not None:
            new_names["shortNames"] = requested["shortNames"]
        else:
            new_names.pop("shortNames", None)
    for key, why in (("kind", "KindConflict"), ("listKind", "ListKindConflict")):
        problem = _conflict(requested.get(key), accepted.get(key), kinds)
        if problem:
            reason, message = why, problem
        elif requested.get(key) is not None:
            new_names[key] = requested[key]
    if requested.get("categories") is not None:
        new_names["categories"] = requested["categories"]
    else:
        new_names.pop("categories", None)
    accepted_ok = reason == "NoConflicts"
    conditions = _conditions(crd)
    names_accepted = _condition("NamesAccepted", accepted_ok, reason, message)
    established = conditions.get("Established") or _condition(
        "Established", False, "NotAccepted", "not all names are accepted")
    if established["status"] != "True" and accepted_ok:
        # the establishing controller's step: the endpoint serves once names are accepted
        established = _condition("Established", True, "InitialNamesAccepted",
                                 "the initial names have been accepted")
    status = copy.deepcopy(crd.get("status") or {})
    status["acceptedNames"] = {key: new_names[key] for key in sorted(new_names)}
    merged = dict(conditions)
    for condition in (names_accepted, established):
        old = conditions.get(condition["type"])
        if old is not None and old.get("status") == condition["status"]:
            condition["lastTransitionTime"] = old.get("lastTransitionTime")
        merged[condition["type"]] = condition
    status["conditions"] = list(merged.values())
    return status


def _conditions(crd: Obj) -> dict[str, Obj]:
    return {c["type"]: c for c in (crd.get("status") or {}).get("conditions") or []
            if isinstance(c, dict) and "type" in c}


def _condition(kind: str, status: bool, reason: str, message: str) -> Obj:
    return {"type": kind, "status": "True" if status else "False",
            "lastTransitionTime": meta.now_rfc3339(), "reason": reason, "message": message}


def set_condition(crd: Obj, kind: str, status: bool, reason: str, message: str) -> None:
    """SetCRDCondition: set one condition, keeping its transition time if unchanged."""
    conditions = _conditions(crd)
    new = _condition(kind, status, reason, message)
    old = conditions.get(kind)
    if old is not None and old.get("status") == new["status"]:
        new["lastTransitionTime"] = old.get("lastTransitionTime")
    conditions[kind] = new
    crd.setdefault("status", {})["conditions"] = list(conditions.values())
