"""The resources a CustomResourceDefinition defines, as rows of the resource table: what
the API server serves for an Established definition and what the controllers that watch
every kind (the garbage collector) add to their monitors."""

from __future__ import annotations

from minikube_py.api import Obj
from minikube_py.api.resources import Resource


def is_established(crd: Obj) -> bool:
    return any(c.get("type") == "Established" and c.get("status") == "True"
               for c in (crd.get("status") or {}).get("conditions") or []
               if isinstance(c, dict))


def served_resource(crd: Obj, version: Obj) -> Resource:
    """The table row of one served version, from the accepted names."""
    spec = crd["spec"]
    accepted = crd["status"]["acceptedNames"]
    subresources = version.get("subresources") or {}
    return Resource(
        spec["group"], version["name"], accepted["kind"], accepted["plural"],
        spec["scope"] == "Namespaced", tuple(accepted.get("shortNames") or ()),
        tuple(accepted.get("categories") or ()),
        tuple(sub for sub in ("status", "scale") if sub in subresources),
        storage_plural=f"{spec['group']}/{accepted['plural']}",
        singular=accepted.get("singular") or accepted["kind"].lower())


def preferred_resource(crd: Obj) -> Resource | None:
    """The version clients should use (discovery's preferred version: the storage
    version when served, else the first served), for an Established definition."""
    if not is_established(crd):
        return None
    versions = [v for v in crd["spec"].get("versions") or [] if v.get("served")]
    if not versions:
        return None
    chosen = next((v for v in versions if v.get("storage")), versions[0])
    return served_resource(crd, chosen)
