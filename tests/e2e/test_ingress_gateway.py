"""Ingress and Gateway API on a real 2-node cluster, through the gateway controller's nginx
pods and their LoadBalancer addresses, reached from node-1 as a machine on the cluster's
node network reaches them (node-1's network namespace: its proxy's rules, on any node
network; this machine routes the load balancers' range to the default network's cluster
only, and test_cluster_cli reaches a LoadBalancer from here).

The Ingress tests use the real kubectl (`kubectl create ingress`). The Gateway API tests
mirror kubernetes-sigs/gateway-api's conformance tests (GATEWAY-HTTP profile,
conformance/tests/*.go) with their manifests (tests/e2e/gateway_conformance/, copied
unchanged): the same requests, the same expected backends, statuses and headers, and, as
upstream's MakeRequestAndExpectEventuallyConsistentResponse, an answer counts once it
repeats 3 times in a row. The changes: upstream's echo-basic image (not reachable
here) is replaced by ECHO_SERVER on python:3, which answers with the same JSON (path,
host, method, headers, namespace, pod), sets the response headers X-Echo-Set-Header
names and logs each request as echo-basic does, and each backend runs 1 replica; the
suite's TLS Secrets are issued by a test CA instead of self-signed, and an HTTPS answer's
certificate must chain to that CA and be the Secret's own (upstream's Go client also
matches the one-label wildcard "*.org", which OpenSSL's host check refuses).

The tests run on the lane's shared cluster (tests/e2e/conftest.py): the Ingress tests in
namespace ingress, the Gateway API tests in upstream's namespaces (gateway-conformance-
infra, -web-backend and -app-backend), all four claimed by the module. The Gateway API
CRDs, with their ValidatingAdmissionPolicy, are applied with kubectl from
../shared/data/crds/gateway-api/ before the first Gateway API test. The module leaves the
cluster as it found it: at its end the GatewayClasses, the policy and the CRDs are
deleted, then its namespaces, then the data plane (the nginx Deployment and its
LoadBalancer Services in kube-system) that the gateway controller made for its Ingresses
and Gateways; the IngressClass and the controller are `up`'s and stay."""

from __future__ import annotations

import base64
import ctypes
import hashlib
import http.client
import json
import re
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.parse
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography.hazmat.primitives.serialization import Encoding

from minikube_py.api.loadbalancer import ingress_ips
from minikube_py.gateway.controller import PORTS_ANNOTATION
from minikube_py.security import pki
from tests.api_helpers import manifest_yaml, manifests_yaml
from tests.e2e.conftest import LaneCluster
from tests.e2e.helpers import get, until
from tests.test_cluster_cli import kubectl, network_prefix

pytestmark = pytest.mark.slow

KUBECTL = str(Path(sys.executable).with_name("kubectl"))
HERE = Path(__file__).parent / "gateway_conformance"
# ../shared/data/crds/gateway-api from the checkout: /work/main's parent, or a worktree's
# ancestor (the standard channel's CRDs, as a user applies them)
CRDS = next((parent / "shared/data/crds/gateway-api" for parent in Path(__file__).resolve().parents
             if (parent / "shared/data/crds/gateway-api").is_dir()), None)
INGRESS = "ingress"  # the Ingress tests' namespace
INFRA = "gateway-conformance-infra"
WEB = "gateway-conformance-web-backend"
APP_BACKEND = "gateway-conformance-app-backend"
CLASS = "minikube-py"
CONTROLLER = "minikube-py.io/gateway-controller"
DATA_PLANE = "minikube-py-gateway"  # the gateway controller's Secret, Deployment and pods
DATA_PLANE_PART = "minikube-py.io/gateway-data-plane"  # the label of its Services
LIBC = ctypes.CDLL(None, use_errno=True)
CLONE_NEWNET = 0x40000000  # setns(2)'s flag for a network namespace
ECHO_SERVER = """
import json, os
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

class Echo(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def answer(self):
        print(f"Echoing back request made to {self.path} to client "
              f"({self.client_address[0]})", flush=True)
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        headers = {}
        for name, value in self.headers.items():
            headers.setdefault(name.title(), []).append(value)
        body = json.dumps({"path": self.path, "host": self.headers.get("Host", ""),
                           "method": self.command, "proto": self.request_version,
                           "headers": headers, "namespace": os.environ.get("NAMESPACE", ""),
                           "ingress": "", "service": "",
                           "pod": os.environ.get("POD_NAME", "")}).encode()
        self.send_response(200)
        for item in (self.headers.get("X-Echo-Set-Header") or "").split(","):
            name, colon, value = item.partition(":")
            if colon and name.strip():
                self.send_header(name.strip(), value.strip())
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = answer

    def log_message(self, *args):
        pass

ThreadingHTTPServer(("", int(os.environ.get("HTTP_PORT", "3000"))), Echo).serve_forever()
"""


def echo_container(container: dict[str, Any]) -> None:
    """echo-basic -> ECHO_SERVER on python:3 (same port, same env)."""
    container["image"] = "python:3"
    container["command"] = ["python3", "-u", "-c", ECHO_SERVER]


def manifest(name: str) -> str:
    """An upstream manifest, its gateway class and controller ours, its echo backends
    ECHO_SERVER, given 1 s to stop (as ECHO_DEPLOYMENT's: python as a container's first
    process ignores SIGTERM, where echo-basic exits on it)."""
    documents = []
    text = ((HERE / name).read_text().replace("{GATEWAY_CLASS_NAME}", CLASS)
            .replace("{GATEWAY_CONTROLLER_NAME}", CONTROLLER))
    for document in yaml.safe_load_all(text):
        if not document:
            continue
        if document["kind"] == "Deployment":
            document["spec"]["replicas"] = 1
            document["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] = 1
            for container in document["spec"]["template"]["spec"]["containers"]:
                echo_container(container)
        documents.append(document)
    return manifests_yaml(documents)


def run_kubectl(home: Path, *args: str, stdin: str | None = None,
                check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run([KUBECTL, f"--kubeconfig={home / 'kubeconfig'}", *args],
                          input=stdin, capture_output=True, text=True, timeout=120,
                          check=check)


def client_namespace() -> str:
    """node-1's network namespace, where the requests to the load balancers start."""
    return f"/var/run/netns/{network_prefix()}node-1"


def setns(namespace: int) -> None:
    """setns(2) of this thread into the network namespace open as fd `namespace`."""
    if LIBC.setns(namespace, CLONE_NEWNET) != 0:
        raise OSError(ctypes.get_errno(), "setns failed")


def connect(address: str, port: int, timeout: float) -> socket.socket:
    """A TCP connection to address:port from node-1: its socket made in node-1's network
    namespace (this thread enters it for that moment only; a socket stays in the
    namespace it was made in)."""
    with open(client_namespace()) as node, open("/proc/thread-self/ns/net") as own:
        setns(node.fileno())
        try:
            return socket.create_connection((address, port), timeout)
        finally:
            setns(own.fileno())


class NodeConnection(http.client.HTTPConnection):
    """HTTP from node-1."""

    def connect(self) -> None:
        self.sock = connect(self.host, self.port, self.timeout)


def data_plane_config(home: Path) -> dict[str, str] | None:
    """The data of the Secret kube-system/minikube-py-gateway (the nginx configuration the
    gateway controller writes), None while it has written none: no Secret, or one without
    data yet."""
    done = kubectl(home, "get", "secret", "-n", "kube-system", DATA_PLANE, "-o", "json",
                   check=False)
    return (json.loads(done.stdout).get("data") or None) if done.returncode == 0 else None


def remove_data_plane(home: Path, config: dict[str, str]) -> None:
    """Take the cluster back to what `up` left: once the gateway controller has seen every
    Ingress and Gateway go (its configuration is `config` again, the Gateways' Services
    are deleted), the data plane it made for them (the Deployment and the ingress's
    LoadBalancer Service in kube-system) is deleted, and awaited with its pods."""
    until(lambda: data_plane_config(home) == config,
          "the gateway controller's configuration as the module found it")
    until(lambda: not get(home, "services", "-n", "kube-system", "-l",
                          f"{DATA_PLANE_PART}=gateway")["items"],
          "the Gateways' Services to go")
    kubectl(home, "delete", "deployment", "-n", "kube-system", DATA_PLANE,
            "--ignore-not-found", "--timeout=120s")
    kubectl(home, "delete", "services", "-n", "kube-system", "-l", DATA_PLANE_PART,
            "--timeout=120s")
    until(lambda: not get(home, "deployments,replicasets,pods,services", "-n", "kube-system",
                          "-l", f"app.kubernetes.io/name={DATA_PLANE}")["items"],
          "the data plane to go")


@pytest.fixture(scope="module")
def cluster(lane_cluster: LaneCluster) -> Iterator[Path]:
    """The lane's shared cluster (tests/e2e/conftest.py) seen from INGRESS, the Ingress
    tests' namespace: a directory whose kubeconfig works there. The Gateway API tests'
    namespaces are claimed with it; at the end they go with everything in them, and then
    the data plane the gateway controller made for the module's Ingresses and Gateways."""
    home = lane_cluster.started()
    config = until(lambda: data_plane_config(home), "the gateway controller's configuration")
    try:
        with lane_cluster.namespaces(__name__, INGRESS, INFRA, WEB, APP_BACKEND) as view:
            yield view
    finally:
        remove_data_plane(home, config)


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: dict[str, Any] | None
    location: str | None = None
    peer_certificate: bytes | None = None  # DER, for HTTPS


@dataclass
class NoAnswer:
    """A request that got no answer, and why: refused, reset or timed out are told apart,
    so that a dropped request never passes for a slow one."""

    reason: str


@dataclass
class RedirectRequest:
    """Upstream's roundtripper.RedirectRequest: None is the request's own (a port left out:
    the scheme's well-known one, or none)."""

    scheme: str | None = None
    host: str | None = None
    port: str | None = None
    path: str | None = None

    def problem(self, location: str | None, path: str, scheme: str) -> str | None:
        if not location:
            return "no Location"
        got = urllib.parse.urlsplit(location)
        got_port = str(got.port) if got.port else ""
        want_scheme = self.scheme or scheme
        if self.host is not None and got.hostname != self.host:
            return f"redirect host {got.hostname}, want {self.host}"
        if self.port is None:
            if got_port not in ("", {"http": "80", "https": "443"}.get(got.scheme, "")):
                return f"redirect port {got_port}, want the scheme's default"
        elif got_port != self.port:
            return f"redirect port {got_port}, want {self.port}"
        if got.scheme != want_scheme:
            return f"redirect scheme {got.scheme}, want {want_scheme}"
        if got.path != (self.path or urllib.parse.urlsplit(path).path):
            return f"redirect path {got.path}, want {self.path or path}"
        return None


class TLSConnection(http.client.HTTPSConnection):
    """HTTPS from node-1 to an address with `server_name` as SNI, as upstream's TLS round
    tripper."""

    def __init__(self, address: str, port: int, server_name: str,
                 context: ssl.SSLContext) -> None:
        super().__init__(address, port, timeout=5, context=context)
        self.server_name = server_name
        self.tls_context = context
        self.peer_certificate: bytes | None = None

    def connect(self) -> None:
        sock = connect(self.host, self.port, self.timeout)
        self.sock = self.tls_context.wrap_socket(sock, server_hostname=self.server_name)
        self.peer_certificate = self.sock.getpeercert(binary_form=True)


def send(address: str, path: str = "/", host: str | None = None, port: int = 80,
         headers: dict[str, str] | None = None, method: str = "GET",
         tls: ssl.SSLContext | None = None, timeout: float = 5.0) -> Answer | NoAnswer:
    """One request (redirects not followed); NoAnswer when the connection fails or no
    answer came within `timeout` seconds. With `tls`, HTTPS with the Host's name (port stripped)
    as SNI."""
    connection: http.client.HTTPConnection
    if tls is not None:
        connection = TLSConnection(address, port, (host or address).partition(":")[0], tls)
    else:
        connection = NodeConnection(address, port, timeout=timeout)
    try:
        connection.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        connection.putheader("Host", host or address)
        for name, value in (headers or {}).items():
            connection.putheader(name, value)
        connection.endheaders()
        response = connection.getresponse()
        raw = response.read()
    except OSError as error:
        return NoAnswer(f"{type(error).__name__}: {error}")
    finally:
        connection.close()
    try:
        body = json.loads(raw) if response.getheader("Content-Type") == (
            "application/json") else None
    except ValueError:
        body = None
    answer_headers: dict[str, str] = {}
    for name, value in response.getheaders():  # repeated headers joined, as Go's client
        key = name.lower()
        answer_headers[key] = f"{answer_headers[key]},{value}" if key in answer_headers else (
            value)
    peer = connection.peer_certificate if isinstance(connection, TLSConnection) else None
    return Answer(response.status, answer_headers, body, response.getheader("Location"), peer)


@dataclass
class Expected:
    """One of upstream's http.ExpectedResponse."""

    path: str = "/"
    host: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    method: str = "GET"
    status: int = 200
    backend: str | None = None
    namespace: str = INFRA
    request_path: str | None = None  # ExpectedRequest.Path
    request_headers: dict[str, str] = field(default_factory=dict)
    absent_headers: tuple[str, ...] = ()
    response_headers: dict[str, str] = field(default_factory=dict)
    absent_response_headers: tuple[str, ...] = ()
    location: str | None = None
    redirect: RedirectRequest | None = None
    port: int = 80
    tls: ssl.SSLContext | None = None
    certificate: bytes | None = None  # the DER certificate an HTTPS answer must come with
    request_host: str | None = None  # ExpectedRequest.Host
    backend_response_headers: dict[str, str] = field(default_factory=dict)

    def send(self, address: str, timeout: float = 5.0) -> Answer | NoAnswer:
        headers = dict(self.headers)
        if self.backend_response_headers:
            headers["X-Echo-Set-Header"] = ",".join(
                f"{name}:{value}" for name, value in self.backend_response_headers.items())
        return send(address, self.path, self.host, self.port, headers, self.method, self.tls,
                    timeout)

    def problem(self, answer: Answer | NoAnswer) -> str | None:
        """Why the answer is not the expected one (None: it is)."""
        if isinstance(answer, NoAnswer):
            return f"no answer ({answer.reason})"
        if self.certificate is not None and answer.peer_certificate != self.certificate:
            return "the answer came with another certificate"
        if answer.status != self.status:
            return f"status {answer.status}, want {self.status}"
        if self.location is not None and answer.location != self.location:
            return f"Location {answer.location}, want {self.location}"
        if self.redirect is not None:
            found = self.redirect.problem(answer.location, self.path,
                                          "https" if self.tls else "http")
            if found is not None:
                return found
        for name, value in self.response_headers.items():
            if answer.headers.get(name.lower()) != value:
                return f"response header {name}: {answer.headers.get(name.lower())}"
        for name in self.absent_response_headers:
            if name.lower() in answer.headers:
                return f"response header {name} should be absent"
        if self.status != 200 or self.backend is None:
            return None
        body = answer.body or {}
        if not body.get("pod", "").startswith(self.backend):
            return f"pod {body.get('pod')}, want {self.backend}-*"
        if body.get("namespace") != self.namespace:
            return f"namespace {body.get('namespace')}, want {self.namespace}"
        if body.get("path") != (self.request_path or self.path):
            return f"path {body.get('path')}, want {self.request_path or self.path}"
        if self.request_host is not None and body.get("host") != self.request_host:
            return f"host {body.get('host')}, want {self.request_host}"
        seen = body.get("headers") or {}
        for name, value in self.request_headers.items():
            if ",".join(seen.get(name.title(), [])) != value:
                return f"request header {name}: {seen.get(name.title())}, want {value}"
        for name in self.absent_headers:
            if name.title() in seen:
                return f"request header {name} should be absent"
        return None


def expect(address: str, expected: Expected, timeout: float = 60) -> None:
    """Upstream's eventually consistent response: 3 right answers in a row."""
    deadline = time.monotonic() + timeout
    in_a_row = 0
    problem: str | None = None
    while in_a_row < 3:
        problem = expected.problem(expected.send(address))
        in_a_row = in_a_row + 1 if problem is None else 0
        if time.monotonic() > deadline:
            raise AssertionError(f"{expected.method} {expected.host} {expected.path} "
                                 f"{expected.headers}: {problem}")
        if problem is not None:
            time.sleep(0.5)


def expect_all(address: str, *expected: Expected) -> None:
    for item in expected:
        expect(address, item)


# -- Ingress ---------------------------------------------------------------------------------

ECHO_DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: "@APP@"}
spec:
  replicas: 1
  selector: {matchLabels: {app: "@APP@"}}
  template:
    metadata: {labels: {app: "@APP@"}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: echo
        image: python:3
        env:
        - {name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
        - {name: NAMESPACE, valueFrom: {fieldRef: {fieldPath: metadata.namespace}}}
"""


def echo_deployment(name: str) -> str:
    document = yaml.safe_load(ECHO_DEPLOYMENT.replace("@APP@", name))
    echo_container(document["spec"]["template"]["spec"]["containers"][0])
    return manifest_yaml(document)


@pytest.fixture(scope="module")
def ingress_backends(cluster: Path) -> Path:
    for name in ("echo-a", "echo-b", "echo-default"):
        run_kubectl(cluster, "apply", "-f", "-", stdin=echo_deployment(name))
        kubectl(cluster, "expose", "deployment", name, "--port=80", "--target-port=3000")
    for name in ("echo-a", "echo-b", "echo-default"):
        kubectl(cluster, "rollout", "status", f"deployment/{name}", "--timeout=180s")
    return cluster


def ingress_address(home: Path, name: str) -> str:
    def address() -> str | None:
        ingress = (get(home, "ingress", name).get("status") or {}).get("loadBalancer") or {}
        return ((ingress.get("ingress") or [{}])[0]).get("ip")
    return until(address, f"ingress {name}'s address")


def test_the_default_ingress_class_is_ours(cluster: Path) -> None:
    ingress_class = until(lambda: run_kubectl(cluster, "get", "ingressclass", "minikube-py",
                                              "-o", "json", check=False).stdout,
                          "IngressClass minikube-py")
    obj = json.loads(ingress_class)
    assert obj["spec"]["controller"] == "minikube-py.io/ingress-controller"
    assert obj["metadata"]["annotations"][
        "ingressclass.kubernetes.io/is-default-class"] == "true"


def test_kubectl_create_ingress_routes_hosts_and_paths(ingress_backends: Path) -> None:
    home = ingress_backends
    kubectl(home, "create", "ingress", "paths",
            "--rule=paths.example/exact=echo-a:80",
            "--rule=paths.example/prefix/*=echo-b:80",
            "--rule=other.example/*=echo-a:80",
            "--default-backend=echo-default:80")
    ingress = get(home, "ingress", "paths")
    assert ingress["spec"]["ingressClassName"] == "minikube-py"  # the default class
    address = ingress_address(home, "paths")
    service = get(home, "service", "-n", "kube-system", "minikube-py-ingress")
    assert service["spec"]["type"] == "LoadBalancer"
    assert service["status"]["loadBalancer"]["ingress"][0]["ip"] == address
    for expected in (
            Expected("/exact", "paths.example", backend="echo-a", namespace=INGRESS),
            Expected("/exact/more", "paths.example", backend="echo-default",
                     namespace=INGRESS),
            Expected("/prefix", "paths.example", backend="echo-b", namespace=INGRESS),
            Expected("/prefix/deeper?x=1", "paths.example", backend="echo-b",
                     namespace=INGRESS),
            Expected("/prefixed", "paths.example", backend="echo-default",
                     namespace=INGRESS),
            Expected("/anything", "other.example", backend="echo-a", namespace=INGRESS),
            Expected("/", "unknown.example", backend="echo-default", namespace=INGRESS)):
        expect(address, expected)


def test_an_ingress_serves_tls_from_its_secret(ingress_backends: Path, tmp_path: Path) -> None:
    home = ingress_backends
    ca = pki.new_ca("ingress-test-ca")
    pair = pki.issue(ca, "secure.example", dns_names=("secure.example",), server=True)
    (tmp_path / "tls.crt").write_bytes(pair.cert_pem)
    (tmp_path / "tls.key").write_bytes(pair.key_pem)
    (tmp_path / "ca.crt").write_bytes(ca.cert_pem)
    kubectl(home, "create", "secret", "tls", "secure-tls", f"--cert={tmp_path / 'tls.crt'}",
            f"--key={tmp_path / 'tls.key'}")
    kubectl(home, "create", "ingress", "secure",
            "--rule=secure.example/*=echo-b:80,tls=secure-tls")
    address = ingress_address(home, "secure")

    def served() -> bool:
        done = subprocess.run(
            ["nsenter", f"--net={client_namespace()}", "curl", "-sS", "--max-time", "5",
             "--cacert", str(tmp_path / "ca.crt"), "--resolve", f"secure.example:443:{address}", "https://secure.example/tls"],
            capture_output=True, text=True)
        return done.returncode == 0 and '"pod": "echo-b' in done.stdout
    until(served, "https://secure.example/ with the Secret's certificate")


def test_an_ingress_s_change_reloads_nginx_without_a_new_pod(ingress_backends: Path) -> None:
    home = ingress_backends
    pods = get(home, "pods", "-n", "kube-system", "-l",
               "app.kubernetes.io/name=minikube-py-gateway")["items"]
    assert len(pods) == 1
    kubectl(home, "create", "ingress", "later", "--rule=later.example/*=echo-a:80")
    address = ingress_address(home, "later")
    expect(address, Expected("/", "later.example", backend="echo-a", namespace=INGRESS))
    kubectl(home, "delete", "ingress", "later")
    expect(address, Expected("/", "later.example", backend="echo-default",
                             namespace=INGRESS))
    after = get(home, "pods", "-n", "kube-system", "-l",
                "app.kubernetes.io/name=minikube-py-gateway")["items"]
    assert [pod["metadata"]["uid"] for pod in after] == [pods[0]["metadata"]["uid"]]
    assert after[0]["status"]["containerStatuses"][0]["restartCount"] == 0
    logs = kubectl(home, "logs", "-n", "kube-system", after[0]["metadata"]["name"]).stdout
    assert "configuration reloaded" in logs


def test_an_implementation_specific_path_matches_as_a_prefix(ingress_backends: Path) -> None:
    """pathType ImplementationSpecific: here a Prefix match (element-wise), as
    ingress-nginx treats a path without regex characters."""
    home = ingress_backends
    run_kubectl(home, "apply", "-f", "-", stdin=manifest_yaml({
        "apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
        "metadata": {"name": "implementation-specific", "namespace": INGRESS},
        "spec": {"defaultBackend": {"service": {"name": "echo-default", "port": {"number": 80}}},
                 "rules": [{"host": "impl.example", "http": {"paths": [{
                     "path": "/impl", "pathType": "ImplementationSpecific",
                     "backend": {"service": {"name": "echo-b", "port": {"number": 80}}}}]}}]}}))
    address = ingress_address(home, "implementation-specific")
    for expected in (
            Expected("/impl", "impl.example", backend="echo-b", namespace=INGRESS),
            Expected("/impl/", "impl.example", backend="echo-b", namespace=INGRESS),
            Expected("/impl/deeper?x=1", "impl.example", backend="echo-b", namespace=INGRESS),
            Expected("/implied", "impl.example", backend="echo-default", namespace=INGRESS),
            Expected("/", "impl.example", backend="echo-default", namespace=INGRESS)):
        expect(address, expected)


STREAM_SERVER = """
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
released = threading.Event()

class Stream(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        if self.path != "/stream":
            if self.path == "/release":
                released.set()
            self.send_response(200)
            self.send_header("X-Stream", "ok")
            self.send_header("Content-Length", "3")
            self.end_headers()
            self.wfile.write(b"ok\\n")
            return
        self.send_response(200)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for _ in range(1500):  # a chunk every 0.2 s until /release, 300 s at most
            self.wfile.write(b"5\\r\\ntick\\n\\r\\n")
            self.wfile.flush()
            if released.wait(0.2):
                break
        self.wfile.write(b"5\\r\\ndone\\n\\r\\n0\\r\\n\\r\\n")

    def log_message(self, *args):
        pass

ThreadingHTTPServer(("", 3000), Stream).serve_forever()
"""
"""A backend whose /stream answers one chunk every 0.2 s until a request to /release:
a request kept in flight for as long as a test needs."""


def data_plane_reloads(home: Path) -> int:
    """How many times the data plane's nginx has reloaded its configuration."""
    (pod,) = get(home, "pods", "-n", "kube-system", "-l",
                 "app.kubernetes.io/name=minikube-py-gateway")["items"]
    return kubectl(home, "logs", "-n", "kube-system", pod["metadata"]["name"]).stdout.count(
        "configuration reloaded")


def test_requests_in_flight_and_new_ones_survive_an_nginx_reload(ingress_backends: Path
                                                                  ) -> None:
    """A reload (HUP) starts new workers and lets the old ones finish their requests; the
    listening sockets stay open. A response streaming across a reload arrives whole, and
    requests sent continuously meanwhile, each on a new connection, all get answered."""
    home = ingress_backends
    document = yaml.safe_load(ECHO_DEPLOYMENT.replace("@APP@", "stream"))
    document["spec"]["template"]["spec"]["containers"][0].update(
        {"image": "python:3", "command": ["python3", "-u", "-c", STREAM_SERVER]})
    run_kubectl(home, "apply", "-f", "-", stdin=manifest_yaml(document))
    kubectl(home, "expose", "deployment", "stream", "--port=80", "--target-port=3000")
    kubectl(home, "rollout", "status", "deployment/stream", "--timeout=180s")
    kubectl(home, "create", "ingress", "stream", "--rule=stream.example/*=stream:80")
    address = ingress_address(home, "stream")
    from_stream = Expected("/", "stream.example", response_headers={"X-Stream": "ok"})
    expect(address, from_stream)
    reloads = data_plane_reloads(home)

    in_flight = NodeConnection(address, 80, timeout=30)
    in_flight.request("GET", "/stream", headers={"Host": "stream.example"})
    response = in_flight.getresponse()
    assert response.status == 200
    assert response.readline() == b"tick\n"
    answers: list[tuple[float, str | None]] = []  # (when, what was wrong)
    stop = threading.Event()

    def send_continuously() -> None:
        # A reload that drops a connection refuses or resets it at once; an answer
        # slower than the usual 5 s is a loaded machine's (new workers starting), not
        # a lost request: each request may wait as long as the one in flight.
        while not stop.wait(0.02):
            answer = from_stream.send(address, timeout=30)
            answers.append((time.monotonic(), from_stream.problem(answer)))

    sender = threading.Thread(target=send_continuously)
    sender.start()
    try:
        kubectl(home, "create", "ingress", "stream-reload",
                "--rule=stream-reload.example/*=echo-a:80")
        until(lambda: data_plane_reloads(home) > reloads, "nginx to reload")
        expect(address, Expected("/", "stream-reload.example", backend="echo-a",
                                 namespace=INGRESS))
        reloaded_at = time.monotonic()  # the new configuration serves
        until(lambda: sum(at > reloaded_at for at, _ in answers) >= 3,
              "requests answered by the new configuration")
        released = send(address, "/release", "stream.example")
        assert isinstance(released, Answer) and released.status == 200, released
        rest = response.read()
    finally:
        stop.set()
        sender.join()
        in_flight.close()
    assert rest.endswith(b"done\n")
    failed = [problem for _, problem in answers if problem is not None]
    assert not failed, f"{len(failed)} of {len(answers)} requests failed: {failed[:5]}"
    assert any(at < reloaded_at for at, _ in answers)


# -- Gateway API: the conformance tests ------------------------------------------------------


@dataclass
class SuiteTLS:
    """The suite's serving certificate (upstream: self-signed for *, *.org, *.wildcard.org)
    and a client context trusting it."""

    ca: pki.KeyPair
    pair: pki.KeyPair
    context: ssl.SSLContext

    @property
    def der(self) -> bytes:
        return self.pair.cert.public_bytes(Encoding.DER)


@pytest.fixture(scope="module")
def suite_tls() -> SuiteTLS:
    ca = pki.new_ca("gateway-conformance-ca")
    pair = pki.issue(ca, "gateway-conformance", dns_names=("*", "*.org", "*.wildcard.org"),
                     server=True)
    context = ssl.create_default_context(cadata=ca.cert_pem.decode())
    context.check_hostname = False  # see the module's docstring; the chain is verified
    return SuiteTLS(ca, pair, context)


def tls_secret(namespace: str, name: str, pair: pki.KeyPair) -> str:
    return manifest_yaml({
        "apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
        "metadata": {"name": name, "namespace": namespace},
        "data": {"tls.crt": base64.b64encode(pair.cert_pem).decode(),
                 "tls.key": base64.b64encode(pair.key_pem).decode()}})


@pytest.fixture(scope="module")
def gateway_api(cluster: Path, suite_tls: SuiteTLS) -> Iterator[Path]:
    """The standard CRDs, as a user installs them, upstream's base manifests, and the TLS
    Secrets upstream's suite makes (tls-validity-checks-certificate, certificate). At the
    end the cluster-wide part goes again (remove_gateway_api)."""
    if CRDS is None:
        pytest.skip("no ../shared/data/crds/gateway-api")
    files = sorted(CRDS.glob("gateway.networking.k8s.io_*.yaml"))
    try:
        install_gateway_api(cluster, files, suite_tls)
        yield cluster
    finally:
        remove_gateway_api(cluster, files)


def install_gateway_api(cluster: Path, files: list[Path], suite_tls: SuiteTLS) -> None:
    for crd in files:
        kubectl(cluster, "apply", "--server-side", "-f", str(crd))
    for plural in ("gatewayclasses", "gateways", "httproutes", "referencegrants"):
        kubectl(cluster, "wait", "--for=condition=Established",
                f"crd/{plural}.gateway.networking.k8s.io", "--timeout=60s")
    gateway_class = until(lambda: accepted_class(cluster, CLASS), "GatewayClass minikube-py")
    assert gateway_class["spec"]["controllerName"] == CONTROLLER
    run_kubectl(cluster, "apply", "-f", "-", stdin=manifest("base.yaml"))
    for namespace, name in ((INFRA, "tls-validity-checks-certificate"), (WEB, "certificate")):
        run_kubectl(cluster, "apply", "-f", "-", stdin=tls_secret(namespace, name,
                                                                  suite_tls.pair))
    for namespace in (INFRA, WEB, APP_BACKEND):
        kubectl(cluster, "wait", "--for=condition=Available", "deployment", "--all",
                "-n", namespace, "--timeout=240s")


def remove_gateway_api(cluster: Path, files: list[Path]) -> None:
    """What the Gateway API tests made outside their namespaces, the cluster's other
    modules share: the GatewayClasses (deleted while their kind is still served, so that
    the gateway controller sees them go), then the ValidatingAdmissionPolicy and its
    binding and the CRDs (with the objects left of their kinds), each awaited until gone."""
    kubectl(cluster, "delete", "gatewayclasses", "--all", "--ignore-not-found",
            "--timeout=120s", check=False)
    kubectl(cluster, "delete", *(f"--filename={crd}" for crd in reversed(files)),
            "--ignore-not-found", "--timeout=180s")

    def left() -> list[str]:
        names = kubectl(cluster, "get", "crds,validatingadmissionpolicies,"
                        "validatingadmissionpolicybindings", "-o", "name").stdout.split()
        return [name for name in names if "gateway.networking.k8s.io" in name]
    until(lambda: not left(), lambda: f"{left()} to go")


def accepted_class(home: Path, name: str) -> dict[str, Any] | None:
    done = run_kubectl(home, "get", "gatewayclass", name, "-o", "json", check=False)
    if done.returncode:
        return None
    obj = json.loads(done.stdout)
    conditions = (obj.get("status") or {}).get("conditions") or []
    return obj if any(item["type"] == "Accepted" and item["status"] == "True"
                      for item in conditions) else None


def condition_of(conditions: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    return next((item for item in conditions if item["type"] == kind), {})


def gateway_address(home: Path, namespace: str, name: str) -> str:
    """Upstream's GatewayMustHaveLatestConditions + address: Programmed, with an address."""
    def programmed() -> str | None:
        gateway = get(home, "gateway", "-n", namespace, name)
        status = gateway.get("status") or {}
        programmed = condition_of(status.get("conditions") or [], "Programmed")
        addresses = status.get("addresses") or []
        if programmed.get("status") == "True" and addresses and programmed.get(
                "observedGeneration") == gateway["metadata"]["generation"]:
            return addresses[0]["value"]
        return None
    return until(programmed, f"Gateway {namespace}/{name} Programmed")


def route_parent(home: Path, namespace: str, name: str, gateway: tuple[str, str]
                 ) -> dict[str, Any] | None:
    route = get(home, "httproute", "-n", namespace, name)
    for parent in (route.get("status") or {}).get("parents") or []:
        ref = parent["parentRef"]
        if ref["name"] == gateway[1] and ref.get("namespace", namespace) == gateway[0] and (
                parent["controllerName"] == CONTROLLER):
            conditions = parent["conditions"]
            if all(item["observedGeneration"] == route["metadata"]["generation"]
                   for item in conditions):
                return parent
    return None


def route_condition(home: Path, namespace: str, name: str, gateway: tuple[str, str],
                    kind: str, status: str, reason: str | None = None) -> None:
    """Upstream's HTTPRouteMustHaveCondition."""
    def holds() -> bool:
        parent = route_parent(home, namespace, name, gateway)
        found = condition_of((parent or {}).get("conditions") or [], kind)
        return found.get("status") == status and reason in (None, found.get("reason"))
    until(holds, f"HTTPRoute {namespace}/{name} {kind}={status} {reason or ''}")


def accepted(home: Path, gateway: tuple[str, str], *routes: tuple[str, str],
             resolved: bool = True) -> str:
    """Upstream's GatewayAndHTTPRoutesMustBeAccepted (+ ResolvedRefs True): the address."""
    address = gateway_address(home, *gateway)
    for namespace, name in routes:
        route_condition(home, namespace, name, gateway, "Accepted", "True")
        if resolved:
            route_condition(home, namespace, name, gateway, "ResolvedRefs", "True")
    return address


@contextmanager
def applied(home: Path, name: str) -> Iterator[Path]:
    """The test's manifest, applied, and deleted after it (as upstream's suite does)."""
    text = manifest(name)
    run_kubectl(home, "apply", "-f", "-", stdin=text)
    try:
        yield home
    except AssertionError as error:
        try:
            error.add_note(data_plane_report(home))
        except Exception as failed:  # the test's own failure comes first
            error.add_note(f"(the data plane report failed: {failed!r})")
        raise
    finally:
        run_kubectl(home, "delete", "--wait=false", "--ignore-not-found", "-f", "-",
                    stdin=text, check=False)


def data_plane_report(home: Path) -> str:
    """For a failed test, each step between the request and nginx: the data plane's
    Services (their ports and addresses) and what node-1's proxy made of them (its nat
    rules for those addresses: where the requests start), the data plane's pods, whether
    they have the controller's latest nginx.conf (the Secret's md5 against the mounted
    file's, the kubelet's part, and nginx's copy's, the reload loop's) and what it serves,
    nginx's log, and the routes."""
    def kubectl_text(*args: str) -> str:
        done = run_kubectl(home, *args, check=False)
        return (done.stdout or done.stderr).rstrip()

    services = json.loads(run_kubectl(home, "get", "services", "-n", "kube-system", "-l",
                                      DATA_PLANE_PART, "-o", "json", check=False).stdout
                          or '{"items": []}')["items"]
    addresses = set()
    lines = ["the data plane's Services:"]
    for service in services:
        ips = ingress_ips(service)
        addresses.update(ips)
        ports = [f"{item['port']}->{item.get('targetPort')}" for item in
                 service["spec"].get("ports") or []]
        lines.append(f"  {service['metadata']['name']} {ips} {ports} "
                     f"{(service['metadata'].get('annotations') or {}).get(PORTS_ANNOTATION)}")
    nat = subprocess.run(["ip", "netns", "exec", Path(client_namespace()).name,
                          "iptables-save", "-t", "nat"], capture_output=True, text=True,
                         check=False).stdout
    lines += ["node-1's nat rules for them, followed to the DNATs:",
              *[f"  {rule}" for rule in rules_from(nat, [
                  rule for rule in nat.splitlines()
                  if any(f"{address}/32" in rule for address in addresses if address)])]]
    secret = run_kubectl(home, "get", "secret", "-n", "kube-system", DATA_PLANE, "-o",
                         r"jsonpath={.data.nginx\.conf}", check=False)
    conf = base64.b64decode(secret.stdout or "")
    pods = json.loads(run_kubectl(home, "get", "pods", "-n", "kube-system", "-l",
                                  f"app.kubernetes.io/name={DATA_PLANE}", "-o", "json",
                                  check=False).stdout or '{"items": []}')["items"]
    lines += [
        "the data plane's pods:",
        *[f"  {pod['metadata']['name']} {(pod.get('status') or {}).get('phase')} "
          f"{(pod.get('status') or {}).get('podIP')} {pod['spec'].get('nodeName')} "
          f"created {pod['metadata'].get('creationTimestamp')}" for pod in pods],
        "their EndpointSlices:",
        kubectl_text("get", "endpointslices", "-n", "kube-system", "-o", "wide"),
        "a request to each pod's target ports, from node-1 (no Service between):",
        *direct_answers([ip for pod in pods if (ip := (pod.get("status") or {}).get("podIP"))],
                        services),
        f"the Secret's nginx.conf: md5 {hashlib.md5(conf).hexdigest()}; the pod's (mounted, "
        "then nginx's copy): "
        + kubectl_text("exec", "-n", "kube-system", f"deploy/{DATA_PLANE}", "--",
                       "md5sum", "/etc/minikube-py-gateway/nginx.conf",
                       "/tmp/nginx/live/nginx.conf"),
        "the Secret's writes (managedFields) and the mounted files (..data: the kubelet's "
        "last projection, named by its UTC time), now:",
        kubectl_text("get", "secret", "-n", "kube-system", DATA_PLANE, "-o", "jsonpath="
                     "{.metadata.resourceVersion} {.metadata.managedFields[*].time}"),
        kubectl_text("exec", "-n", "kube-system", f"deploy/{DATA_PLANE}", "--", "sh", "-c",
                     "date -u +%FT%T; ls -la --full-time /etc/minikube-py-gateway/"),
        "what it serves on the Services' target ports:",
        *served_on(conf.decode(errors="replace"), {
            str(item.get("targetPort")) for service in services
            for item in service["spec"].get("ports") or []}),
        "nginx's log:",
        kubectl_text("logs", "-n", "kube-system", f"deploy/{DATA_PLANE}", "--timestamps",
                     "--tail=40"),
        "the gateway controller's log (its writes of the Secret):",
        kubectl_text("logs", "-n", "kube-system", "deploy/gateway-controller", "--timestamps",
                     "--tail=30"),
        "the routes:",
        kubectl_text("get", "httproutes", "-A", "-o", "custom-columns=NS:.metadata.namespace,"
                     "NAME:.metadata.name,CREATED:.metadata.creationTimestamp,"
                     "DELETING:.metadata.deletionTimestamp")]
    return "\n".join(lines)


def rules_from(nat: str, rules: list[str]) -> list[str]:
    """`rules` and those of every chain they jump to, and so on (iptables-save lines)."""
    chains = nat.splitlines()
    found, todo, seen = list(rules), list(rules), set()
    while todo:
        jump = re.search(r" -j (KUBE-[\w-]+)", todo.pop())
        if jump and jump[1] not in seen:
            seen.add(jump[1])
            more = [rule for rule in chains if rule.startswith(f"-A {jump[1]} ")]
            found += more
            todo += more
    return found


def direct_answers(pod_ips: list[str], services: list[dict[str, Any]]) -> list[str]:
    """GET / from node-1 straight to each pod's port of each Service (its Host the
    Service's address): what nginx itself answers there."""
    answers = []
    for service in services:
        ips = ingress_ips(service)
        for item in service["spec"].get("ports") or []:
            if item.get("port") == 443:
                continue
            for pod_ip in pod_ips:
                answer = send(pod_ip, "/", host=(ips or [pod_ip])[0],
                              port=int(item.get("targetPort")), timeout=5)
                answers.append(f"  {service['metadata']['name']} {pod_ip}:"
                               f"{item.get('targetPort')}: " + (
                                   str(answer.status) if isinstance(answer, Answer)
                                   else answer.reason))
    return answers


LISTEN = re.compile(r"\s*listen (?:\S+:)?(\d+)\b")


def served_on(conf: str, ports: set[str]) -> list[str]:
    """The server blocks of an nginx.conf that listen on one of `ports`, whole, and the
    http-level lines they name: the maps choosing their routes, the conditions those
    maps read, the upstreams they pass to."""
    served: list[str] = []
    block: list[str] = []
    for line in conf.splitlines():
        if line == "  server {" or block:
            block.append(line)
        if line == "  }" and block:
            if any((listen := LISTEN.match(item)) and listen[1] in ports for item in block):
                served += block
            block = []
    http = [line.split() for line in conf.splitlines()
            if line.startswith(("  map ", "  upstream "))]
    names = set(re.findall(r"\$mpr_s\w+|mpu_\d+", "\n".join(served)))
    conditions = set(re.findall(r"\$mpc_\d+", " ".join(
        " ".join(words) for words in http if words[2] in names)))
    return [f"  {' '.join(words)}" for words in http
            if set(words[1:3]) & (names | conditions)] + [f"  {line}" for line in served]


SAME = (INFRA, "same-namespace")


def test_gateway_class_observed_generation_bump(gateway_api: Path) -> None:
    with applied(gateway_api, "gatewayclass-observed-generation-bump.yaml") as conformance:
        name = "gatewayclass-observed-generation-bump"

        def latest() -> dict[str, Any] | None:
            obj = get(conformance, "gatewayclass", name)
            conditions = (obj.get("status") or {}).get("conditions") or []
            accepted = condition_of(conditions, "Accepted")
            return obj if conditions and accepted.get("status") == "True" and all(
                item["observedGeneration"] == obj["metadata"]["generation"]
                for item in conditions) else None
        before = until(latest, "GatewayClass Accepted at its generation")
        kubectl(conformance, "patch", "gatewayclass", name, "--type=merge",
                "-p", '{"spec": {"description": "new"}}')
        after = until(lambda: (obj := latest()) and obj["metadata"]["generation"] > (
            before["metadata"]["generation"]) and obj, "observedGeneration bumped")
        assert after["metadata"]["generation"] == before["metadata"]["generation"] + 1


def test_httproute_simple_same_namespace(gateway_api: Path) -> None:
    with applied(gateway_api, "httproute-simple-same-namespace.yaml") as conformance:
        address = accepted(conformance, SAME, (INFRA, "gateway-conformance-infra-test"))
        expect(address, Expected("/", backend="infra-backend-v1"))


def test_httproute_matching(gateway_api: Path) -> None:
    with applied(gateway_api, "httproute-matching.yaml") as conformance:
        address = accepted(conformance, SAME, (INFRA, "matching"))
        for expected in (
                Expected("/", backend="infra-backend-v1"),
                Expected("/example", backend="infra-backend-v1"),
                Expected("/", headers={"Version": "one"}, backend="infra-backend-v1"),
                Expected("/v2", backend="infra-backend-v2"),
                Expected("/v2/example", backend="infra-backend-v2"),
                Expected("/", headers={"Version": "two"}, backend="infra-backend-v2"),
                Expected("/v2/", backend="infra-backend-v2"),
                Expected("/v2example", backend="infra-backend-v1"),
                Expected("/foo/v2/example", backend="infra-backend-v1")):
            expect(address, expected)


def test_httproute_header_matching(gateway_api: Path) -> None:
    with applied(gateway_api, "httproute-header-matching.yaml") as conformance:
        address = accepted(conformance, SAME, (INFRA, "header-matching"))
        for headers, backend in (
                ({"Version": "one"}, "infra-backend-v1"),
                ({"Version": "two"}, "infra-backend-v2"),
                ({"Version": "two", "Color": "orange"}, "infra-backend-v1"),
                ({"Version": "two", "Color": "blue"}, "infra-backend-v2"),
                ({"Color": "orange"}, None),
                ({"Some-Other-Header": "one"}, None),
                ({"Color": "blue"}, "infra-backend-v1"),
                ({"Color": "green"}, "infra-backend-v1"),
                ({"Color": "red"}, "infra-backend-v2"),
                ({"Color": "yellow"}, "infra-backend-v2"),
                ({"Color": "purple"}, None)):
            expect(address, Expected("/", headers=headers, backend=backend,
                                     status=200 if backend else 404))


def test_httproute_exact_path_matching(gateway_api: Path) -> None:
    with applied(gateway_api, "httproute-exact-path-matching.yaml") as conformance:
        address = accepted(conformance, SAME, (INFRA, "exact-matching"))
        for expected in (
                Expected("/one", backend="infra-backend-v1"),
                Expected("/two", backend="infra-backend-v2"),
                Expected("/", status=404), Expected("/one/example", status=404),
                Expected("/two/", status=404), Expected("/Two", status=404)):
            expect(address, expected)


def test_httproute_cross_namespace(gateway_api: Path) -> None:
    with applied(gateway_api, "httproute-cross-namespace.yaml") as conformance:
        address = accepted(conformance, (INFRA, "backend-namespaces"), (WEB, "cross-namespace"))
        expect(address, Expected("/", backend="web-backend", namespace=WEB))


def test_httproute_reference_grant(gateway_api: Path) -> None:
    with applied(gateway_api, "httproute-reference-grant.yaml") as conformance:
        address = accepted(conformance, SAME, (INFRA, "reference-grant"))
        expect(address, Expected("/", backend="web-backend", namespace=WEB))
        kubectl(conformance, "delete", "referencegrant", "-n", WEB, "reference-grant")
        expect(address, Expected("/", status=500))


@pytest.mark.parametrize(("manifest", "route_name", "reason"), [
    pytest.param("httproute-invalid-cross-namespace-backend-ref.yaml",
                 "invalid-cross-namespace-backend-ref", "RefNotPermitted",
                 id="HTTPRouteInvalidCrossNamespaceBackendRef"),
    pytest.param("httproute-invalid-nonexistent-backendref.yaml",
                 "invalid-nonexistent-backend-ref", "BackendNotFound",
                 id="HTTPRouteInvalidNonExistentBackendRef"),
    pytest.param("httproute-invalid-backendref-unknown-kind.yaml",
                 "invalid-backend-ref-unknown-kind", "InvalidKind",
                 id="HTTPRouteInvalidBackendRefUnknownKind"),
    pytest.param("httproute-invalid-reference-grant.yaml", "reference-grant",
                 "RefNotPermitted", id="HTTPRouteInvalidReferenceGrant"),
])
def test_httproute_unresolved_backend_ref_answers_500(gateway_api: Path, manifest: str,
                                                      route_name: str, reason: str) -> None:
    """The route is Accepted with ResolvedRefs False (the reason upstream names), and its
    requests get 500, as upstream's tests of each case expect."""
    with applied(gateway_api, manifest) as conformance:
        route = (INFRA, route_name)
        address = accepted(conformance, SAME, route, resolved=False)
        route_condition(conformance, *route, SAME, "ResolvedRefs", "False", reason)
        expect(address, Expected("/", status=500))


def test_httproute_invalid_cross_namespace_parent_ref(gateway_api: Path) -> None:
    with applied(gateway_api, "httproute-invalid-cross-namespace-parent-ref.yaml") as conformance:
        route_condition(conformance, WEB, "invalid-cross-namespace-parent-ref", SAME,
                        "Accepted", "False", "NotAllowedByListeners")


def test_httproute_hostname_intersection(gateway_api: Path) -> None:
    with applied(gateway_api, "httproute-hostname-intersection.yaml") as conformance:
        gateway = (INFRA, "httproute-hostname-intersection")
        routes = ["specific-host-matches-listener-specific-host",
                  "specific-host-matches-listener-wildcard-host",
                  "wildcard-host-matches-listener-specific-host",
                  "wildcard-host-matches-listener-wildcard-host"]
        address = accepted(conformance, gateway, *((INFRA, route) for route in routes))
        v1, v2, v3 = "infra-backend-v1", "infra-backend-v2", "infra-backend-v3"
        for host, path, backend in (
                ("very.specific.com", "/s1", v1), ("very.specific.com:1234", "/s1", v1),
                ("non.matching.com", "/s1", None), ("foo.nonmatchingwildcard.io", "/s1", None),
                ("foo.wildcard.io", "/s1", None),
                ("very.specific.com", "/non-matching-prefix", None),
                ("foo.wildcard.io", "/s2", v2), ("bar.wildcard.io", "/s2", v2),
                ("foo.bar.wildcard.io", "/s2", v2), ("non.matching.com", "/s2", None),
                ("wildcard.io", "/s2", None), ("very.specific.com", "/s2", None),
                ("foo.wildcard.io", "/non-matching-prefix", None),
                ("very.specific.com", "/s3", v3), ("non.matching.com", "/s3", None),
                ("foo.specific.com", "/s3", None), ("foo.wildcard.io", "/s3", None),
                ("very.specific.com", "/non-matching-prefix", None),
                ("foo.anotherwildcard.io", "/s4", v1), ("bar.anotherwildcard.io", "/s4", v1),
                ("foo.bar.anotherwildcard.io", "/s4", v1), ("anotherwildcard.io", "/s4", None),
                ("foo.wildcard.io", "/s4", None), ("very.specific.com", "/s4", None)):
            expect(address, Expected(path, host, backend=backend, status=200 if backend else 404))
        route_condition(conformance, INFRA, "no-intersecting-hosts", gateway, "Accepted", "False",
                        "NoMatchingListenerHostname")


def test_httproute_listener_hostname_matching(gateway_api: Path) -> None:
    with applied(gateway_api, "httproute-listener-hostname-matching.yaml") as conformance:
        gateway = (INFRA, "httproute-listener-hostname-matching")
        address = accepted(conformance, gateway, (INFRA, "backend-v1"), (INFRA, "backend-v2"),
                           (INFRA, "backend-v3"))
        for host, backend in (
                ("bar.com", "infra-backend-v1"), ("foo.bar.com", "infra-backend-v2"),
                ("baz.bar.com", "infra-backend-v3"), ("boo.bar.com", "infra-backend-v3"),
                ("multiple.prefixes.bar.com", "infra-backend-v3"),
                ("multiple.prefixes.foo.com", "infra-backend-v3"),
                ("foo.com", None), ("no.matching.host", None)):
            expect(address, Expected("/", host, backend=backend, status=200 if backend else 404))


def test_httproute_request_header_modifier(gateway_api: Path) -> None:
    with applied(gateway_api, "httproute-request-header-modifier.yaml") as conformance:
        address = accepted(conformance, SAME, (INFRA, "request-header-modifier"))
        v1 = "infra-backend-v1"
        for expected in (
                Expected("/set", headers={"Some-Other-Header": "val"}, backend=v1,
                         request_headers={"Some-Other-Header": "val",
                                          "X-Header-Set": "set-overwrites-values"}),
                Expected("/set", headers={"Some-Other-Header": "val",
                                          "X-Header-Set": "some-other-value"}, backend=v1,
                         request_headers={"Some-Other-Header": "val",
                                          "X-Header-Set": "set-overwrites-values"}),
                Expected("/add", headers={"Some-Other-Header": "val"}, backend=v1,
                         request_headers={"Some-Other-Header": "val",
                                          "X-Header-Add": "add-appends-values"}),
                Expected("/add", headers={"Some-Other-Header": "val",
                                          "X-Header-Add": "some-other-value"}, backend=v1,
                         request_headers={"Some-Other-Header": "val",
                                          "X-Header-Add": "some-other-value,add-appends-values"}),
                Expected("/remove", headers={"X-Header-Remove": "val"}, backend=v1,
                         absent_headers=("X-Header-Remove",)),
                Expected("/multiple", headers={"X-Header-Set-2": "set-val-2",
                                               "X-Header-Add-2": "add-val-2",
                                               "X-Header-Remove-2": "remove-val-2",
                                               "Another-Header": "another-header-val"},
                         backend=v1,
                         request_headers={"X-Header-Set-1": "header-set-1",
                                          "X-Header-Set-2": "header-set-2",
                                          "X-Header-Add-1": "header-add-1",
                                          "X-Header-Add-2": "add-val-2,header-add-2",
                                          "X-Header-Add-3": "header-add-3",
                                          "Another-Header": "another-header-val"},
                         absent_headers=("X-Header-Remove-1", "X-Header-Remove-2")),
                Expected("/case-insensitivity", headers={"x-header-set": "original-val-set",
                                                         "x-header-add": "original-val-add",
                                                         "x-header-remove": "original-val-remove",
                                                         "Another-Header": "another-header-val"},
                         backend=v1,
                         request_headers={"X-Header-Set": "header-set",
                                          "X-Header-Add": "original-val-add,header-add",
                                          "Another-Header": "another-header-val"},
                         absent_headers=("X-Header-Remove",))):
            expect(address, expected)


def test_httproute_redirect_host_and_status(gateway_api: Path) -> None:
    with applied(gateway_api, "httproute-redirect-host-and-status.yaml") as conformance:
        address = accepted(conformance, SAME, (INFRA, "redirect-host-and-status"))
        for path, status in (("/hostname-redirect", 302), ("/host-and-status", 301)):
            expect(address, Expected(path, status=status,
                                     location=f"http://example.org{path}"))


def test_httproute_method_matching(gateway_api: Path) -> None:
    """Extended (SupportHTTPRouteMethodMatching)."""
    with applied(gateway_api, "httproute-method-matching.yaml") as conformance:
        address = accepted(conformance, SAME, (INFRA, "method-matching"))
        v1, v2, v3 = "infra-backend-v1", "infra-backend-v2", "infra-backend-v3"
        for method, path, headers, backend in (
                ("POST", "/", {}, v1), ("GET", "/", {}, v2), ("HEAD", "/", {}, None),
                ("GET", "/path1", {}, v1), ("PUT", "/", {"version": "one"}, v2),
                ("POST", "/path2", {"version": "two"}, v3), ("PATCH", "/path3", {}, v1),
                ("DELETE", "/path4", {"version": "three"}, v1), ("PUT", "/", {}, None),
                ("DELETE", "/path4", {}, None), ("PATCH", "/path5", {}, v1),
                ("PATCH", "/", {"version": "four"}, v2)):
            expect(address, Expected(path, headers=headers, method=method, backend=backend,
                                     status=200 if backend else 404))


def test_httproute_matching_across_routes(gateway_api: Path) -> None:
    with applied(gateway_api, "httproute-matching-across-routes.yaml") as conformance:
        address = accepted(conformance, SAME, (INFRA, "matching-part1"),
                           (INFRA, "matching-part2"))
        v1, v2 = "infra-backend-v1", "infra-backend-v2"
        for host, path, headers, backend in (
                ("example.com", "/example", {}, v1), ("example.net", "/example", {}, v1),
                ("example.com", "/example", {"Version": "one"}, v1),
                ("example.com", "/v2", {}, v2), ("example.net", "/v2", {}, v1),
                ("example.com", "/v2/example", {}, v2),
                ("example.com", "/", {"Version": "two"}, v2)):
            expect(address, Expected(path, host, headers=headers, backend=backend))


def test_httproute_path_match_order(gateway_api: Path) -> None:
    with applied(gateway_api, "httproute-path-match-order.yaml") as conformance:
        address = accepted(conformance, SAME, (INFRA, "path-matching-order"))
        for path, backend in (
                ("/match/exact", "infra-backend-v2"), ("/match", "infra-backend-v1"),
                ("/match/prefix/one/any", "infra-backend-v2"),
                ("/match/prefix/any", "infra-backend-v1"), ("/match/any", "infra-backend-v3")):
            expect(address, Expected(path, backend=backend))


def test_httproute_rewrite_path(gateway_api: Path) -> None:
    """Extended (SupportHTTPRoutePathRewrite)."""
    with applied(gateway_api, "httproute-rewrite-path.yaml") as conformance:
        address = accepted(conformance, SAME, (INFRA, "rewrite-path"))
        for path, rewritten in (("/prefix/one/two", "/one/two"),
                                ("/strip-prefix/three", "/three"), ("/strip-prefix", "/"),
                                ("/full/one/two", "/one")):
            expect(address, Expected(path, backend="infra-backend-v1", request_path=rewritten))
        for path, rewritten in (("/full/rewrite-path-and-modify-headers/test", "/test"),
                                ("/prefix/rewrite-path-and-modify-headers/one", "/prefix/one")):
            expect(address, Expected(
                path, headers={"X-Header-Remove": "remove-val",
                               "X-Header-Add-Append": "append-val-1",
                               "X-Header-Set": "set-val"},
                backend="infra-backend-v1", request_path=rewritten,
                request_headers={"X-Header-Add": "header-val-1",
                                 "X-Header-Add-Append": "append-val-1,header-val-2",
                                 "X-Header-Set": "set-overwrites-values"},
                absent_headers=("X-Header-Remove",)))


def test_httproute_invalid_parentref_not_matching_section_name(gateway_api: Path) -> None:
    name = "httproute-invalid-parentref-not-matching-section-name.yaml"
    with applied(gateway_api, name) as conformance:
        route = (INFRA, "httproute-listener-not-matching-section-name")
        route_condition(conformance, *route, SAME, "Accepted", "False", "NoMatchingParent")
        until(lambda: [listener["attachedRoutes"] for listener in get(
            conformance, "gateway", "-n", INFRA, "same-namespace")["status"]["listeners"]] == [0],
              "GatewayMustHaveZeroRoutes")


def test_gateway_invalid_route_kind(gateway_api: Path) -> None:
    with applied(gateway_api, "gateway-invalid-route-kind.yaml") as conformance:
        for name, kinds in (("gateway-only-invalid-route-kind", []),
                            ("gateway-supported-and-invalid-route-kind",
                             [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute"}])):
            def listener_status(name: str = name) -> dict[str, Any] | None:
                gateway = get(conformance, "gateway", "-n", INFRA, name)
                listeners = (gateway.get("status") or {}).get("listeners") or []
                return listeners[0] if listeners else None
            listener = until(listener_status, f"Gateway {name}'s listener status")
            assert listener["name"] == "http" and listener["attachedRoutes"] == 0
            assert listener["supportedKinds"] == kinds
            resolved = condition_of(listener["conditions"], "ResolvedRefs")
            assert (resolved["status"], resolved["reason"]) == ("False", "InvalidRouteKinds")


def test_httproute_weight(gateway_api: Path) -> None:
    """Upstream's weight.TestWeightedDistribution: 500 requests, 10 at a time, each backend
    within 5 points of its weight (70/30/0), up to 10 tries."""
    with applied(gateway_api, "httproute-weight.yaml") as conformance:
        address = accepted(conformance, SAME, (INFRA, "weighted-backends"))
        expect(address, Expected("/", backend="infra-backend-v"))
        wanted = {"infra-backend-v1": 0.7, "infra-backend-v2": 0.3, "infra-backend-v3": 0.0}

        def backend_of(_: int) -> str:
            answer = send(address)
            pod = ((answer.body or {}) if isinstance(answer, Answer) else {}).get("pod", "")
            return next((name for name in wanted if pod.startswith(name)), pod)
        problems: list[str] = []
        for _ in range(10):
            with ThreadPoolExecutor(10) as pool:
                seen = Counter(pool.map(backend_of, range(500)))
            problems = [f"{name}: {seen[name] / 500:.3f}, want {share}"
                        for name, share in wanted.items()
                        if abs(seen[name] / 500 - share) > 0.05]
            problems += [f"unexpected answer {name!r}" for name in seen if name not in wanted]
            if not problems:
                return
        raise AssertionError("; ".join(problems))


# -- listener status (upstream's GatewayStatusMustHaveListeners) -----------------------------


@dataclass
class ListenerStatus:
    """One expected listener: its route kinds ([]: none at all), attachedRoutes and the
    conditions it must have (type, status, reason; None: any reason)."""

    name: str
    kinds: list[str]
    attached: int
    conditions: list[tuple[str, str, str | None]]

    def problem(self, actual: list[dict[str, Any]]) -> str | None:
        found = next((item for item in actual if item.get("name") == self.name), None)
        if found is None:
            return f"no status for listener {self.name}"
        kinds = [kind["kind"] for kind in found.get("supportedKinds") or []]
        if (not self.kinds and kinds) or any(kind not in kinds for kind in self.kinds):
            return f"listener {self.name}: supportedKinds {kinds}, want {self.kinds}"
        if found.get("attachedRoutes") != self.attached:
            return (f"listener {self.name}: attachedRoutes {found.get('attachedRoutes')}, "
                    f"want {self.attached}")
        for kind, status, reason in self.conditions:
            have = condition_of(found.get("conditions") or [], kind)
            if have.get("status") != status or reason not in (None, have.get("reason")):
                return f"listener {self.name}: {kind} {have}, want {status} {reason or ''}"
        return None


def latest_gateway(home: Path, name: str) -> dict[str, Any] | None:
    """The Gateway once all its conditions are at its generation (upstream's
    GatewayMustHaveLatestConditions)."""
    gateway = get(home, "gateway", "-n", INFRA, name)
    conditions = (gateway.get("status") or {}).get("conditions") or []
    if conditions and all(item.get("observedGeneration") == gateway["metadata"]["generation"]
                          for item in conditions):
        return gateway
    return None


def gateway_listeners(home: Path, name: str, *expected: ListenerStatus) -> dict[str, Any]:
    """Upstream's GatewayStatusMustHaveListeners: exactly these listeners, at the
    Gateway's latest generation; the Gateway."""
    problems: list[str] = []

    def matches() -> dict[str, Any] | None:
        gateway = latest_gateway(home, name)
        if gateway is None:
            problems[:] = ["conditions not at the latest generation"]
            return None
        actual = (gateway.get("status") or {}).get("listeners") or []
        problems[:] = [problem for problem in (item.problem(actual) for item in expected)
                       if problem]
        if len(actual) != len(expected):
            problems.append(f"{len(actual)} listeners, want {len(expected)}")
        return None if problems else gateway
    try:
        return until(matches, f"Gateway {name}'s listeners")
    except AssertionError as error:
        raise AssertionError(f"{error}: {'; '.join(problems)}") from None


def gateway_condition(home: Path, name: str, kind: str, status: str, reason: str) -> None:
    """Upstream's GatewayMustHaveCondition (at the latest generation)."""
    def holds() -> bool:
        gateway = latest_gateway(home, name)
        found = condition_of(((gateway or {}).get("status") or {}).get("conditions") or [],
                             kind)
        return found.get("status") == status and found.get("reason") == reason
    until(holds, f"Gateway {name} {kind}={status} {reason}")


HTTP_ROUTE = ["HTTPRoute"]
ATTACHED_OK = [("Accepted", "True", None), ("ResolvedRefs", "True", None)]


def test_gateway_listener_unsupported_protocol(gateway_api: Path) -> None:
    with applied(gateway_api, "gateway-invalid-listeners-unsupported-protocol.yaml") as home:
        invalid = ListenerStatus("invalid", [], 0, [("Accepted", "False", "UnsupportedProtocol")])
        gateway_condition(home, "gateway-only-unsupported-protocols", "Accepted", "False",
                          "ListenersNotValid")
        gateway_listeners(home, "gateway-only-unsupported-protocols", invalid)
        gateway_condition(home, "gateway-supported-and-unsupported-protocols", "Accepted",
                          "True", "ListenersNotValid")
        gateway_listeners(home, "gateway-supported-and-unsupported-protocols",
                          ListenerStatus("http", HTTP_ROUTE, 0,
                                         [("Accepted", "True", "Accepted")]), invalid)


def test_gateway_invalid_parameters_ref(gateway_api: Path) -> None:
    with applied(gateway_api, "gateway-invalid-parameters-ref.yaml") as home:
        gateway_condition(home, "gateway-invalid-parameters-ref", "Accepted", "False",
                          "InvalidParameters")


def test_gateway_invalid_tls_configuration(gateway_api: Path) -> None:
    with applied(gateway_api, "gateway-invalid-tls-configuration.yaml") as home:
        for name in ("gateway-certificate-nonexistent-secret",
                     "gateway-certificate-unsupported-group",
                     "gateway-certificate-unsupported-kind",
                     "gateway-certificate-malformed-secret"):
            gateway_listeners(home, name, ListenerStatus(
                "https", HTTP_ROUTE, 0, [("ResolvedRefs", "False", "InvalidCertificateRef")]))


def test_gateway_modify_listeners(gateway_api: Path) -> None:
    with applied(gateway_api, "gateway-modify-listeners.yaml") as home:
        before = until(lambda: latest_gateway(home, "gateway-add-listener"),
                       "gateway-add-listener at its generation")
        listeners = before["spec"]["listeners"] + [{
            "name": "http", "port": 80, "protocol": "HTTP", "hostname": "data.test.com",
            "allowedRoutes": {"namespaces": {"from": "All"}}}]
        kubectl(home, "patch", "gateway", "-n", INFRA, "gateway-add-listener",
                "--type=merge", "-p", json.dumps({"spec": {"listeners": listeners}}))
        after = gateway_listeners(home, "gateway-add-listener",
                                  ListenerStatus("https", HTTP_ROUTE, 1, ATTACHED_OK),
                                  ListenerStatus("http", HTTP_ROUTE, 1, ATTACHED_OK))
        assert after["metadata"]["generation"] != before["metadata"]["generation"]

        before = until(lambda: latest_gateway(home, "gateway-remove-listener"),
                       "gateway-remove-listener at its generation")
        assert len(before["spec"]["listeners"]) == 2
        kept = [item for item in before["spec"]["listeners"] if item["name"] == "http"]
        kubectl(home, "patch", "gateway", "-n", INFRA, "gateway-remove-listener",
                "--type=merge", "-p", json.dumps({"spec": {"listeners": kept}}))
        after = gateway_listeners(home, "gateway-remove-listener",
                                  ListenerStatus("http", HTTP_ROUTE, 1, ATTACHED_OK))
        assert after["metadata"]["generation"] != before["metadata"]["generation"]


def test_gateway_name_maximum_length(gateway_api: Path) -> None:
    name = "gateway-name-maximum-length-" + "a" * (253 - len("gateway-name-maximum-length-"))
    with applied(gateway_api, "gateway-name-maximum-length.yaml") as home:
        gateway = until(lambda: latest_gateway(home, name), "the 253-character Gateway")
        assert len(gateway["metadata"]["name"]) == 253


def test_gateway_observed_generation_bump(gateway_api: Path) -> None:
    name = "gateway-observed-generation-bump"
    with applied(gateway_api, "gateway-observed-generation-bump.yaml") as home:
        before = until(lambda: latest_gateway(home, name), f"{name} at its generation")
        listeners = before["spec"]["listeners"] + [{
            "name": "alternate", "hostname": "foo.com", "port": 80, "protocol": "HTTP",
            "allowedRoutes": {"namespaces": {"from": "All"}}}]
        kubectl(home, "patch", "gateway", "-n", INFRA, name, "--type=merge",
                "-p", json.dumps({"spec": {"listeners": listeners}}))
        after = until(lambda: (gateway := latest_gateway(home, name)) and gateway[
            "metadata"]["generation"] != before["metadata"]["generation"] and gateway,
            f"{name}'s conditions at the new generation")
        assert after["metadata"]["generation"] == before["metadata"]["generation"] + 1


@pytest.mark.parametrize(("manifest_name", "conditions"), [
    ("gateway-secret-invalid-reference-grant",
     [("ResolvedRefs", "False", "RefNotPermitted")]),
    ("gateway-secret-missing-reference-grant",
     [("ResolvedRefs", "False", "RefNotPermitted")]),
    ("gateway-secret-reference-grant-all-in-namespace",
     [("Programmed", "True", "Programmed"), ("ResolvedRefs", "True", None)]),
    ("gateway-secret-reference-grant-specific",
     [("Programmed", "True", "Programmed"), ("ResolvedRefs", "True", None)]),
])
def test_gateway_secret_reference_grant(gateway_api: Path, manifest_name: str,
                                        conditions: list[tuple[str, str, str | None]]) -> None:
    """GatewaySecretInvalidReferenceGrant, GatewaySecretMissingReferenceGrant,
    GatewaySecretReferenceGrantAllInNamespace and GatewaySecretReferenceGrantSpecific."""
    with applied(gateway_api, f"{manifest_name}.yaml") as home:
        gateway_listeners(home, manifest_name,
                          ListenerStatus("https", HTTP_ROUTE, 0, conditions))


def test_gateway_with_attached_routes(gateway_api: Path) -> None:
    with applied(gateway_api, "gateway-with-attached-routes.yaml") as home:
        gateway_listeners(home, "gateway-with-one-attached-route",
                          ListenerStatus("http", HTTP_ROUTE, 1, ATTACHED_OK))
        gateway = "gateway-with-two-attached-routes"
        gateway_listeners(home, gateway, ListenerStatus("http", HTTP_ROUTE, 2, ATTACHED_OK))
        route_condition(home, INFRA, "http-route-not-accepted", (INFRA, gateway), "Accepted",
                        "False", "NoMatchingListenerHostname")
        gateway = "unresolved-gateway-with-one-attached-unresolved-route"
        gateway_listeners(home, gateway, ListenerStatus(
            "tls", HTTP_ROUTE, 1, [("Programmed", "False", None),
                                   ("ResolvedRefs", "False", None)]))
        route_condition(home, INFRA, "http-route-4", (INFRA, gateway), "ResolvedRefs", "False")


def test_httproute_https_listener(gateway_api: Path, suite_tls: SuiteTLS) -> None:
    with applied(gateway_api, "httproute-https-listener.yaml") as home:
        gateway = (INFRA, "same-namespace-with-https-listener")
        address = accepted(home, gateway, (INFRA, "httproute-https-test"),
                           (INFRA, "httproute-https-test-no-hostname"))
        for host, backend in (("example.org", "infra-backend-v1"),
                              ("unknown-example.org", None),
                              ("second-example.org", "infra-backend-v2")):
            expect(address, Expected("/", host, port=443, tls=suite_tls.context,
                                     certificate=suite_tls.der, backend=backend,
                                     status=200 if backend else 404))


def test_httproute_multiple_gateways(gateway_api: Path) -> None:
    with applied(gateway_api, "httproute-multiple-gateways.yaml") as home:
        for gateway, dedicated, backend in (
                ("same-namespace", "same-namespace-dedicated-route", "infra-backend-v2"),
                ("all-namespaces", "all-namespaces-dedicated-route", "infra-backend-v3")):
            address = accepted(home, (INFRA, gateway), (INFRA, "multiple-gateways-shared-route"),
                               (INFRA, dedicated))
            expect_all(address, Expected("/shared", backend="infra-backend-v1"),
                       Expected("/", backend=backend))


def test_httproute_observed_generation_bump(gateway_api: Path) -> None:
    with applied(gateway_api, "httproute-observed-generation-bump.yaml") as home:
        name = "observed-generation-bump"
        route_condition(home, INFRA, name, SAME, "Accepted", "True")
        before = get(home, "httproute", "-n", INFRA, name)
        rules = before["spec"]["rules"]
        rules[0]["backendRefs"][0]["name"] = "infra-backend-v2"
        kubectl(home, "patch", "httproute", "-n", INFRA, name, "--type=merge",
                "-p", json.dumps({"spec": {"rules": rules}}))
        route_condition(home, INFRA, name, SAME, "Accepted", "True")
        route_condition(home, INFRA, name, SAME, "ResolvedRefs", "True")
        after = get(home, "httproute", "-n", INFRA, name)
        assert after["metadata"]["generation"] != before["metadata"]["generation"]
        parent = route_parent(home, INFRA, name, SAME)
        assert parent is not None and all(
            item["observedGeneration"] == after["metadata"]["generation"]
            for item in parent["conditions"])


def test_httproute_no_backend_refs(gateway_api: Path) -> None:
    with applied(gateway_api, "httproute-omitted-backendrefs.yaml") as home:
        address = accepted(home, SAME, (INFRA, "omitted-backendrefs"))
        expect_all(address, Expected("/forward", backend="infra-backend-v1"),
                   Expected("/omitted-no-forward", status=500),
                   Expected("/empty-no-forward", status=500))


def test_httproute_partially_invalid_via_invalid_reference_grant(gateway_api: Path) -> None:
    name = "httproute-partially-invalid-via-invalid-reference-grant.yaml"
    with applied(gateway_api, name) as home:
        route = (INFRA, "invalid-reference-grant")
        address = accepted(home, SAME, route, resolved=False)
        route_condition(home, *route, SAME, "ResolvedRefs", "False", "RefNotPermitted")
        expect_all(address, Expected("/v2", status=500),
                   Expected("/", backend="app-backend-v1",
                            namespace=APP_BACKEND))


def test_httproute_service_types(gateway_api: Path) -> None:
    """A ClusterIP Service with EndpointSlices written by hand, a headless one, and a
    headless one with EndpointSlices by hand: each filled, as upstream's
    setupEndpointSlices does, with infra-backend-v1's pods."""
    with applied(gateway_api, "httproute-service-types.yaml") as home:
        address = accepted(home, SAME, (INFRA, "service-types"))
        pods = get(home, "pods", "-n", INFRA, "-l", "app=infra-backend-v1")["items"]
        assert pods
        for prefix in ("manual-endpointslices", "headless-manual-endpointslices"):
            for suffix, family in (("ip4", 4), ("ip6", 6)):
                endpoints = [{
                    "addresses": [item["ip"]],
                    "conditions": {"ready": True, "serving": True, "terminating": False},
                    "nodeName": pod["spec"]["nodeName"],
                    "targetRef": {"kind": "Pod", "name": pod["metadata"]["name"],
                                  "namespace": INFRA, "uid": pod["metadata"]["uid"]}}
                    for pod in pods for item in pod["status"].get("podIPs") or []
                    if (":" in item["ip"]) == (family == 6)]
                kubectl(home, "patch", "endpointslice", "-n", INFRA, f"{prefix}-{suffix}",
                        "--type=merge", "-p", json.dumps({"endpoints": endpoints}))
        for path in ("/manual-endpointslices", "/headless-manual-endpointslices",
                     "/headless"):
            expect(address, Expected(path, backend="infra-backend-v1"))

# -- extended features ---------------------------------------------------------------------


def test_httproute_response_header_modifier(gateway_api: Path) -> None:
    """Extended (SupportHTTPRouteResponseHeaderModification)."""
    with applied(gateway_api, "httproute-response-header-modifier.yaml") as home:
        address = accepted(home, SAME, (INFRA, "response-header-modifier"))
        v1 = "infra-backend-v1"
        expect_all(
            address,
            Expected("/set", backend=v1, backend_response_headers={"Some-Other-Header": "val"},
                     response_headers={"Some-Other-Header": "val",
                                       "X-Header-Set": "set-overwrites-values"}),
            Expected("/set", backend=v1, backend_response_headers={
                "Some-Other-Header": "val", "X-Header-Set": "some-other-value"},
                response_headers={"Some-Other-Header": "val",
                                  "X-Header-Set": "set-overwrites-values"}),
            Expected("/add", backend=v1, backend_response_headers={"Some-Other-Header": "val"},
                     response_headers={"Some-Other-Header": "val",
                                       "X-Header-Add": "add-appends-values"}),
            Expected("/add", backend=v1, backend_response_headers={
                "Some-Other-Header": "val", "X-Header-Add": "some-other-value"},
                response_headers={"Some-Other-Header": "val",
                                  "X-Header-Add": "some-other-value,add-appends-values"}),
            Expected("/remove", backend=v1, backend_response_headers={"X-Header-Remove": "val"},
                     absent_response_headers=("X-Header-Remove",)),
            Expected("/multiple", backend=v1, backend_response_headers={
                "X-Header-Set-2": "set-val-2", "X-Header-Add-2": "add-val-2",
                "X-Header-Remove-2": "remove-val-2", "Another-Header": "another-header-val",
                "X-Header-Remove-1": "val"},
                response_headers={"X-Header-Set-1": "header-set-1",
                                  "X-Header-Set-2": "header-set-2",
                                  "X-Header-Add-1": "header-add-1",
                                  "X-Header-Add-2": "add-val-2,header-add-2",
                                  "X-Header-Add-3": "header-add-3",
                                  "Another-Header": "another-header-val"},
                absent_response_headers=("X-Header-Remove-1", "X-Header-Remove-2")),
            Expected("/case-insensitivity", backend=v1, backend_response_headers={
                "x-header-set": "original-val-set", "x-header-add": "original-val-add",
                "x-header-remove": "original-val-remove", "Another-Header": "another-header-val"},
                response_headers={"X-Header-Set": "header-set",
                                  "X-Header-Add": "original-val-add,header-add",
                                  "X-Lowercase-Add": "lowercase-add",
                                  "X-Mixedcase-Add-1": "mixedcase-add-1",
                                  "X-Mixedcase-Add-2": "mixedcase-add-2",
                                  "X-Uppercase-Add": "uppercase-add",
                                  "Another-Header": "another-header-val"},
                absent_response_headers=("x-header-remove", "X-Header-Remove")),
            Expected("/response-and-request-header-modifiers", backend=v1,
                     headers={"X-Header-Remove": "remove-val",
                              "X-Header-Add-Append": "append-val-1",
                              "X-Header-Echo": "echo"},
                     backend_response_headers={
                         "X-Header-Set-2": "set-val-2", "X-Header-Add-2": "add-val-2",
                         "X-Header-Remove-2": "remove-val-2",
                         "Another-Header": "another-header-val",
                         "X-Header-Remove-1": "remove-val-1", "X-Header-Echo": "echo"},
                     request_headers={"X-Header-Add": "header-val-1",
                                      "X-Header-Set": "set-overwrites-values",
                                      "X-Header-Add-Append": "append-val-1,header-val-2",
                                      "X-Header-Echo": "echo"},
                     absent_headers=("X-Header-Remove",),
                     response_headers={"X-Header-Set-1": "header-set-1",
                                       "X-Header-Set-2": "header-set-2",
                                       "X-Header-Add-1": "header-add-1",
                                       "X-Header-Add-2": "add-val-2,header-add-2",
                                       "Another-Header": "another-header-val",
                                       "X-Header-Echo": "echo"},
                     absent_response_headers=("X-Header-Remove-1", "X-Header-Remove-2")))


def test_httproute_query_param_matching(gateway_api: Path) -> None:
    """Extended (SupportHTTPRouteQueryParamMatching)."""
    with applied(gateway_api, "httproute-query-param-matching.yaml") as home:
        address = accepted(home, SAME, (INFRA, "query-param-matching"))
        v1, v2, v3 = "infra-backend-v1", "infra-backend-v2", "infra-backend-v3"
        for path, headers, backend in (
                ("/?animal=whale", {}, v1), ("/?animal=dolphin", {}, v2),
                ("/?animal=dolphin&color=blue", {}, v3), ("/?ANIMAL=Whale", {}, v3),
                ("/?animal=whale&otherparam=irrelevant", {}, v1),
                ("/?animal=dolphin&color=yellow", {}, v2), ("/?color=blue", {}, None),
                ("/?animal=dog", {}, None), ("/?animal=whaledolphin", {}, None),
                ("/", {}, None), ("/path1?animal=whale", {}, v1),
                ("/?animal=whale", {"version": "one"}, v2),
                ("/path2?animal=whale", {"version": "two"}, v3),
                ("/path3?animal=shark", {}, v1),
                ("/path4?animal=kraken", {"version": "three"}, v1),
                ("/?animal=shark", {}, None), ("/path4?animal=kraken", {}, None),
                ("/path5?animal=hydra", {}, v1), ("/?animal=hydra", {"version": "four"}, v3)):
            expect(address, Expected(path, headers=headers, backend=backend,
                                     status=200 if backend else 404))


def test_httproute_redirect_path(gateway_api: Path) -> None:
    """Extended (SupportHTTPRoutePathRedirect)."""
    with applied(gateway_api, "httproute-redirect-path.yaml") as home:
        address = accepted(home, SAME, (INFRA, "redirect-path"))
        for path, status, host, new_path in (
                ("/original-prefix/lemon", 302, None, "/replacement-prefix/lemon"),
                ("/full/path/original", 302, None, "/full-path-replacement"),
                ("/path-and-host", 302, "example.org", "/replacement-prefix"),
                ("/path-and-status", 301, None, "/replacement-prefix"),
                ("/full-path-and-host", 302, "example.org", "/replacement-full"),
                ("/full-path-and-status", 301, None, "/replacement-full")):
            expect(address, Expected(path, status=status,
                                     redirect=RedirectRequest(host=host, path=new_path)))


def test_httproute_redirect_port(gateway_api: Path) -> None:
    """Extended (SupportHTTPRoutePortRedirect)."""
    with applied(gateway_api, "httproute-redirect-port.yaml") as home:
        address = accepted(home, SAME, (INFRA, "redirect-port"))
        for path, status, host in (("/port", 302, None), ("/port-and-host", 302, "example.org"),
                                   ("/port-and-status", 301, None),
                                   ("/port-and-host-and-status", 302, "example.org")):
            expect(address, Expected(path, status=status,
                                     redirect=RedirectRequest(host=host, port="8083")))


def test_httproute_redirect_scheme(gateway_api: Path) -> None:
    """Extended (SupportHTTPRouteSchemeRedirect)."""
    with applied(gateway_api, "httproute-redirect-scheme.yaml") as home:
        address = accepted(home, SAME, (INFRA, "redirect-scheme"))
        for path, status, host in (("/scheme", 302, None),
                                   ("/scheme-and-host", 302, "example.org"),
                                   ("/scheme-and-status", 301, None),
                                   ("/scheme-and-host-and-status", 302, "example.org")):
            expect(address, Expected(path, status=status,
                                     redirect=RedirectRequest(scheme="https", host=host)))


def test_httproute_rewrite_host(gateway_api: Path) -> None:
    """Extended (SupportHTTPRouteHostRewrite)."""
    with applied(gateway_api, "httproute-rewrite-host.yaml") as home:
        address = accepted(home, SAME, (INFRA, "rewrite-host"))
        expect_all(
            address,
            Expected("/one", "rewrite.example", backend="infra-backend-v1",
                     request_host="one.example.org"),
            Expected("/two", "rewrite.example", backend="infra-backend-v2",
                     request_host="example.org"),
            Expected("/rewrite-host-and-modify-headers", "rewrite.example",
                     headers={"X-Header-Remove": "remove-val",
                              "X-Header-Add-Append": "append-val-1"},
                     backend="infra-backend-v2", request_host="test.example.org",
                     request_headers={"X-Header-Add": "header-val-1",
                                      "X-Header-Add-Append": "append-val-1,header-val-2",
                                      "X-Header-Set": "set-overwrites-values"},
                     absent_headers=("X-Header-Remove",)))


def test_httproute_listener_port_matching(gateway_api: Path) -> None:
    """Extended (SupportHTTPRouteParentRefPort)."""
    with applied(gateway_api, "httproute-listener-port-matching.yaml") as home:
        gateway = (INFRA, "httproute-listener-port-matching")
        address = accepted(home, gateway, (INFRA, "backend-v1"), (INFRA, "backend-v2"),
                           (INFRA, "backend-v3"))
        for host, backend in (("foo.com", "infra-backend-v1"),
                              ("foo.com:8080", "infra-backend-v2"),
                              ("bar.com:8080", "infra-backend-v2"),
                              ("foo.com:8090", "infra-backend-v3"), ("bar.com:8090", None)):
            port = int(host.partition(":")[2] or 80)
            expect(address, Expected("/", host, port=port, backend=backend,
                                     status=200 if backend else 404))


def test_httproute_invalid_parentref_section_name_not_matching_port(gateway_api: Path) -> None:
    """Extended (SupportHTTPRouteParentRefPort)."""
    gateway = (INFRA, "gateway-with-one-not-matching-port-and-section-name-route")
    name = "httproute-invalid-parentref-section-name-not-matching-port.yaml"
    with applied(gateway_api, name) as home:
        route = "httproute-listener-section-name-not-matching-port"
        route_condition(home, INFRA, route, gateway, "Accepted", "False", "NoMatchingParent")
        parents = get(home, "httproute", "-n", INFRA, route)["status"]["parents"]
        assert not any(condition_of(parent["conditions"], "Accepted").get("status") == "True"
                       for parent in parents)
        until(lambda: [listener["attachedRoutes"] for listener in get(
            home, "gateway", gateway[1], "-n", INFRA)["status"]["listeners"]] == [0],
            "GatewayMustHaveZeroRoutes")


def test_gateway_with_attached_routes_with_port_8080(gateway_api: Path) -> None:
    """Extended (SupportGatewayPort8080)."""
    with applied(gateway_api, "gateway-with-attached-routes-with-port-8080.yaml") as home:
        gateway_listeners(home, "gateway-with-two-listeners-and-one-attached-route",
                          ListenerStatus("http-unattached", HTTP_ROUTE, 0, ATTACHED_OK),
                          ListenerStatus("http", HTTP_ROUTE, 1, ATTACHED_OK))


def test_httproute_request_mirror(gateway_api: Path) -> None:
    """Extended (SupportHTTPRouteRequestMirror): the answer comes from infra-backend-v1, and
    infra-backend-v2's log shows the copy (upstream's ExpectMirroredRequest)."""
    with applied(gateway_api, "httproute-request-mirror.yaml") as home:
        address = accepted(home, SAME, (INFRA, "request-mirror"))
        started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 1))
        for expected in (
                Expected("/mirror", backend="infra-backend-v1"),
                Expected("/mirror-and-modify-headers", backend="infra-backend-v1",
                         headers={"X-Header-Remove": "remove-val",
                                  "X-Header-Add-Append": "append-val-1"},
                         request_headers={"X-Header-Add": "header-val-1",
                                          "X-Header-Add-Append": "append-val-1,header-val-2",
                                          "X-Header-Set": "set-overwrites-values"},
                         absent_headers=("X-Header-Remove",))):
            expect(address, expected)
            line = f"Echoing back request made to {expected.path} to client"
            until(lambda line=line: line in kubectl(
                home, "logs", "-n", INFRA, "deployment/infra-backend-v2",
                f"--since-time={started}").stdout, f"the mirrored {expected.path} in "
                "infra-backend-v2's log")


def test_httproute_request_multiple_mirrors(gateway_api: Path) -> None:
    """Extended (SupportHTTPRouteRequestMultipleMirrors): copies to infra-backend-v2 and
    infra-backend-v3."""
    with applied(gateway_api, "httproute-request-multiple-mirrors.yaml") as home:
        address = accepted(home, SAME, (INFRA, "request-multiple-mirrors"))
        started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 1))
        for expected in (
                Expected("/multi-mirror", backend="infra-backend-v1"),
                Expected("/multi-mirror-and-modify-request-headers",
                         backend="infra-backend-v1",
                         headers={"X-Header-Remove": "remove-val",
                                  "X-Header-Add-Append": "append-val-1"},
                         request_headers={"X-Header-Add": "header-val-1",
                                          "X-Header-Add-Append": "append-val-1,header-val-2",
                                          "X-Header-Set": "set-overwrites-values"},
                         absent_headers=("X-Header-Remove",))):
            expect(address, expected)
            line = f"Echoing back request made to {expected.path} to client"
            for mirror in ("infra-backend-v2", "infra-backend-v3"):
                until(lambda line=line, mirror=mirror: line in kubectl(
                    home, "logs", "-n", INFRA, f"deployment/{mirror}",
                    f"--since-time={started}").stdout,
                    f"the mirrored {expected.path} in {mirror}'s log")


def test_httproute_redirect_port_and_scheme(gateway_api: Path, suite_tls: SuiteTLS) -> None:
    """Extended (SupportHTTPRoutePortRedirect, SupportGatewayPort8080): redirects from
    listeners on 80, 8080 and 443 (HTTPS)."""
    with applied(gateway_api, "httproute-redirect-port-and-scheme.yaml") as home:
        address = accepted(home, SAME, (INFRA, "http-route-for-listener-on-port-80"))
        for path, scheme, port in (
                ("/scheme-nil-and-port-nil", "http", None),
                ("/scheme-nil-and-port-80", "http", None),
                ("/scheme-nil-and-port-8080", "http", "8080"),
                ("/scheme-https-and-port-nil", "https", None),
                ("/scheme-https-and-port-443", "https", None),
                ("/scheme-https-and-port-8443", "https", "8443")):
            expect(address, Expected(path, status=302, redirect=RedirectRequest(
                scheme=scheme, host="example.org", port=port)))
        address = accepted(home, (INFRA, "same-namespace-with-http-listener-on-8080"),
                           (INFRA, "http-route-for-listener-on-port-8080"))
        for path, scheme, port in (
                ("/scheme-nil-and-port-nil", "http", "8080"),
                ("/scheme-nil-and-port-80", "http", None),
                ("/scheme-https-and-port-nil", "https", None)):
            expect(address, Expected(path, port=8080, status=302, redirect=RedirectRequest(
                scheme=scheme, host="example.org", port=port)))
        address = accepted(home, (INFRA, "same-namespace-with-https-listener"),
                           (INFRA, "http-route-for-listener-on-port-443"))
        for path, scheme, port in (
                ("/scheme-nil-and-port-nil", "https", None),
                ("/scheme-nil-and-port-443", "https", None),
                ("/scheme-nil-and-port-8443", "https", "8443"),
                ("/scheme-http-and-port-nil", "http", None),
                ("/scheme-http-and-port-80", "http", None),
                ("/scheme-http-and-port-8080", "http", "8080")):
            expect(address, Expected(path, "example.org", port=443, tls=suite_tls.context,
                                     certificate=suite_tls.der, status=302,
                                     redirect=RedirectRequest(scheme=scheme, host="example.org",
                                                              port=port)))


def test_gateway_http_listener_isolation(gateway_api: Path) -> None:
    """Extended (SupportGatewayHTTPListenerIsolation): a request is routed by the routes of
    the most specific listener its host matches, and no other's."""
    paths = ("/empty-hostname", "/wildcard-example-com", "/wildcard-foo-example-com",
             "/abc-foo-example-com")
    served = {"bar.com": "/empty-hostname", "bar.example.com": "/wildcard-example-com",
              "bar.foo.example.com": "/wildcard-foo-example-com",
              "abc.foo.example.com": "/abc-foo-example-com"}
    for manifest_name, gateway, suffix in (
            ("gateway-http-listener-isolation.yaml", "http-listener-isolation", ""),
            ("gateway-http-listener-isolation-with-hostname-intersection.yaml",
             "http-listener-isolation-with-hostname-intersection",
             "-with-hostname-intersection")):
        with applied(gateway_api, manifest_name) as home:
            address = accepted(home, (INFRA, gateway), *(
                (INFRA, f"attaches-to{path.replace('/', '-')}{suffix}") for path in paths))
            for host, path in ((host, path) for host in served for path in paths):
                backend = "infra-backend-v1" if served[host] == path else None
                expect(address, Expected(path, host, backend=backend,
                                         status=200 if backend else 404))
