"""PersistentVolumeClaimResize (upstream
plugin/pkg/admission/storage/persistentvolume/resize): a claim grows only where its
StorageClass allows it.

On an update of a claim (not its /status) that asks for more storage than before:

    the stored claim is not Bound       -> 403 "Only bound persistent volume claims can
                                           be expanded"
    no class, a changed class, a class  -> 403 "only dynamically provisioned pvc can be
    that does not exist, or one without    resized and the storageclass that provisions
    allowVolumeExpansion: true             the pvc must support resize"

Asking for less is left to validation (not below status.capacity). StorageClasses are
read from the server's watch cache (upstream reads an informer).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from minikube_py.api import Obj
from minikube_py.api.storagehelpers import claim_class, requested_storage
from minikube_py.apiserver.auth.admission import UPDATE, Attributes, Plugin


class PersistentVolumeClaimResize(Plugin):
    name = "PersistentVolumeClaimResize"
    operations = frozenset((UPDATE,))
    validating = True

    def __init__(self, storage_classes: Callable[[], Iterable[Obj]]) -> None:
        self.storage_classes = storage_classes

    def handles(self, attributes: Attributes) -> bool:
        return (attributes.operation == UPDATE
                and attributes.is_resource("", "persistentvolumeclaims")
                and isinstance(attributes.obj, dict) and isinstance(attributes.old, dict))

    async def validate(self, attributes: Attributes) -> None:
        """Validate: a bigger request needs a Bound claim and an expandable class."""
        claim, old = attributes.obj, attributes.old
        assert claim is not None and old is not None
        try:
            if requested_storage(claim) <= requested_storage(old):
                return
        except (ValueError, ArithmeticError):
            return  # a size that does not parse is validation's to refuse
        if (old.get("status") or {}).get("phase") != "Bound":
            raise attributes.forbidden("Only bound persistent volume claims can be expanded")
        if not self.allow_resize(claim, old):
            raise attributes.forbidden(
                "only dynamically provisioned pvc can be resized and the storageclass that "
                "provisions the pvc must support resize")

    def allow_resize(self, claim: Obj, old: Obj) -> bool:
        """allowResize: the same class before and after, and it says allowVolumeExpansion."""
        class_name = claim_class(claim)
        if not class_name or class_name != claim_class(old):
            return False
        storage_class = next((each for each in self.storage_classes()
                              if each["metadata"]["name"] == class_name), None)
        return storage_class is not None and storage_class.get("allowVolumeExpansion") is True
