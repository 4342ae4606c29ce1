"""docker-compose.yml and its Dockerfile: a valid file whose every command the project runs,
starting the secured cluster `minikube-py up` starts.

No Docker engine runs here, so the cluster the file describes is never started. What is
checked instead:
- Debian's docker-compose (1.29) validates the file: `docker-compose config` reads and
  checks it without talking to an engine;
- every `python -m MODULE FLAGS` of a service, and of compose/node.sh (as bash expands
  it for each node), is parsed by the module's own argument parser with abbreviations
  off: the module exists and takes exactly those flags;
- etcd's flags are in `etcd --help`; the registry's config is what the launcher's code
  writes; the node script exists, is executable and parses;
- the cluster is secured as `up` secures it: the API server's, controller-manager's and
  kubelets' security flags are those the launcher's functions give, naming the files
  where each service mounts its share of the pki service's volume; each component has a
  kubeconfig of its own; the nodes join with the token join-info writes and the CA's hash
  and bootstrap their kubelets;
- the pki step, run here with each named volume a directory: every file a service's
  flags name is in the volume it mounts, the CA's key only where it must be, the
  certificates (read with `cryptography`) name who and where they must; the join step
  refuses a bad token or hash in one line;
- the commands agree with each other: the kubeconfigs name the apiserver service, the
  kubelets use the DNS's Service IP, the nodes' pod CIDRs differ and route to each other,
  the kubelet's runtime endpoint is where runtime-config's containerd listens;
- (slow) the pki, apiserver, join-info and controller-manager commands and a node's join,
  run here on loopback: the node's kubelet earns its certificate, and kubectl reaches the
  API server with the admin's kubeconfig as README.md says;
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
    tracing_config,
)
from minikube_py.cluster.components import ControllerManagerProcess
from minikube_py.cluster.etcd import EtcdProcess
from minikube_py.cluster.join import token_file
from minikube_py.cluster.registry import CONFIG as REGISTRY_CONFIG
from minikube_py.cluster.registry import REGISTRY_BINARY
from minikube_py.kubelet import certificate
from minikube_py.process import free_port
from minikube_py.security import pki

ROOT = Path(__file__).resolve().parent.parent
COMPOSE_FILE = ROOT / "docker-compose.yml"
README = ROOT / "README.md"
DOCKERFILE = ROOT / "Dockerfile"
MAKEFILE = ROOT / "Makefile"
SERVICES = {"pki", "etcd", "apiserver", "join-info", "controller-manager", "scheduler", "dns",
            "traces",
            "metrics", "registry", "images", "node-1", "node-2"}
NODES = ("node-1", "node-2")
ENTRY_POINTS = {"minikube_py.apiserver", "minikube_py.controllers", "minikube_py.scheduler",
                "minikube_py.dns", "minikube_py.metrics", "minikube_py.kubelet",
                "minikube_py.proxy"}
"""The components `minikube-py up` runs; each must run somewhere in the compose file."""
IDENTITY_OF = {"minikube_py.controllers": "controller-manager",
               "minikube_py.scheduler": "scheduler", "minikube_py.dns": "dns",
               "minikube_py.metrics": "metrics", "minikube_py.proxy": "proxy"}
"""The kubeconfig (cluster/certs.py's IDENTITIES) each component runs with, as in `up`."""
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


def in_volume(volumes: Path, service: str, path: str | Path) -> Path:
    """Where a file `service` names is, among `volumes`."""
    volume, inside = volume_of(service, path)
    return volumes / volume / inside


def certificate_in(volumes: Path, service: str, path: str | Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(in_volume(volumes, service, path).read_bytes())


def cluster_ca(volumes: Path) -> x509.Certificate:
    return certificate_in(volumes, "apiserver", certs_seen_by("apiserver").ca_file)


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


def test_etcd_is_reached_by_the_apiserver_alone() -> None:
    api = parsed("apiserver", "minikube_py.apiserver")
    assert api.etcd_servers == "https://etcd:2379"
    assert "--listen-client-urls=https://0.0.0.0:2379" in services()["etcd"]["command"]
    networks = services()["etcd"]["networks"]
    assert compose()["networks"][networks[0]]["internal"] is True
    on_its_network = {name for name, service in services().items()
                      if networks[0] in (service.get("networks") or ())}
    assert on_its_network == {"etcd", "apiserver"}


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


# -- the secured cluster ---------------------------------------------------------------------

def test_etcd_serves_tls_to_clients_of_its_own_ca_as_up_runs_it(volumes: Path) -> None:
    """etcd's serving flags are those `up` gives it, with the files of its share; its
    certificate names the host the API server dials; its health check and the API server
    present client certificates of etcd's CA."""
    etcd = certs_seen_by("etcd").etcd_tls()
    command = services()["etcd"]["command"]
    assert command[-len(etcd.flags()):] == etcd.flags()
    check = services()["etcd"]["healthcheck"]["test"]
    assert {f"--cacert={etcd.ca_file}", f"--cert={etcd.client.cert_file}",
            f"--key={etcd.client.key_file}", "--endpoints=https://127.0.0.1:2379"} <= set(check)
    api = parsed("apiserver", "minikube_py.apiserver")
    assert (api.etcd_cafile, api.etcd_certfile, api.etcd_keyfile) == tuple(
        flag.partition("=")[2] for flag in certs_seen_by("apiserver").apiserver_etcd_flags())
    cert = certificate_in(volumes, "etcd", str(etcd.cert_file))
    etcd_ca = certificate_in(volumes, "etcd", str(etcd.ca_file))
    cert.verify_directly_issued_by(etcd_ca)
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert urlsplit(api.etcd_servers).hostname in names.get_values_for_type(x509.DNSName)
    client = certificate_in(volumes, "apiserver", api.etcd_certfile)
    client.verify_directly_issued_by(etcd_ca)


def test_every_component_up_traces_sends_its_spans_to_the_traces_service(
        volumes: Path) -> None:
    """As with `up`: the controller-manager, the scheduler, each node's kubelet and proxy
    take --tracing-endpoint, the API server a TracingConfiguration in its share, all naming
    the traces service where it listens; join-info tells mkctl where it is published."""
    receiver = parsed("traces", "minikube_py.tracestore")
    endpoint = f"http://traces:{receiver.port}"
    for where, module in (("controller-manager", "minikube_py.controllers"),
                          ("scheduler", "minikube_py.scheduler"),
                          *((node, "minikube_py.kubelet") for node in NODES),
                          *((node, "minikube_py.proxy") for node in NODES)):
        assert parsed(where, module).tracing_endpoint == endpoint, (where, module)
    api = parsed("apiserver", "minikube_py.apiserver")
    config = yaml.safe_load(in_volume(volumes, "apiserver", api.tracing_config_file)
                            .read_text())
    assert config["kind"] == "TracingConfiguration"
    assert config["endpoint"] == f"traces:{receiver.port}"
    assert services()["traces"]["ports"] == [f"127.0.0.1:{receiver.port}:{receiver.port}"]
    published = parsed("join-info", "minikube_py.cluster.compose").trace_receiver_url
    assert published == f"http://127.0.0.1:{receiver.port}"


def test_apiserver_serves_tls_with_the_flags_up_passes() -> None:
    command = services()["apiserver"]["command"]
    certs = certs_seen_by("apiserver")
    expected = [*apiserver_tls(certs).flags(), *secured_apiserver_flags(certs),
                *certs.apiserver_etcd_flags(),
                f"--tracing-config-file={tracing_config(certs.state)}"]
    assert command[-len(expected):] == expected
    api = parsed("apiserver", "minikube_py.apiserver")
    assert api.bind_address == "0.0.0.0"
    # the kubernetes Service's endpoint, where pods reach it through 10.96.0.1
    assert api.advertise_address == fixed_address("apiserver")
    assert services()["apiserver"]["ports"] == [f"127.0.0.1:{api.port}:{api.port}"]
    check = " ".join(services()["apiserver"]["healthcheck"]["test"])
    assert f"https://127.0.0.1:{api.port}/readyz" in check
    assert f"cafile='{certs.ca_file}'" in check


def test_controller_manager_signs_with_the_cluster_ca_as_up_runs_it() -> None:
    command = services()["controller-manager"]["command"]
    flags = secured_controller_manager_flags(certs_seen_by("controller-manager"))
    assert set(flags) <= set(command), set(flags) - set(command)


def test_each_component_runs_with_a_kubeconfig_of_its_own(volumes: Path) -> None:
    server = parsed("pki", "minikube_py.cluster.compose").server
    api = parsed("apiserver", "minikube_py.apiserver")
    assert urlsplit(server).port == api.port
    identities = set()
    for where, command in python_commands():
        who = IDENTITY_OF.get(command[2])
        if who is None:
            continue
        service = where.split()[0]
        path = parse(command[2], command[3:], where).kubeconfig
        assert path == str(certs_seen_by(service).kubeconfig(who)), where
        written = yaml.safe_load(in_volume(volumes, service, path).read_text())
        assert written["clusters"][0]["cluster"]["server"] == server
        assert client_subject(written) == (IDENTITIES[who][0], IDENTITIES[who][1]), where
        identities.add(who)
    assert identities == set(IDENTITY_OF.values())


def test_nodes_join_with_the_token_and_the_ca_hash_then_bootstrap_their_kubelet() -> None:
    join_info = parsed("join-info", "minikube_py.cluster.compose")
    server = parsed("pki", "minikube_py.cluster.compose").server
    assert join_info.server == server
    for node in NODES:
        commands = node_commands(node)
        join = parse("minikube_py.cluster.compose",
                     commands["minikube_py.cluster.compose join"][3:], node)
        kubelet = parsed(node, "minikube_py.kubelet")
        certs = certs_seen_by(node)
        assert join.server == server
        assert join.ca_cert == certs.ca_file
        # the token join-info writes, in the volume both mount (the node may only read it)
        token = volume_of(node, join.token_file)
        assert token == volume_of("join-info", token_file(join_info.state))
        assert mounts(node)[token[0]][1] and not mounts("join-info")[token[0]][1]
        assert kubelet.bootstrap_kubeconfig == str(join.bootstrap_kubeconfig)
        assert kubelet.rotate_certificates
        # the kubelet writes its kubeconfig and certificate where the node keeps its data
        for written in (kubelet.kubeconfig, kubelet.bootstrap_kubeconfig, kubelet.root_dir):
            volume, _ = volume_of(node, written)
            assert volume == f"{node}-data" and not mounts(node)[volume][1]
        expected = secured_kubelet_flags(certs, node)
        assert set(expected) <= set(commands["minikube_py.kubelet"]), \
            set(expected) - set(commands["minikube_py.kubelet"])


def test_every_file_a_service_names_is_in_the_share_it_mounts(volumes: Path) -> None:
    """After the pki step: each path a command names in a volume that step writes is
    there (the API server's TLS files, each kubeconfig, the kubelets' certificates...)."""
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
            assert in_volume(volumes, service, value).is_file(), f"{where}: {flag}"
            named += 1
    assert named >= 20


def test_only_the_pki_step_and_the_controller_manager_see_the_cas_key(volumes: Path) -> None:
    holding = {path.relative_to(volumes).parts[0] for path in volumes.rglob("ca.key")}
    assert holding == {pki_state_volume(), share("controller-manager")}
    assert {service for service in services() if holding & set(mounts(service))} == {
        "pki", "controller-manager"}
    for service in set(services()) - {"pki"}:
        for volume, (_, read_only) in mounts(service).items():
            assert read_only or volume not in mounts("pki"), f"{service} may write {volume}"
    # each service sees nothing of the pki step's but its own share
    for service in set(services()) - {"pki"}:
        assert len(set(mounts(service)) & set(mounts("pki"))) <= 1, service


def test_the_apiserver_certificate_names_every_way_it_is_reached(volumes: Path) -> None:
    api = parsed("apiserver", "minikube_py.apiserver")
    cert = certificate_in(volumes, "apiserver", api.tls_cert_file)
    cert.verify_directly_issued_by(cluster_ca(volumes))
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    dns_names = set(names.get_values_for_type(x509.DNSName))
    addresses = {str(address) for address in names.get_values_for_type(x509.IPAddress)}
    service_host = urlsplit(parsed("pki", "minikube_py.cluster.compose").server).hostname
    assert service_host == "apiserver" and service_host in dns_names
    assert {"kubernetes", "kubernetes.default", "kubernetes.default.svc",
            "kubernetes.default.svc.cluster.local"} <= dns_names
    kubernetes_service_ip = str(ipaddress.ip_network(api.service_cluster_ip_range)[1])
    assert {"127.0.0.1", kubernetes_service_ip, api.advertise_address} <= addresses
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


def test_readme_names_the_kubeconfig_join_info_writes_to_this_machine(volumes: Path) -> None:
    """README's kubeconfig is the file join-info writes into its bind mount: the admin's
    (whose share join-info mounts), at the address the API server is published at."""
    join_info = parsed("join-info", "minikube_py.cluster.compose")
    assert bind_mount_of("join-info", str(join_info.kubeconfig_out)) == (
        ROOT / readme_admin_kubeconfig())
    admin = yaml.safe_load(in_volume(volumes, "join-info", join_info.kubeconfig).read_text())
    assert client_subject(admin) == (IDENTITIES["admin"][0], IDENTITIES["admin"][1])
    api = parsed("apiserver", "minikube_py.apiserver")
    assert join_info.kubeconfig_server == f"https://127.0.0.1:{api.port}"
    assert services()["apiserver"]["ports"] == [f"127.0.0.1:{api.port}:{api.port}"]


def test_certs_keeps_the_ca_and_the_keys_at_a_second_run(tmp_path: Path) -> None:
    written = tmp_path / "volumes"
    run_pki_step(tmp_path / "first", written)
    state = written / pki_state_volume()
    kept = {name: (state / "pki" / name).read_bytes()
            for name in ("ca.crt", "ca.key", "sa.key", "apiserver.crt")}
    run_pki_step(tmp_path / "second", written)
    assert {name: (state / "pki" / name).read_bytes() for name in kept} == kept
    assert (written / share("apiserver") / "pki" / "ca.crt").read_bytes() == kept["ca.crt"]


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


def test_publish_join_info_without_a_kubeconfig_says_so_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as refused:
        compose_setup.main(["publish-join-info", f"--kubeconfig={tmp_path / 'admin.conf'}",
                            f"--state={tmp_path}", "--server=https://apiserver:6443"])
    message = str(refused.value.code)
    assert message.startswith("publish-join-info: no kubeconfig found at ")
    assert "\n" not in message
    assert not token_file(tmp_path).exists()


# -- the control plane's commands, run here ------------------------------------------------

def without(flags: list[str], names: set[str]) -> tuple[str, ...]:
    return tuple(flag for flag in flags if flag.partition("=")[0] not in names)


def kubectl(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([KUBECTL, *args], capture_output=True, text=True, timeout=30)


@pytest.mark.slow
async def test_node_1s_join_earns_its_kubelet_certificate_from_the_compose_control_plane(
        private_etcd: EtcdProcess, tmp_path: Path) -> None:
    """The pki, apiserver, join-info and controller-manager services' commands and node-1's
    join, run here with the volumes as directories; the API server listens on loopback
    (no compose network: the kubeconfigs name it https://localhost:PORT, not
    https://apiserver:6443). No node starts: node-1's kubelet's first step, its TLS
    bootstrap, runs here with the kubelet's flags from the compose file and earns the
    node's client certificate; and kubectl reaches the API server with the admin's
    kubeconfig as README.md says."""
    port = free_port()
    server = {"--server": f"https://localhost:{port}"}
    volumes = tmp_path / "volumes"
    run_pki_step(tmp_path / "pki", volumes, server)
    apiserver = Container("apiserver", tmp_path / "apiserver", volumes)
    flags = apiserver.flags(services()["apiserver"]["command"])
    tls = parse("minikube_py.apiserver", flags, "apiserver")
    api = APIServerProcess(
        [private_etcd.client_url], tmp_path / "apiserver.log", port=port,
        tls=ServingTLS(Path(tls.tls_cert_file), Path(tls.tls_private_key_file),
                       Path(tls.client_ca_file)),
        extra_args=without(flags, {"--etcd-servers", "--etcd-cafile", "--etcd-certfile",
                                   "--etcd-keyfile", "--bind-address", "--port",
                                   "--advertise-address", "--tls-cert-file",
                                   "--tls-private-key-file", "--client-ca-file"}))
    manager = Container("controller-manager", tmp_path / "controller-manager", volumes)
    flags = manager.flags(services()["controller-manager"]["command"])
    controllers = ControllerManagerProcess(
        Path(parse("minikube_py.controllers", flags, "controller-manager").kubeconfig),
        tmp_path / "controller-manager.log", extra_args=without(flags, {"--kubeconfig"}))
    async with api, controllers:
        join_info = Container("join-info", tmp_path / "join-info", volumes)
        await asyncio.to_thread(compose_setup.main, join_info.flags(
            services()["join-info"]["command"],
            {**server, "--kubeconfig-server": f"https://127.0.0.1:{port}"}))
        node = Container("node-1", tmp_path / "node-1", volumes)
        command = node_commands("node-1")["minikube_py.cluster.compose join"]
        await asyncio.to_thread(compose_setup.main, node.flags(command, server))
        kubelet = parse("minikube_py.kubelet",
                        node.flags(node_commands("node-1")["minikube_py.kubelet"]), "node-1")
        async with asyncio.timeout(120):
            await certificate.bootstrap(
                "node-1", Path(kubelet.kubeconfig), Path(kubelet.bootstrap_kubeconfig),
                kubelet.root_dir / "pki")
        node_whoami = kubectl(f"--kubeconfig={kubelet.kubeconfig}", "auth", "whoami", "-o",
                              "jsonpath={.status.userInfo.username}")
        assert node_whoami.stdout == "system:node:node-1", node_whoami.stderr
        # README.md's kubeconfig, as join-info writes it for this machine (here the API
        # server's published address is this test's loopback port)
        admin = join_info.path(parsed("join-info", "minikube_py.cluster.compose")
                               .kubeconfig_out)
        assert admin.stat().st_mode & 0o077 == 0
        clusters = yaml.safe_load(admin.read_text())["clusters"]
        assert [c["cluster"]["server"] for c in clusters] == [f"https://127.0.0.1:{port}"]
        whoami = kubectl(f"--kubeconfig={admin}", "auth", "whoami", "-o",
                         "jsonpath={.status.userInfo.username}")
        assert whoami.stdout == "kubernetes-admin", whoami.stderr
        # publish-join-info granted the DNS its role, as `up` does
        can = kubectl(f"--kubeconfig={admin}", "auth", "can-i", "create", "endpointslices",
                      "--as=system:kube-dns")
        assert can.stdout.strip() == "yes", can.stderr


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
