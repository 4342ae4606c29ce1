"""NamespaceLifecycle (upstream plugin/pkg/admission/namespace/lifecycle).

Nothing new may be created in a namespace that does not exist (404) or is being
terminated (403 with the cause NamespaceTerminating, which controllers recognise and
then drop their work). The namespaces the cluster cannot do without (default,
kube-system, kube-public) may not be deleted.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from minikube_py.api import Obj, errors
from minikube_py.apiserver.auth.admission import CREATE, DELETE, Attributes, Plugin

NamespaceLookup = Callable[[str], Awaitable[Obj | None]]

IMMORTAL_NAMESPACES = frozenset(("default", "kube-system", "kube-public"))


class NamespaceLifecycle(Plugin):
    name = "NamespaceLifecycle"
    operations = frozenset((CREATE, DELETE))
    validating = True

    def __init__(self, lookup: NamespaceLookup) -> None:
        # The server's lookup: the watch cache, or etcd for a namespace it deleted
        # moments ago (upstream's force-live-lookup).
        self.lookup = lookup

    def handles(self, attributes: Attributes) -> bool:
        if attributes.operation == DELETE:
            return attributes.is_resource("", "namespaces") and not attributes.subresource
        return attributes.operation == CREATE and attributes.resource.namespaced

    async def validate(self, attributes: Attributes) -> None:
        """Validate: refuse deleting an immortal namespace or writing into a dead one."""
        if attributes.operation == DELETE:
            if attributes.name in IMMORTAL_NAMESPACES:
                raise errors.forbidden("namespaces", "", attributes.name,
                                       "this namespace may not be deleted")
            return
        namespace = attributes.namespace
        found = await self.lookup(namespace)
        if found is None:
            raise errors.not_found("namespaces", "", namespace)
        if not (found.get("metadata") or {}).get("deletionTimestamp"):
            return
        resource = attributes.resource
        error = errors.forbidden(
            resource.plural, resource.group, attributes.name,
            f"unable to create new content in namespace {namespace} because it is being "
            "terminated")
        error.details = {**(error.details or {}), "causes": [{
            "type": "NamespaceTerminating",
            "message": f"namespace {namespace} is being terminated",
            "field": "metadata.namespace",
        }]}
        raise error
