"""The namespace controller: empty a namespace being deleted, then let it go.

    kubectl delete namespace x   -->  API server: deletionTimestamp set, phase Terminating;
                                      the `kubernetes` finalizer in spec.finalizers holds it
    namespace controller (5 s later, then on every change or estimate):
        for every namespaced resource that can be deleted: delete the collection in x,
            list what is left (pods may take their grace period, objects their finalizers)
        write status conditions saying what remains and why
        nothing left?  -> PUT /finalize without `kubernetes`  -> the API server deletes x
        something left -> look again after about half of the estimated time

Upstream: pkg/controller/namespace/namespace_controller.go and
pkg/controller/namespace/deletion (namespacedResourcesDeleter, status_condition_utils.go).
Discovery is the resource table (minikube_py/api/resources.py) instead of /apis.
"""

from __future__ import annotations

import copy
import logging
from dataclasses import dataclass, field
from datetime import datetime

from minikube_py.api import Obj
from minikube_py.api.customresources import preferred_resource
from minikube_py.api.meta import parse_rfc3339, rfc3339
from minikube_py.api.resources import RESOURCES, Resource
from minikube_py.client.errors import APIStatusError, Conflict, MethodNotAllowed, NotFound
from minikube_py.client.informer import EventHandler
from minikube_py.client.rest import ResourceClient
from minikube_py.client.store import split_key
from minikube_py.client.workqueue import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    MaxOfRateLimiter,
    RateLimitingQueue,
)
from minikube_py.controllers.base import Controller, ControllerContext, ExpectedSyncError

log = logging.getLogger(__name__)

FINALIZER_TOKEN = "kubernetes"
# namespaceDeletionGracePeriod: wait before acting on a namespace change, so that every
# API server has seen the deletion and refuses new content (module constant: tests lower it).
NAMESPACE_DELETION_GRACE_PERIOD = 5.0
# finalizerEstimateSeconds: how long objects held by finalizers are assumed to need.
FINALIZER_ESTIMATE_SECONDS = 15

# The conditions this controller maintains, with their "all is well" reason and message.
CONDITION_TYPES: dict[str, tuple[str, str]] = {
    "NamespaceDeletionDiscoveryFailure": (
        "ResourcesDiscovered", "All resources successfully discovered"),
    "NamespaceDeletionGroupVersionParsingFailure": (
        "ParsedGroupVersions", "All legacy kube types successfully parsed"),
    "NamespaceDeletionContentFailure": (
        "ContentDeleted", "All content successfully deleted, may be waiting on finalization"),
    "NamespaceContentRemaining": ("ContentRemoved", "All content successfully removed"),
    "NamespaceFinalizersRemaining": ("ContentRemoved", "All content successfully removed"),
}


def deletable_resources() -> list[Resource]:
    """Discovery: every namespaced resource that supports `delete`."""
    return [r for r in RESOURCES if r.namespaced and "delete" in r.verbs]


def group_version_resource(resource: Resource) -> str:
    """schema.GroupVersionResource.String(): `apps/v1, Resource=deployments`."""
    return f"{resource.group}/{resource.version}, Resource={resource.plural}"


@dataclass
class ResourceLeft:
    """gvrDeletionMetadata: what is left of one resource after deleting it."""

    estimate: int = 0  # seconds before the rest should be gone; 0: no estimate
    remaining: int = 0
    finalizers: dict[str, int] = field(default_factory=dict)


@dataclass
class DeletionReport:
    """What deleteAllContent found, turned into the namespace's status conditions."""

    estimate: int = 0
    remaining: dict[Resource, int] = field(default_factory=dict)
    finalizers: dict[str, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)

    def conditions(self) -> dict[str, tuple[str, str]]:
        """The failing conditions as type -> (reason, message); the others are fine."""
        failing: dict[str, tuple[str, str]] = {}
        if self.remaining:
            counts = sorted(f"{r.plural}.{r.group} has {n} resource instances"
                            for r, n in self.remaining.items())
            failing["NamespaceContentRemaining"] = (
                "SomeResourcesRemain", f"Some resources are remaining: {', '.join(counts)}")
        if self.finalizers:
            counts = sorted(f"{name} in {n} resource instances"
                            for name, n in self.finalizers.items())
            failing["NamespaceFinalizersRemaining"] = (
                "SomeFinalizerRemain", f"Some finalizers are remaining: {', '.join(counts)}")
        if self.errors:
            failing["NamespaceDeletionContentFailure"] = (
                "ContentDeletionFailed",
                f"Failed to delete all resource types, {len(self.errors)} remaining: "
                f"{', '.join(sorted(self.errors))}")
        return failing


def update_conditions(status: Obj, failing: dict[str, tuple[str, str]], now: datetime) -> bool:
    """updateConditions: set every maintained condition (True when failing, else False
    with its "ok" reason); the transition time moves only when the status flips."""
    conditions: list[Obj] = status.setdefault("conditions", [])
    changed = False
    for condition_type, ok in CONDITION_TYPES.items():
        state = "True" if condition_type in failing else "False"
        reason, message = failing.get(condition_type, ok)
        old = next((c for c in conditions if c.get("type") == condition_type), None)
        if old is None:
            conditions.append({"type": condition_type, "status": state,
                               "lastTransitionTime": rfc3339(now), "reason": reason,
                               "message": message})
            changed = True
        elif (old.get("status"), old.get("reason"), old.get("message")) != (
                state, reason, message):
            if old.get("status") != state:
                old["lastTransitionTime"] = rfc3339(now)
            old.update(status=state, reason=reason, message=message)
            changed = True
    return changed


class NamespaceController(Controller):
    """Delete everything in a Terminating namespace, then remove its `kubernetes` finalizer."""

    name = "namespace"

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        # nsControllerRateLimiter: retry a failing namespace at least once a minute
        self.queue = RateLimitingQueue(self.name, metrics=ctx.workqueue_metrics,
                                       rate_limiter=MaxOfRateLimiter(
                                           ItemExponentialFailureRateLimiter(0.005, 60.0),
                                           BucketRateLimiter(10.0, 100)))
        self.namespaces_api = self.client.resource("namespaces")
        namespaces = self.informer("namespaces")
        self.namespaces = namespaces.store
        namespaces.add_event_handler(EventHandler(
            on_add=self.enqueue_namespace,
            on_update=lambda _old, new: self.enqueue_namespace(new)))
        # the definitions of custom resources, whose namespaced ones go with the namespace
        self.definitions = self.informer("customresourcedefinitions",
                                         "apiextensions.k8s.io").store

    def custom_resources(self) -> list[Resource]:
        """The namespaced custom resources the Established definitions serve (upstream
        finds them by discovery, as every other resource)."""
        found = [preferred_resource(crd) for crd in self.definitions.list()]
        resources = [r for r in found if r is not None and r.namespaced]
        for resource in resources:
            self.client.resource_for(resource)
        return sorted(resources, key=lambda r: (r.group, r.plural))

    def enqueue_namespace(self, namespace: Obj) -> None:
        """Only namespaces being deleted are work; act after the deletion grace period."""
        if namespace["metadata"].get("deletionTimestamp"):
            self.enqueue_after(namespace, NAMESPACE_DELETION_GRACE_PERIOD)

    async def sync(self, key: str) -> None:
        """syncNamespaceFromKey + namespacedResourcesDeleter.Delete."""
        _, name = split_key(key)
        if self.namespaces.get(key) is None:
            return
        try:
            namespace = await self.namespaces_api.get(name)
        except NotFound:
            return
        if not namespace["metadata"].get("deletionTimestamp"):
            return
        if (namespace.get("status") or {}).get("phase") != "Terminating":
            namespace = await self._update_status_phase(namespace)
        if not (namespace.get("spec") or {}).get("finalizers"):
            return
        report = await self.delete_all_content(namespace)
        if report.errors:  # already in the NamespaceDeletionContentFailure condition
            raise ExpectedSyncError(", ".join(report.errors))
        if report.estimate > 0:
            # ResourcesRemainingError: look again after about half the estimate
            log.info("namespace %s: some content remains, estimate %d seconds before it is "
                     "removed", name, report.estimate)
            self.queue.add_after(key, report.estimate // 2 + 1)
            return
        await self._finalize(namespace)

    async def _update_status_phase(self, namespace: Obj) -> Obj:
        """updateNamespaceStatusFunc: a namespace being deleted is Terminating."""
        while True:
            updated = copy.deepcopy(namespace)
            updated.setdefault("status", {})["phase"] = "Terminating"
            try:
                return await self.namespaces_api.update_status(updated)
            except Conflict:
                namespace = await self._refetch(namespace)

    async def _refetch(self, namespace: Obj) -> Obj:
        """retryOnConflictError: read again, and give up if it is another namespace now."""
        fresh = await self.namespaces_api.get(namespace["metadata"]["name"])
        if fresh["metadata"].get("uid") != namespace["metadata"].get("uid"):
            raise RuntimeError("namespace uid has changed across retries")
        return fresh

    async def _finalize(self, namespace: Obj) -> None:
        """finalizeNamespace: drop our token from spec.finalizers through /finalize; with no
        finalizer left the API server deletes the namespace."""
        while True:
            finalized = copy.deepcopy(namespace)
            finalizers = (namespace.get("spec") or {}).get("finalizers") or []
            finalized.setdefault("spec", {})["finalizers"] = sorted(
                {f for f in finalizers if f != FINALIZER_TOKEN})
            try:
                await self.namespaces_api.update(finalized, subresource="finalize")
                return
            except NotFound:
                return
            except Conflict:
                namespace = await self._refetch(namespace)

    async def delete_all_content(self, namespace: Obj) -> DeletionReport:
        """deleteAllContent: delete every resource in the namespace, report what is left,
        and record it in the namespace's conditions."""
        name = namespace["metadata"]["name"]
        deleted_at = parse_rfc3339(namespace["metadata"]["deletionTimestamp"])
        report = DeletionReport()
        for resource in deletable_resources() + self.custom_resources():
            try:
                left = await self._delete_resource(resource, name, deleted_at)
            except APIStatusError as error:
                report.errors.append(str(error))
                continue
            except UnexpectedItemsRemain as error:
                left = error.left
                report.errors.append(str(error))
            report.estimate = max(report.estimate, left.estimate)
            if left.remaining:
                report.remaining[resource] = left.remaining
                for finalizer, count in left.finalizers.items():
                    report.finalizers[finalizer] = report.finalizers.get(finalizer, 0) + count
        status = copy.deepcopy(namespace.get("status") or {})
        if update_conditions(status, report.conditions(), self.now()):
            try:
                await self.namespaces_api.update_status({**namespace, "status": status})
            except APIStatusError as error:
                log.warning("couldn't update status condition for namespace %q: %s", name, error)
        return report

    async def _delete_resource(self, resource: Resource, namespace: str,
                               deleted_at: datetime) -> ResourceLeft:
        """deleteAllContentForGroupVersionResource: delete the collection (or each item),
        then list what is left and why."""
        api = self.client.resource(resource.plural, resource.group)
        estimate = await self._estimate_graceful_termination(resource, namespace, deleted_at)
        if not await self._delete_collection(api, namespace):
            await self._delete_each_item(api, namespace)
        if "list" not in resource.verbs:
            return ResourceLeft(estimate=estimate)
        items = (await api.list(namespace)).get("items") or []
        if not items:
            return ResourceLeft()
        finalizers: dict[str, int] = {}
        for item in items:
            for finalizer in item["metadata"].get("finalizers") or []:
                finalizers[finalizer] = finalizers.get(finalizer, 0) + 1
        if estimate:
            return ResourceLeft(estimate, len(items), finalizers)
        if finalizers:
            # objects held by finalizers are normal: give the finalizing controllers time
            return ResourceLeft(FINALIZER_ESTIMATE_SECONDS, len(items), finalizers)
        raise UnexpectedItemsRemain(ResourceLeft(0, len(items)), namespace, resource)

    @staticmethod
    async def _delete_collection(api: ResourceClient, namespace: str) -> bool:
        """deleteCollection: False when the resource cannot delete collections."""
        if "deletecollection" not in api.resource.verbs:
            return False
        try:
            await api.delete_collection(namespace, propagation_policy="Background")
        except (MethodNotAllowed, NotFound):
            return False
        return True

    @staticmethod
    async def _delete_each_item(api: ResourceClient, namespace: str) -> None:
        """deleteEachItem: list, then delete one by one (in the background)."""
        if "list" not in api.resource.verbs:
            return
        for item in (await api.list(namespace)).get("items") or []:
            try:
                await api.delete(item["metadata"]["name"], namespace,
                                 propagation_policy="Background")
            except (MethodNotAllowed, NotFound):
                continue

    async def _estimate_graceful_termination(self, resource: Resource, namespace: str,
                                             deleted_at: datetime) -> int:
        """estimateGracefulTermination: pods may take their longest grace period, counted
        from the namespace's deletion; other resources go at once."""
        if (resource.group, resource.plural) != ("", "pods"):
            return 0
        estimate = 0
        for pod in (await self.client.resource("pods").list(namespace)).get("items") or []:
            if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                continue
            grace = (pod.get("spec") or {}).get("terminationGracePeriodSeconds")
            if isinstance(grace, int):
                estimate = max(estimate, grace)
        if (self.now() - deleted_at).total_seconds() >= estimate:
            return 0
        return estimate


class UnexpectedItemsRemain(Exception):
    """Items still listed after deletion, with no finalizer or grace period to explain it."""

    def __init__(self, left: ResourceLeft, namespace: str, resource: Resource) -> None:
        self.left = left
        super().__init__(f"unexpected items still remain in namespace: {namespace} for gvr: "
                         f"{group_version_resource(resource)}")
