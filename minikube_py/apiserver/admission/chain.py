"""The admission chain the API server runs: which plugins, in which order.

Upstream's order (pkg/kubeapiserver/options/plugins.go, AllOrderedPlugins), restricted
to the plugins built here. A plugin runs in each phase it takes part in: the mutating
ones first, in this order, then the validating ones, in this order.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from minikube_py.apiserver.admission import Chain, Plugin
from minikube_py.apiserver.admission.defaulttolerationseconds import DefaultTolerationSeconds
from minikube_py.apiserver.admission.limitranger import LimitRanger
from minikube_py.apiserver.admission.namespacelifecycle import NamespaceLifecycle
from minikube_py.apiserver.admission.priority import Priority

Obj = dict[str, Any]


@dataclass
class AdmissionSources:
    """What the plugins read, from the server that runs them."""

    # A namespace by name: the watch cache, or etcd right after a delete.
    namespace: Callable[[str], Awaitable[Obj | None]]
    # Every cached object under an etcd key prefix ("/registry/priorityclasses/").
    cached: Callable[[str], list[Obj]]
    # The stores, for plugins that write (ResourceQuota records usage).
    stores: dict[tuple[str, str, str], Any]


def build_chain(sources: AdmissionSources) -> Chain:
    plugins: list[Plugin] = [
        NamespaceLifecycle(sources.namespace),
        LimitRanger(lambda namespace: sources.cached(f"/registry/limitranges/{namespace}/")),
        Priority(lambda: sources.cached("/registry/priorityclasses/")),
        DefaultTolerationSeconds(),
    ]
    return Chain(plugins)
