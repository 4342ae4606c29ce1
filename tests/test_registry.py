"""The cluster's image registry: Debian's docker-registry, images pushed by our client, and
a node whose containerd pulls docker.io and registry.k8s.io names from it and nowhere else.

The end-to-end part runs a kubelet on a containerd of its own (configured with the
registry) and starts nginx and python pods by their tutorial names."""

from __future__ import annotations

import asyncio
import io
import json
import os
import shutil
import tarfile
import time
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from minikube_py.api import Obj
from minikube_py.client.rest import Client
from minikube_py.cluster.image_command import push_shipped_images, shipped_image_cache
from minikube_py.cluster.registry import BLOBS, RegistryProcess, StorageSeed, blobs
from minikube_py.cluster.runtime_setup import (
    runtime_missing,
)
from minikube_py.images.catalog import (
    BUSYBOX,
    NGINX,
    NGINX_TUTORIAL_TAGS,
    PAUSE,
    PYTHON,
    build_image,
)
from minikube_py.images.oci import MANIFEST_MEDIA_TYPE, ImageArchive
from minikube_py.images.registry import (
    ArchiveError,
    Reference,
    RegistryError,
    push,
    push_image,
    read_archive,
)
from minikube_py.process import free_port
from tests.node_fixtures import KubeletNode, node_pulling_from
from tests.test_kubelet import http_get, make_pod, pod_where


@pytest.mark.parametrize(("name", "expected"), [
    ("nginx", "docker.io/library/nginx:latest"),
    ("nginx:1.14.2", "docker.io/library/nginx:1.14.2"),
    ("bitnami/redis:7", "docker.io/bitnami/redis:7"),
    ("registry.k8s.io/pause:3.10", "registry.k8s.io/pause:3.10"),
    ("localhost/echo:1.0", "localhost/echo:1.0"),
    ("localhost:5000/team/app:v2", "localhost:5000/team/app:v2"),
])
def test_image_names_normalise_as_containerd_does(name: str, expected: str) -> None:
    assert str(Reference.parse(name)) == expected


def test_a_file_that_is_not_an_image_archive_is_refused_with_the_reason(tmp_path: Path) -> None:
    garbage = tmp_path / "notes.tar"
    garbage.write_bytes(b"these are not the bytes of a tar file" * 20)
    with pytest.raises(ArchiveError, match="not an image archive"):
        read_archive(garbage)
    plain = tmp_path / "plain.tar"
    with tarfile.open(plain, "w") as archive:
        data = b"hello"
        info = tarfile.TarInfo("hello.txt")
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    with pytest.raises(ArchiveError, match="no index.json nor manifest.json"):
        read_archive(plain)


def test_a_docker_save_archive_becomes_an_oci_manifest_over_the_same_blobs(
        tmp_path: Path) -> None:
    config = json.dumps({"architecture": "amd64", "os": "linux"}).encode()
    layer = b"layer bytes"
    archive_path = tmp_path / "saved.tar"
    with tarfile.open(archive_path, "w") as archive:
        for name, data in (("manifest.json", json.dumps([{
                "Config": "abc.json", "RepoTags": ["team/app:v1"],
                "Layers": ["l1/layer.tar"]}]).encode()),
                ("abc.json", config), ("l1/layer.tar", layer)):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    image = read_archive(archive_path)
    manifest = json.loads(image.manifest)
    assert image.names == ("team/app:v1",)
    assert [d["size"] for d in manifest["layers"]] == [len(layer)]
    assert set(image.blobs.values()) == {config, layer}


# -- a real registry -----------------------------------------------------------------------

@pytest.fixture(scope="module")
async def registry(fast_tmp: Path) -> AsyncIterator[RegistryProcess]:
    if shutil.which("docker-registry") is None:
        pytest.skip("docker-registry is not installed (apt-get install docker-registry)")
    async with RegistryProcess(fast_tmp / f"registry-{os.getpid()}", port=free_port()) as process:
        yield process


PUSHED = (PAUSE, BUSYBOX, NGINX, *NGINX_TUTORIAL_TAGS, PYTHON)


@pytest.fixture(scope="module")
def archives(fast_tmp: Path) -> dict[str, ImageArchive]:
    """The images the tests push: built once for the module."""
    output = fast_tmp / "registry-images"
    return {spec.name: build_image(spec, output) for spec in PUSHED}


@pytest.fixture(scope="module")
def pushed(registry: RegistryProcess, archives: dict[str, ImageArchive]) -> RegistryProcess:
    for spec in PUSHED:
        image = read_archive(archives[spec.name].path)
        for name in spec.names:
            push(image, registry.host, name)
    return registry


@pytest.mark.slow
def test_pushed_images_are_listed_under_every_tag(pushed: RegistryProcess) -> None:
    def tags(repository: str) -> list[str]:
        url = f"http://{pushed.host}/v2/{repository}/tags/list"
        with urllib.request.urlopen(url, timeout=5) as answer:
            return sorted(json.load(answer)["tags"])

    assert tags("library/nginx") == ["1.14.2", "1.15.4", "latest"]
    assert tags("library/busybox") == ["1.28", "1.36", "latest"]
    assert tags("library/python") == ["3", "3.11", "latest"]
    assert tags("pause") == ["3.10", "3.9"]  # registry.k8s.io/pause, and localhost/pause:3.9
    assert tags("busybox") == ["1.36"]  # localhost/busybox

    def digest(repository: str, tag: str) -> str:
        request = urllib.request.Request(
            f"http://{pushed.host}/v2/{repository}/manifests/{tag}", method="HEAD",
            headers={"Accept": MANIFEST_MEDIA_TYPE})
        with urllib.request.urlopen(request, timeout=5) as answer:
            return str(answer.headers["Docker-Content-Digest"])

    # nginx's tags are images of their own, python's are one image's names
    assert len({digest("library/nginx", tag) for tag in ("1.14.2", "1.15.4", "latest")}) == 3
    assert len({digest("library/python", tag) for tag in ("3", "3.11", "latest")}) == 1


@pytest.mark.slow
def test_pushing_to_a_registry_that_is_not_there_names_the_address(
        archives: dict[str, ImageArchive]) -> None:
    image = read_archive(archives[PAUSE.name].path)
    with pytest.raises(RegistryError, match="127.0.0.1:1"):
        push(image, "127.0.0.1:1", "pause:x")


def test_up_builds_the_shipped_images_once_for_every_home(
        registry: RegistryProcess, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """`up` pushes the shipped images from one folder of this user's cache, which outlives
    `down --purge`: a second `up` (another home, or the same one purged) pushes the
    archives the first built; a folder of older code is removed."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    cache = shipped_image_cache()
    assert cache.parent == tmp_path / "minikube-py" / "shipped-images"
    older = cache.parent / "0123456789abcdef"
    older.mkdir(parents=True)
    assert push_shipped_images(registry.host, specs=(PAUSE,)) == [
        f"built {PAUSE.name}: {cache / PAUSE.archive_name} (pushed to {registry.host} as "
        f"{', '.join(PAUSE.names)})"]
    built = (cache / PAUSE.archive_name).stat().st_mtime_ns
    push_shipped_images(registry.host, specs=(PAUSE,))
    assert (cache / PAUSE.archive_name).stat().st_mtime_ns == built
    assert not older.exists()


def blob_from(registry: RegistryProcess, repository: str, digest: str) -> bytes:
    url = f"http://{registry.host}/v2/{repository}/blobs/{digest}"
    with urllib.request.urlopen(url, timeout=10) as answer:
        return bytes(answer.read())


async def test_a_new_registry_starts_from_the_storage_the_first_one_filled(
        archives: dict[str, ImageArchive], fast_tmp: Path, tmp_path: Path) -> None:
    """`up` keeps a new registry's storage once its pushes are done (the seed), and the
    next new registry starts from it: the same pushes then find every tag up to date and
    upload nothing, and what it serves is the images' bytes. A push that has to upload (the
    images changed) drops the seed; a registry started again on its own storage leaves
    the seed alone."""
    if shutil.which("docker-registry") is None:
        pytest.skip("docker-registry is not installed (apt-get install docker-registry)")
    seed = StorageSeed(tmp_path / "cache" / "registry-seed")
    pause = read_archive(archives[PAUSE.name].path)
    first_dir, second_dir = (fast_tmp / f"seeded-{os.getpid()}-{n}" for n in (1, 2))
    async with RegistryProcess(first_dir, port=free_port(), seed=seed) as first:
        assert first.new_storage and first.seeded_blobs is None
        assert push_image(pause, first.host, "registry.k8s.io/pause:3.10").uploaded
        first.keep_seed()
    assert blobs(seed.folder) == blobs(first.storage) != set()

    async with RegistryProcess(second_dir, port=free_port(), seed=seed) as second:
        assert second.seeded_blobs == blobs(seed.folder)
        again = push_image(pause, second.host, "registry.k8s.io/pause:3.10")
        assert again.up_to_date and not again.uploaded
        for digest, content in pause.blobs.items():
            assert blob_from(second, "pause", digest) == content
        second.keep_seed()  # nothing new: the seed stays
        assert seed.folder.is_dir()
        busybox = read_archive(archives[BUSYBOX.name].path)
        assert push_image(busybox, second.host, "docker.io/library/busybox:1.36").uploaded
        second.keep_seed()
    assert not seed.folder.exists()
    # the seeded registry's own storage did not change with the seed's removal
    assert blobs(second.storage) >= {digest.removeprefix("sha256:") for digest in pause.blobs}

    async with RegistryProcess(first_dir, port=free_port(), seed=seed) as restarted:
        assert not restarted.new_storage
        restarted.keep_seed()
    assert not seed.folder.exists()


def test_a_seed_that_goes_away_while_copied_leaves_an_empty_storage(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another `up` may drop the seed while this one copies it: the storage is then left
    empty (the pushes fill it), never half a seed."""
    seed = StorageSeed(tmp_path / "seed")
    for digest in ("aa11", "bb22", "cc33"):
        folder = seed.folder / BLOBS / digest[:2] / digest
        folder.mkdir(parents=True)
        (folder / "data").write_bytes(digest.encode())
    storage = tmp_path / "storage"
    storage.mkdir()
    assert seed.fill(storage) == {"aa11", "bb22", "cc33"}
    assert (storage / BLOBS / "bb" / "bb22" / "data").read_bytes() == b"bb22"

    shutil.rmtree(storage)
    storage.mkdir()
    copied = []

    def gone_after_one(source: Path, target: Path, *, link: bool) -> None:
        if copied:
            raise FileNotFoundError(source)
        copied.append(source)
        shutil.copyfile(source, target)

    monkeypatch.setattr("minikube_py.cluster.registry._link_or_copy", gone_after_one)
    assert seed.fill(storage) is None
    assert list(storage.iterdir()) == []


# -- a node that pulls from it ---------------------------------------------------------------

@pytest.fixture(scope="module")
async def registry_node(pushed: RegistryProcess, fast_tmp: Path, kubeconfig: Path,
                        apiserver: Any) -> AsyncIterator[KubeletNode]:
    """A containerd configured with the registry, and a kubelet on it."""
    reason = runtime_missing()
    if reason is not None:
        pytest.skip(reason)
    async with node_pulling_from(pushed.host, f"registry-test-{os.getpid()}",
                                 fast_tmp / "registry-node", fast_tmp / "kubelet",
                                 kubeconfig) as node:
        yield node


async def answer_when_listening(url: str) -> str:
    """The page at `url` once the server in the pod listens (Running comes first: the pods
    have no readiness probe)."""
    deadline = time.monotonic() + 60  # a bound for failures only
    while True:
        try:
            return await http_get(url)
        except (OSError, aiohttp.ClientError, TimeoutError):
            assert time.monotonic() < deadline, f"nothing answered at {url}"
            await asyncio.sleep(0.2)


def running_with_ip(pod: Obj) -> Obj | None:
    status = pod.get("status") or {}
    return pod if status.get("phase") == "Running" and status.get("podIP") else None


@pytest.mark.slow
async def test_nginx_by_its_tutorial_name_is_pulled_and_serves_its_welcome_page(
        registry_node: KubeletNode, api_client: Client, namespace: str) -> None:
    pod = make_pod("web", registry_node, [{"name": "nginx", "image": "nginx:1.14.2",
                                           "imagePullPolicy": "Always"}])
    await api_client.resource("pods").create(pod, namespace)
    running = await pod_where(api_client, namespace, "web", running_with_ip, timeout=60)
    page = await answer_when_listening(f"http://{running['status']['podIP']}:80/")
    assert "Welcome to nginx!" in page
    assert "This is minikube-py's image nginx:1.14.2" in page  # each tag its own image
    image_id = running["status"]["containerStatuses"][0]["imageID"]
    assert image_id.startswith("docker.io/library/nginx@sha256:")


@pytest.mark.slow
async def test_python_image_runs_an_http_server(
        registry_node: KubeletNode, api_client: Client, namespace: str) -> None:
    pod = make_pod("py", registry_node, [{
        "name": "python", "image": "python:3",
        "command": ["python3", "-m", "http.server", "8000"]}])
    await api_client.resource("pods").create(pod, namespace)
    running = await pod_where(api_client, namespace, "py", running_with_ip, timeout=60)
    listing = await answer_when_listening(f"http://{running['status']['podIP']}:8000/")
    assert "Directory listing for /" in listing


@pytest.mark.slow
async def test_an_image_the_registry_lacks_fails_fast_with_err_image_pull(
        registry_node: KubeletNode, api_client: Client, namespace: str) -> None:
    pod = make_pod("nope", registry_node, [{"name": "c", "image": "nginx:0.0.0-none"}])
    started = time.monotonic()
    await api_client.resource("pods").create(pod, namespace)

    def pull_failed(pod: Obj) -> Obj | None:
        for status in (pod.get("status") or {}).get("containerStatuses") or []:
            reason = (status.get("state", {}).get("waiting") or {}).get("reason")
            if reason in ("ErrImagePull", "ImagePullBackOff"):
                return status
        return None

    pod = await pod_where(api_client, namespace, "nope", pull_failed, timeout=30)
    assert time.monotonic() - started < 30
    status = pull_failed(pod)
    assert status is not None
    message = status["state"]["waiting"].get("message", "")
    assert "not found" in message, message
