"""API Priority and Fairness against a real API server and etcd: the flowcontrol types
served with upstream's columns and validation, the bootstrap configuration kept in place,
and the dispatcher's 429s for a flooding client while others are still served."""

from __future__ import annotations

import asyncio
import subprocess
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import aiohttp
import orjson
import pytest

from minikube_py.apiserver.storage.etcd import LIST_SLICE
from minikube_py.cluster.apiserver import APIServerProcess
from tests.api_helpers import API, apf_unsettled, eventually
from tests.conftest import module_own_apiserver

etcd, apiserver, kubeconfig = module_own_apiserver("flowcontrol")

Kubectl = Callable[..., subprocess.CompletedProcess[str]]
FLOWCONTROL = "/apis/flowcontrol.apiserver.k8s.io/v1"
AUTO_UPDATE = "apf.kubernetes.io/autoupdate-spec"
SCHEMAS = ("exempt", "probes", "system-leader-election", "system-node-high", "system-nodes",
           "kube-controller-manager", "kube-scheduler", "kube-system-service-accounts",
           "service-accounts", "global-default", "catch-all")
LEVELS = ("exempt", "system", "node-high", "leader-election", "workload-high",
          "workload-low", "global-default", "catch-all")


@pytest.fixture
async def api(apiserver: APIServerProcess) -> AsyncIterator[API]:
    async with aiohttp.ClientSession() as session:
        yield API(session, apiserver.url)


async def bootstrapped(api: API) -> None:
    """Until every bootstrap FlowSchema is stored with its Dangling condition."""

    async def done() -> bool:
        _, listed = await api.get(f"{FLOWCONTROL}/flowschemas")
        return {item["metadata"]["name"] for item in listed["items"]
                if (item.get("status") or {}).get("conditions")} >= set(SCHEMAS)

    await eventually(done, what="the APF bootstrap configuration")


async def test_kubectl_lists_the_bootstrap_configuration_with_upstream_columns(
        api: API, kubectl: Kubectl) -> None:
    await bootstrapped(api)
    printed = kubectl("get", "flowschemas,prioritylevelconfigurations").stdout
    lines = printed.splitlines()
    assert lines[0].split() == ["NAME", "PRIORITYLEVEL", "MATCHINGPRECEDENCE",
                                "DISTINGUISHERMETHOD", "AGE", "MISSINGPL"], printed
    rows = {line.split()[0]: line.split() for line in lines[1:] if line.strip()}
    assert rows["flowschema.flowcontrol.apiserver.k8s.io/exempt"][1:4] == [
        "exempt", "1", "<none>"]
    assert rows["flowschema.flowcontrol.apiserver.k8s.io/service-accounts"][1:4] == [
        "workload-low", "9000", "ByUser"]
    assert rows["flowschema.flowcontrol.apiserver.k8s.io/catch-all"][-1] == "False"
    for name in SCHEMAS:
        assert f"flowschema.flowcontrol.apiserver.k8s.io/{name}" in rows, printed
    header = next(line for line in lines if line.startswith("NAME") and "TYPE" in line)
    assert header.split() == ["NAME", "TYPE", "NOMINALCONCURRENCYSHARES", "QUEUES",
                              "HANDSIZE", "QUEUELENGTHLIMIT", "AGE"], printed
    prefix = "prioritylevelconfiguration.flowcontrol.apiserver.k8s.io/"
    for name in LEVELS:
        assert prefix + name in rows, printed
    assert rows[prefix + "workload-low"][1:6] == ["Limited", "100", "128", "6", "50"]
    assert rows[prefix + "catch-all"][1:6] == ["Limited", "5", "<none>", "<none>", "<none>"]
    assert rows[prefix + "exempt"][1:6] == ["Exempt", "<none>", "<none>", "<none>", "<none>"]


async def test_a_deleted_mandatory_object_comes_back(api: API) -> None:
    await bootstrapped(api)
    _, before = await api.get(f"{FLOWCONTROL}/prioritylevelconfigurations/catch-all")
    status, _ = await api.delete(f"{FLOWCONTROL}/prioritylevelconfigurations/catch-all")
    assert status == 200

    async def recreated() -> dict[str, Any] | None:
        code, found = await api.get(f"{FLOWCONTROL}/prioritylevelconfigurations/catch-all")
        if code == 200 and found["metadata"]["uid"] != before["metadata"]["uid"]:
            return found
        return None

    again = await eventually(recreated, what="catch-all to be recreated")
    assert again["spec"] == before["spec"]


async def test_every_flow_schema_comes_back_after_a_delete_of_the_collection(
        api: API) -> None:
    """The ensurer's pass may run while a deletecollection deletes one schema after
    another: what the pass missed wakes the next pass, well before its 60 s period."""
    await bootstrapped(api)
    status, _ = await api.delete(f"{FLOWCONTROL}/flowschemas")
    assert status == 200

    async def settled() -> bool:
        _, schemas = await api.get(f"{FLOWCONTROL}/flowschemas")
        _, levels = await api.get(f"{FLOWCONTROL}/prioritylevelconfigurations")
        return not apf_unsettled(schemas["items"], levels["items"])

    await eventually(settled, timeout=30, what="every FlowSchema to be put back")


async def test_a_suggested_object_is_restored_unless_its_annotation_says_false(
        api: API) -> None:
    await bootstrapped(api)
    path = f"{FLOWCONTROL}/flowschemas/global-default"
    status, _ = await api.patch(path, {"spec": {"matchingPrecedence": 9800}})
    assert status == 200

    async def restored() -> bool:
        _, found = await api.get(path)
        return found["spec"]["matchingPrecedence"] == 9900

    await eventually(restored, what="global-default's spec to be restored")
    level = f"{FLOWCONTROL}/prioritylevelconfigurations/workload-low"
    status, kept = await api.patch(level, {
        "metadata": {"annotations": {AUTO_UPDATE: "false"}},
        "spec": {"limited": {"nominalConcurrencyShares": 7}}})
    assert status == 200, kept
    # A change the ensurer reacts to: it must still leave workload-low alone.
    await api.patch(path, {"spec": {"matchingPrecedence": 9800}})
    await eventually(restored, what="global-default's spec to be restored again")
    _, found = await api.get(level)
    assert found["spec"]["limited"]["nominalConcurrencyShares"] == 7
    await api.patch(level, {"metadata": {"annotations": {AUTO_UPDATE: "true"}}})

    async def level_restored() -> bool:
        _, found = await api.get(level)
        return found["spec"]["limited"]["nominalConcurrencyShares"] == 100

    await eventually(level_restored, what="workload-low's spec to be restored")


@pytest.mark.parametrize(("plural", "body", "field", "message"), [
    ("flowschemas", {"spec": {"priorityLevelConfiguration": {"name": "x"},
                              "matchingPrecedence": 1}},
     "spec.matchingPrecedence", "only the schema named 'exempt' may have matchingPrecedence 1"),
    ("flowschemas", {"spec": {"priorityLevelConfiguration": {"name": "x"}, "rules": [
        {"subjects": [{"kind": "User"}], "nonResourceRules": [
            {"verbs": ["get"], "nonResourceURLs": ["/a*"]}]}]}},
     "spec.rules[0].subjects[0].user", "user is required when subject kind is 'User'"),
    ("prioritylevelconfigurations", {"spec": {"type": "Limited", "limited": {
        "limitResponse": {"type": "Queue", "queuing": {"queues": 512, "handSize": 8}}}}},
     "spec.limited.limitResponse.queuing.handSize",
     "required entropy bits of deckSize 512 and handSize 8 should not be greater than 60"),
    ("prioritylevelconfigurations", {"spec": {"type": "Exempt"}},
     "spec.type", "type must be 'Exempt' if and only if name is 'exempt'"),
])
async def test_an_invalid_object_gets_upstreams_field_error(
        api: API, plural: str, body: dict[str, Any], field: str, message: str) -> None:
    kind = "FlowSchema" if plural == "flowschemas" else "PriorityLevelConfiguration"
    obj = {"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": kind,
           "metadata": {"name": "bad"}, **body}
    status, answer = await api.post(f"{FLOWCONTROL}/{plural}", obj)
    assert status == 422, answer
    causes = answer["details"]["causes"]
    assert any(cause["field"] == field and message in cause["message"] for cause in causes), (
        causes)


async def test_a_new_level_is_defaulted_as_upstream(api: API) -> None:
    obj = {"apiVersion": "flowcontrol.apiserver.k8s.io/v1",
           "kind": "PriorityLevelConfiguration", "metadata": {"name": "defaults"},
           "spec": {"type": "Limited", "limited": {"limitResponse": {
               "type": "Queue", "queuing": {}}}}}
    status, created = await api.post(f"{FLOWCONTROL}/prioritylevelconfigurations", obj)
    assert status == 201, created
    assert created["spec"]["limited"] == {
        "nominalConcurrencyShares": 30, "lendablePercent": 0, "limitResponse": {
            "type": "Queue", "queuing": {"queues": 64, "handSize": 8, "queueLengthLimit": 50}}}
    await api.delete(f"{FLOWCONTROL}/prioritylevelconfigurations/defaults")


FLOODER = "flooder"


def flood_config(namespace: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """A level of one seat that rejects past it, and a schema sending one ServiceAccount
    there."""
    level = {"apiVersion": "flowcontrol.apiserver.k8s.io/v1",
             "kind": "PriorityLevelConfiguration", "metadata": {"name": FLOODER},
             "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 1,
                                                     "limitResponse": {"type": "Reject"}}}}
    schema = {"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
              "metadata": {"name": FLOODER},
              "spec": {"priorityLevelConfiguration": {"name": FLOODER},
                       "matchingPrecedence": 100, "distinguisherMethod": {"type": "ByUser"},
                       "rules": [{"subjects": [{"kind": "ServiceAccount", "serviceAccount": {
                           "namespace": namespace, "name": FLOODER}}],
                           "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"],
                                              "resources": ["*"], "namespaces": ["*"]}]}]}}
    return level, schema


@pytest.mark.slow
async def test_a_flooding_service_account_gets_429s_while_another_user_is_served(
        etcd: Any, fast_tmp: Any) -> None:
    log = fast_tmp / "apiserver-flood.log"
    limits = ("--max-requests-inflight=2", "--max-mutating-requests-inflight=1")
    async with (APIServerProcess([etcd.client_url], log, extra_args=limits) as server,
                aiohttp.ClientSession() as session):
        api = API(session, server.url)
        namespace = f"flood-{uuid.uuid4().hex[:8]}"
        assert (await api.post("/api/v1/namespaces", {
            "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}))[0] == 201
        level, schema = flood_config(namespace)
        status, created_level = await api.post(f"{FLOWCONTROL}/prioritylevelconfigurations",
                                               level)
        assert status == 201, created_level
        status, created_schema = await api.post(f"{FLOWCONTROL}/flowschemas", schema)
        assert status == 201, created_schema
        for i in range(30):
            await api.post(f"/api/v1/namespaces/{namespace}/configmaps", {
                "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"cm-{i}"},
                "data": {"blob": "x" * 10_000}})
        flooder = {"Impersonate-User": f"system:serviceaccount:{namespace}:{FLOODER}"}
        path = f"{server.url}/api/v1/namespaces/{namespace}/configmaps"

        async def list_as_flooder() -> tuple[int, dict[str, str]]:
            async with session.get(path, headers=flooder) as answer:
                await answer.read()
                return answer.status, dict(answer.headers)

        async def classified() -> bool:
            _, headers = await list_as_flooder()
            return headers.get("X-Kubernetes-PF-FlowSchema-UID") == (
                created_schema["metadata"]["uid"])

        await eventually(classified, what="the flooder's FlowSchema to be in effect")
        rejected: list[dict[str, str]] = []
        others: list[int] = []
        flooding = True

        async def flood() -> None:
            nonlocal flooding
            try:
                for _ in range(20):
                    answers = await asyncio.gather(*(list_as_flooder() for _ in range(40)))
                    rejected.extend(headers for status, headers in answers if status == 429)
                    assert {status for status, _ in answers} <= {200, 429}, answers
                    if rejected and len(others) >= 20:
                        return
            finally:
                flooding = False

        async def another_user() -> None:
            while flooding:
                async with session.get(path) as answer:
                    await answer.read()
                    others.append(answer.status)

        async with asyncio.timeout(120):
            await asyncio.gather(flood(), another_user())
        assert rejected, "40 concurrent lists never passed the flooder's one seat"
        assert set(others) == {200}, others
        for headers in rejected:
            assert 1 <= int(headers["Retry-After"]) <= 32
            assert headers["X-Kubernetes-PF-FlowSchema-UID"] == created_schema["metadata"]["uid"]
            assert headers["X-Kubernetes-PF-PriorityLevel-UID"] == (
                created_level["metadata"]["uid"])
        async with session.get(f"{server.url}/metrics") as answer:
            metrics = await answer.text()
        assert (f'apiserver_flowcontrol_rejected_requests_total{{flow_schema="{FLOODER}",'
                f'priority_level="{FLOODER}",reason="concurrency-limit"}}') in metrics
        assert ('apiserver_flowcontrol_dispatched_requests_total{flow_schema="global-default",'
                'priority_level="global-default"}') in metrics
        assert (f'apiserver_flowcontrol_request_wait_duration_seconds_count{{execute="false",'
                f'flow_schema="{FLOODER}",priority_level="{FLOODER}"}} {len(rejected)}.0'
                in metrics)
        # 3 seats: 1 share of 246 is one seat (rounded up), 100 of 246 two
        assert f'apiserver_flowcontrol_nominal_limit_seats{{priority_level="{FLOODER}"}} 1.0' in (
            metrics)
        assert ('apiserver_flowcontrol_nominal_limit_seats{priority_level="workload-low"} 2.0'
                in metrics)
        async with session.get(
                f"{server.url}/debug/api_priority_and_fairness/dump_priority_levels") as answer:
            dump = await answer.text()
        header, *rows = dump.splitlines()
        assert header.split(",")[0] == "PriorityLevelName"
        flood_row = next(row for row in rows if row.startswith(f"{FLOODER},"))
        assert int(flood_row.split(",")[7]) == len(rejected)
        # A watch holds the level's one seat only to start: a list beside it is served.
        async with session.get(path, params={"watch": "1"}, headers=flooder) as watch:
            assert watch.status == 200
            assert watch.headers["X-Kubernetes-PF-FlowSchema-UID"] == (
                created_schema["metadata"]["uid"])
            status, _ = await list_as_flooder()
            assert status == 200


@pytest.mark.parametrize(("headers", "path", "schema", "level"), [
    ({}, "/api/v1/namespaces/default/configmaps", "global-default", "global-default"),
    ({}, "/healthz", "probes", "exempt"),
    ({"Impersonate-User": "admin", "Impersonate-Group": "system:masters"},
     "/api/v1/namespaces/default/configmaps", "exempt", "exempt"),
    ({"Impersonate-User": "system:serviceaccount:kube-system:job-controller"},
     "/apis/batch/v1/jobs", "kube-system-service-accounts", "workload-high"),
    ({"Impersonate-User": "system:node:n1", "Impersonate-Group": "system:nodes"},
     "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases",
     "system-node-high", "node-high"),
])
async def test_every_answer_names_the_flow_schema_and_level_it_matched(
        api: API, headers: dict[str, str], path: str, schema: str, level: str) -> None:
    await bootstrapped(api)
    _, schema_obj = await api.get(f"{FLOWCONTROL}/flowschemas/{schema}")
    _, level_obj = await api.get(f"{FLOWCONTROL}/prioritylevelconfigurations/{level}")
    async with api.session.get(api.base + path, headers=headers) as answer:
        assert answer.status == 200, await answer.text()
        assert answer.headers["X-Kubernetes-PF-FlowSchema-UID"] == schema_obj["metadata"]["uid"]
        assert answer.headers["X-Kubernetes-PF-PriorityLevel-UID"] == (
            level_obj["metadata"]["uid"])


@pytest.mark.slow
async def test_a_node_lease_renewal_is_served_while_large_lists_are_in_flight(
        api: API) -> None:
    """A list of more objects than one slice (storage/etcd.py's LIST_SLICE) gives the
    event loop back between slices: a Lease renewal sent after a burst of such lists is
    answered while some of them are still being served, and every list is whole."""
    namespace = f"lists-{uuid.uuid4().hex[:8]}"
    assert (await api.post("/api/v1/namespaces", {
        "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}))[0] == 201
    count = 3 * LIST_SLICE
    creating = asyncio.Semaphore(16)

    async def create(index: int) -> None:
        async with creating:
            status, body = await api.post(f"/api/v1/namespaces/{namespace}/configmaps", {
                "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"cm-{index}"},
                "data": {"blob": "x" * 2_000}})
            assert status == 201, body

    await asyncio.gather(*(create(i) for i in range(count)))
    node = {"Impersonate-User": "system:node:n1", "Impersonate-Group": "system:nodes"}
    leases = f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"
    status, lease = await api.post(leases, {
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "n1"},
        "spec": {"holderIdentity": "n1", "leaseDurationSeconds": 40}}, headers=node)
    assert status == 201, lease
    answered: list[str] = []

    async def list_configmaps() -> bytes:
        async with api.session.get(f"{api.base}/api/v1/namespaces/{namespace}/configmaps",
                                   headers={"Accept": "application/json"}) as answer:
            body = await answer.read()
            assert answer.status == 200, body[:200]
        answered.append("list")
        return body

    async def renew() -> None:
        lease["spec"]["renewTime"] = "2026-01-01T00:00:00.000000Z"
        status, renewed = await api.put(f"{leases}/n1", lease, headers=node)
        assert status == 200, renewed
        answered.append("lease")

    async def lists_executing() -> int:
        """global-default's executing requests (the lists' level), from the APF dump."""
        async with api.session.get(
                f"{api.base}/debug/api_priority_and_fairness/dump_priority_levels") as answer:
            rows = (await answer.text()).splitlines()
        row = next(row for row in rows if row.startswith("global-default,"))
        return int(row.split(",")[5])

    lists = [asyncio.create_task(list_configmaps()) for _ in range(24)]
    async with asyncio.timeout(120):
        while not await lists_executing():
            assert not answered, "every list was answered before the server was seen on one"
        await renew()
        bodies = await asyncio.gather(*lists)
    assert answered.index("lease") < len(answered) - 1, answered
    listed = [orjson.loads(body)["items"] for body in bodies]
    assert sorted(item["metadata"]["name"] for item in listed[0]) == sorted(
        f"cm-{i}" for i in range(count))
    assert all(items == listed[0] for items in listed)
    # a HEAD of the same list (read at the last one's revision): its headers, no body
    revision = orjson.loads(bodies[-1])["metadata"]["resourceVersion"]
    async with api.session.head(f"{api.base}/api/v1/namespaces/{namespace}/configmaps",
                                params={"resourceVersion": revision}) as head:
        assert head.status == 200
        assert head.content_length == len(bodies[-1])
        assert await head.read() == b""
