"""Property: a user bound to `view` in one namespace is never let beyond that role.

The requests of tests/test_fuzz_api.py (every served kind and verb, well-typed bodies,
then malformed ones) are sent by a user whose only grant is a RoleBinding to the
bootstrap role `view` in the namespace the requests target, to an API server with TLS,
client certificates and RBAC, on an etcd of its own. Whatever comes back: no 5xx, no 2xx
for anything but a read (or a question about oneself, which every signed-in user may
ask), and etcd never moves (view writes nothing).
"""

from __future__ import annotations

import http.client
import json
import shutil
import ssl
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, seed, settings

from minikube_py.process import free_port
from minikube_py.security import pki
from tests.api_helpers import wait_for_start_up_writes
from tests.test_fuzz_api import (
    FIXED_SEED,
    NAMESPACE,
    Cluster,
    Request,
    etcd_revision,
    keys_written_since,
    requests,
    send,
)

pytestmark = pytest.mark.slow
CASES = 1000
# What every signed-in user may create (system:basic-user): questions, never stored.
ASKING_IS_FREE = {"/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
                  "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
                  "/apis/authentication.k8s.io/v1/selfsubjectreviews"}


def _https(port: int, context: ssl.SSLContext) -> http.client.HTTPSConnection:
    return http.client.HTTPSConnection("127.0.0.1", port, timeout=10, context=context)


def _as(ca: pki.KeyPair, scratch: Path, user: str, groups: tuple[str, ...]
        ) -> ssl.SSLContext:
    cert, key = pki.issue(ca, user, organizations=groups, client=True).write(scratch, user)
    context = ssl.create_default_context(cafile=scratch / "ca.crt")
    context.load_cert_chain(cert, key)
    return context


def _wait_ready(port: int, context: ssl.SSLContext, process: subprocess.Popen[bytes]
                ) -> None:
    deadline = time.monotonic() + 30
    while True:
        try:
            connection = _https(port, context)
            connection.request("GET", "/readyz")
            if connection.getresponse().status == 200:
                return
        except OSError:
            pass
        assert process.poll() is None, "the API server exited"
        assert time.monotonic() < deadline, "the API server did not become ready"
        time.sleep(0.1)


@pytest.fixture(scope="module")
def viewer(fast_tmp: Path) -> Iterator[Cluster]:
    """etcd, a secured API server, and a connection as a user with `view` in NAMESPACE (in
    the session's scratch dir, which the next session removes if this one crashed)."""
    if shutil.which("etcd") is None:
        pytest.skip("etcd is not installed")
    scratch = Path(tempfile.mkdtemp(prefix="fuzz-rbac-", dir=fast_tmp))
    ca = pki.new_ca()
    (scratch / "ca.crt").write_bytes(ca.cert_pem)
    cert, key = pki.issue(ca, "kube-apiserver", ip_addresses=("127.0.0.1",),
                          server=True).write(scratch, "apiserver")
    etcd_port, peer_port, api_port = free_port(), free_port(), free_port()
    etcd_url, peer_url = f"http://127.0.0.1:{etcd_port}", f"http://127.0.0.1:{peer_port}"
    log = (scratch / "log").open("wb")
    etcd = subprocess.Popen(
        ["etcd", "--name=fuzz", f"--data-dir={scratch / 'etcd'}",
         f"--listen-client-urls={etcd_url}", f"--advertise-client-urls={etcd_url}",
         f"--listen-peer-urls={peer_url}", f"--initial-advertise-peer-urls={peer_url}",
         f"--initial-cluster=fuzz={peer_url}", "--log-level=error"], stdout=log, stderr=log)
    api = subprocess.Popen(
        [sys.executable, "-m", "minikube_py.apiserver", f"--etcd-servers={etcd_url}",
         "--bind-address=127.0.0.1", f"--secure-port={api_port}", f"--tls-cert-file={cert}",
         f"--tls-private-key-file={key}", f"--client-ca-file={scratch / 'ca.crt'}",
         "--authorization-mode=RBAC"], stdout=log, stderr=log)
    try:
        admin_context = _as(ca, scratch, "admin", ("system:masters",))
        _wait_ready(api_port, admin_context, api)
        admin = _https(api_port, admin_context)
        for path, body in (
                ("/api/v1/namespaces", {"metadata": {"name": NAMESPACE}}),
                (f"/apis/rbac.authorization.k8s.io/v1/namespaces/{NAMESPACE}/rolebindings",
                 {"metadata": {"name": "viewer"},
                  "roleRef": {"apiGroup": "rbac.authorization.k8s.io",
                              "kind": "ClusterRole", "name": "view"},
                  "subjects": [{"kind": "User", "name": "viewer"}]})):
            deadline = time.monotonic() + 30
            while True:  # the bootstrap roles land a moment after readiness
                admin.request("POST", path, json.dumps(body),
                              {"Content-Type": "application/json"})
                answer = admin.getresponse()
                answer.read()
                if answer.status in (201, 409):
                    break
                assert time.monotonic() < deadline, f"{path}: {answer.status}"
                time.sleep(0.2)
        wait_for_start_up_writes(admin)
        yield Cluster(_https(api_port, _as(ca, scratch, "viewer", ())),
                      http.client.HTTPConnection("127.0.0.1", etcd_port, timeout=10),
                      api_port, etcd_port, scratch / "log")
    finally:
        for process in (api, etcd):
            process.terminate()
            process.wait(10)
        log.close()
        shutil.rmtree(scratch, ignore_errors=True)


def test_a_view_user_gets_nothing_beyond_view_and_no_5xx(viewer: Cluster) -> None:
    answered: dict[int, int] = {}

    @seed(FIXED_SEED)
    @settings(max_examples=CASES, deadline=None, database=None, derandomize=False,
              phases=[Phase.generate, Phase.shrink],
              suppress_health_check=list(HealthCheck))
    @given(requests())
    def only_reads_get_through(request: Request) -> None:
        before = etcd_revision(viewer)
        status, body = send(viewer, request)
        answered[status // 100] = answered.get(status // 100, 0) + 1
        assert status < 500, f"{status} for {request}: {body[:2000]!r}"
        if 200 <= status < 300:
            assert request.method == "GET" or request.path.split("?")[0] in ASKING_IS_FREE, (
                f"{status} for {request}")
        assert etcd_revision(viewer) == before, (
            f"{status} for {request}: etcd moved: {keys_written_since(viewer, before)}")

    only_reads_get_through()
    # the role was exercised both ways: reads let through, the rest refused
    assert answered.get(2, 0) >= 10 and answered.get(4, 0) >= 10, answered
