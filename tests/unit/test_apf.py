"""API Priority and Fairness, the pure parts: classification (upstream's rule.go and
match_test.go cases), the seat split among priority levels, the LIST work estimate, and
one level's fair queues."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import pytest

from minikube_py.api import Obj
from minikube_py.apiserver.auth.authentication import UserInfo
from minikube_py.apiserver.endpoints.filters import list_seats, mutating_seats
from minikube_py.apiserver.endpoints.requestinfo import parse_request_info
from minikube_py.apiserver.flowcontrol.apf_controller import (
    APFController,
    compute_concurrency_limits,
    max_seats,
)
from minikube_py.apiserver.flowcontrol.bootstrap import (
    MANDATORY_FLOW_SCHEMAS,
    MANDATORY_PRIORITY_LEVELS,
    SUGGESTED_FLOW_SCHEMAS,
    SUGGESTED_PRIORITY_LEVELS,
)
from minikube_py.apiserver.flowcontrol.queueset import QueueSet, Rejected
from minikube_py.apiserver.flowcontrol.rule import (
    RequestDigest,
    flow_distinguisher,
    hash_flow_id,
    matches_flow_schema,
)

AUTHENTICATED = "system:authenticated"
ALICE = UserInfo("alice", groups=("devs", AUTHENTICATED))
ANONYMOUS = UserInfo("system:anonymous", groups=("system:unauthenticated",))
NODE = UserInfo("system:node:n1", groups=("system:nodes", AUTHENTICATED))
ADMIN = UserInfo("admin", groups=("system:masters", AUTHENTICATED))
FLOODER = UserInfo("system:serviceaccount:team:flooder", groups=(
    "system:serviceaccounts", "system:serviceaccounts:team", AUTHENTICATED))
SCHEDULER = UserInfo("system:kube-scheduler", groups=(AUTHENTICATED,))
KUBE_SYSTEM_SA = UserInfo("system:serviceaccount:kube-system:generic-garbage-collector",
                          groups=("system:serviceaccounts", AUTHENTICATED))


def digest(user: UserInfo, method: str, path: str) -> RequestDigest:
    """The digest of `method path` as the filter builds it."""
    info = parse_request_info(method, path, None)
    return RequestDigest(user, info.verb or method.lower(), info.is_resource_request,
                         info.group, info.resource, info.subresource, info.namespace,
                         info.path)


class Cache:
    """A watch cache stand-in: objects and a change counter."""

    def __init__(self, objects: list[Obj]) -> None:
        self.objects = copy.deepcopy(objects)
        self.changes = 1

    def list(self, namespace_prefix: str = "") -> list[Obj]:
        return self.objects


def bootstrap_controller(server_concurrency_limit: int = 600) -> APFController:
    """A controller reading the bootstrap objects, each with a uid."""
    schemas = copy.deepcopy(MANDATORY_FLOW_SCHEMAS + SUGGESTED_FLOW_SCHEMAS)
    levels = copy.deepcopy(MANDATORY_PRIORITY_LEVELS + SUGGESTED_PRIORITY_LEVELS)
    for obj in schemas + levels:
        obj["metadata"]["uid"] = f"uid-{obj['kind']}-{obj['metadata']['name']}"
    return APFController(server_concurrency_limit, Cache(schemas), Cache(levels))


@pytest.mark.parametrize(("user", "method", "path", "schema", "level"), [
    (ADMIN, "DELETE", "/api/v1/namespaces/x/pods/p", "exempt", "exempt"),
    (ANONYMOUS, "GET", "/healthz", "probes", "exempt"),
    (ALICE, "GET", "/readyz/etcd", "probes", "exempt"),
    (NODE, "PUT", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1",
     "system-node-high", "node-high"),
    (NODE, "PATCH", "/api/v1/nodes/n1/status", "system-node-high", "node-high"),
    (NODE, "GET", "/api/v1/pods", "system-nodes", "system"),
    (SCHEDULER, "PUT", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/s",
     "system-leader-election", "leader-election"),
    (SCHEDULER, "POST", "/api/v1/namespaces/x/pods/p/binding", "kube-scheduler",
     "workload-high"),
    (KUBE_SYSTEM_SA, "GET", "/apis/apps/v1/replicasets", "kube-system-service-accounts",
     "workload-high"),
    (FLOODER, "GET", "/api/v1/configmaps", "service-accounts", "workload-low"),
    (ALICE, "GET", "/api/v1/namespaces/x/configmaps", "global-default", "global-default"),
    (ANONYMOUS, "GET", "/version", "global-default", "global-default"),
])
def test_the_bootstrap_configuration_classifies_as_upstream(
        user: UserInfo, method: str, path: str, schema: str, level: str) -> None:
    found = bootstrap_controller().classify(digest(user, method, path))
    assert (found.flow_schema_name, found.priority_level_name) == (schema, level)
    assert found.flow_schema_uid == f"uid-FlowSchema-{schema}"
    assert found.priority_level_uid == f"uid-PriorityLevelConfiguration-{level}"


def schema(rule: Obj, precedence: int = 500, name: str = "s") -> Obj:
    return {"metadata": {"name": name}, "spec": {
        "priorityLevelConfiguration": {"name": "l"}, "matchingPrecedence": precedence,
        "rules": [rule]}}


EVERYONE = [{"kind": "Group", "group": {"name": "*"}}]


@pytest.mark.parametrize(("rule", "user", "method", "path", "matched"), [
    # subjects
    ({"subjects": [{"kind": "User", "user": {"name": "alice"}}],
      "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}]},
     ALICE, "GET", "/version", True),
    ({"subjects": [{"kind": "User", "user": {"name": "bob"}}],
      "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}]},
     ALICE, "GET", "/version", False),
    ({"subjects": [{"kind": "Group", "group": {"name": "devs"}}],
      "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}]},
     ALICE, "GET", "/version", True),
    ({"subjects": [{"kind": "ServiceAccount",
                    "serviceAccount": {"namespace": "team", "name": "flooder"}}],
      "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}]},
     FLOODER, "GET", "/version", True),
    ({"subjects": [{"kind": "ServiceAccount",
                    "serviceAccount": {"namespace": "team", "name": "*"}}],
      "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}]},
     FLOODER, "GET", "/version", True),
    ({"subjects": [{"kind": "ServiceAccount",
                    "serviceAccount": {"namespace": "tea", "name": "*"}}],
      "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}]},
     FLOODER, "GET", "/version", False),
    # resource rules: verb, group, resource/subresource, namespace, cluster scope
    ({"subjects": EVERYONE, "resourceRules": [{
        "verbs": ["list"], "apiGroups": [""], "resources": ["pods"], "namespaces": ["x"]}]},
     ALICE, "GET", "/api/v1/namespaces/x/pods", True),
    ({"subjects": EVERYONE, "resourceRules": [{
        "verbs": ["get"], "apiGroups": [""], "resources": ["pods"], "namespaces": ["x"]}]},
     ALICE, "GET", "/api/v1/namespaces/x/pods", False),
    ({"subjects": EVERYONE, "resourceRules": [{
        "verbs": ["*"], "apiGroups": ["apps"], "resources": ["*"], "namespaces": ["*"]}]},
     ALICE, "GET", "/api/v1/namespaces/x/pods", False),
    ({"subjects": EVERYONE, "resourceRules": [{
        "verbs": ["*"], "apiGroups": ["*"], "resources": ["pods"], "namespaces": ["y"]}]},
     ALICE, "GET", "/api/v1/namespaces/x/pods", False),
    ({"subjects": EVERYONE, "resourceRules": [{
        "verbs": ["*"], "apiGroups": ["*"], "resources": ["pods"], "namespaces": ["*"]}]},
     ALICE, "GET", "/api/v1/namespaces/x/pods/p/log", False),
    ({"subjects": EVERYONE, "resourceRules": [{
        "verbs": ["*"], "apiGroups": ["*"], "resources": ["pods/log"], "namespaces": ["*"]}]},
     ALICE, "GET", "/api/v1/namespaces/x/pods/p/log", True),
    ({"subjects": EVERYONE, "resourceRules": [{
        "verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "namespaces": ["*"]}]},
     ALICE, "GET", "/api/v1/nodes", False),
    ({"subjects": EVERYONE, "resourceRules": [{
        "verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "clusterScope": True}]},
     ALICE, "GET", "/api/v1/nodes", True),
    ({"subjects": EVERYONE, "resourceRules": [{
        "verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "clusterScope": True}]},
     ALICE, "GET", "/api/v1/namespaces/x/pods", False),
    # a resource request never matches non-resource rules, nor the other way round
    ({"subjects": EVERYONE, "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}]},
     ALICE, "GET", "/api/v1/nodes", False),
    ({"subjects": EVERYONE, "resourceRules": [{
        "verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "clusterScope": True}]},
     ALICE, "GET", "/healthz", False),
    # non-resource URLs: exact, and `/*` prefixes
    ({"subjects": EVERYONE, "nonResourceRules": [
        {"verbs": ["get"], "nonResourceURLs": ["/healthz"]}]}, ALICE, "GET", "/healthz", True),
    ({"subjects": EVERYONE, "nonResourceRules": [
        {"verbs": ["get"], "nonResourceURLs": ["/healthz"]}]}, ALICE, "GET", "/healthz/etcd",
     True),
    ({"subjects": EVERYONE, "nonResourceRules": [
        {"verbs": ["get"], "nonResourceURLs": ["/healthz"]}]}, ALICE, "GET", "/healthzx",
     False),
    ({"subjects": EVERYONE, "nonResourceRules": [
        {"verbs": ["get"], "nonResourceURLs": ["/metrics/*"]}]}, ALICE, "GET",
     "/metrics/slis", True),
    ({"subjects": EVERYONE, "nonResourceRules": [
        {"verbs": ["post"], "nonResourceURLs": ["*"]}]}, ALICE, "GET", "/version", False),
])
def test_a_rule_matches_subject_verb_and_target(rule: Obj, user: UserInfo, method: str,
                                                path: str, matched: bool) -> None:
    assert matches_flow_schema(digest(user, method, path), schema(rule)) is matched


def test_the_lowest_precedence_then_the_name_wins() -> None:
    everything = {"subjects": EVERYONE, "nonResourceRules": [
        {"verbs": ["*"], "nonResourceURLs": ["*"]}]}
    schemas = [schema(everything, 600, "b"), schema(everything, 500, "z"),
               schema(everything, 500, "a")]
    for fs in schemas:
        fs["spec"]["priorityLevelConfiguration"]["name"] = "catch-all"
    controller = APFController(600, Cache(schemas), Cache([]))
    assert controller.classify(digest(ALICE, "GET", "/version")).flow_schema_name == "a"


def test_a_schema_naming_a_missing_level_is_passed_over() -> None:
    everything = {"subjects": EVERYONE, "nonResourceRules": [
        {"verbs": ["*"], "nonResourceURLs": ["*"]}]}
    controller = APFController(600, Cache([schema(everything, 500, "dangling")]), Cache([]))
    found = controller.classify(digest(ALICE, "GET", "/version"))
    assert (found.flow_schema_name, found.priority_level_name) == ("catch-all", "catch-all")


def test_flows_are_distinguished_by_user_or_by_namespace() -> None:
    by_user = schema({"subjects": EVERYONE})
    by_user["spec"]["distinguisherMethod"] = {"type": "ByUser"}
    by_namespace = copy.deepcopy(by_user)
    by_namespace["spec"]["distinguisherMethod"] = {"type": "ByNamespace"}
    request = digest(ALICE, "GET", "/api/v1/namespaces/x/pods")
    assert flow_distinguisher(request, by_user) == "alice"
    assert flow_distinguisher(request, by_namespace) == "x"
    assert flow_distinguisher(request, schema({"subjects": EVERYONE})) == ""
    assert hash_flow_id("s", "alice") != hash_flow_id("s", "bob")
    assert hash_flow_id("s", "alice") == hash_flow_id("s", "alice")
    assert hash_flow_id("sa", "lice") != hash_flow_id("s", "alice")


def test_the_bootstrap_levels_split_600_seats_by_their_shares() -> None:
    limits = compute_concurrency_limits(
        MANDATORY_PRIORITY_LEVELS + SUGGESTED_PRIORITY_LEVELS, 600)
    nominal = {name: limit.nominal for name, limit in limits.items()}
    assert nominal == {"exempt": 0, "catch-all": 13, "system": 74, "node-high": 98,
                       "leader-election": 25, "workload-high": 98, "workload-low": 245,
                       "global-default": 49}
    # lendable: round half away from zero, as Go's math.Round (245 * 90% = 220.5)
    assert limits["workload-low"].lendable == 221
    assert limits["node-high"].lendable == 25  # 98 * 25% = 24.5
    assert limits["workload-low"].minimum == 24
    assert limits["workload-low"].maximum == 245 + 600  # no borrowingLimitPercent
    assert limits["workload-low"].initial == 245 - 221 // 2


def test_a_borrowing_limit_bounds_the_maximum() -> None:
    level: dict[str, Any] = {"metadata": {"name": "l"}, "spec": {"type": "Limited", "limited": {
        "nominalConcurrencyShares": 10, "lendablePercent": 50, "borrowingLimitPercent": 20}}}
    limits = compute_concurrency_limits([level], 40)["l"]
    assert (limits.nominal, limits.minimum, limits.maximum) == (40, 20, 48)


def test_max_seats_is_15_percent_of_nominal_or_nominal_over_hand_size() -> None:
    assert max_seats(245, 6) == 10  # capped at 10
    assert max_seats(40, 6) == 6
    assert max_seats(13, 6) == 2
    assert max_seats(4, 6) == 1


@pytest.mark.parametrize(("query", "stored", "seats"), [
    ({}, 50, 1),                                   # 2 * 50 objects
    ({}, 350, 7),                                  # 2 * 350 objects
    ({"resourceVersion": "0"}, 350, 4),            # from the cache: every object
    ({"limit": "100"}, 350, 2),                    # twice the limit
    ({"labelSelector": "a=b", "limit": "100"}, 350, 5),
    ({}, 100_000, 10),                             # the level's max seats
])
def test_a_list_takes_a_seat_per_hundred_objects(query: dict[str, str], stored: int,
                                                 seats: int) -> None:
    assert list_seats(query, stored, 10) == seats


@pytest.mark.parametrize(("watches", "final_seats", "latency"), [
    (0, 0, 0.0), (9, 0, 0.0),          # fewer than 10 watches: nothing after the write
    (10, 1, 0.005), (25, 3, 0.005),    # a seat per 10 watches, 5 ms each
    (250, 10, 0.0125),                 # at most max seats, held longer for the same work
])
def test_a_write_keeps_a_seat_per_ten_watches_after_it_is_done(
        watches: int, final_seats: int, latency: float) -> None:
    seats, held = mutating_seats(watches, 10)
    assert seats == final_seats
    assert held == pytest.approx(latency)


async def test_final_seats_are_held_for_the_additional_latency() -> None:
    level = QueueSet("l")
    level.configure(3)
    queue = await level.acquire(1, 3, 1.0)
    level.release(queue, 3, final_seats=2, additional_latency=0.05)
    assert (level.requests_executing, level.seats_in_use) == (0, 2)
    with pytest.raises(Rejected):  # 2 of 3 seats still held: a 2-seat request must wait
        await level.acquire(2, 2, 1.0)
    async with asyncio.timeout(10):
        while level.seats_in_use:
            await asyncio.sleep(0.01)
    await level.acquire(2, 2, 1.0)


async def test_a_level_without_queues_rejects_past_its_seats() -> None:
    level = QueueSet("l")
    level.configure(2)
    first = await level.acquire(1, 1, 1.0)
    await level.acquire(2, 1, 1.0)
    with pytest.raises(Rejected) as rejected:
        await level.acquire(3, 1, 1.0)
    assert rejected.value.reason == "concurrency-limit"
    level.release(first, 1)
    await level.acquire(3, 1, 1.0)


async def test_a_full_queue_rejects_and_a_waiting_request_times_out() -> None:
    level = QueueSet("l")
    level.configure(1, queues=1, hand_size=1, queue_length_limit=1)
    await level.acquire(1, 1, 1.0)
    waiting = asyncio.create_task(level.acquire(1, 1, 0.2))
    await asyncio.sleep(0)
    with pytest.raises(Rejected) as full:
        await level.acquire(1, 1, 1.0)
    assert full.value.reason == "queue-full"
    with pytest.raises(Rejected) as timed_out:
        await waiting
    assert timed_out.value.reason == "time-out"
    assert level.waiting_requests == 0


async def test_an_exempt_level_never_waits() -> None:
    level = QueueSet("exempt", exempt=True)
    level.configure(0)
    for flow in range(50):
        await level.acquire(flow, 1, 0.1)
    assert level.requests_executing == 50


async def test_a_heavy_flow_does_not_starve_a_light_one() -> None:
    """Two flows in different queues: once seats free up, they are served in turn,
    however many the heavy one queued first."""
    level = QueueSet("l")
    level.configure(1, queues=2, hand_size=1, queue_length_limit=100)
    heavy, light = next((a, b) for a in range(100) for b in range(100)
                        if level.dealer is not None
                        and level.dealer.deal_into_hand(a) != level.dealer.deal_into_hand(b))
    running = await level.acquire(heavy, 1, 5.0)
    order: list[str] = []

    async def request(flow: int, name: str) -> None:
        queue = await level.acquire(flow, 1, 5.0)
        order.append(name)
        await asyncio.sleep(0)
        level.release(queue, 1)

    tasks = [asyncio.create_task(request(heavy, f"heavy-{i}")) for i in range(5)]
    await asyncio.sleep(0)
    tasks.append(asyncio.create_task(request(light, "light")))
    await asyncio.sleep(0)
    level.release(running, 1)
    await asyncio.gather(*tasks)
    assert order.index("light") <= 1, order


async def test_a_cancelled_waiter_leaves_its_queue() -> None:
    level = QueueSet("l")
    level.configure(1, queues=4, hand_size=2, queue_length_limit=10)
    running = await level.acquire(7, 1, 1.0)
    waiter = asyncio.create_task(level.acquire(7, 1, 5.0))
    await asyncio.sleep(0)
    assert level.waiting_requests == 1
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert level.waiting_requests == 0
    level.release(running, 1)
    assert level.seats_in_use == 0


def test_the_debug_dumps_are_upstreams_tab_written_rows() -> None:
    controller = bootstrap_controller()
    levels = controller.dump_priority_levels().splitlines()
    assert levels[0] == (
        "PriorityLevelName, ActiveQueues, IsIdle, IsQuiescing, WaitingRequests, "
        "ExecutingRequests, DispatchedRequests, RejectedRequests, TimedoutRequests, "
        "CancelledRequests")
    assert levels[1].split(",")[0] == "catch-all"
    assert [cell.strip() for cell in levels[1].split(",")[1:]] == [
        "0", "true", "false", "0", "0", "0", "0", "0", "0"]
    queues = controller.dump_queues().splitlines()
    assert queues[0].startswith("PriorityLevelName, Index,  PendingRequests, ")  # min 8
    per_level: dict[str, int] = {}
    for row in queues[1:]:
        per_level[row.split(",")[0]] = per_level.get(row.split(",")[0], 0) + 1
    assert per_level == {"global-default": 128, "leader-election": 16, "node-high": 64,
                         "system": 64, "workload-high": 128, "workload-low": 128}


async def test_a_level_that_stops_queuing_rejects_its_waiting_requests() -> None:
    level = QueueSet("l")
    level.configure(1, queues=4, hand_size=2, queue_length_limit=10)
    running = await level.acquire(1, 1, 1.0)
    waiter = asyncio.create_task(level.acquire(2, 1, 5.0))
    await asyncio.sleep(0)
    level.configure(1)
    with pytest.raises(Rejected) as rejected:
        await waiter
    assert rejected.value.reason == "concurrency-limit"
    assert (level.seats_waiting, level.waiting_requests) == (0, 0)
    level.release(running, 1)
    assert level.seats_in_use == 0


async def test_a_request_cancelled_once_dispatched_gives_its_seat_back() -> None:
    level = QueueSet("l")
    level.configure(1, queues=1, hand_size=1, queue_length_limit=10)
    running = await level.acquire(1, 1, 1.0)
    waiter = asyncio.create_task(level.acquire(1, 1, 5.0))
    await asyncio.sleep(0)
    level.release(running, 1)  # dispatches the waiter: it holds the seat now
    assert level.seats_in_use == 1
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert level.seats_in_use == 0
