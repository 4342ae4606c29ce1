"""The admission chain the API server runs: which plugins, in which order.

Upstream's order (pkg/kubeapiserver/options/plugins.go, AllOrderedPlugins), restricted
to the plugins built here. A plugin runs in each phase it takes part in: the mutating
ones first, in this order, then the validating ones, in this order.

    plugin                       mutates  validates  on by default
    NamespaceLifecycle                    yes        yes
    LimitRanger                  yes      yes        yes
    ServiceAccount               yes      yes        yes
    NodeRestriction                       yes        no (kubeadm turns it on)
    Priority                     yes                 yes
    DefaultTolerationSeconds     yes                 yes
    DefaultStorageClass          yes                 yes
    StorageObjectInUseProtection yes                 yes
    PersistentVolumeClaimResize           yes        yes
    CertificateApproval                   yes        yes
    CertificateSigning                    yes        yes
    CertificateSubjectRestriction         yes        yes
    DefaultIngressClass          yes                 yes
    MutatingAdmissionWebhook     yes                 yes
    ValidatingAdmissionPolicy             yes        yes
    ValidatingAdmissionWebhook            yes        yes
    ResourceQuota                         yes        yes

--enable-admission-plugins adds to the defaults, --disable-admission-plugins takes away.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from minikube_py.api import Obj, errors
from minikube_py.apiserver.auth.admission import Chain, Plugin
from minikube_py.apiserver.auth.admission.certificateapproval import CertificateApproval
from minikube_py.apiserver.auth.admission.certificatesigning import CertificateSigning
from minikube_py.apiserver.auth.admission.certificatesubjectrestriction import (
    CertificateSubjectRestriction,
)
from minikube_py.apiserver.auth.admission.defaultingressclass import DefaultIngressClass
from minikube_py.apiserver.auth.admission.defaultstorageclass import DefaultStorageClass
from minikube_py.apiserver.auth.admission.defaulttolerationseconds import DefaultTolerationSeconds
from minikube_py.apiserver.auth.admission.limitranger import LimitRanger
from minikube_py.apiserver.auth.admission.namespacelifecycle import NamespaceLifecycle
from minikube_py.apiserver.auth.admission.noderestriction import NodeRestriction
from minikube_py.apiserver.auth.admission.persistentvolumeclaimresize import (
    PersistentVolumeClaimResize,
)
from minikube_py.apiserver.auth.admission.priority import Priority
from minikube_py.apiserver.auth.admission.resourcequota import ResourceQuota
from minikube_py.apiserver.auth.admission.serviceaccount import ServiceAccount
from minikube_py.apiserver.auth.admission.storageobjectinuseprotection import (
    StorageObjectInUseProtection,
)
from minikube_py.apiserver.auth.admission.validatingadmissionpolicy import (
    ValidatingAdmissionPolicy,
)
from minikube_py.apiserver.auth.admission.webhook import (
    Dispatcher,
    MutatingAdmissionWebhook,
    ServiceResolver,
    ValidatingAdmissionWebhook,
)
from minikube_py.apiserver.auth.authorization import Authorizer
from minikube_py.apiserver.connect.proxy import service_location


@dataclass
class AdmissionSources:
    """What the plugins read, from the server that runs them."""

    # A namespace by name: the watch cache, or etcd right after a delete.
    namespace: Callable[[str], Awaitable[Obj | None]]
    # Every cached object under an etcd key prefix ("/registry/priorityclasses/").
    cached: Callable[[str], list[Obj]]
    # The stores, for plugins that write (ResourceQuota records usage) or look further.
    stores: dict[tuple[str, str, str], Any]
    # The server's authorizer, for plugins that ask more than the request's own question
    # (may this user approve for that signer?).
    authorizer: Authorizer
    # Does this server sign ServiceAccount tokens? (Then pods get one mounted.)
    signs_tokens: bool = False


def _in_namespace(sources: AdmissionSources, plural: str) -> Callable[[str], list[Obj]]:
    return lambda namespace: sources.cached(f"/registry/{plural}/{namespace}/")


def _node_getter(sources: AdmissionSources) -> Callable[[str], Awaitable[Obj | None]]:
    """A Node by name from its store, None when there is none."""
    async def node(name: str) -> Obj | None:
        try:
            found: Obj = await sources.stores[("", "v1", "nodes")].get("", name)
        except errors.APIError as error:
            if error.code != 404:
                raise
            return None
        return found
    return node


def service_resolver(stores: Mapping[tuple[str, str, str], Any]) -> ServiceResolver:
    """How webhooks reach a Service: a ready endpoint of its port (upstream with
    --enable-aggregator-routing)."""
    async def resolve_service(namespace: str, name: str, port: int) -> str:
        location = await service_location(
            stores[("", "v1", "services")], stores[("discovery.k8s.io", "v1", "endpointslices")],
            namespace, f"https:{name}:{port}")
        return location.removeprefix("https://")

    return resolve_service


def _webhooks(sources: AdmissionSources, plural: str) -> Dispatcher:
    return Dispatcher(lambda: sources.cached(f"/registry/{plural}/"), sources.namespace,
                      service_resolver(sources.stores))


# Every plugin, in upstream's order, and how to build it.
PLUGINS: dict[str, Callable[[AdmissionSources], Plugin]] = {
    "NamespaceLifecycle": lambda s: NamespaceLifecycle(s.namespace),
    "LimitRanger": lambda s: LimitRanger(_in_namespace(s, "limitranges")),
    "ServiceAccount": lambda s: ServiceAccount(s.stores[("", "v1", "serviceaccounts")],
                                               mount_tokens=s.signs_tokens),
    "NodeRestriction": lambda s: NodeRestriction(_node_getter(s)),
    "Priority": lambda s: Priority(lambda: s.cached("/registry/priorityclasses/")),
    "DefaultTolerationSeconds": lambda s: DefaultTolerationSeconds(),
    "DefaultStorageClass": lambda s: DefaultStorageClass(
        lambda: s.cached("/registry/storageclasses/")),
    "StorageObjectInUseProtection": lambda s: StorageObjectInUseProtection(),
    "PersistentVolumeClaimResize": lambda s: PersistentVolumeClaimResize(
        lambda: s.cached("/registry/storageclasses/")),
    "CertificateApproval": lambda s: CertificateApproval(s.authorizer),
    "CertificateSigning": lambda s: CertificateSigning(s.authorizer),
    "CertificateSubjectRestriction": lambda s: CertificateSubjectRestriction(),
    "DefaultIngressClass": lambda s: DefaultIngressClass(
        lambda: s.cached("/registry/ingressclasses/")),
    "MutatingAdmissionWebhook": lambda s: MutatingAdmissionWebhook(
        _webhooks(s, "mutatingwebhookconfigurations")),
    "ValidatingAdmissionPolicy": lambda s: ValidatingAdmissionPolicy(
        lambda: s.cached("/registry/validatingadmissionpolicies/"),
        lambda: s.cached("/registry/validatingadmissionpolicybindings/"), s.namespace,
        s.stores.values, s.authorizer),
    "ValidatingAdmissionWebhook": lambda s: ValidatingAdmissionWebhook(
        _webhooks(s, "validatingwebhookconfigurations")),
    "ResourceQuota": lambda s: ResourceQuota(_in_namespace(s, "resourcequotas"),
                                             s.stores[("", "v1", "resourcequotas")]),
}
DEFAULT_PLUGINS = tuple(name for name in PLUGINS if name != "NodeRestriction")


def enabled_plugins(enable: Iterable[str] = (), disable: Iterable[str] = ()) -> tuple[str, ...]:
    """The defaults, plus `enable`, less `disable`, in upstream's order; ValueError names
    a plugin that does not exist."""
    enable, disable = list(enable), list(disable)
    for flag, names in (("enable", enable), ("disable", disable)):
        for name in names:
            if name not in PLUGINS:
                raise ValueError(f'{flag}-admission-plugins plugin "{name}" is unknown')
    wanted = (set(DEFAULT_PLUGINS) | set(enable)) - set(disable)
    return tuple(name for name in PLUGINS if name in wanted)


def build_chain(sources: AdmissionSources, names: Iterable[str] = DEFAULT_PLUGINS) -> Chain:
    return Chain([PLUGINS[name](sources) for name in names])
