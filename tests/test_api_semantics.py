"""The API server's storage semantics, as upstream: optimistic concurrency, watch resumption,
consistent pagination, compaction (410), graceful deletion, finalizers, subresources."""

from __future__ import annotations

import asyncio
import socket
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest

from minikube_py.cluster.apiserver import APIServerProcess
from minikube_py.cluster.etcd import EtcdProcess
from tests.api_helpers import API, configmap, pod


@pytest.fixture
async def api(apiserver: APIServerProcess) -> AsyncIterator[API]:
    async with aiohttp.ClientSession() as session:
        yield API(session, apiserver.url)


async def create_many(api: API, ns: str, count: int, prefix: str = "cm",
                      concurrency: int = 32) -> list[dict[str, Any]]:
    semaphore = asyncio.Semaphore(concurrency)

    async def one(i: int) -> dict[str, Any]:
        async with semaphore:
            code, body = await api.post(f"/api/v1/namespaces/{ns}/configmaps",
                                        configmap(f"{prefix}-{i:05d}", {"i": str(i)}))
            assert code == 201, body
            return body

    return list(await asyncio.gather(*(one(i) for i in range(count))))


async def read_events(response: aiohttp.ClientResponse, count: int, timeout: float = 20
                      ) -> list[dict[str, Any]]:
    events = []
    async with asyncio.timeout(timeout):
        while len(events) < count:
            line = await response.content.readline()
            if not line:
                break
            events.append(orjson.loads(line))
    return events


# -- create / update ------------------------------------------------------------------------

async def test_create_fills_server_metadata(api: API, namespace: str) -> None:
    code, body = await api.post(f"/api/v1/namespaces/{namespace}/configmaps",
                                {"metadata": {"generateName": "web-"}, "data": {"a": "1"}})
    assert code == 201
    meta = body["metadata"]
    assert meta["name"].startswith("web-") and len(meta["name"]) == len("web-") + 5
    assert meta["uid"] and meta["creationTimestamp"].endswith("Z")
    assert int(meta["resourceVersion"]) > 0
    assert body["kind"] == "ConfigMap" and body["apiVersion"] == "v1"


async def test_update_with_stale_resource_version_is_409_conflict(api: API, namespace: str
                                                                  ) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    _, created = await api.post(path, configmap("cfg", {"a": "1"}))
    stale = created["metadata"]["resourceVersion"]
    created["data"] = {"a": "2"}
    code, updated = await api.put(f"{path}/cfg", created)
    assert code == 200 and int(updated["metadata"]["resourceVersion"]) > int(stale)
    created["data"] = {"a": "3"}
    created["metadata"]["resourceVersion"] = stale
    code, status = await api.put(f"{path}/cfg", created)
    assert code == 409 and status["reason"] == "Conflict"
    assert "the object has been modified" in status["message"]
    _, current = await api.get(f"{path}/cfg")
    assert current["data"] == {"a": "2"}


async def test_generation_bumps_only_on_spec_changes(api: API, namespace: str) -> None:
    path = f"/apis/apps/v1/namespaces/{namespace}/deployments"
    deployment = {
        "metadata": {"name": "web"},
        "spec": {"selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "web", "image": "nginx:1.25"}]}}},
    }
    code, created = await api.post(path, deployment)
    assert code == 201 and created["metadata"]["generation"] == 1
    _, labelled = await api.patch(f"{path}/web", {"metadata": {"labels": {"x": "y"}}})
    assert labelled["metadata"]["generation"] == 1
    _, changed = await api.patch(f"{path}/web", {"spec": {"replicas": 3}})
    assert changed["metadata"]["generation"] == 2


async def test_status_writes_ignore_spec_and_spec_writes_ignore_status(api: API, namespace: str
                                                                       ) -> None:
    path = f"/apis/apps/v1/namespaces/{namespace}/replicasets"
    rs = {"metadata": {"name": "rs", "labels": {"app": "a"}},
          "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "a"}},
                   "template": {"metadata": {"labels": {"app": "a"}},
                                "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}
    code, created = await api.post(path, {**rs, "status": {"replicas": 99}})
    assert code == 201 and created.get("status", {}).get("replicas", 0) != 99
    code, after_status = await api.patch(f"{path}/rs/status",
                                         {"spec": {"replicas": 7}, "status": {"replicas": 2}})
    assert code == 200
    assert after_status["status"]["replicas"] == 2 and after_status["spec"]["replicas"] == 2
    code, after_spec = await api.patch(f"{path}/rs",
                                       {"spec": {"replicas": 5}, "status": {"replicas": 0}})
    assert after_spec["spec"]["replicas"] == 5 and after_spec["status"]["replicas"] == 2


async def test_scale_subresource_reads_and_writes_replicas(api: API, namespace: str) -> None:
    path = f"/apis/apps/v1/namespaces/{namespace}/deployments"
    await api.post(path, {"metadata": {"name": "web"},
                          "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                                   "template": {"metadata": {"labels": {"app": "web"}},
                                                "spec": {"containers": [{"name": "w",
                                                                         "image": "nginx"}]}}}})
    code, scale = await api.get(f"{path}/web/scale")
    assert code == 200 and scale["kind"] == "Scale" and scale["apiVersion"] == "autoscaling/v1"
    assert scale["spec"]["replicas"] == 2 and scale["status"]["selector"] == "app=web"
    code, scaled = await api.patch(f"{path}/web/scale", {"spec": {"replicas": 4}})
    assert code == 200 and scaled["spec"]["replicas"] == 4
    _, deployment = await api.get(f"{path}/web")
    assert deployment["spec"]["replicas"] == 4


# -- list -----------------------------------------------------------------------------------

async def test_label_and_field_selectors(api: API, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/pods"
    await api.post(path, pod("a", labels={"app": "web", "tier": "front"}, node="n1"))
    await api.post(path, pod("b", labels={"app": "web", "tier": "back"}))
    await api.post(path, pod("c", labels={"app": "db"}))
    await api.post(path, pod("d"))

    async def names(query: str) -> list[str]:
        code, body = await api.get(f"{path}?{query}")
        assert code == 200, body
        return sorted(item["metadata"]["name"] for item in body["items"])

    assert await names("labelSelector=app%3Dweb") == ["a", "b"]
    assert await names("labelSelector=app%3D%3Dweb,tier!%3Dfront") == ["b"]
    assert await names("labelSelector=app+in+(web,db)") == ["a", "b", "c"]
    assert await names("labelSelector=app+notin+(web)") == ["c", "d"]
    assert await names("labelSelector=tier") == ["a", "b"]
    assert await names("labelSelector=!tier") == ["c", "d"]
    assert await names("fieldSelector=spec.nodeName%3D") == ["b", "c", "d"]
    assert await names("fieldSelector=spec.nodeName%3Dn1") == ["a"]
    assert await names("fieldSelector=metadata.name!%3Da,status.phase%3DPending") == [
        "b", "c", "d"]
    assert await names("fieldSelector=spec.schedulerName%3Ddefault-scheduler") == [
        "a", "b", "c", "d"]


@pytest.mark.slow
async def test_pagination_returns_every_object_exactly_once(api: API, namespace: str) -> None:
    await create_many(api, namespace, 2500)
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    seen: list[str] = []
    token = ""
    pages = 0
    first_rv = None
    while True:
        query = f"?limit=500&continue={token}" if token else "?limit=500"
        code, body = await api.get(path + query)
        assert code == 200, body
        pages += 1
        first_rv = first_rv or body["metadata"]["resourceVersion"]
        assert body["metadata"]["resourceVersion"] == first_rv  # one consistent snapshot
        seen += [item["metadata"]["name"] for item in body["items"]]
        if pages == 1:
            assert body["metadata"]["remainingItemCount"] == 2000
            # Objects created after the first page do not show up in later pages.
            await api.post(path, configmap("zz-late"))
        token = body["metadata"].get("continue", "")
        if not token:
            break
    assert pages == 5
    assert len(seen) == 2500 and len(set(seen)) == 2500


# -- watch ----------------------------------------------------------------------------------

@pytest.mark.slow
async def test_watch_resumption_loses_nothing(api: API, namespace: str) -> None:
    """1,000 creates while a watcher disconnects and resumes: each event exactly once, in order.
    """
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    _, listed = await api.get(path)
    start = listed["metadata"]["resourceVersion"]
    writer = asyncio.create_task(create_many(api, namespace, 1000, concurrency=8))
    received: list[dict[str, Any]] = []
    version = start
    reconnects = 0
    async with asyncio.timeout(120):
        while len(received) < 1000:
            url = f"{api.base}{path}?watch=true&resourceVersion={version}"
            async with api.session.get(url) as response:
                assert response.status == 200
                # Read a slice, then drop the connection as a flaky network would.
                batch = await read_events(response, min(150, 1000 - len(received)))
            reconnects += 1
            for event in batch:
                assert event["type"] == "ADDED", event
                received.append(event["object"])
                version = event["object"]["metadata"]["resourceVersion"]
    await writer
    assert reconnects >= 6
    names = [obj["metadata"]["name"] for obj in received]
    assert len(names) == 1000 and len(set(names)) == 1000
    versions = [int(obj["metadata"]["resourceVersion"]) for obj in received]
    assert versions == sorted(versions) and len(set(versions)) == 1000


async def read_chunked_lines(reader: asyncio.StreamReader) -> AsyncIterator[bytes]:
    """The lines of an HTTP/1.1 chunked body, checking its framing strictly."""
    pending = b""
    while True:
        size_line = await reader.readuntil(b"\r\n")
        size = int(size_line[:-2], 16)
        if size == 0:
            return
        data = await reader.readexactly(size + 2)
        assert data.endswith(b"\r\n"), "a chunk does not end where its size says"
        pending += data[:-2]
        *lines, pending = pending.split(b"\n")
        for line in lines:
            yield line


async def test_a_watch_read_slowly_gets_every_event_in_order(api: API, namespace: str) -> None:
    """A client that reads slower than events come, with a small socket receive buffer: the
    server writes live events straight to idle watches and queues them while the client is
    behind. Mixing the two must neither reorder nor lose events, nor break the framing."""
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    _, listed = await api.get(path)
    count, filler = 300, "x" * 30_000  # 9 MB in all: more than the server's socket buffers

    async def create_all() -> None:
        for first in range(0, count, 10):
            codes = await asyncio.gather(*(
                api.post(path, configmap(f"big-{i:04d}", {"filler": filler}))
                for i in range(first, first + 10)))
            assert [code for code, _ in codes] == [201] * 10

    host, port = api.base.removeprefix("http://").split(":")
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8192)
    sock.connect((host, int(port)))
    sock.setblocking(False)
    reader, writer = await asyncio.open_connection(sock=sock, limit=2**20)
    writer.write(f"GET {path}?watch=true&resourceVersion={listed['metadata']['resourceVersion']}"
                 f" HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
    received: list[dict[str, Any]] = []
    try:
        status = await reader.readuntil(b"\r\n\r\n")
        assert status.startswith(b"HTTP/1.1 200") and b"chunked" in status.lower()
        creates = asyncio.create_task(create_all())
        async with asyncio.timeout(60):
            async for line in read_chunked_lines(reader):
                received.append(orjson.loads(line))
                await asyncio.sleep(0.01)  # at most 3 MB/s: slower than the creates
                if len(received) == count:
                    break
        await creates
    finally:
        writer.close()
    assert [e["type"] for e in received] == ["ADDED"] * count
    versions = [int(e["object"]["metadata"]["resourceVersion"]) for e in received]
    assert versions == sorted(versions) and len(set(versions)) == count
    assert {e["object"]["metadata"]["name"] for e in received} == {
        f"big-{i:04d}" for i in range(count)}


async def test_watch_with_filter_sees_objects_leave_and_enter(api: API, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    _, listed = await api.get(path)
    rv = listed["metadata"]["resourceVersion"]
    url = f"{api.base}{path}?watch=1&resourceVersion={rv}&labelSelector=app%3Dweb"
    async with api.session.get(url) as response:
        await api.post(path, configmap("x", labels={"app": "web"}))
        await api.patch(f"{path}/x", {"metadata": {"labels": {"app": "db"}}})
        await api.patch(f"{path}/x", {"metadata": {"labels": {"app": "web"}}})
        await api.delete(f"{path}/x")
        events = await read_events(response, 4, timeout=10)
    assert [e["type"] for e in events] == ["ADDED", "DELETED", "ADDED", "DELETED"]


async def test_watch_without_resource_version_starts_with_current_state(
        api: API, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    for name in ("a", "b"):
        await api.post(path, configmap(name))
    async with api.session.get(f"{api.base}{path}?watch=true") as response:
        initial = await read_events(response, 2)
        await api.post(path, configmap("c"))
        later = await read_events(response, 1)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in initial + later] == [
        ("ADDED", "a"), ("ADDED", "b"), ("ADDED", "c")]


async def test_watch_bookmarks_and_initial_events_end(api: API, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    await api.post(path, configmap("a"))
    url = (f"{api.base}{path}?watch=true&sendInitialEvents=true&allowWatchBookmarks=true"
           "&resourceVersionMatch=NotOlderThan&resourceVersion=")
    async with api.session.get(url) as response:
        events = await read_events(response, 2)
    assert events[0]["type"] == "ADDED"
    assert events[1]["type"] == "BOOKMARK"
    annotations = events[1]["object"]["metadata"]["annotations"]
    assert annotations == {"k8s.io/initial-events-end": "true"}


async def test_hundred_watchers_share_one_etcd_watch(api: API, namespace: str, etcd: EtcdProcess
                                                     ) -> None:
    async def etcd_watchers() -> float:
        async with api.session.get(f"{etcd.client_url}/metrics") as response:
            text = await response.text()
        for line in text.splitlines():
            if line.startswith("etcd_debugging_mvcc_watcher_total "):
                return float(line.split()[1])
        raise AssertionError("etcd exposes no watcher gauge")

    before = await etcd_watchers()
    path = f"{api.base}/api/v1/namespaces/{namespace}/configmaps?watch=true&resourceVersion=0"
    watch_session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))
    responses = [await watch_session.get(path) for _ in range(100)]
    try:
        await api.post(f"/api/v1/namespaces/{namespace}/configmaps", configmap("fan"))
        delivered = await asyncio.gather(*(read_events(r, 1) for r in responses))
        assert all(events[0]["object"]["metadata"]["name"] == "fan" for events in delivered)
        assert await etcd_watchers() - before < 5
    finally:
        for response in responses:
            response.close()
        await watch_session.close()


# -- compaction -----------------------------------------------------------------------------

async def test_compacted_versions_give_410_and_a_relist_recovers(
        api: API, namespace: str, etcd: EtcdProcess, etcd_client: Any, fast_tmp: Path) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    await create_many(api, namespace, 10)
    code, page = await api.get(f"{path}?limit=3")
    old_rv = page["metadata"]["resourceVersion"]
    await api.post(path, configmap("after"))
    await etcd_client.compact(await etcd_client.current_revision())

    code, status = await api.get(f"{path}?resourceVersion={old_rv}&resourceVersionMatch=Exact")
    assert code == 410 and status["reason"] == "Expired"
    code, status = await api.get(f"{path}?limit=3&continue={page['metadata']['continue']}")
    assert code == 410 and status["reason"] == "Expired"
    assert "continue parameter is too old" in status["message"]

    # A server started now has no history before the compaction: its watch says 410 too.
    async with APIServerProcess([etcd.client_url], fast_tmp / "apiserver-compact.log") as fresh:
        url = f"{fresh.url}{path}?watch=true&resourceVersion={old_rv}"
        async with api.session.get(url) as response:
            assert response.status == 200
            events = await read_events(response, 1)
        assert events[0]["type"] == "ERROR"
        assert events[0]["object"]["code"] == 410
        assert "too old resource version" in events[0]["object"]["message"]
        code, relisted = await api.get(path)
        assert code == 200 and len(relisted["items"]) == 11


# -- delete ---------------------------------------------------------------------------------

async def test_pods_on_a_node_delete_gracefully(api: API, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/pods"
    await api.post(path, pod("web", node="node-1"))
    code, marked = await api.delete(f"{path}/web")
    assert code == 202
    assert marked["metadata"]["deletionTimestamp"]
    assert marked["metadata"]["deletionGracePeriodSeconds"] == 30
    code, still = await api.get(f"{path}/web")
    assert code == 200 and still["metadata"]["deletionTimestamp"]
    # The kubelet confirms with grace 0 (and the pod's uid as precondition).
    code, _ = await api.delete(f"{path}/web", {"kind": "DeleteOptions", "apiVersion": "v1",
                                                "gracePeriodSeconds": 0,
                                                "preconditions": {"uid": still["metadata"]["uid"]}})
    assert code == 200
    code, _ = await api.get(f"{path}/web")
    assert code == 404


async def test_unscheduled_pods_delete_at_once(api: API, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/pods"
    await api.post(path, pod("pending"))
    code, _ = await api.delete(f"{path}/pending")
    assert code == 200
    assert (await api.get(f"{path}/pending"))[0] == 404


async def test_finalizers_keep_the_object_until_cleared(api: API, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    body = configmap("held")
    body["metadata"]["finalizers"] = ["example.com/hold"]
    await api.post(path, body)
    code, marked = await api.delete(f"{path}/held")
    assert code == 202 and marked["metadata"]["deletionTimestamp"]
    code, still = await api.get(f"{path}/held")
    assert code == 200 and still["metadata"]["finalizers"] == ["example.com/hold"]
    code, _ = await api.patch(f"{path}/held", {"metadata": {"finalizers": None}})
    assert code == 200
    assert (await api.get(f"{path}/held"))[0] == 404


async def test_delete_collection_by_label(api: API, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    for i in range(3):
        await api.post(path, configmap(f"a{i}", labels={"group": "a"}))
    await api.post(path, configmap("b", labels={"group": "b"}))
    code, deleted = await api.delete(f"{path}?labelSelector=group%3Da")
    assert code == 200 and len(deleted["items"]) == 3
    _, left = await api.get(path)
    assert [i["metadata"]["name"] for i in left["items"]] == ["b"]


async def test_namespace_deletion_marks_it_terminating(api: API) -> None:
    code, _ = await api.post("/api/v1/namespaces", {"metadata": {"name": "doomed-ns"}})
    assert code == 201
    code, marked = await api.delete("/api/v1/namespaces/doomed-ns")
    assert code in (200, 202)
    assert marked["status"]["phase"] == "Terminating"
    code, status = await api.post("/api/v1/namespaces/doomed-ns/configmaps", configmap("late"))
    assert code == 403 and "being terminated" in status["message"]
    # The namespace controller (a later component) finalizes through /finalize.
    marked["spec"]["finalizers"] = []
    code, _ = await api.put("/api/v1/namespaces/doomed-ns/finalize", marked)
    assert code == 200
    assert (await api.get("/api/v1/namespaces/doomed-ns"))[0] == 404


# -- storage layout -------------------------------------------------------------------------

async def test_objects_are_json_under_registry_keys(api: API, namespace: str, etcd: EtcdProcess
                                                    ) -> None:
    await api.post(f"/api/v1/namespaces/{namespace}/configmaps", configmap("seen", {"k": "v"}))
    result = subprocess.run(
        ["etcdctl", f"--endpoints={etcd.client_url}", "get",
         f"/registry/configmaps/{namespace}/seen", "--print-value-only"],
        capture_output=True, text=True, env={"ETCDCTL_API": "3"}, check=True)
    stored = orjson.loads(result.stdout)
    assert stored["kind"] == "ConfigMap" and stored["data"] == {"k": "v"}
    assert "resourceVersion" not in stored["metadata"]


async def test_metrics_count_requests_and_open_watches(api: API, namespace: str) -> None:
    await api.get(f"/api/v1/namespaces/{namespace}/configmaps")
    path = f"{api.base}/api/v1/namespaces/{namespace}/configmaps?watch=true&resourceVersion=0"
    async with api.session.get(path) as watch:
        assert watch.status == 200
        _, text = await api.get("/metrics")
    watching = [line for line in text.splitlines()
                if line.startswith("apiserver_longrunning_requests{")
                and 'resource="configmaps"' in line]
    assert watching and float(watching[0].split()[-1]) >= 1
    assert any(line.startswith("apiserver_request_total{") and 'verb="LIST"' in line
               and 'resource="configmaps"' in line and 'code="200"' in line
               for line in text.splitlines())
    assert "etcd_request_duration_seconds_bucket" in text


async def test_every_answer_carries_an_audit_id_watches_too(apiserver: APIServerProcess,
                                                            namespace: str) -> None:
    base = f"{apiserver.url}/api/v1/namespaces/{namespace}/configmaps"
    async with aiohttp.ClientSession() as session:
        async with session.get(base) as listed:
            first = listed.headers.get("Audit-Id", "")
        async with session.get(f"{base}?watch=1&timeoutSeconds=1") as watched:
            second = watched.headers.get("Audit-Id", "")
            await watched.read()
        async with session.get(f"{base}/missing") as missing:
            assert missing.status == 404
            third = missing.headers.get("Audit-Id", "")
    assert all(len(audit_id) == 36 for audit_id in (first, second, third))
    assert len({first, second, third}) == 3
