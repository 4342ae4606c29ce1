"""DefaultTolerationSeconds (upstream plugin/pkg/admission/defaulttolerationseconds).

On create, a pod that does not tolerate the not-ready or unreachable NoExecute taint
gets to stay 300 s on such a node (--default-not-ready-toleration-seconds,
--default-unreachable-toleration-seconds): the taint eviction controller then moves it
after five minutes instead of at once.
"""

from __future__ import annotations

from minikube_py.api import Obj
from minikube_py.apiserver.auth.admission import CREATE, Attributes, Plugin

DEFAULT_TOLERATION_SECONDS = {
    "node.kubernetes.io/not-ready": 300,
    "node.kubernetes.io/unreachable": 300,
}


class DefaultTolerationSeconds(Plugin):
    name = "DefaultTolerationSeconds"
    operations = frozenset((CREATE,))
    mutating = True

    def handles(self, attributes: Attributes) -> bool:
        return (attributes.operation == CREATE and attributes.is_resource("", "pods")
                and isinstance(attributes.obj, dict))

    async def admit(self, attributes: Attributes) -> bool:
        assert attributes.obj is not None
        spec = attributes.obj.get("spec")
        if isinstance(spec, dict):
            add_default_toleration_seconds(spec)
        return False


def add_default_toleration_seconds(spec: Obj) -> None:
    """Add the two tolerations the pod lacks.

    Any toleration with that key (or no key) and effect NoExecute (or none) counts as
    saying how long, whatever its operator and value.
    """
    tolerations = spec.get("tolerations") or []
    if not isinstance(tolerations, list):
        return
    added = []
    for key, seconds in DEFAULT_TOLERATION_SECONDS.items():
        if not any(isinstance(toleration, dict)
                   and toleration.get("key") in (key, "", None)
                   and toleration.get("effect") in ("NoExecute", "", None)
                   for toleration in tolerations):
            added.append({"key": key, "operator": "Exists", "effect": "NoExecute",
                          "tolerationSeconds": seconds})
    if added:
        spec["tolerations"] = [*tolerations, *added]
