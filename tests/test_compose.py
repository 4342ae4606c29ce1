"""docker-compose.yml and its Dockerfile: a valid file whose every command the project runs,
starting the cluster `minikube-py up` builds (its kubeadm layout): a control-plane node
whose kubelet runs the control plane as static pods, two workers, the add-ons.

Without a Docker engine, what is checked (tests/test_compose_up.py runs the stack):
- Debian's docker-compose (1.29) validates the file: `docker-compose config` reads and
  checks it without talking to an engine;
- every `python -m MODULE FLAGS` of a service, and of compose/node.sh (as bash expands
  it for each node), is parsed by the module's own argument parser with abbreviations
  off: the module exists and takes exactly those flags;
- the static pods the control-plane node writes (its static-pods step, run here): each
  container's command is taken by its component's parser (etcd's flags are in
  `etcd --help`), every file it names through a hostPath mount is in the control-plane
  node's share of the pki, and the flags that secure the cluster are those `up` passes;
  etcd listens on the node's loopback only;
- the registry's config is what the launcher's code writes; the node script exists, is
  executable and parses;
- the pki step, run here with each named volume a directory: every file a service's
  flags name is in the volume it mounts, the CA's key only where it must be, the
  certificates (read with `cryptography`) name who and where they must; the join step
  refuses a bad token or hash in one line;
- the commands agree with each other: the kubeconfigs name the control-plane node's
  address, the kubelets use the kube-dns Service IP the init step gives DNS, the nodes'
  pod CIDRs differ and route to each other, the kubelet's runtime endpoint is where
  runtime-config's containerd listens;
- (slow) the pki step, the API server and controller-manager static pods' commands, the
  init step and a worker's join, run here on loopback: the node's kubelet earns its
  certificate, and kubectl reaches the API server with the admin's kubeconfig as
  README.md says;
- the Dockerfile installs the Debian packages `make apt` installs and generates
  minikube_py/gen as `make proto` does.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import importlib
import importlib.util
import io
import ipaddress
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest import mock
from urllib.parse import urlsplit

import pytest
import yaml
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from minikube_py.cluster import compose as compose_setup
from minikube_py.cluster.apiserver import APIServerProcess, ServingTLS
from minikube_py.cluster.certs import IDENTITIES, ClusterCertificates
from minikube_py.cluster.cli import (
    apiserver_tls,
    secured_apiserver_flags,
    secured_controller_manager_flags,
    secured_kubelet_flags,
)
from minikube_py.cluster.components import ControllerManagerProcess
from minikube_py.cluster.etcd import EtcdProcess
from minikube_py.cluster.join import token_file
from minikube_py.cluster.registry import CONFIG as REGISTRY_CONFIG
from minikube_py.cluster.registry import REGISTRY_BINARY
from minikube_py.images.components import COMPONENTS, ETCD
from minikube_py.kubelet import certificate
from minikube_py.process import free_port
from minikube_py.security import pki

ROOT = Path(__file__).resolve().parent.parent
COMPOSE_FILE = ROOT / "docker-compose.yml"
README = ROOT / "README.md"
DOCKERFILE = ROOT / "Dockerfile"
MAKEFILE = ROOT / "Makefile"
SERVICES = {"pki", "control-plane", "init", "traces", "registry", "images", "node-1",
            "node-2"}
CONTROL_PLANE = "control-plane"
WORKERS = ("node-1", "node-2")
NODES = (CONTROL_PLANE, *WORKERS)
STATIC_PODS = {"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"}
MODULE_OF = {component.name: component.module for component in COMPONENTS}
"""The module each component image's program runs (images/components.py)."""
IDENTITY_OF = {"kube-controller-manager": "controller-manager",
               "kube-scheduler": "scheduler"}
"""The kubeconfig (cluster/certs.py's IDENTITIES) each static pod runs with, as in `up`."""
KUBEADM_DIR = Path("/etc/kubernetes")
"""Where kubeadm's static pods see the pki and kubeconfigs (the layout of `up`'s state)."""
HOST_ONLY_PACKAGES = {"docker-compose", "docker.io", "debootstrap", "haproxy", "chromium",
                      "chromium-driver"}
"""Packages of `make apt` that the image leaves out: Docker, docker-compose and debootstrap
(which makes the base image) run on the host, and so do haproxy (`up --ha`'s endpoint) and
chromium (the dashboard's browser tests)."""

ASSIGNMENT = re.compile(r"^[A-Z_]+=")
REQUIRED_VARIABLE = re.compile(r"\$\{(\w+):\?")
REDIRECTION = re.compile(r"\s(?:\d*>|&)")
KUBECTL = str(Path(sys.executable).with_name("kubectl"))
SCRIPT_PROGRAMS = ("python", "containerd")


# -- reading the files -----------------------------------------------------------------------

def compose() -> dict[str, Any]:
    return yaml.safe_load(COMPOSE_FILE.read_text())


def services() -> dict[str, dict[str, Any]]:
    return compose()["services"]


def image_project_dir() -> str:
    """Where the Dockerfile puts the project in the image (its WORKDIR)."""
    match = re.search(r"^WORKDIR\s+(\S+)", DOCKERFILE.read_text(), re.MULTILINE)
    assert match, "the Dockerfile sets no WORKDIR"
    return match.group(1).rstrip("/")


def in_repository(image_path: str) -> Path:
    """The repository file that a path of the image is (the Dockerfile copies the project)."""
    prefix = image_project_dir() + "/"
    assert image_path.startswith(prefix), f"{image_path} is not in the project ({prefix})"
    return ROOT / image_path.removeprefix(prefix)


def fixed_address(service: str) -> str:
    return services()[service]["networks"]["default"]["ipv4_address"]


def script_commands(script: Path, environment: dict[str, str]) -> list[list[str]]:
    """The python and containerd command lines of `script`, each word as bash expands it
    with `environment` (what the compose file and the container give the script) and the
    script's own plain assignments (NAME=value lines; those running a command, such as
    NODE_IP=$(ip ...), come from `environment` instead). Redirections are left out."""
    text = script.read_text().replace("\\\n", " ")
    assignments = [line for line in text.splitlines()
                   if ASSIGNMENT.match(line) and "$(" not in line]
    commands = []
    for line in text.splitlines():
        words = line.strip()
        if not words.startswith(tuple(f"{program} " for program in SCRIPT_PROGRAMS)):
            continue
        words = REDIRECTION.split(words, maxsplit=1)[0]
        program = "\n".join(["set -u", *assignments, f"printf '%s\\0' {words}"])
        expanded = subprocess.run(["bash", "-c", program], capture_output=True, text=True,
                                  env={"PATH": os.environ["PATH"], **environment})
        assert expanded.returncode == 0, f"{script.name}: {words}: {expanded.stderr}"
        commands.append(expanded.stdout.split("\0")[:-1])
    return commands


def node_environment(service: str) -> dict[str, str]:
    """What node.sh gets: the service's environment, and NODE_IP as eth0 will have it."""
    return {**services()[service]["environment"], "NODE_IP": fixed_address(service)}


def node_commands(service: str) -> dict[str, list[str]]:
    """The node script's commands for one node service, by program or python module."""
    script = in_repository(services()[service]["command"][0])
    commands = {}
    for command in script_commands(script, node_environment(service)):
        key = command[2] if command[:2] == ["python", "-m"] else command[0]
        if key == "minikube_py.cluster.compose":
            key = f"{key} {command[3]}"
        commands[key] = command
    return commands


def python_commands() -> Iterator[tuple[str, list[str]]]:
    """(where, command) for every `python -m` of the services and of the node script."""
    for name, service in services().items():
        command = service.get("command") or []
        if command[:2] == ["python", "-m"]:
            yield name, command
    for node in NODES:
        for command in node_commands(node).values():
            if command[:2] == ["python", "-m"]:
                yield f"{node} (compose/node.sh)", command


def node_step(node: str, step: str) -> argparse.Namespace:
    """The flags of node.sh's `python -m minikube_py.cluster.compose STEP` on `node`."""
    command = node_commands(node)[f"minikube_py.cluster.compose {step}"]
    return parse("minikube_py.cluster.compose", command[3:], node)


# -- parsing flags with the components' own parsers ------------------------------------------

@contextlib.contextmanager
def exact_flags() -> Iterator[None]:
    """argparse with abbreviations off, so `--kube` is not taken for `--kubeconfig`."""
    init = argparse.ArgumentParser.__init__

    def without_abbreviations(self: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **{**kwargs, "allow_abbrev": False})

    with mock.patch.object(argparse.ArgumentParser, "__init__", without_abbreviations):
        yield


def parse(module: str, flags: list[str], where: str) -> argparse.Namespace:
    """The flags of `python -m module` in `where`, as the module's own build_parser() or
    parse_args() parses them; fails the test with argparse's message if it rejects them."""
    spec = importlib.util.find_spec(module)
    assert spec is not None, f"no module {module}"
    is_package = spec.submodule_search_locations is not None
    main = importlib.import_module(f"{module}.__main__" if is_package else module)
    errors = io.StringIO()
    try:
        with exact_flags(), contextlib.redirect_stderr(errors):
            if hasattr(main, "build_parser"):
                return main.build_parser().parse_args(flags)
            return main.parse_args(flags)
    except SystemExit:
        pytest.fail(f"{where}: python -m {module} rejects {flags}: "
                    f"{errors.getvalue().strip()}")


def parsed(where: str, module: str) -> argparse.Namespace:
    """The flags of `python -m module` in service (or node script) `where`."""
    for place, command in python_commands():
        if place.startswith(where) and command[2] == module:
            return parse(module, command[3:], place)
    raise AssertionError(f"{where} runs no python -m {module}")


# -- the services' volumes -------------------------------------------------------------------

def mounts(service: str) -> dict[str, tuple[str, bool]]:
    """The named volumes `service` mounts: volume -> (where, read-only)."""
    found = {}
    for mount in services()[service].get("volumes", []):
        volume, mountpoint, *mode = mount.split(":")
        found[volume] = (mountpoint, mode == ["ro"])
    return found


def volume_of(service: str, path: str | Path) -> tuple[str, str]:
    """The named volume a path of `service` is in, and the path inside that volume."""
    path = str(path)
    for volume, (mountpoint, _) in sorted(mounts(service).items(),
                                          key=lambda mount: -len(mount[1][0])):
        if path == mountpoint or path.startswith(f"{mountpoint}/"):
            return volume, path.removeprefix(mountpoint).lstrip("/")
    raise AssertionError(f"{service}: {path} is in none of its volumes")


def pki_state_volume() -> str:
    """The pki step's own volume: the CA and everything made with it."""
    return volume_of("pki", parsed("pki", "minikube_py.cluster.compose").state)[0]


def share(service: str) -> str:
    """The volume holding `service`'s share of what the pki step made."""
    shares = [volume for volume in mounts(service)
              if volume in mounts("pki") and volume != pki_state_volume()]
    assert len(shares) == 1, f"{service} mounts {len(shares)} shares of the pki step: {shares}"
    return shares[0]


def certs_seen_by(service: str) -> ClusterCertificates:
    """The cluster's files where `service` sees them: its share is laid out as `up`'s
    state directory, at the share's mountpoint."""
    return ClusterCertificates(Path(mounts(service)[share(service)][0]))


@dataclass
class Container:
    """`service`'s filesystem, for running its commands here: each named volume it mounts
    is a directory of `volumes`, found at its mountpoint under `root`."""

    service: str
    root: Path
    volumes: Path

    def __post_init__(self) -> None:
        for volume, (mountpoint, _) in mounts(self.service).items():
            (self.volumes / volume).mkdir(parents=True, exist_ok=True)
            link = self.path(mountpoint)
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(self.volumes / volume, target_is_directory=True)

    def path(self, inside: str | Path) -> Path:
        return self.root / str(inside).lstrip("/")

    def flags(self, command: list[str], replace: dict[str, str] | None = None) -> list[str]:
        """The flags of a `python -m` command, each absolute path moved under root and
        those named in `replace` ({"--server": ...}) given its value."""
        flags = []
        for flag in command[3:]:
            name, equals, value = flag.partition("=")
            if replace and name in replace:
                value = replace[name]
            elif value.startswith("/"):
                value = str(self.path(value))
            flags.append(f"{name}{equals}{value}" if equals else flag)
        return flags


def run_pki_step(root: Path, volumes: Path, replace: dict[str, str] | None = None) -> None:
    """The pki service's command, writing into `volumes`."""
    pki = Container("pki", root, volumes)
    compose_setup.main(pki.flags(services()["pki"]["command"], replace))


@pytest.fixture(scope="module")
def volumes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The named volumes once the pki service has run: <volumes>/<volume>/..."""
    written = tmp_path_factory.mktemp("volumes")
    run_pki_step(tmp_path_factory.mktemp("pki-container"), written)
    return written


REFERENCES = {**{component.name: f"localhost/minikube-py/{component.name}:v1.37.0-test"
                 for component in COMPONENTS}, ETCD: "localhost/minikube-py/etcd:3.4.23-test"}
"""What the image's component-images step writes (the tags here stand for its hash)."""


def run_static_pods_step(root: Path, volumes: Path) -> Path:
    """The control-plane node's static-pods step, its paths under `root` (the image's
    component images' references given): the manifest folder it wrote."""
    node = Container(CONTROL_PLANE, root, volumes)
    command = node_commands(CONTROL_PLANE)["minikube_py.cluster.compose static-pods"]
    flags = node.flags(command)
    step = parse("minikube_py.cluster.compose", flags, CONTROL_PLANE)
    step.images.mkdir(parents=True, exist_ok=True)
    (step.images / compose_setup.REFERENCES).write_text(json.dumps(REFERENCES))
    compose_setup.main(flags)
    return step.manifest_dir


@dataclass
class StaticPod:
    """A static pod as the control-plane node's kubelet reads it; its hostPaths are under
    `root`, the node's filesystem here."""

    pod: dict[str, Any]
    root: Path

    @property
    def container(self) -> dict[str, Any]:
        return self.pod["spec"]["containers"][0]

    @property
    def flags(self) -> list[str]:
        return self.container["command"][1:]

    def flag(self, name: str) -> str:
        values = [flag.partition("=")[2] for flag in self.flags
                  if flag.partition("=")[0] == name]
        assert len(values) == 1, f"{self.pod['metadata']['name']}: {name}: {values}"
        return values[0]

    def host_path(self, inside: str) -> Path:
        """Where a path the container names is on the node (under root): through the
        hostPath volume mounted deepest above it."""
        volumes = {volume["name"]: volume["hostPath"]["path"]
                   for volume in self.pod["spec"]["volumes"]}
        for mount in sorted(self.container["volumeMounts"],
                            key=lambda mount: -len(mount["mountPath"])):
            mountpoint = mount["mountPath"]
            if inside == mountpoint or inside.startswith(f"{mountpoint}/"):
                return Path(volumes[mount["name"]]) / inside.removeprefix(
                    mountpoint).lstrip("/")
        raise AssertionError(f"{self.pod['metadata']['name']}: {inside} is mounted from "
                             "nothing")


@pytest.fixture(scope="module")
def static_pods(tmp_path_factory: pytest.TempPathFactory, volumes: Path
                ) -> dict[str, StaticPod]:
    """The four static pods by component (their mirror pods' names add -control-plane),
    as the control-plane node's static-pods step writes them after the pki step."""
    root = tmp_path_factory.mktemp("control-plane-container")
    folder = run_static_pods_step(root, volumes)
    return {pod["metadata"]["name"]: StaticPod(pod, root)
            for pod in (yaml.safe_load(path.read_text())
                        for path in sorted(folder.glob("*.yaml")))}


def in_volume(volumes: Path, service: str, path: str | Path) -> Path:
    """Where a file `service` names is, among `volumes`."""
    volume, inside = volume_of(service, path)
    return volumes / volume / inside


def certificate_in(volumes: Path, service: str, path: str | Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(in_volume(volumes, service, path).read_bytes())


def cluster_ca(volumes: Path) -> x509.Certificate:
    return certificate_in(volumes, CONTROL_PLANE, certs_seen_by(CONTROL_PLANE).ca_file)


def client_subject(kubeconfig: dict[str, Any]) -> tuple[str, tuple[str, ...]]:
    """(CN, Os) of the client certificate a kubeconfig embeds: the user and its groups."""
    user = kubeconfig["users"][0]["user"]
    cert = x509.load_pem_x509_certificate(base64.b64decode(user["client-certificate-data"]))
    return (str(cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value),
            tuple(str(attribute.value) for attribute in
                  cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)))


def readme_admin_kubeconfig() -> str:
    """The kubeconfig README.md's `kubectl --kubeconfig PATH get nodes` names (relative to
    the repository)."""
    match = re.search(r"kubectl --kubeconfig (\S+) get nodes", README.read_text())
    assert match, "README.md says not where the admin's kubeconfig is"
    return match.group(1)


def bind_mount_of(service: str, path: str) -> Path:
    """The folder of this machine (relative to the compose file) that `service` sees at
    `path`'s folder, by its bind mount (`./FOLDER:MOUNTPOINT`)."""
    for volume, (mountpoint, _) in mounts(service).items():
        if volume.startswith("./") and path.startswith(f"{mountpoint}/"):
            return ROOT / volume / path.removeprefix(f"{mountpoint}/")
    raise AssertionError(f"{service} has no bind mount holding {path}")


# -- the compose file ------------------------------------------------------------------------

def test_docker_compose_validates_the_file_without_an_engine() -> None:
    if shutil.which("docker-compose") is None:
        pytest.skip("docker-compose is not installed: `make apt` installs it (Debian's "
                    "docker-compose package)")
    # an engine address where none answers: `config` reads and checks the file only
    no_engine = {**os.environ, "DOCKER_HOST": "unix:///nonexistent/docker.sock"}
    checked = subprocess.run(["docker-compose", "-f", str(COMPOSE_FILE), "config", "--quiet"],
                             cwd=ROOT, env=no_engine, capture_output=True, text=True,
                             timeout=60)
    assert checked.returncode == 0, checked.stderr
    listed = subprocess.run(["docker-compose", "-f", str(COMPOSE_FILE), "config", "--services"],
                            cwd=ROOT, env=no_engine, capture_output=True, text=True,
                            timeout=60, check=True)
    assert set(listed.stdout.split()) == SERVICES


def test_every_python_command_is_a_module_that_takes_exactly_its_flags() -> None:
    modules = set()
    for where, command in python_commands():
        parse(command[2], command[3:], where)
        modules.add(command[2])
    assert {"minikube_py.kubelet", "minikube_py.cluster.compose",
            "minikube_py.tracestore"} <= modules


def test_the_control_plane_runs_as_static_pods_each_taking_exactly_its_flags(
        static_pods: dict[str, StaticPod]) -> None:
    """The control-plane node's kubelet runs kubeadm's four static pods; each container's
    program is its component image's, which runs our module, whose parser takes the
    flags (etcd's are in `etcd --help`)."""
    assert set(static_pods) == STATIC_PODS
    for pod in static_pods.values():
        assert pod.pod["spec"]["hostNetwork"] is True
        assert pod.container["image"] == REFERENCES[pod.container["name"]]
        program = pod.container["command"][0]
        if program == ETCD:
            if shutil.which("etcd") is None:
                continue
            help_text = subprocess.run(["etcd", "--help"], capture_output=True, text=True,
                                       timeout=30).stdout
            for flag in pod.flags:
                name = flag.partition("=")[0]
                assert re.search(rf"^\s+{re.escape(name)}\b", help_text, re.MULTILINE), \
                    f"etcd has no flag {name}"
        else:
            parse(MODULE_OF[program], pod.flags, pod.pod["metadata"]["name"])
    kubelet = parsed(CONTROL_PLANE, "minikube_py.kubelet")
    assert Path(kubelet.pod_manifest_path) == node_step(CONTROL_PLANE,
                                                        "static-pods").manifest_dir


def test_registry_serves_the_launchers_config_from_its_volume() -> None:
    service = services()["registry"]
    binary, verb, config_path = service["command"]
    assert (binary, verb) == (REGISTRY_BINARY, "serve")
    config = yaml.safe_load(in_repository(config_path).read_text())
    storage = config["storage"]["filesystem"]["rootdirectory"]
    assert config == yaml.safe_load(REGISTRY_CONFIG.format(storage=storage,
                                                           address=config["http"]["addr"]))
    assert any(volume.endswith(f":{storage}") for volume in service["volumes"])


def test_etcd_is_reached_by_the_apiserver_alone(static_pods: dict[str, StaticPod]) -> None:
    """As kubeadm's: etcd serves its clients on the control-plane node's loopback, which
    only the node's own host-network pods share; no service publishes its ports."""
    etcd = static_pods["etcd"]
    listen = etcd.flag("--listen-client-urls").split(",")
    assert [urlsplit(url).hostname for url in listen] == ["127.0.0.1"]
    assert urlsplit(etcd.flag("--listen-peer-urls")).hostname == "127.0.0.1"
    api = static_pods["kube-apiserver"]
    assert api.flag("--etcd-servers") == listen[0]
    published = [port for service in services().values() for port in service.get("ports", [])]
    assert published == ["127.0.0.1:6443:6443", "127.0.0.1:4318:4318"]
    assert set(compose()["networks"]) == {"default"}


def test_nodes_have_their_own_pod_cidr_and_route_to_each_others() -> None:
    cluster_cidr = ipaddress.ip_network(parsed("init", "minikube_py.cluster.compose")
                                        .cluster_cidr)
    subnet = ipaddress.ip_network(compose()["networks"]["default"]["ipam"]["config"][0]
                                  ["subnet"])
    cidrs = {}
    for node in NODES:
        kubelet = parsed(node, "minikube_py.kubelet")
        assert kubelet.node_name == node
        assert kubelet.node_ip == fixed_address(node)
        assert ipaddress.ip_address(kubelet.node_ip) in subnet
        cidrs[node] = ipaddress.ip_network(kubelet.pod_cidr)
        assert cidrs[node].subnet_of(cluster_cidr)
    assert not any(cidrs[one].overlaps(cidrs[other]) for one in NODES for other in NODES
                   if one != other)
    for node in NODES:
        routes = dict(route.split("=") for route in
                      services()[node]["environment"]["POD_ROUTES"].split())
        assert routes == {str(cidrs[other]): fixed_address(other)
                          for other in NODES if other != node}


def test_node_script_exists_is_executable_and_parses() -> None:
    for node in NODES:
        command = services()[node]["command"]
        script = in_repository(command[0])
        assert script.is_file() and os.access(script, os.X_OK), f"{script} is not executable"
        syntax = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
        assert syntax.returncode == 0, syntax.stderr
        required = set(REQUIRED_VARIABLE.findall(script.read_text()))
        assert required <= set(services()[node]["environment"]), required


def registry_host() -> str:
    """The registry service as the nodes and the images service name it: service:port."""
    config_path = services()["registry"]["command"][2]
    address = yaml.safe_load(in_repository(config_path).read_text())["http"]["addr"]
    return f"registry:{address.rpartition(':')[2]}"


def test_kubelet_uses_the_containerd_dns_and_registry_the_cluster_sets_up() -> None:
    init = parsed("init", "minikube_py.cluster.compose")
    images = parsed("images", "minikube_py.cluster.compose")
    assert images.registry == registry_host()
    # the component images the static pods and add-ons name are the image's, pushed
    assert images.component_images == init.images == node_step(CONTROL_PLANE,
                                                               "static-pods").images
    for node in NODES:
        commands = node_commands(node)
        setup = parse("minikube_py.cluster.compose",
                      commands["minikube_py.cluster.compose runtime-config"][3:], node)
        runtime = compose_setup.node_runtime(setup)
        kubelet = parsed(node, "minikube_py.kubelet")
        assert commands["containerd"] == ["containerd", f"--config={runtime.config_path}"]
        assert kubelet.container_runtime_endpoint == runtime.endpoint
        assert (setup.node_name, setup.pod_cidr) == (kubelet.node_name, kubelet.pod_cidr)
        assert kubelet.cluster_dns == init.cluster_dns
        assert setup.registry == registry_host()


def test_runtime_config_writes_the_config_containerd_starts_from(tmp_path: Path) -> None:
    """node.sh's runtime-config step, run here with the node's base dir moved to tmp_path."""
    flags = node_commands("node-1")["minikube_py.cluster.compose runtime-config"][3:]
    base_dir = parse("minikube_py.cluster.compose", flags, "node-1").base_dir
    moved = [flag.replace(str(base_dir), str(tmp_path)) for flag in flags]
    compose_setup.main(moved)
    runtime = compose_setup.node_runtime(parse("minikube_py.cluster.compose", moved, "test"))
    with runtime.config_path.open("rb") as file:
        settings = tomllib.load(file)
    assert settings["grpc"]["address"] == str(runtime.socket)
    assert (runtime.cni_conf_dir / "10-minikube-py.conflist").is_file()
    hosts = (runtime.hosts_dir / "docker.io" / "hosts.toml").read_text()
    assert f'server = "http://{registry_host()}"' in hosts


def test_every_node_mounts_the_local_path_volume_the_provisioner_makes_volumes_in() -> None:
    init = parsed("init", "minikube_py.cluster.compose")
    assert sorted(init.node) == sorted(NODES)
    for node in NODES:
        volume, inside = volume_of(node, init.nodes_dir)
        assert (volume, inside) == ("local-path", "") and not mounts(node)[volume][1]


# -- the secured cluster ---------------------------------------------------------------------

def test_etcd_serves_tls_to_clients_of_its_own_ca_as_up_runs_it(
        static_pods: dict[str, StaticPod]) -> None:
    """etcd's serving flags are those `up` gives it, at kubeadm's paths; its certificate
    names the address the API server dials; the API server presents a client certificate
    of etcd's CA."""
    kubeadm = ClusterCertificates(KUBEADM_DIR)
    etcd = static_pods["etcd"]
    api = static_pods["kube-apiserver"]
    assert set(kubeadm.etcd_tls().flags()) <= set(etcd.flags)
    assert set(kubeadm.apiserver_etcd_flags()) <= set(api.flags)
    etcd_ca = x509.load_pem_x509_certificate(
        etcd.host_path(etcd.flag("--trusted-ca-file")).read_bytes())
    cert = x509.load_pem_x509_certificate(etcd.host_path(etcd.flag("--cert-file")).read_bytes())
    cert.verify_directly_issued_by(etcd_ca)
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    host = urlsplit(api.flag("--etcd-servers")).hostname
    assert ipaddress.ip_address(host) in names.get_values_for_type(x509.IPAddress)
    client = x509.load_pem_x509_certificate(
        api.host_path(api.flag("--etcd-certfile")).read_bytes())
    client.verify_directly_issued_by(etcd_ca)


def test_every_component_up_traces_sends_its_spans_to_the_traces_service(
        static_pods: dict[str, StaticPod]) -> None:
    """As with `up`: the controller-manager, the scheduler, each node's kubelet and the
    add-ons take --tracing-endpoint, the API server a TracingConfiguration, all naming the
    traces service where it listens; init tells mkctl where it is published."""
    receiver = parsed("traces", "minikube_py.tracestore")
    address = fixed_address("traces")
    endpoint = f"http://{address}:{receiver.port}"
    for name in ("kube-controller-manager", "kube-scheduler"):
        assert static_pods[name].flag("--tracing-endpoint") == endpoint
    for node in NODES:
        assert parsed(node, "minikube_py.kubelet").tracing_endpoint == endpoint
    init = parsed("init", "minikube_py.cluster.compose")
    assert init.tracing_endpoint == endpoint
    api = static_pods["kube-apiserver"]
    config = yaml.safe_load(api.host_path(api.flag("--tracing-config-file")).read_text())
    assert config["kind"] == "TracingConfiguration"
    assert config["endpoint"] == f"{address}:{receiver.port}"
    assert services()["traces"]["ports"] == [f"127.0.0.1:{receiver.port}:{receiver.port}"]
    assert init.trace_receiver_url == f"http://127.0.0.1:{receiver.port}"


def test_apiserver_serves_tls_with_the_flags_up_passes(
        static_pods: dict[str, StaticPod]) -> None:
    kubeadm = ClusterCertificates(KUBEADM_DIR)
    api = static_pods["kube-apiserver"]
    expected = [*apiserver_tls(kubeadm).flags(), *secured_apiserver_flags(kubeadm),
                *kubeadm.apiserver_etcd_flags()]
    assert set(expected) <= set(api.flags), set(expected) - set(api.flags)
    # the kubernetes Service's endpoint, where pods reach it through 10.96.0.1
    assert api.flag("--advertise-address") == fixed_address(CONTROL_PLANE)
    port = api.flag("--port")
    assert services()[CONTROL_PLANE]["ports"] == [f"127.0.0.1:{port}:{port}"]
    check = " ".join(services()[CONTROL_PLANE]["healthcheck"]["test"])
    assert f"https://127.0.0.1:{port}/readyz" in check
    assert f"cafile='{certs_seen_by(CONTROL_PLANE).ca_file}'" in check


def test_controller_manager_signs_with_the_cluster_ca_as_up_runs_it(
        static_pods: dict[str, StaticPod]) -> None:
    manager = static_pods["kube-controller-manager"]
    flags = secured_controller_manager_flags(ClusterCertificates(KUBEADM_DIR))
    assert set(flags) <= set(manager.flags), set(flags) - set(manager.flags)


def test_each_component_runs_with_a_kubeconfig_of_its_own(
        static_pods: dict[str, StaticPod]) -> None:
    """The controller-manager and the scheduler each with its identity, naming the API
    server at the control-plane node's address."""
    server = parsed("pki", "minikube_py.cluster.compose").server
    assert urlsplit(server).hostname == fixed_address(CONTROL_PLANE)
    for name, who in IDENTITY_OF.items():
        pod = static_pods[name]
        written = yaml.safe_load(pod.host_path(pod.flag("--kubeconfig")).read_text())
        assert written["clusters"][0]["cluster"]["server"] == server
        assert client_subject(written) == (IDENTITIES[who][0], IDENTITIES[who][1]), name


def test_control_plane_kubelet_runs_as_its_node_from_kubeadm_inits_kubelet_conf(
        volumes: Path) -> None:
    kubelet = parsed(CONTROL_PLANE, "minikube_py.kubelet")
    # node.sh copies the share's kubelet.conf where the kubelet renews it
    assert volume_of(CONTROL_PLANE, kubelet.kubeconfig)[0] == f"{CONTROL_PLANE}-data"
    written = yaml.safe_load(in_volume(volumes, CONTROL_PLANE, certs_seen_by(
        CONTROL_PLANE).kubeconfig(CONTROL_PLANE)).read_text())
    assert client_subject(written) == (f"system:node:{CONTROL_PLANE}", ("system:nodes",))
    # no cluster to bootstrap from: its kubelet starts the API server
    assert not kubelet.bootstrap_kubeconfig
    assert kubelet.register_with_taints == [
        {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]
    assert parsed("init", "minikube_py.cluster.compose").control_plane == CONTROL_PLANE


def test_workers_join_with_the_token_and_the_ca_hash_then_bootstrap_their_kubelet() -> None:
    init = parsed("init", "minikube_py.cluster.compose")
    server = parsed("pki", "minikube_py.cluster.compose").server
    assert init.server == server
    for node in WORKERS:
        commands = node_commands(node)
        join = parse("minikube_py.cluster.compose",
                     commands["minikube_py.cluster.compose join"][3:], node)
        kubelet = parsed(node, "minikube_py.kubelet")
        certs = certs_seen_by(node)
        assert join.server == server
        assert join.ca_cert == certs.ca_file
        # the token init writes, in the volume both mount (the node may only read it)
        token = volume_of(node, join.token_file)
        assert token == volume_of("init", token_file(init.state))
        assert mounts(node)[token[0]][1] and not mounts("init")[token[0]][1]
        assert kubelet.bootstrap_kubeconfig == str(join.bootstrap_kubeconfig)
        assert kubelet.rotate_certificates
        assert kubelet.pod_manifest_path is None
        # the kubelet writes its kubeconfig and certificate where the node keeps its data
        for written in (kubelet.kubeconfig, kubelet.bootstrap_kubeconfig, kubelet.root_dir):
            volume, _ = volume_of(node, written)
            assert volume == f"{node}-data" and not mounts(node)[volume][1]
        expected = secured_kubelet_flags(certs, node)
        assert set(expected) <= set(commands["minikube_py.kubelet"]), \
            set(expected) - set(commands["minikube_py.kubelet"])


def test_every_file_a_service_names_is_in_the_share_it_mounts(
        volumes: Path, static_pods: dict[str, StaticPod]) -> None:
    """After the pki step: each path a command names in a volume that step writes is
    there (the kubelets' certificates, the admin's kubeconfig...), and so is each file a
    static pod names through its hostPath mounts (the API server's and etcd's TLS files,
    the controller-manager's kubeconfig...)."""
    named = 0
    for where, command in python_commands():
        service = where.split()[0]
        if service == "pki":
            continue
        for flag in command[3:]:
            value = flag.partition("=")[2]
            if not value.startswith("/") or not any(
                    value.startswith(f"{mountpoint}/")
                    for volume, (mountpoint, _) in mounts(service).items()
                    if volume in mounts("pki")):
                continue
            assert in_volume(volumes, service, value).exists(), f"{where}: {flag}"
            named += 1
    for pod in static_pods.values():
        for flag in pod.flags:
            value = flag.partition("=")[2]
            if value.startswith(f"{KUBEADM_DIR}/"):
                assert pod.host_path(value).is_file(), f"{pod.pod['metadata']['name']}: {flag}"
                named += 1
    assert named >= 30


def test_only_the_pki_step_and_the_control_plane_node_see_the_cas_key(volumes: Path) -> None:
    holding = {path.relative_to(volumes).parts[0] for path in volumes.rglob("ca.key")}
    assert holding == {pki_state_volume(), share(CONTROL_PLANE)}
    assert {service for service in services() if holding & set(mounts(service))} == {
        "pki", CONTROL_PLANE}
    for service in set(services()) - {"pki"}:
        for volume, (_, read_only) in mounts(service).items():
            assert read_only or volume not in mounts("pki"), f"{service} may write {volume}"
    # each service sees nothing of the pki step's but its own share
    for service in set(services()) - {"pki"}:
        assert len(set(mounts(service)) & set(mounts("pki"))) <= 1, service
    # a worker's share: the CA and its kubelet's serving certificate, nothing else
    for node in WORKERS:
        files = {path.relative_to(volumes / share(node)).as_posix()
                 for path in (volumes / share(node)).rglob("*") if path.is_file()}
        assert files == {"pki/ca.crt", f"pki/{node}/kubelet.crt", f"pki/{node}/kubelet.key"}


def test_the_apiserver_certificate_names_every_way_it_is_reached(
        volumes: Path, static_pods: dict[str, StaticPod]) -> None:
    api = static_pods["kube-apiserver"]
    cert = x509.load_pem_x509_certificate(
        api.host_path(api.flag("--tls-cert-file")).read_bytes())
    cert.verify_directly_issued_by(cluster_ca(volumes))
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    dns_names = set(names.get_values_for_type(x509.DNSName))
    addresses = {str(address) for address in names.get_values_for_type(x509.IPAddress)}
    assert {"kubernetes", "kubernetes.default", "kubernetes.default.svc",
            "kubernetes.default.svc.cluster.local"} <= dns_names
    server_host = urlsplit(parsed("pki", "minikube_py.cluster.compose").server).hostname
    assert {"127.0.0.1", "10.96.0.1", api.flag("--advertise-address"),
            server_host} <= addresses
    assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == \
        "kube-apiserver"


def test_each_kubelet_serves_with_a_certificate_for_its_name_and_address(
        volumes: Path) -> None:
    for node in NODES:
        kubelet = parsed(node, "minikube_py.kubelet")
        cert = certificate_in(volumes, node, kubelet.tls_cert_file)
        cert.verify_directly_issued_by(cluster_ca(volumes))
        names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        assert names.get_values_for_type(x509.DNSName) == [node]
        assert [str(ip) for ip in names.get_values_for_type(x509.IPAddress)] == [
            kubelet.node_ip]
        usages = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
        assert ExtendedKeyUsageOID.SERVER_AUTH in usages
        assert in_volume(volumes, node, kubelet.tls_private_key_file).stat().st_mode \
            & 0o077 == 0


def test_readme_names_the_kubeconfig_init_writes_to_this_machine(volumes: Path) -> None:
    """README's kubeconfig is the file init writes into its bind mount: the admin's
    (whose share init mounts), at the address the API server is published at."""
    init = parsed("init", "minikube_py.cluster.compose")
    assert bind_mount_of("init", str(init.kubeconfig_out)) == (
        ROOT / readme_admin_kubeconfig())
    admin = yaml.safe_load(in_volume(volumes, "init", init.kubeconfig).read_text())
    assert client_subject(admin) == (IDENTITIES["admin"][0], IDENTITIES["admin"][1])
    published = services()[CONTROL_PLANE]["ports"][0].rpartition(":")[2]
    assert init.kubeconfig_server == f"https://127.0.0.1:{published}"


def test_certs_keeps_the_ca_and_the_keys_at_a_second_run(tmp_path: Path) -> None:
    written = tmp_path / "volumes"
    run_pki_step(tmp_path / "first", written)
    state = written / pki_state_volume()
    kept = {name: (state / "pki" / name).read_bytes()
            for name in ("ca.crt", "ca.key", "sa.key", "apiserver.crt")}
    run_pki_step(tmp_path / "second", written)
    assert {name: (state / "pki" / name).read_bytes() for name in kept} == kept
    assert (written / share(CONTROL_PLANE) / "pki" / "ca.crt").read_bytes() == kept["ca.crt"]


@pytest.mark.parametrize(("token", "pin", "message"), [
    ("not-a-token", None, "join: couldn't validate the identity of the API Server: the "
                          "bootstrap token is not of the form"),
    ("abcdef.0123456789abcdef", "sha256:1234",
     "join: couldn't validate the identity of the API Server: invalid discovery token CA "
     "certificate hash 'sha256:1234'"),
    ("abcdef.0123456789abcdef", "no certificate",
     "join: cannot read a PEM certificate from --ca-cert"),
    (None, None, "join: cannot read the bootstrap token"),
])
def test_join_with_a_bad_token_or_hash_says_so_in_one_line(
        tmp_path: Path, token: str | None, pin: str | None, message: str) -> None:
    ca = tmp_path / "ca.crt"
    ca.write_bytes(pki.new_ca().cert_pem)
    token_path = tmp_path / "token"
    if token is not None:
        token_path.write_text(token + "\n")
    flags = ["join", "--server=https://127.0.0.1:9", f"--token-file={token_path}",
             f"--bootstrap-kubeconfig={tmp_path / 'bootstrap.conf'}"]
    if pin is None:
        flags.append(f"--ca-cert={ca}")
    elif pin.startswith("sha256:"):
        flags.append(f"--discovery-token-ca-cert-hash={pin}")
    else:
        ca.write_text(pin)
        flags.append(f"--ca-cert={ca}")
    joined = subprocess.run([sys.executable, "-m", "minikube_py.cluster.compose", *flags],
                            capture_output=True, text=True, timeout=60,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert joined.returncode != 0
    assert joined.stderr.startswith(message), joined.stderr
    assert joined.stderr.count("\n") == 1, joined.stderr
    assert not (tmp_path / "bootstrap.conf").exists()


def test_init_without_a_kubeconfig_says_so_in_one_line(tmp_path: Path) -> None:
    command = services()["init"]["command"]
    flags = [flag for flag in command[3:]
             if not flag.startswith(("--kubeconfig=", "--state=", "--kubeconfig-out="))]
    with pytest.raises(SystemExit) as refused:
        compose_setup.main([*flags, f"--kubeconfig={tmp_path / 'admin.conf'}",
                            f"--state={tmp_path}"])
    message = str(refused.value.code)
    assert message.startswith("init: no kubeconfig found at ")
    assert "\n" not in message
    assert not token_file(tmp_path).exists()


# -- the control plane's commands, run here ------------------------------------------------

def without(flags: list[str], names: set[str]) -> tuple[str, ...]:
    return tuple(flag for flag in flags if flag.partition("=")[0] not in names)


def on_this_machine(pod: StaticPod) -> list[str]:
    """The static pod's flags with each path it names through a hostPath mount replaced
    by that file's path here."""
    flags = []
    for flag in pod.flags:
        name, equals, value = flag.partition("=")
        if value.startswith(f"{KUBEADM_DIR}/"):
            value = str(pod.host_path(value))
        flags.append(f"{name}{equals}{value}" if equals else flag)
    return flags


def kubectl(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([KUBECTL, *args], capture_output=True, text=True, timeout=30)


@pytest.mark.slow
async def test_node_1s_join_earns_its_kubelet_certificate_from_the_compose_control_plane(
        private_etcd: EtcdProcess, tmp_path: Path) -> None:
    """The pki step, the control-plane node's static-pods step, the API server's and the
    controller-manager's static pods' commands, the init step and node-1's join, run here
    with the volumes as directories; the API server listens on loopback (no compose
    network: the kubeconfigs name it https://localhost:PORT, not the control-plane
    node's address). No node starts: the control-plane node is registered by hand for
    init to mark it, and node-1's kubelet's first step, its TLS bootstrap, runs here
    with the kubelet's flags from the compose file and earns the node's client
    certificate; kubectl reaches the API server with the admin's kubeconfig as README.md
    says, and finds the add-ons init applied."""
    port = free_port()
    server = {"--server": f"https://localhost:{port}"}
    volumes = tmp_path / "volumes"
    run_pki_step(tmp_path / "pki", volumes, server)
    folder = run_static_pods_step(tmp_path / CONTROL_PLANE, volumes)
    pods = {pod["metadata"]["name"]: StaticPod(pod, tmp_path / CONTROL_PLANE)
            for pod in (yaml.safe_load(path.read_text()) for path in folder.glob("*.yaml"))}
    flags = on_this_machine(pods["kube-apiserver"])
    tls = parse("minikube_py.apiserver", flags, "kube-apiserver")
    api = APIServerProcess(
        [private_etcd.client_url], tmp_path / "apiserver.log", port=port,
        tls=ServingTLS(Path(tls.tls_cert_file), Path(tls.tls_private_key_file),
                       Path(tls.client_ca_file)),
        extra_args=without(flags, {"--etcd-servers", "--etcd-cafile", "--etcd-certfile",
                                   "--etcd-keyfile", "--bind-address", "--port",
                                   "--advertise-address", "--tls-cert-file",
                                   "--tls-private-key-file", "--client-ca-file",
                                   "--tracing-config-file"}))
    flags = on_this_machine(pods["kube-controller-manager"])
    controllers = ControllerManagerProcess(
        Path(parse("minikube_py.controllers", flags, "kube-controller-manager").kubeconfig),
        tmp_path / "controller-manager.log",
        extra_args=without(flags, {"--kubeconfig", "--bind-address", "--port",
                                   "--tracing-endpoint"}))
    async with api, controllers:
        init = Container("init", tmp_path / "init", volumes)
        init_flags = init.flags(services()["init"]["command"],
                                {**server, "--kubeconfig-server": f"https://127.0.0.1:{port}"})
        admin_kubeconfig = parse("minikube_py.cluster.compose", init_flags, "init").kubeconfig
        node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": CONTROL_PLANE}}
        registered = subprocess.run([KUBECTL, f"--kubeconfig={admin_kubeconfig}", "create",
                                     "-f", "-"], input=json.dumps(node), capture_output=True,
                                    text=True, timeout=30)
        assert registered.returncode == 0, registered.stderr
        images = parse("minikube_py.cluster.compose", init_flags, "init").images
        images.mkdir(parents=True, exist_ok=True)
        (images / compose_setup.REFERENCES).write_text(json.dumps(REFERENCES))
        await asyncio.to_thread(compose_setup.main, init_flags)
        worker = Container("node-1", tmp_path / "node-1", volumes)
        command = node_commands("node-1")["minikube_py.cluster.compose join"]
        await asyncio.to_thread(compose_setup.main, worker.flags(command, server))
        kubelet = parse("minikube_py.kubelet",
                        worker.flags(node_commands("node-1")["minikube_py.kubelet"]), "node-1")
        async with asyncio.timeout(120):
            await certificate.bootstrap(
                "node-1", Path(kubelet.kubeconfig), Path(kubelet.bootstrap_kubeconfig),
                kubelet.root_dir / "pki")
        node_whoami = kubectl(f"--kubeconfig={kubelet.kubeconfig}", "auth", "whoami", "-o",
                              "jsonpath={.status.userInfo.username}")
        assert node_whoami.stdout == "system:node:node-1", node_whoami.stderr
        # README.md's kubeconfig, as init writes it for this machine (here the API
        # server's published address is this test's loopback port)
        admin = init.path(parsed("init", "minikube_py.cluster.compose").kubeconfig_out)
        assert admin.stat().st_mode & 0o077 == 0
        clusters = yaml.safe_load(admin.read_text())["clusters"]
        assert [c["cluster"]["server"] for c in clusters] == [f"https://127.0.0.1:{port}"]
        whoami = kubectl(f"--kubeconfig={admin}", "auth", "whoami", "-o",
                         "jsonpath={.status.userInfo.username}")
        assert whoami.stdout == "kubernetes-admin", whoami.stderr
        # init's kubeadm phases: the control-plane taint, the add-ons, the StorageClass
        taints = kubectl(f"--kubeconfig={admin}", "get", "node", CONTROL_PLANE, "-o",
                         "jsonpath={.spec.taints[*].key}")
        assert taints.stdout == "node-role.kubernetes.io/control-plane", taints.stderr
        for kind, name in (("daemonset", "kube-proxy"), ("deployment", "coredns"),
                           ("deployment", "local-path-provisioner"),
                           ("service", "kube-dns")):
            found = kubectl(f"--kubeconfig={admin}", "get", "-n", "kube-system", kind, name,
                            "-o", "jsonpath={.metadata.name}")
            assert found.stdout == name, found.stderr
        default = kubectl(f"--kubeconfig={admin}", "get", "storageclass", "-o", "jsonpath="
                          "{.items[*].metadata.annotations.storageclass\\.kubernetes\\.io/"
                          "is-default-class}")
        assert default.stdout == "true", default.stderr


# -- the Dockerfile --------------------------------------------------------------------------

def makefile_apt_packages() -> set[str]:
    """The Debian packages the Makefile's `apt` target installs when missing."""
    return set(re.findall(r'missing="\$\$missing ([\w.+-]+)"', MAKEFILE.read_text()))


def dockerfile_apt_packages() -> set[str]:
    text = DOCKERFILE.read_text().replace("\\\n", " ")
    match = re.search(r"apt-get install ([^&\n]*)", text)
    assert match, "the Dockerfile runs no apt-get install"
    return {word for word in match.group(1).split() if not word.startswith("-")}


def test_makefile_installs_docker_compose_for_this_test() -> None:
    assert "docker-compose" in makefile_apt_packages()


def test_image_has_the_packages_make_apt_installs() -> None:
    assert dockerfile_apt_packages() == makefile_apt_packages() - HOST_ONLY_PACKAGES


def test_image_generates_the_protobuf_code_as_make_proto_does() -> None:
    recipe = re.search(r"^proto:.*\n\t\$\(PY\) (\S+)", MAKEFILE.read_text(), re.MULTILINE)
    assert recipe, "the Makefile has no proto target"
    dockerfile = DOCKERFILE.read_text()
    assert f".venv/bin/python {recipe.group(1)}" in dockerfile
    # the generated code is installed with the package, and `python` is the venv's
    assert dockerfile.index(recipe.group(1)) < dockerfile.rindex("pip install")
    assert f"ENV PATH={image_project_dir()}/.venv/bin:$PATH" in dockerfile
