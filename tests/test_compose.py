"""docker-compose.yml and its Dockerfile: a valid file whose every command the project runs.

No Docker engine runs here, so the cluster the file describes is never started. What is
checked instead:
- Debian's docker-compose (1.29) validates the file: `docker-compose config` reads and
  checks it without talking to an engine;
- every `python -m MODULE FLAGS` of a service, and of compose/node.sh (as bash expands
  it for each node), is parsed by the module's own argument parser with abbreviations
  off: the module exists and takes exactly those flags;
- etcd's flags are in `etcd --help`; the registry's config and the kubeconfig are what
  the launcher's code writes; the node script exists, is executable and parses;
- the commands agree with each other: the kubeconfig names the apiserver service, the
  kubelets use the DNS's Service IP, the nodes' pod CIDRs differ and route to each other,
  the kubelet's runtime endpoint is where runtime-config's containerd listens;
- the Dockerfile installs the Debian packages `make apt` installs and generates
  minikube_py/gen as `make proto` does.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import io
import ipaddress
import os
import re
import shutil
import subprocess
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
import yaml

from minikube_py.cluster import compose as compose_setup
from minikube_py.cluster.kubeconfig import kubeconfig
from minikube_py.cluster.registry import CONFIG as REGISTRY_CONFIG
from minikube_py.cluster.registry import REGISTRY_BINARY

ROOT = Path(__file__).resolve().parent.parent
COMPOSE_FILE = ROOT / "docker-compose.yml"
DOCKERFILE = ROOT / "Dockerfile"
MAKEFILE = ROOT / "Makefile"
SERVICES = {"etcd", "apiserver", "controller-manager", "scheduler", "dns", "metrics",
            "registry", "images", "node-1", "node-2"}
NODES = ("node-1", "node-2")
ENTRY_POINTS = {"minikube_py.apiserver", "minikube_py.controllers", "minikube_py.scheduler",
                "minikube_py.dns", "minikube_py.metrics", "minikube_py.kubelet",
                "minikube_py.proxy"}
"""The components `minikube-py up` runs; each must run somewhere in the compose file."""
HOST_ONLY_PACKAGES = {"docker-compose"}
"""Packages of `make apt` that the image leaves out: docker-compose runs on the host."""

ASSIGNMENT = re.compile(r"^[A-Z_]+=")
REQUIRED_VARIABLE = re.compile(r"\$\{(\w+):\?")
REDIRECTION = re.compile(r"\s(?:\d*>|&)")
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
    assert ENTRY_POINTS <= modules, f"not run anywhere: {ENTRY_POINTS - modules}"


def test_etcd_takes_the_flags_of_its_service() -> None:
    if shutil.which("etcd") is None:
        pytest.skip("etcd is not installed: `make apt` installs it (etcd-server)")
    command = services()["etcd"]["command"]
    assert command[0] == "etcd"
    help_text = subprocess.run(["etcd", "--help"], capture_output=True, text=True,
                               timeout=30).stdout
    for flag in command[1:]:
        name = flag.partition("=")[0]
        assert re.search(rf"^\s+{re.escape(name)}\b", help_text, re.MULTILINE), \
            f"etcd has no flag {name}"


def test_registry_serves_the_launchers_config_from_its_volume() -> None:
    service = services()["registry"]
    binary, verb, config_path = service["command"]
    assert (binary, verb) == (REGISTRY_BINARY, "serve")
    config = yaml.safe_load(in_repository(config_path).read_text())
    storage = config["storage"]["filesystem"]["rootdirectory"]
    assert config == yaml.safe_load(REGISTRY_CONFIG.format(storage=storage,
                                                           address=config["http"]["addr"]))
    assert any(volume.endswith(f":{storage}") for volume in service["volumes"])


def test_components_reach_the_apiserver_service_through_the_kubeconfig() -> None:
    api = parsed("apiserver", "minikube_py.apiserver")
    assert api.bind_address == "0.0.0.0"
    assert api.etcd_servers == "http://etcd:2379"
    assert "--listen-client-urls=http://0.0.0.0:2379" in services()["etcd"]["command"]
    paths = {parse(command[2], command[3:], where).kubeconfig
             for where, command in python_commands()
             if command[2] in ENTRY_POINTS - {"minikube_py.apiserver"}}
    assert len(paths) == 1
    written = yaml.safe_load(in_repository(paths.pop()).read_text())
    assert written == kubeconfig(f"http://apiserver:{api.port}")


def test_nodes_have_their_own_pod_cidr_and_route_to_each_others() -> None:
    proxy_cidr = ipaddress.ip_network(parsed("node-1", "minikube_py.proxy").cluster_cidr)
    subnet = ipaddress.ip_network(compose()["networks"]["default"]["ipam"]["config"][0]
                                  ["subnet"])
    cidrs = {}
    for node in NODES:
        kubelet = parsed(node, "minikube_py.kubelet")
        proxy = parsed(node, "minikube_py.proxy")
        assert kubelet.node_name == proxy.hostname_override == node
        assert kubelet.node_ip == fixed_address(node)
        assert ipaddress.ip_address(kubelet.node_ip) in subnet
        cidrs[node] = ipaddress.ip_network(kubelet.pod_cidr)
        assert cidrs[node].subnet_of(proxy_cidr)
    assert not cidrs["node-1"].overlaps(cidrs["node-2"])
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
    dns = parsed("dns", "minikube_py.dns")
    assert dns.advertise_address == fixed_address("dns")
    assert parsed("images", "minikube_py.cluster.compose").registry == registry_host()
    for node in NODES:
        commands = node_commands(node)
        setup = parse("minikube_py.cluster.compose",
                      commands["minikube_py.cluster.compose runtime-config"][3:], node)
        runtime = compose_setup.node_runtime(setup)
        kubelet = parsed(node, "minikube_py.kubelet")
        assert commands["containerd"] == ["containerd", f"--config={runtime.config_path}"]
        assert kubelet.container_runtime_endpoint == runtime.endpoint
        assert (setup.node_name, setup.pod_cidr) == (kubelet.node_name, kubelet.pod_cidr)
        assert kubelet.cluster_dns == dns.service_ip
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
