"""The simulated CRI runtime behaves as containerd does, without running anything."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import grpc
import pytest

from minikube_py.cri import CRIError
from minikube_py.gen.cri import api_pb2
from minikube_py.kubelet.simulated import SimulatedRuntime, normalize_image

UNKNOWN_ID = "0123456789abcdef" * 4


class FakeClock:
    """Nanoseconds since the epoch, advanced by hand."""

    def __init__(self) -> None:
        self.now = 1_000_000_000

    def __call__(self) -> int:
        return self.now


def sandbox_config(name: str = "web", *, attempt: int = 0, host_network: bool = False,
                   labels: dict[str, str] | None = None) -> api_pb2.PodSandboxConfig:
    network = api_pb2.NODE if host_network else api_pb2.POD
    return api_pb2.PodSandboxConfig(
        metadata=api_pb2.PodSandboxMetadata(name=name, uid=f"uid-{name}", namespace="default",
                                            attempt=attempt),
        hostname=name, log_directory=f"/var/log/pods/default_{name}_uid-{name}",
        labels=labels or {"app": name}, annotations={"note": name},
        linux=api_pb2.LinuxPodSandboxConfig(security_context=api_pb2.LinuxSandboxSecurityContext(
            namespace_options=api_pb2.NamespaceOption(network=network))))


async def run_sandbox(runtime: SimulatedRuntime, config: api_pb2.PodSandboxConfig) -> str:
    answer = await runtime.run_pod_sandbox(api_pb2.RunPodSandboxRequest(config=config))
    return answer.pod_sandbox_id


async def create(runtime: SimulatedRuntime, sandbox_id: str, name: str = "app", *,
                 attempt: int = 0, image: str = "busybox:1.36",
                 labels: dict[str, str] | None = None) -> str:
    pulled = await runtime.pull_image(api_pb2.PullImageRequest(
        image=api_pb2.ImageSpec(image=image)))
    answer = await runtime.create_container(api_pb2.CreateContainerRequest(
        pod_sandbox_id=sandbox_id,
        config=api_pb2.ContainerConfig(
            metadata=api_pb2.ContainerMetadata(name=name, attempt=attempt),
            image=api_pb2.ImageSpec(image=pulled.image_ref), command=["sleep", "3600"],
            labels=labels or {"container": name}, log_path=f"{name}/{attempt}.log")))
    return answer.container_id


async def container_status(runtime: SimulatedRuntime, container_id: str) -> Any:
    answer = await runtime.container_status(
        api_pb2.ContainerStatusRequest(container_id=container_id))
    return answer.status


async def sandbox_status(runtime: SimulatedRuntime, sandbox_id: str) -> Any:
    answer = await runtime.pod_sandbox_status(
        api_pb2.PodSandboxStatusRequest(pod_sandbox_id=sandbox_id))
    return answer.status


# -- the runtime itself -------------------------------------------------------------------

async def test_version_names_the_simulated_runtime_and_cri_v1() -> None:
    answer = await SimulatedRuntime().version(api_pb2.VersionRequest())
    assert (answer.runtime_name, answer.runtime_version, answer.runtime_api_version) == (
        "simulated", "0.1.0", "v1")


async def test_status_reports_runtime_and_network_ready() -> None:
    answer = await SimulatedRuntime().status(api_pb2.StatusRequest())
    assert {(c.type, c.status) for c in answer.status.conditions} == {
        ("RuntimeReady", True), ("NetworkReady", True)}


# -- sandboxes ----------------------------------------------------------------------------

async def test_sandbox_is_ready_with_a_pod_ip_and_keeps_its_config() -> None:
    clock = FakeClock()
    runtime = SimulatedRuntime(pod_cidr="10.250.3.0/24", clock=clock)
    sandbox_id = await run_sandbox(runtime, sandbox_config("web"))
    status = await sandbox_status(runtime, sandbox_id)
    assert len(sandbox_id) == 64
    assert status.state == api_pb2.SANDBOX_READY
    assert status.network.ip == "10.250.3.2"
    assert status.created_at == clock.now
    assert status.metadata.name == "web" and status.metadata.uid == "uid-web"
    assert dict(status.labels) == {"app": "web"}
    assert dict(status.annotations) == {"note": "web"}


async def test_host_network_sandbox_gets_no_pod_ip() -> None:
    runtime = SimulatedRuntime()
    sandbox_id = await run_sandbox(runtime, sandbox_config("host", host_network=True))
    status = await sandbox_status(runtime, sandbox_id)
    assert status.network.ip == ""
    assert status.linux.namespaces.options.network == api_pb2.NODE


async def test_stopped_sandbox_is_not_ready_and_has_released_its_ip() -> None:
    runtime = SimulatedRuntime()
    sandbox_id = await run_sandbox(runtime, sandbox_config("web"))
    await runtime.stop_pod_sandbox(api_pb2.StopPodSandboxRequest(pod_sandbox_id=sandbox_id))
    await runtime.stop_pod_sandbox(api_pb2.StopPodSandboxRequest(pod_sandbox_id=sandbox_id))
    status = await sandbox_status(runtime, sandbox_id)
    assert status.state == api_pb2.SANDBOX_NOTREADY
    assert status.network.ip == ""


async def test_pod_ips_are_never_shared_by_live_sandboxes() -> None:
    runtime = SimulatedRuntime(pod_cidr="10.250.0.0/29")  # .2 to .6: five pod addresses
    ids = [await run_sandbox(runtime, sandbox_config(f"p{i}")) for i in range(5)]
    ips = [(await sandbox_status(runtime, i)).network.ip for i in ids]
    assert ips == [f"10.250.0.{n}" for n in range(2, 7)]
    with pytest.raises(CRIError) as raised:
        await run_sandbox(runtime, sandbox_config("p5"))
    assert raised.value.code == grpc.StatusCode.UNKNOWN
    assert "no IP addresses available in range set: 10.250.0.2-10.250.0.6" in raised.value.message
    await runtime.stop_pod_sandbox(api_pb2.StopPodSandboxRequest(pod_sandbox_id=ids[1]))
    again = await run_sandbox(runtime, sandbox_config("p5"))
    assert (await sandbox_status(runtime, again)).network.ip == "10.250.0.3"


async def test_a_released_ip_is_not_handed_out_again_at_once() -> None:
    runtime = SimulatedRuntime(pod_cidr="10.250.0.0/24")
    first = await run_sandbox(runtime, sandbox_config("a"))
    await runtime.remove_pod_sandbox(api_pb2.RemovePodSandboxRequest(pod_sandbox_id=first))
    second = await run_sandbox(runtime, sandbox_config("b"))
    assert (await sandbox_status(runtime, second)).network.ip == "10.250.0.3"


async def test_a_sandbox_name_is_reserved_until_the_sandbox_is_removed() -> None:
    runtime = SimulatedRuntime()
    sandbox_id = await run_sandbox(runtime, sandbox_config("web"))
    with pytest.raises(CRIError) as raised:
        await run_sandbox(runtime, sandbox_config("web"))
    assert raised.value.code == grpc.StatusCode.UNKNOWN
    assert raised.value.message == (
        'failed to reserve sandbox name "web_default_uid-web_0": '
        f'name "web_default_uid-web_0" is reserved for "{sandbox_id}"')
    assert await run_sandbox(runtime, sandbox_config("web", attempt=1))
    await runtime.remove_pod_sandbox(api_pb2.RemovePodSandboxRequest(pod_sandbox_id=sandbox_id))
    assert await run_sandbox(runtime, sandbox_config("web"))


async def test_removing_a_sandbox_stops_it_and_removes_its_containers() -> None:
    runtime = SimulatedRuntime()
    sandbox_id = await run_sandbox(runtime, sandbox_config("web"))
    container_id = await create(runtime, sandbox_id)
    await runtime.remove_pod_sandbox(api_pb2.RemovePodSandboxRequest(pod_sandbox_id=sandbox_id))
    assert not (await runtime.list_pod_sandbox(api_pb2.ListPodSandboxRequest())).items
    assert not (await runtime.list_containers(api_pb2.ListContainersRequest())).containers
    with pytest.raises(CRIError):
        await container_status(runtime, container_id)
    assert runtime.ips.allocate() == "10.250.0.3"


# -- containers ---------------------------------------------------------------------------

async def test_container_goes_created_running_exited_with_times_from_the_clock() -> None:
    clock = FakeClock()
    runtime = SimulatedRuntime(clock=clock)
    sandbox_id = await run_sandbox(runtime, sandbox_config("web"))
    container_id = await create(runtime, sandbox_id)
    created = await container_status(runtime, container_id)
    assert (created.state, created.created_at, created.started_at) == (
        api_pb2.CONTAINER_CREATED, clock.now, 0)
    clock.now += 5
    await runtime.start_container(api_pb2.StartContainerRequest(container_id=container_id))
    running = await container_status(runtime, container_id)
    assert (running.state, running.started_at) == (api_pb2.CONTAINER_RUNNING, clock.now)
    clock.now += 5
    await runtime.stop_container(api_pb2.StopContainerRequest(container_id=container_id,
                                                              timeout=30))
    exited = await container_status(runtime, container_id)
    assert (exited.state, exited.exit_code, exited.reason, exited.finished_at) == (
        api_pb2.CONTAINER_EXITED, 0, "Completed", clock.now)


async def test_container_status_names_image_log_path_labels_as_containerd() -> None:
    runtime = SimulatedRuntime()
    sandbox_id = await run_sandbox(runtime, sandbox_config("web"))
    container_id = await create(runtime, sandbox_id, "app", attempt=2, image="busybox:1.36")
    status = await container_status(runtime, container_id)
    assert status.metadata.name == "app" and status.metadata.attempt == 2
    assert status.image.image == "docker.io/library/busybox:1.36"
    assert status.image_ref.startswith("docker.io/library/busybox@sha256:")
    assert status.image_id.startswith("sha256:")
    assert status.log_path == "/var/log/pods/default_web_uid-web/app/2.log"
    assert dict(status.labels) == {"container": "app"}


async def test_starting_a_container_twice_fails_as_in_containerd() -> None:
    runtime = SimulatedRuntime()
    container_id = await create(runtime, await run_sandbox(runtime, sandbox_config("web")))
    await runtime.start_container(api_pb2.StartContainerRequest(container_id=container_id))
    with pytest.raises(CRIError) as raised:
        await runtime.start_container(api_pb2.StartContainerRequest(container_id=container_id))
    assert raised.value.code == grpc.StatusCode.UNKNOWN
    assert raised.value.message.endswith("container is in CONTAINER_RUNNING state")


async def test_creating_a_container_needs_its_image_pulled_first() -> None:
    runtime = SimulatedRuntime()
    sandbox_id = await run_sandbox(runtime, sandbox_config("web"))
    with pytest.raises(CRIError) as raised:
        await runtime.create_container(api_pb2.CreateContainerRequest(
            pod_sandbox_id=sandbox_id, config=api_pb2.ContainerConfig(
                metadata=api_pb2.ContainerMetadata(name="app"),
                image=api_pb2.ImageSpec(image="nginx:1.27"))))
    assert raised.value.code == grpc.StatusCode.NOT_FOUND
    assert raised.value.message == 'failed to resolve image "nginx:1.27": not found'


async def test_a_container_name_and_attempt_is_reserved_within_its_sandbox() -> None:
    runtime = SimulatedRuntime()
    sandbox_id = await run_sandbox(runtime, sandbox_config("web"))
    first = await create(runtime, sandbox_id, "app")
    with pytest.raises(CRIError) as raised:
        await create(runtime, sandbox_id, "app")
    assert raised.value.message == (
        'failed to reserve container name "app_web_default_uid-web_0": '
        f'name "app_web_default_uid-web_0" is reserved for "{first}"')
    assert await create(runtime, sandbox_id, "app", attempt=1)
    await runtime.remove_container(api_pb2.RemoveContainerRequest(container_id=first))
    assert await create(runtime, sandbox_id, "app")


async def test_stopping_a_sandbox_stops_its_running_containers() -> None:
    runtime = SimulatedRuntime()
    sandbox_id = await run_sandbox(runtime, sandbox_config("web"))
    container_id = await create(runtime, sandbox_id)
    await runtime.start_container(api_pb2.StartContainerRequest(container_id=container_id))
    await runtime.stop_pod_sandbox(api_pb2.StopPodSandboxRequest(pod_sandbox_id=sandbox_id))
    assert (await container_status(runtime, container_id)).state == api_pb2.CONTAINER_EXITED


async def test_stopping_a_container_that_never_started_leaves_it_created() -> None:
    runtime = SimulatedRuntime()
    container_id = await create(runtime, await run_sandbox(runtime, sandbox_config("web")))
    await runtime.stop_container(api_pb2.StopContainerRequest(container_id=container_id))
    status = await container_status(runtime, container_id)
    assert (status.state, status.finished_at) == (api_pb2.CONTAINER_CREATED, 0)


async def test_exec_sync_succeeds_silently_only_in_a_running_container() -> None:
    runtime = SimulatedRuntime()
    container_id = await create(runtime, await run_sandbox(runtime, sandbox_config("web")))
    request = api_pb2.ExecSyncRequest(container_id=container_id, cmd=["cat", "/tmp/ready"])
    with pytest.raises(CRIError) as raised:
        await runtime.exec_sync(request)
    assert raised.value.message == (
        "failed to exec in container: container is in CONTAINER_CREATED state")
    await runtime.start_container(api_pb2.StartContainerRequest(container_id=container_id))
    answer = await runtime.exec_sync(request)
    assert (answer.exit_code, answer.stdout, answer.stderr) == (0, b"", b"")


async def test_start_delay_makes_create_and_start_take_that_long() -> None:
    runtime = SimulatedRuntime(start_delay=0.05)
    sandbox_id = await run_sandbox(runtime, sandbox_config("web"))
    started = time.monotonic()
    container_id = await create(runtime, sandbox_id)
    await runtime.start_container(api_pb2.StartContainerRequest(container_id=container_id))
    assert time.monotonic() - started >= 0.1


async def test_a_deadline_shorter_than_the_start_delay_is_exceeded() -> None:
    runtime = SimulatedRuntime(start_delay=0.2)
    container_id = await create(runtime, await run_sandbox(runtime, sandbox_config("web")))
    with pytest.raises(CRIError) as raised:
        await runtime.start_container(
            api_pb2.StartContainerRequest(container_id=container_id), timeout=0.01)
    assert raised.value.code == grpc.StatusCode.DEADLINE_EXCEEDED


# -- errors for unknown ids ---------------------------------------------------------------

NOT_FOUND_CASES: list[tuple[str, Callable[[SimulatedRuntime], Any], str]] = [
    ("container_status",
     lambda r: r.container_status(api_pb2.ContainerStatusRequest(container_id=UNKNOWN_ID)),
     f'an error occurred when try to find container "{UNKNOWN_ID}": not found'),
    ("start_container",
     lambda r: r.start_container(api_pb2.StartContainerRequest(container_id=UNKNOWN_ID)),
     f'an error occurred when try to find container "{UNKNOWN_ID}": not found'),
    ("stop_container",
     lambda r: r.stop_container(api_pb2.StopContainerRequest(container_id=UNKNOWN_ID)),
     f'an error occurred when try to find container "{UNKNOWN_ID}": not found'),
    ("exec_sync",
     lambda r: r.exec_sync(api_pb2.ExecSyncRequest(container_id=UNKNOWN_ID, cmd=["true"])),
     f'failed to exec in container: failed to find container "{UNKNOWN_ID}" in store: '
     "not found"),
    ("container_stats",
     lambda r: r.container_stats(api_pb2.ContainerStatsRequest(container_id=UNKNOWN_ID)),
     "failed to find container: not found"),
    ("pod_sandbox_status",
     lambda r: r.pod_sandbox_status(api_pb2.PodSandboxStatusRequest(pod_sandbox_id=UNKNOWN_ID)),
     "an error occurred when try to find sandbox: not found"),
    ("stop_pod_sandbox",
     lambda r: r.stop_pod_sandbox(api_pb2.StopPodSandboxRequest(pod_sandbox_id=UNKNOWN_ID)),
     f'an error occurred when try to find sandbox "{UNKNOWN_ID}": not found'),
    ("create_container",
     lambda r: r.create_container(api_pb2.CreateContainerRequest(
         pod_sandbox_id=UNKNOWN_ID, config=api_pb2.ContainerConfig(
             metadata=api_pb2.ContainerMetadata(name="app"),
             image=api_pb2.ImageSpec(image="busybox")))),
     f'failed to find sandbox id "{UNKNOWN_ID}": not found'),
]


@pytest.mark.parametrize(("rpc", "call", "message"), NOT_FOUND_CASES,
                         ids=[case[0] for case in NOT_FOUND_CASES])
async def test_unknown_ids_answer_not_found_with_containerds_message(
        rpc: str, call: Callable[[SimulatedRuntime], Any], message: str) -> None:
    with pytest.raises(CRIError) as raised:
        await call(SimulatedRuntime())
    assert (raised.value.code, raised.value.message) == (grpc.StatusCode.NOT_FOUND, message)


async def test_removing_unknown_containers_sandboxes_and_images_is_not_an_error() -> None:
    runtime = SimulatedRuntime()
    await runtime.remove_container(api_pb2.RemoveContainerRequest(container_id=UNKNOWN_ID))
    await runtime.remove_pod_sandbox(api_pb2.RemovePodSandboxRequest(pod_sandbox_id=UNKNOWN_ID))
    await runtime.remove_image(api_pb2.RemoveImageRequest(image=api_pb2.ImageSpec(image="x")))


# -- list filters -------------------------------------------------------------------------

async def two_pods(runtime: SimulatedRuntime) -> dict[str, str]:
    """Pod a (ready) with a running and a created container; pod b (stopped) with one."""
    a = await run_sandbox(runtime, sandbox_config("a", labels={"app": "web", "tier": "front"}))
    b = await run_sandbox(runtime, sandbox_config("b", labels={"app": "web", "tier": "back"}))
    ids = {"a": a, "b": b,
           "a1": await create(runtime, a, "one", labels={"app": "web", "role": "server"}),
           "a2": await create(runtime, a, "two", labels={"app": "web", "role": "sidecar"}),
           "b1": await create(runtime, b, "one", labels={"app": "db", "role": "server"})}
    for name in ("a1", "b1"):
        await runtime.start_container(api_pb2.StartContainerRequest(container_id=ids[name]))
    await runtime.stop_pod_sandbox(api_pb2.StopPodSandboxRequest(pod_sandbox_id=b))
    return ids


CONTAINER_FILTERS: list[tuple[str, Callable[[dict[str, str]], api_pb2.ContainerFilter],
                              set[str]]] = [
    ("no filter", lambda ids: api_pb2.ContainerFilter(), {"a1", "a2", "b1"}),
    ("by id", lambda ids: api_pb2.ContainerFilter(id=ids["a2"]), {"a2"}),
    ("by sandbox", lambda ids: api_pb2.ContainerFilter(pod_sandbox_id=ids["a"]), {"a1", "a2"}),
    ("state created is a real filter, not the default",
     lambda ids: api_pb2.ContainerFilter(
         state=api_pb2.ContainerStateValue(state=api_pb2.CONTAINER_CREATED)), {"a2"}),
    ("state running", lambda ids: api_pb2.ContainerFilter(
        state=api_pb2.ContainerStateValue(state=api_pb2.CONTAINER_RUNNING)), {"a1"}),
    ("state exited", lambda ids: api_pb2.ContainerFilter(
        state=api_pb2.ContainerStateValue(state=api_pb2.CONTAINER_EXITED)), {"b1"}),
    ("one label", lambda ids: api_pb2.ContainerFilter(label_selector={"role": "server"}),
     {"a1", "b1"}),
    ("labels are ANDed", lambda ids: api_pb2.ContainerFilter(
        label_selector={"app": "web", "role": "server"}), {"a1"}),
    ("a label value must match exactly",
     lambda ids: api_pb2.ContainerFilter(label_selector={"app": "we"}), set()),
    ("all fields are ANDed", lambda ids: api_pb2.ContainerFilter(
        pod_sandbox_id=ids["b"], label_selector={"role": "sidecar"}), set()),
    ("unknown id", lambda ids: api_pb2.ContainerFilter(id=UNKNOWN_ID), set()),
]


@pytest.mark.parametrize(("case", "make_filter", "expected"), CONTAINER_FILTERS,
                         ids=[case[0] for case in CONTAINER_FILTERS])
async def test_list_containers_filters_by_id_sandbox_state_and_labels(
        case: str, make_filter: Callable[[dict[str, str]], api_pb2.ContainerFilter],
        expected: set[str]) -> None:
    runtime = SimulatedRuntime()
    ids = await two_pods(runtime)
    answer = await runtime.list_containers(api_pb2.ListContainersRequest(
        filter=make_filter(ids)))
    assert {c.id for c in answer.containers} == {ids[name] for name in expected}


SANDBOX_FILTERS: list[tuple[str, Callable[[dict[str, str]], api_pb2.PodSandboxFilter],
                            set[str]]] = [
    ("no filter", lambda ids: api_pb2.PodSandboxFilter(), {"a", "b"}),
    ("by id", lambda ids: api_pb2.PodSandboxFilter(id=ids["b"]), {"b"}),
    ("state ready is a real filter, not the default", lambda ids: api_pb2.PodSandboxFilter(
        state=api_pb2.PodSandboxStateValue(state=api_pb2.SANDBOX_READY)), {"a"}),
    ("state not ready", lambda ids: api_pb2.PodSandboxFilter(
        state=api_pb2.PodSandboxStateValue(state=api_pb2.SANDBOX_NOTREADY)), {"b"}),
    ("labels are ANDed", lambda ids: api_pb2.PodSandboxFilter(
        label_selector={"app": "web", "tier": "back"}), {"b"}),
    ("all fields are ANDed", lambda ids: api_pb2.PodSandboxFilter(
        id=ids["a"], state=api_pb2.PodSandboxStateValue(state=api_pb2.SANDBOX_NOTREADY)),
     set()),
]


@pytest.mark.parametrize(("case", "make_filter", "expected"), SANDBOX_FILTERS,
                         ids=[case[0] for case in SANDBOX_FILTERS])
async def test_list_pod_sandbox_filters_by_id_state_and_labels(
        case: str, make_filter: Callable[[dict[str, str]], api_pb2.PodSandboxFilter],
        expected: set[str]) -> None:
    runtime = SimulatedRuntime()
    ids = await two_pods(runtime)
    answer = await runtime.list_pod_sandbox(api_pb2.ListPodSandboxRequest(
        filter=make_filter(ids)))
    assert {s.id for s in answer.items} == {ids[name] for name in expected}


async def test_listed_containers_carry_sandbox_metadata_image_and_labels() -> None:
    runtime = SimulatedRuntime()
    ids = await two_pods(runtime)
    answer = await runtime.list_containers(api_pb2.ListContainersRequest(
        filter=api_pb2.ContainerFilter(id=ids["a1"])))
    (container,) = answer.containers
    assert container.pod_sandbox_id == ids["a"]
    assert container.metadata.name == "one"
    assert container.image_ref.startswith("sha256:")
    assert dict(container.labels) == {"app": "web", "role": "server"}


# -- stats --------------------------------------------------------------------------------

async def test_stats_are_zero_and_cover_running_containers_of_ready_sandboxes() -> None:
    runtime = SimulatedRuntime()
    ids = await two_pods(runtime)
    containers = await runtime.list_container_stats(api_pb2.ListContainerStatsRequest())
    assert [s.attributes.id for s in containers.stats] == [ids["a1"]]
    (stats,) = containers.stats
    assert stats.cpu.usage_core_nano_seconds.value == 0
    assert stats.memory.working_set_bytes.value == 0
    assert stats.writable_layer.used_bytes.value == 0
    sandboxes = await runtime.list_pod_sandbox_stats(api_pb2.ListPodSandboxStatsRequest())
    assert [s.attributes.id for s in sandboxes.stats] == [ids["a"]]
    assert [c.attributes.id for c in sandboxes.stats[0].linux.containers] == [ids["a1"]]
    one = await runtime.container_stats(api_pb2.ContainerStatsRequest(container_id=ids["a2"]))
    assert one.stats.attributes.id == ids["a2"]


async def test_list_container_stats_filters_by_sandbox_and_labels() -> None:
    runtime = SimulatedRuntime()
    ids = await two_pods(runtime)
    other_sandbox = await runtime.list_container_stats(api_pb2.ListContainerStatsRequest(
        filter=api_pb2.ContainerStatsFilter(pod_sandbox_id=ids["b"])))
    wrong_label = await runtime.list_container_stats(api_pb2.ListContainerStatsRequest(
        filter=api_pb2.ContainerStatsFilter(label_selector={"role": "sidecar"})))
    assert not other_sandbox.stats and not wrong_label.stats


# -- images -------------------------------------------------------------------------------

@pytest.mark.parametrize(("name", "reference"), [
    ("busybox", "docker.io/library/busybox:latest"),
    ("busybox:1.36", "docker.io/library/busybox:1.36"),
    ("library/busybox", "docker.io/library/busybox:latest"),
    ("bitnami/redis:7", "docker.io/bitnami/redis:7"),
    ("registry.k8s.io/pause:3.9", "registry.k8s.io/pause:3.9"),
    ("localhost:5000/app", "localhost:5000/app:latest"),
    ("localhost/minikube-py/pause:1", "localhost/minikube-py/pause:1"),
    ("busybox@sha256:" + "a" * 64, "docker.io/library/busybox@sha256:" + "a" * 64),
])
def test_image_names_are_normalized_as_containerd_does(name: str, reference: str) -> None:
    assert normalize_image(name) == reference


async def test_pulled_image_is_found_by_any_of_its_names_and_its_id() -> None:
    runtime = SimulatedRuntime()
    pulled = await runtime.pull_image(api_pb2.PullImageRequest(
        image=api_pb2.ImageSpec(image="busybox")))
    assert pulled.image_ref.startswith("sha256:")
    again = await runtime.pull_image(api_pb2.PullImageRequest(
        image=api_pb2.ImageSpec(image="docker.io/library/busybox:latest")))
    assert again.image_ref == pulled.image_ref
    image = None
    for name in ("busybox", "busybox:latest", pulled.image_ref, pulled.image_ref[7:]):
        answer = await runtime.image_status(api_pb2.ImageStatusRequest(
            image=api_pb2.ImageSpec(image=name)))
        assert answer.image.id == pulled.image_ref, name
        image = answer.image
    assert image is not None
    assert list(image.repo_tags) == ["docker.io/library/busybox:latest"]
    assert image.size > 0


async def test_image_status_of_a_missing_image_has_no_image() -> None:
    answer = await SimulatedRuntime().image_status(api_pb2.ImageStatusRequest(
        image=api_pb2.ImageSpec(image="busybox")))
    assert not answer.HasField("image")


async def test_list_images_lists_pulled_images_and_honours_the_filter() -> None:
    runtime = SimulatedRuntime()
    for name in ("busybox:1.36", "nginx:1.27"):
        await runtime.pull_image(api_pb2.PullImageRequest(image=api_pb2.ImageSpec(image=name)))
    every = await runtime.list_images(api_pb2.ListImagesRequest())
    assert sorted(tag for image in every.images for tag in image.repo_tags) == [
        "docker.io/library/busybox:1.36", "docker.io/library/nginx:1.27"]
    only = await runtime.list_images(api_pb2.ListImagesRequest(
        filter=api_pb2.ImageFilter(image=api_pb2.ImageSpec(image="nginx:1.27"))))
    assert [list(image.repo_tags) for image in only.images] == [["docker.io/library/nginx:1.27"]]


async def test_removed_image_is_gone_under_every_name_and_frees_image_fs() -> None:
    runtime = SimulatedRuntime()
    pulled = await runtime.pull_image(api_pb2.PullImageRequest(
        image=api_pb2.ImageSpec(image="busybox")))
    before = await runtime.image_fs_info(api_pb2.ImageFsInfoRequest())
    assert before.image_filesystems[0].used_bytes.value > 0
    await runtime.remove_image(api_pb2.RemoveImageRequest(
        image=api_pb2.ImageSpec(image=pulled.image_ref)))
    for name in ("busybox", pulled.image_ref):
        answer = await runtime.image_status(api_pb2.ImageStatusRequest(
            image=api_pb2.ImageSpec(image=name)))
        assert not answer.HasField("image")
    after = await runtime.image_fs_info(api_pb2.ImageFsInfoRequest())
    assert after.image_filesystems[0].used_bytes.value == 0


async def test_close_forgets_everything() -> None:
    runtime = SimulatedRuntime()
    await two_pods(runtime)
    async with runtime:
        pass
    assert not (await runtime.list_pod_sandbox(api_pb2.ListPodSandboxRequest())).items
    assert not (await runtime.list_images(api_pb2.ListImagesRequest())).images
