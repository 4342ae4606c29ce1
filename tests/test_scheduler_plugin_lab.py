"""The scheduler plugin lab (labs/scheduler_plugin): the EnergyAware Score plugin on plain
data, and registered with `--plugin` in a scheduler process that places real pods."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import uuid
from pathlib import Path

import pytest

from labs.scheduler_plugin.energy_aware import (
    DEFAULT_WATTS_PER_CORE,
    IDLE_WATTS_LABEL,
    WATTS_PER_CORE_LABEL,
    EnergyAware,
)
from minikube_py.api import Obj
from minikube_py.client.errors import NotFound
from minikube_py.client.rest import Client
from minikube_py.scheduler.config import load_configuration
from minikube_py.scheduler.framework.interface import CycleState, PluginArgsError
from minikube_py.scheduler.framework.types import PodInfo, Snapshot
from minikube_py.scheduler.plugins.registry import IN_TREE_PLUGINS
from minikube_py.scheduler.profile import build_framework
from minikube_py.scheduler.scheduler import select_host
from tests.api_helpers import eventually
from tests.test_scheduler import make_node, make_pod

REPO = Path(__file__).resolve().parents[1]
LAB_CONFIG = REPO / "labs" / "scheduler_plugin" / "scheduler-config.yaml"
PLUGIN_SPEC = "labs.scheduler_plugin.energy_aware:EnergyAware"
REGISTRY = {**IN_TREE_PLUGINS, EnergyAware.name: EnergyAware}


def node(name: str, watts: str | None = None, idle: str | None = None,
         **labels: str) -> Obj:
    """A 4-core node, labelled with its watts per core and idle watts when given."""
    if watts is not None:
        labels[WATTS_PER_CORE_LABEL] = watts
    if idle is not None:
        labels[IDLE_WATTS_LABEL] = idle
    return make_node(name, labels=labels)


def pod(cpu: str = "500m", node_name: str = "") -> Obj:
    made = make_pod(f"p-{uuid.uuid4().hex[:6]}", cpu=cpu)
    if not cpu:
        del made["spec"]["containers"][0]["resources"]
    made["metadata"].update(namespace="default", uid=uuid.uuid4().hex)
    if node_name:
        made["spec"]["nodeName"] = node_name
    return made


def normalized_scores(plugin: EnergyAware, incoming: Obj, nodes: list[Obj],
                      running: list[Obj]) -> dict[str, int]:
    """Score on every node, then NormalizeScore, as the framework runs them."""
    snapshot, pod_info, state = Snapshot.of(nodes, running), PodInfo.of(incoming), CycleState()
    scores = {}
    for info in snapshot.node_info_list:
        score, status = plugin.score(state, pod_info, info)
        assert status.is_success()
        scores[info.name] = score
    status = plugin.normalize_score(state, pod_info, scores)
    assert status is not None and status.is_success()
    return scores


@pytest.mark.parametrize(("args", "incoming", "nodes", "running", "expected"), [
    # 500m at 4 W/core is 2 W, at 16 W/core 8 W: 100 - 100 x 2/8
    ({}, pod(), [node("a", "4"), node("b", "16")], [], {"a": 75, "b": 0}),
    # an unlabelled node draws defaultWattsPerCore (10): 2.5 W against 5 W
    ({}, pod(), [node("a", "5"), node("b")], [], {"a": 50, "b": 0}),
    ({"defaultWattsPerCore": 20}, pod(), [node("a", "5"), node("b")], [],
     {"a": 75, "b": 0}),
    # a label that is not a non-negative number counts as the default too
    ({}, pod(), [node("a", "lots"), node("b", "20")], [], {"a": 50, "b": 0}),
    ({}, pod(), [node("a", "nan"), node("b", "20")], [], {"a": 50, "b": 0}),
    # a pod without requests counts 100m: 1 W against 3 W
    ({}, pod(cpu=""), [node("a", "10"), node("b", "30")], [], {"a": 67, "b": 0}),
    # waking an idle node costs its idle watts: 5 W against 5 W + 50 W
    ({}, pod(), [node("a", "10", "50"), node("b", "10", "50")], [pod(node_name="a")],
     {"a": 91, "b": 0}),
    # ... and can outweigh a better watts-per-core: 6 W against 2 W + 60 W
    ({}, pod(), [node("busy", "12"), node("idle", "4", "60")], [pod(node_name="busy")],
     {"busy": 91, "idle": 0}),
    # a node that already runs a pod without requests is awake as well
    ({}, pod(), [node("a", "10", "50"), node("b", "10", "50")], [pod(cpu="", node_name="a")],
     {"a": 91, "b": 0}),
    # busy nodes pay no idle watts: equal marginal power, equal (lowest) scores
    ({}, pod(), [node("a", "10", "50"), node("b", "10", "90")],
     [pod(node_name="a"), pod(node_name="b")], {"a": 0, "b": 0}),
    # nodes that need no extra watts at all all score 100
    ({}, pod(), [node("a", "0"), node("b", "0")], [], {"a": 100, "b": 100}),
    # wattsPerCoreLabel names the label to read; the default label is then ignored
    ({"wattsPerCoreLabel": "example.com/w"}, pod(),
     [node("a", **{"example.com/w": "2"}), node("b", "1")], [], {"a": 80, "b": 0}),
])
def test_energy_aware_prefers_the_node_the_pod_adds_the_fewest_watts_to(
        args: Obj, incoming: Obj, nodes: list[Obj], running: list[Obj],
        expected: dict[str, int]) -> None:
    assert normalized_scores(EnergyAware(args), incoming, nodes, running) == expected


@pytest.mark.parametrize(("labels", "running", "milliwatts"), [
    ({WATTS_PER_CORE_LABEL: "4.5"}, [], 2250),  # 500 millicores x 4.5 W/core
    ({WATTS_PER_CORE_LABEL: "4.5", IDLE_WATTS_LABEL: "60"}, [], 62250),
    ({WATTS_PER_CORE_LABEL: "4.5", IDLE_WATTS_LABEL: "60"}, [pod(node_name="n")], 2250),
    ({}, [], 500 * DEFAULT_WATTS_PER_CORE),
])
def test_energy_aware_raw_score_is_the_marginal_power_in_milliwatts(
        labels: dict[str, str], running: list[Obj], milliwatts: float) -> None:
    info = Snapshot.of([make_node("n", labels=labels)], running).get("n")
    assert info is not None
    score, status = EnergyAware().score(CycleState(), PodInfo.of(pod()), info)
    assert status.is_success()
    assert score == milliwatts


def test_energy_aware_args_default_to_the_documented_labels() -> None:
    plugin = EnergyAware()
    assert plugin.watts_per_core_label == "energy.minikube-py.io/watts-per-core"
    assert plugin.idle_watts_label == "energy.minikube-py.io/idle-watts"
    assert plugin.default_watts_per_core == 10.0
    assert plugin.events_to_register() == []


@pytest.mark.parametrize(("args", "message"), [
    ({"defaultWattsPerCore": -1},
     "defaultWattsPerCore: Invalid value: -1: must be a non-negative number"),
    ({"defaultWattsPerCore": "many"},
     'defaultWattsPerCore: Invalid value: "many": must be a non-negative number'),
    ({"idleWattsLabel": 7}, "idleWattsLabel: Invalid value: 7: must be a label key"),
    ({"wattsPerCoreLabel": "/watts", "defaultWattsPerCore": True},
     '[wattsPerCoreLabel: Invalid value: "/watts": prefix part must be non-empty, '
     "defaultWattsPerCore: Invalid value: true: must be a non-negative number]"),
])
def test_energy_aware_rejects_invalid_args_naming_the_field(args: Obj, message: str) -> None:
    with pytest.raises(PluginArgsError) as raised:
        EnergyAware(args)
    assert str(raised.value) == message


def test_lab_config_has_only_the_energy_aware_profile_with_energy_aware_weighted_5() -> None:
    config = load_configuration(LAB_CONFIG, set(REGISTRY))
    assert [profile.scheduler_name for profile in config.profiles] == ["energy-aware"]
    framework = build_framework(config.profiles[0], REGISTRY)
    assert framework.score_weights["EnergyAware"] == 5
    energy_aware = next(p for p in framework.plugins.score if p.name == "EnergyAware")
    assert isinstance(energy_aware, EnergyAware)
    assert energy_aware.default_watts_per_core == 12
    assert [p.name for p in framework.plugins.queue_sort] == ["PrioritySort"]
    assert [p.name for p in framework.plugins.bind] == ["DefaultBinder"]


def test_lab_profile_outweighs_spreading_and_picks_the_frugal_node() -> None:
    """Every Score plugin of the lab profile together: the frugal node wins although it
    already runs pods and LeastAllocated would spread onto the empty ones."""
    framework = build_framework(load_configuration(LAB_CONFIG, set(REGISTRY)).profiles[0],
                                REGISTRY)
    nodes = [node("frugal", "4"), node("hungry", "16"), node("unlabelled")]
    snapshot = Snapshot.of(nodes, [pod(cpu="1", node_name="frugal") for _ in range(2)])
    framework.set_snapshot(snapshot)
    state, incoming = CycleState(), PodInfo.of(pod())
    assert framework.run_pre_score_plugins(state, incoming, snapshot.node_info_list)\
        .is_success()
    totals, status = framework.run_score_plugins(state, incoming, snapshot.node_info_list)
    assert status.is_success()
    assert select_host(totals) == "frugal"


# -- the lab as students run it: a scheduler process with --plugin ------------------------------


async def run_scheduler(kubeconfig: Path, *extra: str) -> asyncio.subprocess.Process:
    """`python -m minikube_py.scheduler ...` from the repository root, as the README says."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])}
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "minikube_py.scheduler", f"--kubeconfig={kubeconfig}",
        *extra, cwd=REPO, env=env,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)


async def add_node(client: Client, name: str, labels: dict[str, str]) -> None:
    """A Node object with allocatable cpu set through its status (no kubelet runs)."""
    made = make_node(name, labels=labels)
    created = await client.resource("nodes").create(made)
    created["status"] = made["status"]
    await client.resource("nodes").update_status(created)


@pytest.mark.slow
async def test_lab_scheduler_places_energy_aware_pods_on_the_frugal_node_only(
        api_client: Client, kubeconfig: Path, namespace: str) -> None:
    prefix = f"ea-{uuid.uuid4().hex[:6]}"
    frugal, hungry, unlabelled = (f"{prefix}-frugal", f"{prefix}-hungry",
                                  f"{prefix}-unlabelled")
    pods = api_client.resource("pods")
    created_nodes: list[str] = []
    scheduler = await run_scheduler(kubeconfig, f"--config={LAB_CONFIG}",
                                    f"--plugin={PLUGIN_SPEC}", "--port=0")
    log: list[str] = []

    async def read_log() -> None:
        assert scheduler.stderr is not None
        async for line in scheduler.stderr:
            log.append(line.decode().rstrip())

    reader = asyncio.create_task(read_log())
    try:
        for name, labels in ((frugal, {WATTS_PER_CORE_LABEL: "4"}),
                             (hungry, {WATTS_PER_CORE_LABEL: "16"}), (unlabelled, {})):
            await add_node(api_client, name, labels)
            created_nodes.append(name)
        await pods.create(make_pod("left-to-the-default-scheduler"), namespace)
        names = [f"green-{index}" for index in range(3)]
        for name in names:
            await pods.create(make_pod(name, scheduler_name="energy-aware"), namespace)

        async def bound() -> dict[str, str] | None:
            listed = {p["metadata"]["name"]: p["spec"].get("nodeName", "")
                      for p in (await pods.list(namespace))["items"]}
            return listed if all(listed.get(name) for name in names) else None

        try:
            placed = await eventually(bound, timeout=30, what="the energy-aware pods to bind")
        except AssertionError as error:
            raise AssertionError(f"{error}; scheduler log: {log}") from None
        assert {placed[name] for name in names} == {frugal}
        assert placed["left-to-the-default-scheduler"] == ""
    finally:
        if scheduler.returncode is None:
            scheduler.kill()
        await scheduler.wait()
        await reader
        leftovers = [("pods", p["metadata"]["name"], namespace)
                     for p in (await pods.list(namespace))["items"]]
        for resource, name, where in [*leftovers, *(("nodes", n, None) for n in created_nodes)]:
            with contextlib.suppress(NotFound):
                await api_client.resource(resource).delete(name, where, grace_period_seconds=0)


@pytest.mark.slow
async def test_scheduler_exits_1_with_one_line_when_a_plugin_cannot_be_loaded(
        kubeconfig: Path) -> None:
    scheduler = await run_scheduler(kubeconfig, "--plugin=nonexistent.module:X", "--port=0")
    try:
        async with asyncio.timeout(60):
            _, stderr = await scheduler.communicate()
    finally:
        if scheduler.returncode is None:  # it did not exit: it is stopped here
            scheduler.kill()
            await scheduler.wait()
    assert scheduler.returncode == 1
    assert stderr.decode().splitlines() == [
        "scheduler: --plugin nonexistent.module:X: cannot load it: "
        "No module named 'nonexistent'"]
