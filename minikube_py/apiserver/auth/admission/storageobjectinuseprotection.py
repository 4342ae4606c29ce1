"""StorageObjectInUseProtection (upstream
plugin/pkg/admission/storage/storageobjectinuseprotection).

On create, every PersistentVolumeClaim gets the finalizer kubernetes.io/pvc-protection
and every PersistentVolume kubernetes.io/pv-protection. A deleted claim then stays
(Terminating) until no pod uses it, and a deleted volume until no claim is bound to it:
the pvc-protection and pv-protection controllers take the finalizers off.
"""

from __future__ import annotations

from minikube_py.api.storagehelpers import PV_PROTECTION_FINALIZER, PVC_PROTECTION_FINALIZER
from minikube_py.apiserver.auth.admission import CREATE, Attributes, Plugin

_FINALIZERS = {"persistentvolumeclaims": PVC_PROTECTION_FINALIZER,
               "persistentvolumes": PV_PROTECTION_FINALIZER}


class StorageObjectInUseProtection(Plugin):
    name = "StorageObjectInUseProtection"
    operations = frozenset((CREATE,))
    mutating = True

    def handles(self, attributes: Attributes) -> bool:
        return (attributes.operation == CREATE and not attributes.subresource
                and attributes.resource.group == ""
                and attributes.resource.plural in _FINALIZERS
                and isinstance(attributes.obj, dict))

    async def admit(self, attributes: Attributes) -> bool:
        """Admit: the protection finalizer, once."""
        obj = attributes.obj
        assert obj is not None
        finalizer = _FINALIZERS[attributes.resource.plural]
        metadata = obj.setdefault("metadata", {})
        finalizers = metadata.get("finalizers") or []
        if finalizer in finalizers:
            return False
        metadata["finalizers"] = [*finalizers, finalizer]
        return True
