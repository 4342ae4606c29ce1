"""A secured API server: TLS, who is asking (client certificates, bearer tokens,
anonymous) and what they may do (RBAC with the bootstrap roles), driven by the real
kubectl and the official Python client, as upstream answers each case."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from kubernetes import client, config

from minikube_py.cluster.etcd import EtcdProcess
from minikube_py.process import free_port
from minikube_py.security import pki

KUBECTL = str(Path(sys.executable).with_name("kubectl"))
TOKEN = "bob-s3cret-token"


@dataclass
class SecuredServer:
    url: str
    directory: Path
    ca: pki.KeyPair
    process: subprocess.Popen[bytes]

    def kubeconfig(self, name: str, *, cert: pki.KeyPair | None = None, token: str = ""
                   ) -> Path:
        """A kubeconfig as `minikube-py up` writes one, for one user."""
        user: dict[str, str] = {}
        if cert is not None:
            user = {"client-certificate-data": base64.b64encode(cert.cert_pem).decode(),
                    "client-key-data": base64.b64encode(cert.key_pem).decode()}
        elif token:
            user = {"token": token}
        document = {
            "apiVersion": "v1", "kind": "Config", "current-context": name,
            "clusters": [{"name": "secured", "cluster": {
                "server": self.url,
                "certificate-authority-data": base64.b64encode(self.ca.cert_pem).decode()}}],
            "users": [{"name": name, "user": user}],
            "contexts": [{"name": name, "context": {"cluster": "secured", "user": name}}]}
        path = self.directory / f"{name}.kubeconfig"
        path.write_text(yaml.safe_dump(document))
        return path

    def client_context(self, cert: pki.KeyPair | None) -> ssl.SSLContext:
        context = ssl.create_default_context(cadata=self.ca.cert_pem.decode())
        if cert is not None:
            cert.write(self.directory, "client-for-context")
            context.load_cert_chain(self.directory / "client-for-context.crt",
                                    self.directory / "client-for-context.key")
        return context


def start_server(etcd_url: str, directory: Path, ca: pki.KeyPair, *extra: str
                 ) -> SecuredServer:
    """`python -m minikube_py.apiserver` over TLS with client certificates, a token file
    and RBAC; returns once /readyz answers."""
    directory.mkdir(parents=True, exist_ok=True)
    serving = pki.issue(ca, "kube-apiserver", dns_names=pki.apiserver_names(),
                        ip_addresses=("127.0.0.1",), server=True)
    serving.write(directory, "apiserver")
    (directory / "ca.crt").write_bytes(ca.cert_pem)
    (directory / "tokens.csv").write_text(f'{TOKEN},bob,1001,"dev,qa"\n')
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "minikube_py.apiserver", f"--etcd-servers={etcd_url}",
         f"--secure-port={port}", f"--tls-cert-file={directory / 'apiserver.crt'}",
         f"--tls-private-key-file={directory / 'apiserver.key'}",
         f"--client-ca-file={directory / 'ca.crt'}",
         f"--token-auth-file={directory / 'tokens.csv'}", "--authorization-mode=RBAC",
         "--etcd-compaction-interval=0", *extra],
        stdout=subprocess.DEVNULL, stderr=(directory / "apiserver.log").open("wb"))
    server = SecuredServer(f"https://127.0.0.1:{port}", directory, ca, process)
    try:
        return _wait_ready(server, ca)
    except BaseException:
        stop(server)  # a server that never got ready is not left behind
        raise


def _wait_ready(server: SecuredServer, ca: pki.KeyPair) -> SecuredServer:
    """Until /readyz answers and the bootstrap roles exist."""
    process, directory = server.process, server.directory
    deadline = time.monotonic() + 30
    as_admin = server.client_context(admin_cert(ca))
    while True:
        try:
            with urllib.request.urlopen(f"{server.url}/readyz", timeout=2,
                                        context=as_admin) as answer:
                if answer.status == 200:
                    break
        except (urllib.error.URLError, OSError):
            pass
        assert process.poll() is None, (directory / "apiserver.log").read_text()
        assert time.monotonic() < deadline, "the secured API server never got ready"
        time.sleep(0.2)
    # the bootstrap roles are created right after the system namespaces; a RoleBinding
    # in kube-public is the last of them
    admin = server.kubeconfig("admin", cert=admin_cert(ca))
    while kubectl(admin, "get", "rolebinding", "-n", "kube-public",
                  "system:controller:bootstrap-signer").returncode != 0:
        assert time.monotonic() < deadline, "no bootstrap RBAC policy"
        time.sleep(0.2)
    return server


def stop(server: SecuredServer) -> None:
    server.process.terminate()
    server.process.wait(10)


@contextlib.asynccontextmanager
async def server_of_its_own(directory: Path, ca: pki.KeyPair, *extra: str
                            ) -> AsyncIterator[SecuredServer]:
    """start_server on an etcd of its own, for a module's fixture: its objects and the
    bootstrap roles stay out of the session's etcd. Both are stopped on the way out."""
    async with EtcdProcess(directory.with_name(f"{directory.name}-etcd")) as etcd:
        started = await asyncio.to_thread(start_server, etcd.client_url, directory, ca,
                                          *extra)
        try:
            yield started
        finally:
            await asyncio.to_thread(stop, started)


def admin_cert(ca: pki.KeyPair) -> pki.KeyPair:
    return pki.issue(ca, "kubernetes-admin", organizations=("system:masters",), client=True)


def kubectl(kubeconfig: Path, *args: str, stdin: str | None = None
            ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([KUBECTL, f"--kubeconfig={kubeconfig}", *args], input=stdin,
                          capture_output=True, text=True, timeout=30)


@pytest.fixture(scope="module")
async def secured_etcd(fast_tmp: Path) -> AsyncIterator[EtcdProcess]:
    """An etcd of this module's own: the bootstrap roles stay out of the shared one."""
    async with EtcdProcess(fast_tmp / f"etcd-security-{uuid.uuid4().hex[:8]}") as process:
        yield process


@pytest.fixture(scope="module")
def ca() -> pki.KeyPair:
    return pki.new_ca()


@pytest.fixture(scope="module")
def server(secured_etcd: EtcdProcess, ca: pki.KeyPair, fast_tmp: Path
           ) -> Iterator[SecuredServer]:
    started = start_server(secured_etcd.client_url, fast_tmp / "secured", ca)
    yield started
    stop(started)


@pytest.fixture(scope="module")
def admin(server: SecuredServer, ca: pki.KeyPair) -> Path:
    return server.kubeconfig("admin", cert=admin_cert(ca))


def test_the_admin_certificate_is_in_system_masters_and_may_do_anything(
        server: SecuredServer, admin: Path) -> None:
    assert kubectl(admin, "get", "namespaces", "-o", "name").stdout.split() == [
        "namespace/default", "namespace/kube-node-lease", "namespace/kube-public",
        "namespace/kube-system"]
    whoami = kubectl(admin, "auth", "whoami", "-o", "json")
    user = json.loads(whoami.stdout)["status"]["userInfo"]
    assert user == {"username": "kubernetes-admin",
                    "groups": ["system:masters", "system:authenticated"]}
    assert kubectl(admin, "auth", "can-i", "*", "*").stdout == "yes\n"


def test_no_credentials_is_system_anonymous_who_sees_only_health_and_version(
        server: SecuredServer) -> None:
    api = config.new_client_from_config(config_file=str(server.kubeconfig("anonymous")))
    try:
        with pytest.raises(client.ApiException) as listed:
            client.CoreV1Api(api).list_namespaced_pod("default")
    finally:
        api.close()
    assert listed.value.status == 403
    assert json.loads(listed.value.body) == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": 'pods is forbidden: User "system:anonymous" cannot list resource "pods" '
                   'in API group "" in the namespace "default"',
        "reason": "Forbidden", "details": {"kind": "pods"}, "code": 403}
    context = server.client_context(None)
    for path in ("/healthz", "/livez", "/readyz", "/version"):
        with urllib.request.urlopen(server.url + path, context=context, timeout=5) as answer:
            assert answer.status == 200, path
    with pytest.raises(urllib.error.HTTPError) as denied:
        urllib.request.urlopen(server.url + "/api", context=context, timeout=5)
    assert denied.value.code == 403
    assert json.loads(denied.value.read())["message"] == (
        'forbidden: User "system:anonymous" cannot get path "/api"')


def test_a_bad_token_is_401_even_though_anonymous_requests_are_allowed(
        server: SecuredServer) -> None:
    wrong = server.kubeconfig("wrong-token", token="not-a-token")
    denied = kubectl(wrong, "get", "pods")
    assert denied.returncode == 1
    assert "error: You must be logged in to the server (Unauthorized)" in denied.stderr
    with pytest.raises(urllib.error.HTTPError) as unauthorized:
        urllib.request.urlopen(urllib.request.Request(
            server.url + "/api/v1/namespaces/default/pods",
            headers={"Authorization": "Bearer nope"}),
            context=server.client_context(None), timeout=5)
    assert unauthorized.value.code == 401
    assert json.loads(unauthorized.value.read()) == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "Unauthorized", "reason": "Unauthorized", "code": 401}


def first_answer(server: SecuredServer, cert: pki.KeyPair) -> bytes:
    """What the server sends back to a request over TLS with this client certificate;
    b"" when it hangs up instead."""
    host, port = server.url.removeprefix("https://").split(":")
    context = server.client_context(cert)
    try:
        with socket.create_connection((host, int(port)), timeout=5) as raw, \
                context.wrap_socket(raw, server_hostname=host) as tls:
            tls.sendall(b"GET /api HTTP/1.1\r\nHost: x\r\n\r\n")
            return tls.recv(100)
    except (ssl.SSLError, ConnectionResetError, BrokenPipeError):
        return b""


def test_a_certificate_of_another_ca_fails_the_tls_handshake(server: SecuredServer,
                                                             ca: pki.KeyPair) -> None:
    # TLS 1.3 finishes the handshake before the server judges the client's certificate:
    # the client learns it at its first read, as a closed connection
    stranger = pki.issue(pki.new_ca("someone-else"), "mallory",
                         organizations=("system:masters",), client=True)
    assert first_answer(server, stranger) == b""
    assert first_answer(server, admin_cert(ca)).startswith(b"HTTP/1.1 200")


def test_a_user_without_bindings_is_forbidden_until_a_role_binding_grants_view(
        server: SecuredServer, admin: Path, ca: pki.KeyPair) -> None:
    alice = server.kubeconfig("alice", cert=pki.issue(ca, "alice", client=True))
    kubectl(admin, "create", "namespace", "team-a")
    denied = kubectl(alice, "get", "pods", "-n", "team-a")
    assert denied.stderr.strip() == (
        'Error from server (Forbidden): pods is forbidden: User "alice" cannot list resource '
        '"pods" in API group "" in the namespace "team-a"')
    assert kubectl(alice, "auth", "can-i", "list", "pods", "-n", "team-a").stdout == "no\n"
    granted = kubectl(admin, "create", "rolebinding", "alice-views", "--clusterrole=view",
                      "--user=alice", "-n", "team-a")
    assert granted.returncode == 0, granted.stderr
    deadline = time.monotonic() + 60
    while kubectl(alice, "get", "pods", "-n", "team-a").returncode != 0:
        assert time.monotonic() < deadline, "the binding never took effect"
        time.sleep(0.2)
    # view reads, and no more: not in another namespace, no writes, no Secrets
    for verb, resource, namespace, answer in (
            ("list", "pods", "team-a", "yes"), ("get", "pods/log", "team-a", "yes"),
            ("create", "pods", "team-a", "no"), ("list", "secrets", "team-a", "no"),
            ("list", "pods", "default", "no"), ("list", "nodes", "", "no")):
        scope = ["-n", namespace] if namespace else []
        assert kubectl(alice, "auth", "can-i", verb, resource, *scope).stdout == (
            f"{answer}\n"), (verb, resource, namespace)
    created = kubectl(alice, "create", "configmap", "x", "-n", "team-a")
    assert created.stderr.strip() == (
        'error: failed to create configmap: configmaps is forbidden: User "alice" cannot '
        'create resource "configmaps" in API group "" in the namespace "team-a"')
    exec_denied = kubectl(alice, "get", "--raw",
                          "/api/v1/namespaces/team-a/pods/web/log")
    assert "pods \"web\" is forbidden" not in exec_denied.stderr  # log is viewable: 404
    # and what she may do there, listed (SelfSubjectRulesReview)
    listed = kubectl(alice, "auth", "can-i", "--list", "-n", "team-a").stdout.splitlines()
    assert listed[0].split() == ["Resources", "Non-Resource", "URLs", "Resource", "Names",
                                 "Verbs"]
    pods = next(line.split() for line in listed if line.startswith("pods "))
    assert pods == ["pods", "[]", "[]", "[get", "list", "watch]"]
    assert not any(line.startswith("secrets") for line in listed)
    assert any(line.startswith("selfsubjectaccessreviews.authorization.k8s.io")
               for line in listed)


def test_a_token_users_groups_are_bound_as_groups(server: SecuredServer, admin: Path
                                                   ) -> None:
    bob = server.kubeconfig("bob", token=TOKEN)
    kubectl(admin, "create", "namespace", "team-b")
    kubectl(admin, "create", "rolebinding", "dev-edits", "--clusterrole=edit",
            "--group=dev", "-n", "team-b")
    deadline = time.monotonic() + 60
    while (done := kubectl(bob, "create", "configmap", "made-by-bob", "-n", "team-b")
           ).returncode != 0:
        assert time.monotonic() < deadline, done.stderr
        time.sleep(0.2)
    user = json.loads(kubectl(bob, "auth", "whoami", "-o", "json").stdout)["status"]
    assert user["userInfo"] == {"username": "bob", "uid": "1001",
                                "groups": ["dev", "qa", "system:authenticated"]}
    assert kubectl(bob, "auth", "can-i", "create", "rolebindings", "-n", "team-b"
                   ).stdout == "no\n"


def test_a_null_non_resource_url_in_a_role_is_the_empty_url_not_a_500(
        server: SecuredServer, admin: Path, ca: pki.KeyPair) -> None:
    """Upstream decodes `nonResourceURLs: [null]` as [""], a URL no request has; kept as
    null, the authorizer failed on it for every non-resource request of the role's user."""
    carol = server.kubeconfig("carol", cert=pki.issue(ca, "carol", client=True))
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "metrics-reader-null"},
            "rules": [{"verbs": ["get"], "nonResourceURLs": [None, "/metrics"]}]}
    created = kubectl(admin, "create", "-f", "-", "-o", "json", stdin=json.dumps(role))
    assert created.returncode == 0, created.stderr
    assert json.loads(created.stdout)["rules"][0]["nonResourceURLs"] == ["", "/metrics"]
    bound = kubectl(admin, "create", "clusterrolebinding", "carol-metrics",
                    "--clusterrole=metrics-reader-null", "--user=carol")
    assert bound.returncode == 0, bound.stderr
    deadline = time.monotonic() + 60
    while (metrics := kubectl(carol, "get", "--raw", "/metrics")).returncode != 0:
        assert "InternalError" not in metrics.stderr, metrics.stderr
        assert time.monotonic() < deadline, metrics.stderr
        time.sleep(0.2)
    assert "apiserver_request_total" in metrics.stdout


def test_subject_access_reviews_answer_for_others_and_check_their_input(
        server: SecuredServer, admin: Path) -> None:
    api = config.new_client_from_config(config_file=str(admin))
    try:
        authz = client.AuthorizationV1Api(api)
        review = authz.create_subject_access_review({
            "spec": {"user": "carol", "groups": ["system:masters"],
                     "resourceAttributes": {"verb": "delete", "resource": "nodes"}}})
        assert review.status.allowed is True
        review = authz.create_subject_access_review({
            "spec": {"user": "carol", "resourceAttributes": {
                "verb": "get", "resource": "pods", "namespace": "default"}}})
        assert review.status.allowed is False
        # in one namespace: alice's view there (a RoleBinding of an earlier test)
        local = authz.create_namespaced_local_subject_access_review("team-a", {
            "metadata": {"namespace": "team-a"},
            "spec": {"user": "alice", "resourceAttributes": {"verb": "list",
                                                            "resource": "pods"}}})
        assert local.status.allowed is True
        with pytest.raises(client.ApiException) as elsewhere:
            authz.create_namespaced_local_subject_access_review("team-a", {
                "metadata": {"namespace": "team-a"},
                "spec": {"user": "alice", "resourceAttributes": {
                    "verb": "list", "resource": "pods", "namespace": "default"}}})
        assert elsewhere.value.status == 422
        with pytest.raises(client.ApiException) as invalid:
            authz.create_self_subject_access_review({"spec": {}})
        assert invalid.value.status == 422
        assert json.loads(invalid.value.body)["message"] == (
            'SelfSubjectAccessReview.authorization.k8s.io "" is invalid: '
            "spec.resourceAttributes: Invalid value: null: exactly one of "
            "nonResourceAttributes or resourceAttributes must be specified")
    finally:
        api.close()


def test_without_anonymous_auth_no_credentials_is_401(
        secured_etcd: EtcdProcess, ca: pki.KeyPair, fast_tmp: Path) -> None:
    strict = start_server(secured_etcd.client_url, fast_tmp / "strict", ca,
                          "--anonymous-auth=false")
    try:
        with pytest.raises(urllib.error.HTTPError) as unauthorized:
            urllib.request.urlopen(strict.url + "/healthz",
                                   context=strict.client_context(None), timeout=5)
        assert unauthorized.value.code == 401
    finally:
        stop(strict)


def test_livez_and_readyz_list_their_checks_as_upstream(server: SecuredServer,
                                                        admin: Path) -> None:
    readyz = kubectl(admin, "get", "--raw", "/readyz?verbose").stdout.splitlines()
    assert readyz == [
        "[+]ping ok", "[+]log ok", "[+]etcd ok", "[+]etcd-readiness ok",
        "[+]informer-sync ok", "[+]poststarthook/start-system-namespaces-controller ok",
        "[+]poststarthook/rbac/bootstrap-roles ok",
        "[+]poststarthook/priority-and-fairness-config-producer ok", "[+]shutdown ok",
        "readyz check passed"]
    livez = kubectl(admin, "get", "--raw", "/livez?verbose&exclude=etcd").stdout.splitlines()
    assert livez[:3] == ["[+]ping ok", "[+]log ok", "[+]etcd excluded: ok"]
    assert livez[-1] == "livez check passed"
    assert kubectl(admin, "get", "--raw", "/readyz/informer-sync").stdout == "ok"
    missing = kubectl(admin, "get", "--raw", "/livez/no-such-check")
    assert missing.returncode == 1 and "NotFound" in missing.stderr


def test_impersonation_asks_for_the_impersonate_verb_then_acts_as_that_user(
        server: SecuredServer, admin: Path, ca: pki.KeyPair) -> None:
    kubectl(admin, "create", "namespace", "team-c")
    kubectl(admin, "create", "rolebinding", "carol-views", "--clusterrole=view",
            "--user=carol", "-n", "team-c")
    deadline = time.monotonic() + 60
    while kubectl(admin, "auth", "can-i", "list", "pods", "-n", "team-c", "--as=carol"
                  ).stdout != "yes\n":
        assert time.monotonic() < deadline, "carol never got view"
        time.sleep(0.2)
    assert kubectl(admin, "auth", "can-i", "create", "pods", "-n", "team-c",
                   "--as=carol").stdout == "no\n"
    as_carol = json.loads(kubectl(admin, "auth", "whoami", "--as=carol", "--as-group=qa",
                                  "-o", "json").stdout)["status"]["userInfo"]
    assert as_carol == {"username": "carol", "groups": ["qa", "system:authenticated"]}
    # someone without the impersonate verb cannot
    dave = server.kubeconfig("dave", cert=pki.issue(ca, "dave", client=True))
    denied = kubectl(dave, "get", "pods", "-n", "team-c", "--as=carol")
    assert denied.stderr.strip() == (
        'Error from server (Forbidden): users "carol" is forbidden: User "dave" cannot '
        'impersonate resource "users" in API group "" at the cluster scope')
