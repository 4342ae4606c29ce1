"""Admission: the checks and changes every write passes after authorization.

Upstream's k8s.io/apiserver/pkg/admission and plugin/pkg/admission. A request that was
authenticated and authorized reaches the store, which runs the chain in two phases:

    create/update/delete in the store (registry/store.py):
        strategy prepare + default
        -> mutating admission   plugins that may change the object, in order
           (Priority, DefaultTolerationSeconds, LimitRanger, ServiceAccount,
            DefaultStorageClass, StorageObjectInUseProtection, DefaultIngressClass,
            MutatingAdmissionWebhook)
        -> strategy validation  (422 Invalid)
        -> validating admission plugins that may only refuse, in order
           (NamespaceLifecycle, LimitRanger, CertificateApproval, CertificateSigning,
            PersistentVolumeClaimResize, CertificateSubjectRestriction,
            ValidatingAdmissionPolicy,
            ValidatingAdmissionWebhook, ResourceQuota)
        -> etcd

A refusal is an APIError (mostly 403 Forbidden); it is raised before etcd is written,
so a refused request changes nothing. A plugin is one small class in one file of this
package, named after the upstream plugin; `build_chain` (chain.py) puts them in order.

Who is asking travels with the request, as Go's context.Context carries it upstream:
the server sets `request_user` before it calls a handler, and the store reads it when
it builds the Attributes (as does the CertificateSigningRequest strategy, which records
the requester). Writes the server makes for itself (bootstrap) run as
`system:apiserver`, a member of system:masters.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import ClassVar

from minikube_py.api import Obj, errors
from minikube_py.api.resources import Resource, subresource_kind
from minikube_py.apiserver.auth.authentication import UserInfo
from minikube_py.apiserver.endpoints import tracing

CREATE, UPDATE, DELETE, CONNECT = "CREATE", "UPDATE", "DELETE", "CONNECT"

APISERVER_USER = UserInfo("system:apiserver", groups=("system:masters",))
request_user: ContextVar[UserInfo] = ContextVar("request_user", default=APISERVER_USER)
# Warnings admission adds to the response (a ValidatingAdmissionPolicy's Warn action): the
# server sets a fresh list for each request; None where nobody will read them.
admission_warnings: ContextVar[list[str] | None] = ContextVar("admission_warnings",
                                                              default=None)
# Annotations admission adds to the request's audit event (a ValidatingAdmissionPolicy's
# Audit action and auditAnnotations); a fresh dict for each request, as the warnings.
admission_audit_annotations: ContextVar[dict[str, str] | None] = ContextVar(
    "admission_audit_annotations", default=None)


@dataclass
class Attributes:
    """What admission knows of one write (admission.Attributes)."""

    resource: Resource
    subresource: str
    operation: str
    namespace: str
    name: str
    obj: Obj | None  # the object to be written (None on DELETE)
    old: Obj | None  # the stored object (None on CREATE)
    user: UserInfo
    dry_run: bool = False
    # The options of the request (CreateOptions, UpdateOptions, DeleteOptions) as sent
    # to webhooks.
    options: Obj = field(default_factory=dict)

    @property
    def kind(self) -> tuple[str, str, str]:
        """Group, version and kind of the object: a subresource may serve another kind
        (pods/binding is a Binding, deployments/scale a Scale)."""
        resource = self.resource
        if self.subresource:
            other = subresource_kind(resource.plural, self.subresource)
            if other is not None:
                return other
        return resource.group, resource.version, resource.kind

    def is_resource(self, group: str, plural: str, subresource: str = "") -> bool:
        return ((self.resource.group, self.resource.plural, self.subresource)
                == (group, plural, subresource))

    def forbidden(self, why: str) -> errors.APIError:
        """admission.NewForbidden: 403, `<resource> "<name>" is forbidden: <why>`."""
        return errors.forbidden(self.resource.plural, self.resource.group, self.name, why)


class Plugin:
    """One admission plugin. `operations` says which writes it looks at.

    admit (the mutating phase) may change `attributes.obj` and returns whether it did;
    validate may only raise. A plugin implements either or both.
    """

    name: ClassVar[str] = ""
    operations: ClassVar[frozenset[str]] = frozenset((CREATE, UPDATE, DELETE, CONNECT))
    mutating: ClassVar[bool] = False
    validating: ClassVar[bool] = False

    def handles(self, attributes: Attributes) -> bool:
        return attributes.operation in self.operations

    async def admit(self, attributes: Attributes) -> bool:
        return False

    async def validate(self, attributes: Attributes) -> None:
        return None


class Chain:
    """The plugins in order; a store holds one and runs both phases of every write."""

    def __init__(self, plugins: list[Plugin] | None = None) -> None:
        self.plugins = list(plugins or ())
        self._mutating = [plugin for plugin in self.plugins if plugin.mutating]
        self._validating = [plugin for plugin in self.plugins if plugin.validating]

    def attributes(self, resource: Resource, operation: str, namespace: str, name: str,
                   obj: Obj | None, old: Obj | None, *, subresource: str = "",
                   dry_run: bool = False) -> Attributes:
        return Attributes(resource, subresource, operation, namespace, name, obj, old,
                          request_user.get(), dry_run)

    async def admit(self, attributes: Attributes) -> bool:
        """The mutating phase: each plugin in turn; True when any changed the object.
        The request's span notes the plugins that ran."""
        changed, ran = False, []
        try:
            for plugin in self._mutating:
                if plugin.handles(attributes):
                    ran.append(plugin.name)
                    changed = await plugin.admit(attributes) or changed
        finally:
            tracing.record_admission("mutating", ran, attributes.name)
        return changed

    async def validate(self, attributes: Attributes) -> None:
        """The validating phase: the first plugin that refuses ends the request. The
        request's span notes the plugins that ran, the refusing one last."""
        ran = []
        try:
            for plugin in self._validating:
                if plugin.handles(attributes):
                    ran.append(plugin.name)
                    await plugin.validate(attributes)
        finally:
            tracing.record_admission("validating", ran, attributes.name)
