"""pods/eviction: delete a pod only when its PodDisruptionBudget can spare it (`kubectl drain`).

Upstream pkg/registry/core/pod/storage/eviction.go (EvictionREST.Create):

    Eviction body -> its name is the URL's -> deleteOptions, dryRun shared with the query
    -> validating admission of the Eviction, with the pod as the old object
    -> the pod: Succeeded, Failed, Pending or being deleted -> delete it, no budget asked
    -> the PDBs of its namespace that select it:
         none -> delete; more than one -> 500 Status Failure
         the pod is not Ready and the budget can spare it (AlwaysAllow, or as many
         healthy pods as it needs) -> delete the pod as read, budget untouched
         else checkAndDecrement: 429 when it allows no disruption (or has not seen its
         latest spec); disruptionsAllowed - 1 and the pod in disruptedPods, one
         compare-and-swap write of the PDB's status (re-read and retried on conflict)
    -> the pod gets the DisruptionTarget condition, then is deleted -> 201 Status Success
"""

from __future__ import annotations

import asyncio
import copy
from dataclasses import replace

from aiohttp import web

from minikube_py.api import Obj, errors, meta
from minikube_py.api.podutil import is_pod_ready
from minikube_py.api.selectors import (
    FieldSelector,
    LabelSelector,
    SelectorError,
    label_selector_from_dict,
)
from minikube_py.apiserver.auth.admission import CREATE
from minikube_py.apiserver.endpoints.request_params import (
    check_name_and_namespace,
    delete_options_from,
    read_object,
)
from minikube_py.apiserver.endpoints.requestinfo import RequestInfo
from minikube_py.apiserver.endpoints.responses import json_response, success_status
from minikube_py.apiserver.registry.store import DeleteOptions, ListOptions, Store

# EvictionsRetry: how often a conflicting write is tried again, and how long between tries.
EVICTION_RETRY_STEPS = 20
EVICTION_RETRY_DELAY = 0.5
# MaxDisruptedPodSize: evictions the disruption controller has not yet confirmed.
MAX_DISRUPTED_POD_SIZE = 2000
DISRUPTION_BUDGET_CAUSE = "DisruptionBudget"
VIOLATES_BUDGET = "Cannot evict pod as it would violate the pod's disruption budget."
MORE_THAN_ONE_BUDGET = (
    "This pod has more than one PodDisruptionBudget, which the eviction subresource does "
    "not support."
)


async def evict(pods: Store, budgets: Store, request: web.Request, info: RequestInfo,
                namespace: str) -> web.StreamResponse:
    """pods/eviction: the pod is deleted if no budget forbids it; 201 Status Success."""
    eviction = await read_object(request, None, "Eviction", "policy/v1",
                                 also_served=("policy/v1beta1",))
    check_name_and_namespace(eviction, name=None, namespace=namespace, namespaced=True)
    if eviction["metadata"].get("name") != info.name:
        raise errors.bad_request("name in URL does not match name in Eviction object")
    options = eviction_delete_options(eviction, request)
    name = info.name
    # createValidation: validating admission of the Eviction (NodeRestriction lets a node
    # evict only its own pods), against the pod it names.
    await pods.admission.validate(pods.admission.attributes(
        pods.resource, CREATE, namespace, name, eviction, await pods.get(namespace, name),
        subresource="eviction", dry_run=options.dry_run))

    pod = await delete_if_budget_can_be_ignored(pods, namespace, name, options)
    if pod is None:
        return json_response(success_status(201), 201)

    matching = await budgets_selecting(budgets, pod)
    if len(matching) > 1:
        failure = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                   "message": MORE_THAN_ONE_BUDGET, "code": 500}
        return json_response(failure, 500)
    unready_spared = False
    if matching:
        budget = matching[0]
        if not is_pod_ready(pod) and unready_pod_can_go(budget):
            unready_spared = True
        else:
            await check_and_decrement(budgets, budget, name, options.dry_run)

    # An unready pod spared by the budget goes only as read: had it become ready since,
    # it would count as healthy (upstream replaces any resourceVersion precondition here).
    delete_with = with_resource_version(options, pod) if unready_spared else options
    try:
        await add_condition_and_delete_pod(pods, namespace, name, delete_with)
    except errors.APIError as err:
        if err.code == 409 and unready_spared and not options.preconditions.get(
                "resourceVersion"):
            raise too_many_requests_error(
                f"The disruption budget {matching[0]['metadata']['name']} is still being "
                "processed by the server.", retry_after=10) from None
        raise
    return json_response(success_status(201), 201)


def eviction_delete_options(eviction: Obj, request: web.Request) -> DeleteOptions:
    """propagateDryRun: the Eviction's deleteOptions; a dryRun in them or in the query is
    the eviction's."""
    given = eviction.get("deleteOptions")
    if given is not None and not isinstance(given, dict):
        raise errors.bad_request("deleteOptions must be a DeleteOptions object")
    return delete_options_from(given, request)


async def delete_if_budget_can_be_ignored(pods: Store, namespace: str, name: str,
                                          options: DeleteOptions) -> Obj | None:
    """Delete the pod if no budget need be asked (canIgnorePDB); None once it is deleted,
    else the pod as read. A conflict (the pod changed since) reads it again."""
    for attempt in range(EVICTION_RETRY_STEPS):
        pod = await pods.get(namespace, name)
        if not can_ignore_budget(pod):
            return pod
        wanted = options
        if should_enforce_resource_version(pod) and not options.preconditions.get(
                "resourceVersion"):
            wanted = with_resource_version(options, pod)
        try:
            await add_condition_and_delete_pod(pods, namespace, name, wanted)
        except errors.APIError as err:
            if err.code != 409 or options.preconditions.get("resourceVersion"):
                raise
            if attempt < EVICTION_RETRY_STEPS - 1:
                await asyncio.sleep(EVICTION_RETRY_DELAY)
            continue
        return None
    raise errors.conflict("pods", "", name, errors.OBJECT_MODIFIED)


def can_ignore_budget(pod: Obj) -> bool:
    """canIgnorePDB: a pod that is terminal, Pending or already being deleted disrupts
    nothing more by going."""
    phase = (pod.get("status") or {}).get("phase")
    return (phase in ("Succeeded", "Failed", "Pending")
            or bool(pod["metadata"].get("deletionTimestamp")))


def should_enforce_resource_version(pod: Obj) -> bool:
    """shouldEnforceResourceVersion: delete only the pod as read, unless it is terminal or
    being deleted (then nothing it could become matters)."""
    phase = (pod.get("status") or {}).get("phase")
    return phase not in ("Succeeded", "Failed") and not pod["metadata"].get(
        "deletionTimestamp")


def with_resource_version(options: DeleteOptions, pod: Obj) -> DeleteOptions:
    """The options with a resourceVersion precondition on the pod as read."""
    preconditions = dict(options.preconditions)
    preconditions["resourceVersion"] = pod["metadata"]["resourceVersion"]
    return replace(options, preconditions=preconditions)


async def budgets_selecting(budgets: Store, pod: Obj) -> list[Obj]:
    """getPodDisruptionBudgets: the PDBs of the pod's namespace whose selector matches it
    (policy/v1: an empty selector matches every pod, a missing or unparsable one none)."""
    namespace = pod["metadata"].get("namespace", "")
    listed = await budgets.list(namespace, ListOptions(LabelSelector.everything(),
                                                       FieldSelector()))
    labels = pod["metadata"].get("labels") or {}
    matching = []
    for budget in listed.items:
        try:
            selector = label_selector_from_dict((budget.get("spec") or {}).get("selector"))
        except SelectorError:
            continue
        if selector.matches(labels):
            matching.append(budget)
    return matching


def unready_pod_can_go(budget: Obj) -> bool:
    """An unready pod is not counted healthy: it may go with the policy AlwaysAllow, or
    (IfHealthyBudget, the default) while the budget has all the healthy pods it needs."""
    if (budget.get("spec") or {}).get("unhealthyPodEvictionPolicy") == "AlwaysAllow":
        return True
    status = budget.get("status") or {}
    desired = status.get("desiredHealthy", 0)
    return status.get("currentHealthy", 0) >= desired and desired > 0


async def check_and_decrement(budgets: Store, budget: Obj, pod_name: str,
                              dry_run: bool) -> None:
    """checkAndDecrement on the latest PDB: refuse (429, 403) or take one disruption and
    record the pod in disruptedPods, in one compare-and-swap write of its status."""
    name = budget["metadata"]["name"]
    namespace = budget["metadata"].get("namespace", "")

    async def decrement(current: Obj) -> Obj:
        new = copy.deepcopy(current)
        status = new.setdefault("status", {})
        refuse_disruption(new)
        status["disruptionsAllowed"] = status.get("disruptionsAllowed", 0) - 1
        if status["disruptionsAllowed"] == 0:
            set_disruption_allowed_false(status)
        disrupted = status.get("disruptedPods") or {}
        disrupted[pod_name] = meta.now_rfc3339()
        status["disruptedPods"] = disrupted
        return await budgets.prepare_update(new, current, "status", dry_run=dry_run)

    if dry_run:
        await decrement(await budgets.get(namespace, name))
        return
    try:
        await budgets.guaranteed_update(namespace, name, decrement)
    except errors.APIError as err:
        if err.code != 409:
            raise
        # every retry lost the race to another writer (upstream's wait.ErrWaitTimeout)
        raise errors.APIError(
            504, "Timeout",
            f'Timeout: couldn\'t update PodDisruptionBudget "{name}" due to conflicts',
            {"retryAfterSeconds": 10}, retry_after=10) from None


def refuse_disruption(budget: Obj) -> None:
    """The budget's reasons to refuse any eviction now, in upstream's order."""
    name = budget["metadata"]["name"]
    status = budget.get("status") or {}
    if status.get("observedGeneration", 0) < budget["metadata"].get("generation", 0):
        raise too_many_requests_error(
            f"The disruption budget {name} is still being processed by the server.",
            retry_after=10)
    allowed = status.get("disruptionsAllowed", 0)
    if allowed < 0:
        raise errors.forbidden("poddisruptionbudget", "policy", name,
                               "pdb disruptions allowed is negative")
    if len(status.get("disruptedPods") or {}) > MAX_DISRUPTED_POD_SIZE:
        raise errors.forbidden(
            "poddisruptionbudget", "policy", name,
            "DisruptedPods map too big - too many evictions not confirmed by PDB controller")
    if allowed == 0:
        raise too_many_requests_error(
            f"The disruption budget {name} needs {status.get('desiredHealthy', 0)} healthy "
            f"pods and has {status.get('currentHealthy', 0)} currently", retry_after=0)


def set_disruption_allowed_false(status: Obj) -> None:
    """updateDisruptionAllowedCondition: DisruptionAllowed=False, InsufficientPods."""
    conditions = [c for c in status.get("conditions") or []
                  if c.get("type") != "DisruptionAllowed"]
    previous = next((c for c in status.get("conditions") or []
                     if c.get("type") == "DisruptionAllowed"), None)
    changed = previous is None or previous.get("status") != "False"
    conditions.append({
        "type": "DisruptionAllowed",
        "status": "False",
        "observedGeneration": status.get("observedGeneration", 0),
        "lastTransitionTime": (meta.now_rfc3339() if changed
                               else previous.get("lastTransitionTime")),
        "reason": "InsufficientPods",
        "message": "",
    })
    status["conditions"] = conditions


def too_many_requests_error(cause: str, retry_after: int) -> errors.APIError:
    """NewTooManyRequests with the DisruptionBudget cause; no Retry-After when 0."""
    details: Obj = {"causes": [{"reason": DISRUPTION_BUDGET_CAUSE, "message": cause}]}
    if retry_after:
        details["retryAfterSeconds"] = retry_after
    return errors.APIError(429, "TooManyRequests", VIOLATES_BUDGET, details,
                           retry_after=retry_after or None)


async def add_condition_and_delete_pod(pods: Store, namespace: str, name: str,
                                       options: DeleteOptions) -> None:
    """addConditionAndDeletePod: the pod gets DisruptionTarget=True (not on a dry run),
    then is deleted with the eviction's options."""
    if not options.dry_run:

        async def add_condition(current: Obj) -> Obj:
            check_preconditions(current, options.preconditions)
            new = copy.deepcopy(current)
            status = new.setdefault("status", {})
            conditions = status.setdefault("conditions", [])
            condition = {"type": "DisruptionTarget", "status": "True",
                         "reason": "EvictionByEvictionAPI", "message": "Eviction API: evicting"}
            old = next((c for c in conditions if c.get("type") == "DisruptionTarget"), None)
            if old is None:
                conditions.append(condition | {"lastProbeTime": None,
                                               "lastTransitionTime": meta.now_rfc3339()})
            else:
                if old.get("status") != "True":
                    old["lastTransitionTime"] = meta.now_rfc3339()
                old.update(condition)
            return await pods.prepare_update(new, current, "status")

        updated = await pods.guaranteed_update(namespace, name, add_condition)
        if options.preconditions.get("resourceVersion"):
            # we wrote the pod ourselves: the precondition now holds on what we wrote
            options = with_resource_version(options, updated)
    await pods.delete(namespace, name, options)


def check_preconditions(pod: Obj, preconditions: Obj) -> None:
    """The delete's uid and resourceVersion preconditions, checked on the latest pod before
    the condition is written: 409 Conflict, in upstream's words for this step."""
    metadata = pod["metadata"]
    name = metadata["name"]
    uid = preconditions.get("uid")
    if uid and uid != metadata.get("uid"):
        raise errors.conflict(
            "Pod", "", name, f"the UID in the precondition ({uid}) does not match the UID in "
            f"record ({metadata.get('uid')}). The object might have been deleted and then "
            "recreated")
    version = preconditions.get("resourceVersion")
    if version and version != metadata.get("resourceVersion"):
        raise errors.conflict(
            "Pod", "", name, f"the ResourceVersion in the precondition ({version}) does not "
            f"match the ResourceVersion in record ({metadata.get('resourceVersion')}). The "
            "object might have been modified")
