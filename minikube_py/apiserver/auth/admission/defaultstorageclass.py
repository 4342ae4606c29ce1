"""DefaultStorageClass (upstream plugin/pkg/admission/storage/storageclass/setdefault).

On create, a PersistentVolumeClaim that asks for no class (no spec.storageClassName and
no beta storage-class annotation) is given the default StorageClass: the one annotated
storageclass.kubernetes.io/is-default-class=true, the newest when several are. A claim
whose storageClassName is "" asked for no class on purpose and keeps it. Without a
default class the claim is left as it is (the PV controller gives it one later, if a
default appears while it is still unbound). StorageClasses are read from the server's
watch cache (upstream reads an informer).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from minikube_py.api import Obj
from minikube_py.api.storagehelpers import claim_has_class, default_class
from minikube_py.apiserver.auth.admission import CREATE, Attributes, Plugin


class DefaultStorageClass(Plugin):
    name = "DefaultStorageClass"
    operations = frozenset((CREATE,))
    mutating = True

    def __init__(self, storage_classes: Callable[[], Iterable[Obj]]) -> None:
        self.storage_classes = storage_classes

    def handles(self, attributes: Attributes) -> bool:
        return (attributes.operation == CREATE
                and attributes.is_resource("", "persistentvolumeclaims")
                and isinstance(attributes.obj, dict))

    async def admit(self, attributes: Attributes) -> bool:
        """Admit: the default class for a claim without one."""
        claim = attributes.obj
        assert claim is not None
        if not isinstance(claim.get("spec"), dict) or claim_has_class(claim):
            return False
        default = default_class(self.storage_classes())
        if default is None:
            return False
        claim["spec"]["storageClassName"] = default["metadata"]["name"]
        return True
