"""The client machinery against a real API server: REST verbs and typed errors,
informers (list, watch, resume, relist after 410), the event recorder, leader election."""

from __future__ import annotations

import asyncio
import logging
import uuid
from pathlib import Path
from typing import Any

import pytest

from minikube_py.api import Obj
from minikube_py.apiserver.storage.etcd import EtcdClient
from minikube_py.client import reflector
from minikube_py.client.errors import AlreadyExists, Conflict, ConnectionFailed, Invalid, NotFound
from minikube_py.client.events import EventRecorder
from minikube_py.client.informer import EventHandler, SharedInformer, SharedInformerFactory
from minikube_py.client.leaderelection import LeaderElector, LeadershipLost
from minikube_py.client.rest import Client
from minikube_py.cluster.apiserver import APIServerProcess
from minikube_py.cluster.etcd import EtcdProcess
from minikube_py.cluster.kubeconfig import write_kubeconfig
from tests.api_helpers import eventually


def configmap(name: str, namespace: str, **data: str) -> Obj:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace}, "data": data}


class Recorder:
    """An event handler that writes down what it hears, in order."""

    def __init__(self, informer: SharedInformer) -> None:
        self.heard: list[tuple[str, str]] = []
        informer.add_event_handler(EventHandler(
            on_add=lambda o: self.heard.append(("add", o["metadata"]["name"])),
            on_update=lambda _old, o: self.heard.append(("update", o["metadata"]["name"])),
            on_delete=lambda o: self.heard.append(("delete", o["metadata"]["name"]))))

    def names(self, kind: str) -> list[str]:
        return [name for event, name in self.heard if event == kind]


async def test_rest_verbs_and_typed_errors(api_client: Client, namespace: str) -> None:
    configmaps = api_client.resource("configmaps")
    created = await configmaps.create(configmap("a", namespace, x="1"))
    with pytest.raises(AlreadyExists):
        await configmaps.create(configmap("a", namespace))
    stale = dict(created)
    created["data"] = {"x": "2"}
    updated = await configmaps.update(created)
    with pytest.raises(Conflict):
        await configmaps.update({**stale, "data": {"x": "3"}})
    patched = await configmaps.patch("a", {"data": {"y": "4"}}, namespace)
    assert patched["data"] == {"x": "2", "y": "4"}
    assert int(patched["metadata"]["resourceVersion"]) > int(
        updated["metadata"]["resourceVersion"])
    with pytest.raises(Invalid) as invalid:
        await configmaps.create(configmap("Not_Valid", namespace))
    assert invalid.value.code == 422
    listed = await configmaps.list(namespace)
    assert [item["metadata"]["name"] for item in listed["items"]] == ["a"]
    with pytest.raises(Conflict):
        await configmaps.delete("a", namespace, preconditions={"uid": "not-the-uid"})
    await configmaps.delete("a", namespace)
    with pytest.raises(NotFound):
        await configmaps.get("a", namespace)


async def test_a_uid_in_a_patch_body_is_a_precondition(api_client: Client,
                                                       namespace: str) -> None:
    configmaps = api_client.resource("configmaps")
    created = await configmaps.create(configmap("a", namespace))
    with pytest.raises(Conflict, match="Precondition failed: UID"):
        await configmaps.patch("a", {"metadata": {"uid": "other", "labels": {"l": "v"}}},
                               namespace)
    ok = await configmaps.patch(
        "a", {"metadata": {"uid": created["metadata"]["uid"], "labels": {"l": "v"}}}, namespace)
    assert ok["metadata"]["labels"] == {"l": "v"}


async def test_an_unreachable_server_fails_after_retries() -> None:
    from minikube_py.client.kubeconfig import ClientConfig
    from minikube_py.process import free_port
    async with Client(ClientConfig(server=f"http://127.0.0.1:{free_port()}"),
                      max_retries=2) as client:
        with pytest.raises(ConnectionFailed, match="cannot reach the API server"):
            await client.resource("pods").list("default")


async def test_informer_lists_then_hears_every_change_in_order(api_client: Client,
                                                               namespace: str) -> None:
    configmaps = api_client.resource("configmaps")
    await configmaps.create(configmap("before", namespace))
    informer = SharedInformer(api_client, "configmaps", namespace=namespace)
    heard = Recorder(informer)
    informer.run_in_background()
    try:
        async with asyncio.timeout(10):
            await informer.wait_for_sync()
        assert informer.has_synced()
        assert heard.heard == [("add", "before")]
        created = await configmaps.create(configmap("after", namespace))
        await configmaps.patch("after", {"data": {"k": "v"}}, namespace)
        await configmaps.delete("before", namespace)
        await eventually(lambda: _async(len(heard.heard) == 4), what="three more events")
        assert heard.heard[1:] == [("add", "after"), ("update", "after"), ("delete", "before")]
        cached = informer.store.get_by_name(namespace, "after")
        assert cached is not None and cached["data"] == {"k": "v"}
        assert cached["metadata"]["uid"] == created["metadata"]["uid"]
        assert informer.store.get_by_name(namespace, "before") is None
    finally:
        await informer.stop()


async def test_a_late_handler_hears_an_add_for_every_cached_object(api_client: Client,
                                                                   namespace: str) -> None:
    await api_client.resource("configmaps").create(configmap("x", namespace))
    factory = SharedInformerFactory(api_client)
    informer = factory.informer("configmaps")
    assert factory.informer("configmaps") is informer, "one informer per resource"
    factory.start()
    try:
        await factory.wait_for_cache_sync(10)
        heard = Recorder(informer)
        assert ("add", "x") in heard.heard
    finally:
        await factory.stop()


async def _async(value: Any) -> Any:
    return value


@pytest.mark.slow
async def test_informer_resumes_each_ended_watch_from_the_last_version_without_relisting(
    api_client: Client, namespace: str, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Watches end (here every 1-2 s): the reflector watches again from the last
    resourceVersion it saw, so every change arrives exactly once and no relist is needed.
    Each create waits for a new watch, so that every one is heard by another watch, and
    the end for two more, in which nothing may be heard again."""
    monkeypatch.setattr(reflector, "MIN_WATCH_TIMEOUT", 1)
    watches = 0
    original_watch = reflector.Reflector.watch

    async def counting_watch(self: reflector.Reflector) -> None:
        nonlocal watches
        watches += 1
        await original_watch(self)

    monkeypatch.setattr(reflector.Reflector, "watch", counting_watch)

    async def watches_after(seen: int) -> bool:
        return watches > seen
    informer = SharedInformer(api_client, "configmaps", namespace=namespace)
    heard = Recorder(informer)
    lists = 0
    original_replace = informer.replace

    def counting_replace(objects: list[Obj], version: str) -> None:
        nonlocal lists
        lists += 1
        original_replace(objects, version)

    informer.replace = counting_replace  # type: ignore[method-assign]
    informer.run_in_background()
    try:
        async with asyncio.timeout(60):
            await informer.wait_for_sync()
        configmaps = api_client.resource("configmaps")
        names = [f"cm-{index}" for index in range(8)]
        for name in names:
            await eventually(lambda seen=watches: watches_after(seen), what="a new watch")
            await configmaps.create(configmap(name, namespace))
        await eventually(lambda: _async(len(heard.names("add")) >= len(names)),
                         what="every create")
        await eventually(lambda seen=watches: watches_after(seen + 1), what="two more watches")
        assert heard.names("add") == names
        assert lists == 1
    finally:
        await informer.stop()


@pytest.mark.slow
async def test_informer_catches_up_after_its_server_restarts(
    etcd: EtcdProcess, fast_tmp: Path, api_client: Client, namespace: str,
) -> None:
    """Changes made while the informer's API server was down are all heard, once each."""
    private = APIServerProcess([etcd.client_url], fast_tmp / f"api-{namespace}.log")
    async with private:
        kubeconfig = write_kubeconfig(fast_tmp / f"kc-{namespace}", private.url)
        async with Client.from_kubeconfig(kubeconfig) as client:
            informer = SharedInformer(client, "configmaps", namespace=namespace)
            heard = Recorder(informer)
            informer.run_in_background()
            try:
                async with asyncio.timeout(10):
                    await informer.wait_for_sync()
                await private.stop()
                configmaps = api_client.resource("configmaps")
                for name in ("one", "two"):
                    await configmaps.create(configmap(name, namespace))
                await private.start()
                await eventually(lambda: _async(heard.names("add") == ["one", "two"]),
                                 timeout=40, what="the events made while the server was down")
            finally:
                await informer.stop()


@pytest.mark.slow
async def test_informer_relists_after_410_and_reports_what_vanished(
    etcd: EtcdProcess, etcd_client: EtcdClient, fast_tmp: Path, api_client: Client,
    namespace: str,
) -> None:
    configmaps = api_client.resource("configmaps")
    await configmaps.create(configmap("doomed", namespace))
    private = APIServerProcess([etcd.client_url], fast_tmp / f"api-{namespace}.log")
    async with private:
        kubeconfig = write_kubeconfig(fast_tmp / f"kc-{namespace}", private.url)
        async with Client.from_kubeconfig(kubeconfig) as client:
            informer = SharedInformer(client, "configmaps", namespace=namespace)
            heard = Recorder(informer)
            informer.run_in_background()
            try:
                async with asyncio.timeout(10):
                    await informer.wait_for_sync()
                await private.stop()
                await configmaps.delete("doomed", namespace)
                await configmaps.create(configmap("born", namespace))
                for index in range(3):  # move etcd on, then forget the history
                    await configmaps.create(configmap(f"filler-{index}", namespace))
                await etcd_client.compact(await etcd_client.current_revision())
                await private.start()
                await eventually(lambda: _async("doomed" in heard.names("delete")),
                                 timeout=40, what="the relist to notice the deletion")
                assert "born" in heard.names("add")
                assert informer.store.get_by_name(namespace, "doomed") is None
            finally:
                await informer.stop()


async def test_event_recorder_folds_repeats_into_a_count(api_client: Client,
                                                         namespace: str) -> None:
    subject = await api_client.resource("configmaps").create(configmap("subject", namespace))
    subject.setdefault("kind", "ConfigMap")
    subject.setdefault("apiVersion", "v1")
    recorder = EventRecorder(api_client, "tests", host="here")
    try:
        for _ in range(3):
            recorder.event(subject, "Warning", "Broken", "it broke")
        recorder.event(subject, "Normal", "Fixed", "it works")
        async with asyncio.timeout(10):
            await recorder.flush()
    finally:
        await recorder.stop()
    events = (await api_client.resource("events").list(namespace))["items"]
    by_reason = {event["reason"]: event for event in events}
    assert set(by_reason) == {"Broken", "Fixed"}
    broken = by_reason["Broken"]
    assert broken["count"] == 3 and broken["type"] == "Warning"
    assert broken["involvedObject"]["name"] == "subject"
    assert broken["involvedObject"]["uid"] == subject["metadata"]["uid"]
    assert broken["source"] == {"component": "tests", "host": "here"}
    assert broken["lastTimestamp"] >= broken["firstTimestamp"]


def elector(client: Client, lease: str, identity: str) -> LeaderElector:
    return LeaderElector(client, name=lease, namespace="kube-system", identity=identity,
                         lease_duration=2.0, renew_deadline=1.5, retry_period=0.25)


@pytest.mark.slow
async def test_only_one_candidate_leads_and_the_other_takes_over_after_a_crash(
    api_client: Client, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="minikube_py.client.leaderelection")
    lease = f"test-{uuid.uuid4().hex[:8]}"
    first, second = elector(api_client, lease, "first"), elector(api_client, lease, "second")
    working: list[str] = []

    def work(name: str) -> Any:
        async def run() -> None:
            working.append(name)
            await asyncio.Event().wait()
        return run

    first_task = asyncio.create_task(first.run(work("first")))
    await eventually(lambda: _async(working == ["first"]), what="the first to lead")
    tries: list[bool] = []  # the second's attempts to acquire, and how each went
    try_once = second._try_acquire_or_renew

    async def counted_try() -> bool:
        tries.append(await try_once())
        return tries[-1]

    monkeypatch.setattr(second, "_try_acquire_or_renew", counted_try)
    second_task = asyncio.create_task(second.run(work("second")))
    await eventually(lambda: _async(len(tries) >= 2), what="the second to try twice")
    assert tries[:2] == [False, False]
    assert working == ["first"] and not second.is_leader()
    assert f"second: attempting to acquire leader lease kube-system/{lease}..." in caplog.text

    async def crashed() -> None:  # a killed process never releases its lease
        return None

    monkeypatch.setattr(first, "_release", crashed)
    first_task.cancel()
    await asyncio.gather(first_task, return_exceptions=True)
    await eventually(lambda: _async(working == ["first", "second"]),
                     what="the second to take over after the lease expired")
    stored = await api_client.resource("leases").get(lease, "kube-system")
    assert stored["spec"]["holderIdentity"] == "second"
    assert stored["spec"]["leaseTransitions"] == 1
    second_task.cancel()
    await asyncio.gather(second_task, return_exceptions=True)
    released = await api_client.resource("leases").get(lease, "kube-system")
    assert released["spec"]["holderIdentity"] == "", "a clean stop hands the lease over"


async def hand_to_an_intruder(api_client: Client, lease: str) -> None:
    """Another holder takes the Lease for an hour: its leader cannot renew any more."""
    leases = api_client.resource("leases")
    stolen = await leases.get(lease, "kube-system")
    stolen["spec"].update(holderIdentity="intruder", leaseDurationSeconds=3600)
    await leases.update(stolen)


@pytest.mark.slow
async def test_a_leader_that_cannot_renew_stops_working(api_client: Client) -> None:
    lease = f"test-{uuid.uuid4().hex[:8]}"
    candidate = elector(api_client, lease, "me")
    stopped = asyncio.Event()

    async def work() -> None:
        try:
            await asyncio.Event().wait()
        finally:
            stopped.set()

    task = asyncio.create_task(candidate.run(work))
    await eventually(lambda: _async(candidate.is_leader()), what="leadership")
    await hand_to_an_intruder(api_client, lease)
    with pytest.raises(LeadershipLost):
        async with asyncio.timeout(5):
            await task
    assert stopped.is_set() and not candidate.is_leader()


@pytest.mark.slow
async def test_a_deposed_leader_does_not_wait_for_work_that_will_not_stop(
        api_client: Client) -> None:
    """The work's cleanup is stuck (on an API server that is gone, say): the loss is
    still reported within a retry period, so that the component exits and another
    copy can lead, as upstream's exit at once."""
    lease = f"test-{uuid.uuid4().hex[:8]}"
    candidate = elector(api_client, lease, "me")
    release = asyncio.Event()

    async def work() -> None:
        try:
            await asyncio.Event().wait()
        finally:
            await release.wait()  # a cleanup that never ends on its own

    task = asyncio.create_task(candidate.run(work))
    await eventually(lambda: _async(candidate.is_leader()), what="leadership")
    await hand_to_an_intruder(api_client, lease)
    try:
        with pytest.raises(LeadershipLost):
            async with asyncio.timeout(5):
                await task
        assert not candidate.is_leader()
    finally:
        release.set()


async def test_event_recorder_spam_filter_keeps_25_events_per_object(
        api_client: Client, namespace: str) -> None:
    subject = await api_client.resource("configmaps").create(configmap("noisy", namespace))
    subject.update(kind="ConfigMap", apiVersion="v1")
    recorder = EventRecorder(api_client, "tests")
    try:
        for index in range(30):
            recorder.event(subject, "Normal", "Created", f"created thing {index}")
        async with asyncio.timeout(10):
            await recorder.flush()
    finally:
        await recorder.stop()
    events = (await api_client.resource("events").list(namespace))["items"]
    assert sorted(event["message"] for event in events) == sorted(
        f"created thing {index}" for index in range(25))
