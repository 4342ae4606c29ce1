"""Restore etcd from a snapshot under running watchers, as upstream's e2e "Etcd restore
should be able to restore from bumped snapshot" does, following seed 001's steps:

    before      a real etcd, our API server, three ConfigMaps, and three watchers of them:
                our informer, the official client's list+watch loop, `kubectl get -w`
    backup      etcdctl snapshot save (and status); then changes the snapshot lacks (one
                ConfigMap changed, one deleted, one created), seen by every watcher
    disaster    stop the API server, then etcd; remove etcd's data; etcdctl snapshot
                restore into its place; start etcd alone; bump its revision and compact
                (etcdutl's --bump-revision --mark-compacted, which etcd 3.4 lacks)
    after       start the API server: our informer and the official client's loop get
                410 Gone, list again and hold the snapshot's state (kubectl's watch
                ended with the API server: a watch from its last version gets 410 too,
                and a new `kubectl get -w` lists); then new changes, which all hear
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import subprocess
import sys
import threading
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import urllib3
from kubernetes import client, config, watch
from kubernetes.client import ApiException

from minikube_py.api import Obj
from minikube_py.apiserver.storage.etcd import CompactedError, prefix_end
from minikube_py.client.informer import EventHandler, SharedInformer
from minikube_py.client.rest import Client
from minikube_py.cluster.apiserver import APIServerProcess
from minikube_py.cluster.etcd import EtcdProcess
from minikube_py.cluster.etcd_snapshot import (
    SnapshotError,
    bump_and_compact,
    bump_revision,
    etcdctl_environment,
    snapshot_restore,
    snapshot_save,
    snapshot_status,
)
from minikube_py.cluster.kubeconfig import write_kubeconfig
from tests.api_helpers import eventually

pytestmark = pytest.mark.slow

NAMESPACE = "restore"
# More than every write made after the snapshot (a few ConfigMaps, the API server's own).
BUMP = 10_000
WATCH_TIMEOUT = 5  # seconds: the server ends each watch after it, and the loop resumes
KUBECTL = str(Path(sys.executable).with_name("kubectl"))
# One line per watch event: "TYPE NAME VALUE".
EVENT_LINE = '{.type} {.object.metadata.name} {.object.data.v}{"\\n"}'

State = dict[str, str]  # ConfigMap name -> its data's "v"


def configmap(name: str, value: str) -> Obj:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": NAMESPACE}, "data": {"v": value}}


class OfficialClientWatch:
    """The official client's list+watch, as its users write it (in a thread): watch from
    the list's resourceVersion, resume from the last event's when a watch ends, list
    again on 410 Gone, and retry while the API server is away."""

    def __init__(self, kubeconfig: Path) -> None:
        self.api = config.new_client_from_config(config_file=str(kubeconfig))
        self.v1 = client.CoreV1Api(self.api)
        self.state: State = {}
        self.lists = 0
        self.gone = 0
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self) -> None:
        version: str | None = None
        while not self.stopping.is_set():
            try:
                if version is None:
                    listing = self.v1.list_namespaced_config_map(NAMESPACE)
                    self.state = {item.metadata.name: item.data["v"] for item in listing.items}
                    self.lists += 1
                    version = listing.metadata.resource_version
                for event in watch.Watch().stream(
                        self.v1.list_namespaced_config_map, NAMESPACE,
                        resource_version=version, timeout_seconds=WATCH_TIMEOUT):
                    item = event["object"]
                    if event["type"] == "DELETED":
                        self.state.pop(item.metadata.name, None)
                    else:
                        self.state[item.metadata.name] = item.data["v"]
                    version = item.metadata.resource_version
            except ApiException as failed:
                if failed.status == 410:
                    self.gone += 1
                    version = None
                else:
                    self.stopping.wait(0.2)
            except urllib3.exceptions.HTTPError:  # the API server is away: try again
                self.stopping.wait(0.2)

    def stop(self) -> None:
        self.stopping.set()
        self.thread.join(timeout=WATCH_TIMEOUT + 10)
        self.api.close()


class KubectlWatch:
    """`kubectl get configmaps -w --output-watch-events`, its lines read by a thread."""

    def __init__(self, kubeconfig: Path) -> None:
        self.process = subprocess.Popen(
            [KUBECTL, f"--kubeconfig={kubeconfig}", "get", "configmaps", "-n", NAMESPACE,
             "-w", "--output-watch-events", "-o", f"jsonpath={EVENT_LINE}"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines: list[str] = []
        self.reader = threading.Thread(target=self.read, daemon=True)
        self.reader.start()

    def read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line.strip())

    @property
    def state(self) -> State:
        """What the watch's events add up to."""
        state: State = {}
        for line in self.lines:
            kind, name, value = line.split(" ")
            if kind == "DELETED":
                state.pop(name, None)
            else:
                state[name] = value
        return state

    def end(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        self.reader.join(timeout=10)
        for pipe in (self.process.stdout, self.process.stderr):
            assert pipe is not None
            pipe.close()


@pytest.fixture
async def etcd(fast_tmp: Path) -> AsyncIterator[EtcdProcess]:
    """An etcd of the test's own (it is stopped and its data replaced)."""
    async with EtcdProcess(fast_tmp / f"etcd-restore-{uuid.uuid4().hex[:8]}") as process:
        yield process


@pytest.fixture
async def apiserver(etcd: EtcdProcess, fast_tmp: Path) -> AsyncIterator[APIServerProcess]:
    async with APIServerProcess(
            [etcd.client_url], fast_tmp / f"apiserver-restore-{uuid.uuid4().hex[:8]}.log",
            extra_args=("--disable-admission-plugins=ServiceAccount",)) as process:
        yield process


@pytest.fixture
def kubeconfig(apiserver: APIServerProcess, fast_tmp: Path) -> Path:
    return write_kubeconfig(fast_tmp / f"kubeconfig-restore-{uuid.uuid4().hex[:8]}",
                            apiserver.url)


@pytest.fixture
def kubectl_watches(kubeconfig: Path) -> Iterator[Callable[[], KubectlWatch]]:
    """Start `kubectl get -w`s; each is ended after the test, pass or fail."""
    started: list[KubectlWatch] = []

    def start() -> KubectlWatch:
        started.append(KubectlWatch(kubeconfig))
        return started[-1]

    yield start
    for kubectl_watch in started:
        kubectl_watch.end()


def kubectl(kubeconfig: Path, *args: str) -> str:
    result = subprocess.run([KUBECTL, f"--kubeconfig={kubeconfig}", *args],
                            capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    return result.stdout


async def _value(value: Any) -> Any:
    return value


async def test_restore_from_a_bumped_snapshot_makes_every_watcher_relist_and_miss_nothing(
    etcd: EtcdProcess, apiserver: APIServerProcess, kubeconfig: Path, fast_tmp: Path,
    kubectl_watches: Callable[[], KubectlWatch],
) -> None:
    async with Client.from_kubeconfig(kubeconfig, user_agent="restore-test") as api:
        await api.resource("namespaces").create(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
        configmaps = api.resource("configmaps")
        for name in ("a", "b", "c"):
            await configmaps.create(configmap(name, "1"))

        informer = SharedInformer(api, "configmaps", namespace=NAMESPACE)
        heard: list[tuple[str, str, str]] = []
        informer.add_event_handler(EventHandler(
            on_add=lambda o: heard.append(("add", o["metadata"]["name"], o["data"]["v"])),
            on_update=lambda _, o: heard.append(("update", o["metadata"]["name"],
                                                 o["data"]["v"])),
            on_delete=lambda o: heard.append(("delete", o["metadata"]["name"],
                                              o["data"]["v"]))))
        lists: list[str] = []
        replace = informer.replace

        def counting_replace(objects: list[Obj], version: str) -> None:
            lists.append(version)
            replace(objects, version)

        informer.replace = counting_replace  # type: ignore[method-assign]
        official = OfficialClientWatch(kubeconfig)
        informer.run_in_background()
        official.thread.start()
        try:
            first_kubectl = kubectl_watches()

            def informer_state() -> State:
                return {o["metadata"]["name"]: o["data"]["v"] for o in informer.store.list()}

            async def everyone_holds(expected: State, *watchers: Callable[[], State]) -> bool:
                return all(state() == expected for state in watchers)

            snapshot_state = {"a": "1", "b": "1", "c": "1"}
            await eventually(lambda: everyone_holds(
                snapshot_state, informer_state, lambda: official.state,
                lambda: first_kubectl.state), what="every watcher to list the ConfigMaps")

            # backup, then changes the snapshot does not hold
            snapshot = fast_tmp / f"snapshot-{uuid.uuid4().hex[:8]}.db"
            saved = snapshot_save(snapshot, etcd.client_url)
            assert saved == snapshot_status(snapshot)
            assert saved.revision > 0 and saved.total_keys > 0
            a = await configmaps.get("a", NAMESPACE)
            await configmaps.update({**a, "data": {"v": "2"}})
            await configmaps.delete("b", NAMESPACE)
            last_write = await configmaps.create(configmap("d", "1"))
            after_snapshot = {"a": "2", "c": "1", "d": "1"}
            await eventually(lambda: everyone_holds(
                after_snapshot, informer_state, lambda: official.state,
                lambda: first_kubectl.state), what="every watcher to hear the changes")

            # disaster recovery, seed 001's steps with etcd 3.4's bump
            await apiserver.stop()
            await etcd.stop()
            async with asyncio.timeout(30):  # kubectl's watch ends with its API server
                while first_kubectl.process.poll() is None:
                    await asyncio.sleep(0.1)
            assert first_kubectl.process.returncode == 0
            shutil.rmtree(etcd.data_dir)
            snapshot_restore(snapshot, etcd.data_dir, name=etcd.name, peer_url=etcd.peer_url)
            await etcd.start()
            revision = await bump_and_compact(etcd.client_url, None, BUMP)
            assert revision >= saved.revision + BUMP
            await apiserver.start()

            # every watcher gets 410 Gone and lists the snapshot's state again
            await eventually(lambda: everyone_holds(
                snapshot_state, informer_state, lambda: official.state),
                timeout=60, what="the watchers to relist the restored state")
            assert len(lists) == 2 and official.lists == 2 and official.gone == 1
            assert int(lists[1]) >= revision
            old_watch = json.loads(kubectl(
                kubeconfig, "get", "--raw", f"/api/v1/namespaces/{NAMESPACE}/configmaps"
                f"?watch=1&resourceVersion={last_write['metadata']['resourceVersion']}"))
            assert (old_watch["type"], old_watch["object"]["code"]) == ("ERROR", 410)
            second_kubectl = kubectl_watches()
            await eventually(lambda: _value(second_kubectl.state == snapshot_state),
                             what="a new kubectl get -w to list the restored state")

            # none misses a change made after the restore
            c = await configmaps.get("c", NAMESPACE)
            await configmaps.update({**c, "data": {"v": "2"}})
            await configmaps.create(configmap("e", "1"))
            await configmaps.delete("a", NAMESPACE)
            final = {"b": "1", "c": "2", "e": "1"}
            await eventually(lambda: everyone_holds(
                final, informer_state, lambda: official.state,
                lambda: second_kubectl.state), what="every watcher to hear the new changes")
            assert heard[-6:] == [("update", "a", "1"), ("add", "b", "1"),
                                  ("delete", "d", "1"), ("update", "c", "2"),
                                  ("add", "e", "1"), ("delete", "a", "1")]
            assert len(lists) == 2 and official.lists == 2 and official.gone == 1
        finally:
            await informer.stop()
            official.stop()


async def test_the_bumped_and_compacted_revision_survives_a_restart_of_etcd(
        etcd: EtcdProcess) -> None:
    """etcd 3.4 takes its revision from its newest key, or from its last compaction when
    that is newer: the bump's key is deleted and compacted away, and the bump stays."""
    async with etcd.client() as etcd_client:
        before = await etcd_client.put(b"/registry/configmaps/restore/a", b"{}")
    revision = await bump_and_compact(etcd.client_url, None, 500)
    assert revision > before + 500
    await etcd.stop()
    await etcd.start()
    async with etcd.client() as etcd_client:
        assert await etcd_client.current_revision() == revision
        with pytest.raises(CompactedError):
            await etcd_client.range(b"/registry/", prefix_end(b"/registry/"), revision=before)
        listed = await etcd_client.range(b"/", prefix_end(b"/"))
        assert [kv.key for kv in listed.kvs] == [b"/registry/configmaps/restore/a"]
        assert await etcd_client.put(b"/registry/configmaps/restore/a", b"{}") == revision + 1


def test_etcd_bump_revision_command_reads_etcdctls_environment(etcd: EtcdProcess) -> None:
    """`minikube-py etcd-bump-revision` works where `etcdctl-env`'s variables are set,
    and says what to do where they are not."""
    command = [sys.executable, "-m", "minikube_py.cluster", "etcd-bump-revision",
               "--bump-revision", "100"]
    environment = etcdctl_environment(etcd.client_url)
    bumped = subprocess.run(command, env=environment, capture_output=True, text=True,
                            timeout=60, check=False)
    assert bumped.returncode == 0, bumped.stderr
    assert re.fullmatch(r"revision bumped by at least 100 and compacted at \d+\n",
                        bumped.stdout)
    del environment["ETCDCTL_ENDPOINTS"]
    unset = subprocess.run(command, env=environment, capture_output=True, text=True,
                           timeout=60, check=False)
    assert (unset.returncode, unset.stderr) == (
        1, "error: ETCDCTL_ENDPOINTS is not set: source <(minikube-py etcdctl-env) first\n")


async def test_bad_input_is_one_line_saying_what_failed(etcd: EtcdProcess, fast_tmp: Path
                                                        ) -> None:
    """A bump of nothing, and a restore over data etcdctl will not overwrite, each fail
    with one line naming the step (etcdctl's own reason, for the latter)."""
    async with etcd.client() as etcd_client:
        with pytest.raises(SnapshotError, match=r"^--bump-revision must be at least 1, not 0$"):
            await bump_revision(etcd_client, 0)
    snapshot = fast_tmp / f"snapshot-{uuid.uuid4().hex[:8]}.db"
    snapshot_save(snapshot, etcd.client_url)
    with pytest.raises(SnapshotError, match=r"^etcdctl snapshot restore failed: .*exists"):
        snapshot_restore(snapshot, etcd.data_dir, name=etcd.name, peer_url=etcd.peer_url)
    with pytest.raises(SnapshotError, match=r"^etcdctl snapshot status failed: "):
        snapshot_status(fast_tmp / "no-such-snapshot.db")
