"""Discovery: how clients learn which groups, versions and resources this server has.

kubectl starts every command here. It asks for the aggregated form (apidiscovery.k8s.io/v2,
one answer for /api and one for /apis); older clients walk the legacy documents
(/api -> APIVersions, /apis -> APIGroupList, /api/v1 -> APIResourceList ...). Both are built
from the resource table in minikube_py/api/resources.py, followed by the resources that
CustomResourceDefinitions add (`custom`, from apiextensions/controller.py), their groups
after the built-in ones and in name order, versions newest first as upstream sorts them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from minikube_py.api import Obj
from minikube_py.api.resources import (
    GROUP_ORDER,
    RESOURCES,
    SUBRESOURCE_VERBS,
    Resource,
    subresource_kind,
)

AGGREGATED_V2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"


def _groups(custom: Sequence[Resource] = ()) -> list[tuple[str, str]]:
    """(group, version) pairs that have resources, core first."""
    seen: list[tuple[str, str]] = []
    for group in GROUP_ORDER:
        for resource in RESOURCES:
            pair = (resource.group, resource.version)
            if resource.group == group and pair not in seen:
                seen.append(pair)
    extra = sorted({(r.group, r.version) for r in custom},
                   key=lambda pair: (pair[0], _version_priority(pair[1])))
    return seen + [pair for pair in extra if pair not in seen]


def _version_priority(version: str) -> tuple[int, int, int]:
    """Kube-aware version order: GA before beta before alpha, higher numbers first
    (upstream's version.CompareKubeAwareVersionStrings); other names last."""
    found = re.fullmatch(r"v(\d+)(?:(alpha|beta)(\d+))?", version)
    if found is None:
        return (3, 0, 0)
    stage = {None: 0, "beta": 1, "alpha": 2}[found.group(2)]
    return (stage, -int(found.group(1)), -int(found.group(3) or 0))


def _resources(group: str, version: str, custom: Sequence[Resource] = ()) -> list[Resource]:
    return [r for r in (*RESOURCES, *custom) if (r.group, r.version) == (group, version)]


def wants_aggregated(accept: str) -> bool:
    return "as=APIGroupDiscoveryList" in accept and "g=apidiscovery.k8s.io" in accept


def api_versions(server_address: str) -> Obj:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}
        ],
    }


def api_group_list(custom: Sequence[Resource] = ()) -> Obj:
    groups: list[Obj] = []
    by_name: dict[str, Obj] = {}
    for group, version in _groups(custom):
        if not group:
            continue
        gv = {"groupVersion": f"{group}/{version}", "version": version}
        if group in by_name:
            by_name[group]["versions"].append(gv)
            continue
        by_name[group] = {"name": group, "versions": [gv], "preferredVersion": gv}
        groups.append(by_name[group])
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group(group: str, custom: Sequence[Resource] = ()) -> Obj | None:
    for entry in api_group_list(custom)["groups"]:
        if entry["name"] == group:
            return {"kind": "APIGroup", "apiVersion": "v1", **entry}
    return None


def api_resource_list(group: str, version: str, custom: Sequence[Resource] = ()
                      ) -> Obj | None:
    resources = _resources(group, version, custom)
    if not resources:
        return None
    entries: list[Obj] = []
    for r in resources:
        entry: Obj = {
            "name": r.plural,
            "singularName": r.singular_name,
            "namespaced": r.namespaced,
            "kind": r.kind,
            "verbs": list(r.verbs),
        }
        if r.short_names:
            entry["shortNames"] = list(r.short_names)
        if r.categories:
            entry["categories"] = list(r.categories)
        entries.append(entry)
        for sub in r.subresources:
            sub_group, sub_version, sub_kind = subresource_kind(r.plural, sub) or (
                r.group, r.version, r.kind)
            sub_entry: Obj = {
                "name": f"{r.plural}/{sub}",
                "singularName": "",
                "namespaced": r.namespaced,
                "kind": sub_kind,
                "verbs": list(SUBRESOURCE_VERBS[sub]),
            }
            if (sub_group, sub_version) != (r.group, r.version):
                sub_entry["group"] = sub_group
                sub_entry["version"] = sub_version
            entries.append(sub_entry)
    group_version = f"{group}/{version}" if group else version
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version,
            "resources": entries}


def _aggregated_resource(r: Resource) -> Obj:
    entry: Obj = {
        "resource": r.plural,
        "responseKind": {"group": r.group, "version": r.version, "kind": r.kind},
        "scope": "Namespaced" if r.namespaced else "Cluster",
        "singularResource": r.singular_name,
        "verbs": list(r.verbs),
    }
    if r.short_names:
        entry["shortNames"] = list(r.short_names)
    if r.categories:
        entry["categories"] = list(r.categories)
    subresources = []
    for sub in r.subresources:
        sub_group, sub_version, sub_kind = subresource_kind(r.plural, sub) or (
            r.group, r.version, r.kind)
        subresources.append({
            "subresource": sub,
            "responseKind": {"group": sub_group, "version": sub_version, "kind": sub_kind},
            "verbs": list(SUBRESOURCE_VERBS[sub]),
        })
    if subresources:
        entry["subresources"] = subresources
    return entry


def aggregated(core: bool, custom: Sequence[Resource] = ()) -> Obj:
    """The apidiscovery.k8s.io/v2 APIGroupDiscoveryList for /api (core) or /apis."""
    items: list[Obj] = []
    by_name: dict[str, Obj] = {}
    for group, version in _groups(custom):
        if bool(group) == core:
            continue
        entry = {
            "version": version,
            "resources": [_aggregated_resource(r) for r in _resources(group, version, custom)],
            "freshness": "Current",
        }
        if group in by_name:
            by_name[group]["versions"].append(entry)
            continue
        by_name[group] = {"metadata": {"name": group}, "versions": [entry]}
        items.append(by_name[group])
    return {"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2",
            "metadata": {}, "items": items}
