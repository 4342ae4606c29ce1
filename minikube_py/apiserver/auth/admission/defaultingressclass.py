"""DefaultIngressClass (upstream plugin/pkg/admission/network/defaultingressclass).

On create, an Ingress that names no class (neither spec.ingressClassName nor the legacy
kubernetes.io/ingress.class annotation) is given the default IngressClass: the one
annotated ingressclass.kubernetes.io/is-default-class=true, the newest when several are
(then the first by name when they were created in the same second). Without a default
class the ingress is left without one. IngressClasses are read from the server's watch
cache (upstream reads an informer).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from minikube_py.api import Obj
from minikube_py.apiserver.auth.admission import CREATE, Attributes, Plugin

IS_DEFAULT_CLASS = "ingressclass.kubernetes.io/is-default-class"
INGRESS_CLASS_ANNOTATION = "kubernetes.io/ingress.class"


class DefaultIngressClass(Plugin):
    name = "DefaultIngressClass"
    operations = frozenset((CREATE,))
    mutating = True

    def __init__(self, ingress_classes: Callable[[], Iterable[Obj]]) -> None:
        self.ingress_classes = ingress_classes

    def handles(self, attributes: Attributes) -> bool:
        return (attributes.operation == CREATE
                and attributes.is_resource("networking.k8s.io", "ingresses")
                and isinstance(attributes.obj, dict))

    async def admit(self, attributes: Attributes) -> bool:
        """Admit: the default class for an ingress without one."""
        ingress = attributes.obj
        assert ingress is not None
        spec = ingress.get("spec")
        annotations = (ingress.get("metadata") or {}).get("annotations") or {}
        if not isinstance(spec, dict) or spec.get("ingressClassName") is not None \
                or INGRESS_CLASS_ANNOTATION in annotations:
            return False
        default = default_class(self.ingress_classes())
        if default is None:
            return False
        spec["ingressClassName"] = default["metadata"]["name"]
        return True


def default_class(ingress_classes: Iterable[Obj]) -> Obj | None:
    """getDefaultClass: the newest class annotated as the default (ties: first by name)."""
    defaults = [ingress_class for ingress_class in ingress_classes
                if ((ingress_class["metadata"].get("annotations") or {})
                    .get(IS_DEFAULT_CLASS) == "true")]
    if not defaults:
        return None
    defaults.sort(key=lambda ingress_class: ingress_class["metadata"]["name"])
    defaults.sort(key=lambda ingress_class: ingress_class["metadata"].get(
        "creationTimestamp", ""), reverse=True)
    return defaults[0]
