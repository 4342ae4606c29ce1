"""mkctl's pod commands next to the real kubectl, where no container has to run: `wait`,
`auth can-i`, and what `logs`, `exec`, `attach` and `port-forward` say about bad input
(pods of the shared API server are never scheduled). Each case runs both tools with the
same arguments and must print the same thing and exit with the same code.

Streams to running containers are tested on a cluster in
tests/e2e/test_mkctl_into_the_pod.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from minikube_py.cluster.apiserver import APIServerProcess
from tests.api_helpers import until
from tests.test_mkctl import (
    AGENTS,
    KUBECTL,
    REPO,
    Clis,
    assert_same,
    mkctl_command,
    reads_by,
)

MANIFEST = """\
apiVersion: v1
kind: Pod
metadata: {name: one, labels: {app: web}}
spec:
  containers:
  - {name: nginx, image: nginx, ports: [{containerPort: 80, name: http}]}
---
apiVersion: v1
kind: Pod
metadata: {name: two}
spec:
  containers: [{name: nginx, image: nginx}, {name: side, image: busybox}]
---
apiVersion: v1
kind: Pod
metadata:
  name: three
  annotations: {kubectl.kubernetes.io/default-container: gone}
spec:
  initContainers: [{name: setup, image: busybox}]
  containers: [{name: main, image: busybox}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: none}
  ports: [{port: 80, targetPort: http}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: nginx, image: nginx}]
"""

READY = {"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}

BAD_INPUT = [
    "logs", "logs one a b", "logs one --tail=-2", "logs nope", "logs deploy/nope",
    "logs two", "logs two -c nope", "logs two nope", "logs one --limit-bytes=0",
    "logs svc/web --pod-running-timeout=1s",
    "logs one --since=5s --since-time=2026-01-01T00:00:00Z",
    "exec one", "exec -- ls", "exec one ls", "exec nope -- ls", "exec one -- ls",
    "exec two -- ls", "exec one -c nope -- ls", "exec one -it -- ls", "exec one --bogus -- ls",
    "attach", "attach a b c", "attach pod one", "attach nope", "attach one", "attach one -q",
    "attach one -it", "attach two", "attach two -c x",
    "port-forward one", "port-forward nope 80", "port-forward two 80",
    "port-forward svc/web 80 --pod-running-timeout=1s", "port-forward one 80",
    "port-forward one a:80", "logs one --bogus", "port-forward one 80 --bogus",
    "logs -l app=web one", "logs -l app=none", "logs -l app=web", "logs -l app=web -c nope",
    "logs one --all-containers -c nginx", "logs one nginx -c nginx",
    "logs two --all-containers", "logs two --all-containers --prefix", "logs two --all-pods",
    "logs -f two --all-containers --max-log-requests=1",
    "logs -f one --max-log-requests=0", "logs deploy/web --all-pods --pod-running-timeout=1s",
    "logs cm/settings", "exec three -- ls", "logs three", "logs three --all-pods",
    "attach three", "exec three -c main -- ls",
]

WAITS = [
    "wait pod/one", "wait --for=foo pod/one", "wait --for=condition=Ready",
    "wait --for=condition=Ready pod/one", "wait --for=condition=ready pod one",
    "wait --for=condition=Ready=false pod/one --timeout=1s",
    "wait --for=condition=Ready pod/one pod/two --timeout=1s",
    "wait --for=condition=Ready pod/nope --timeout=1s", "wait --for=delete pod/nope",
    "wait --for=delete pod/two --timeout=1s", "wait --for=create pod/one",
    "wait --for=jsonpath={.status.phase}=Running pod/one",
    "wait --for=jsonpath=.status.phase pod/one",
    "wait --for=jsonpath={.status.phase}=Pending pod/one --timeout=1s",
    "wait --for=jsonpath={.bad pod/one", "wait --for=condition=Ready pod/one --timeout=abc",
    "wait --for=condition=Ready pods -l app=none",
    "wait --for=condition=Ready pods --all --timeout=0",
    "wait --for=condition=Ready pods --all --timeout=0 -o name",
    "wait --for=condition=Available deploy/web --timeout=1s",
    "wait --for=jsonpath={.spec.replicas}=1 deploy/web",
]

CAN_I = [
    "auth can-i", "auth can-i get", "auth can-i get pods a", "auth can-i get pods",
    "auth can-i get pods -A", "auth can-i frob pods", "auth can-i get foos",
    "auth can-i get foos.bar", "auth can-i list nodes", "auth can-i list nodes -A",
    "auth can-i get /healthz", "auth can-i frob /healthz", "auth can-i get pods -q",
    "auth can-i get pods/log", "auth can-i get pods --subresource=log",
    "auth can-i get deploy.apps", "auth can-i get pods --as bob",
    "auth can-i get pods --bogus", "wait --bogus pod/one",
    "auth can-i --list", "auth can-i --list --no-headers", "auth can-i --list get pods",
    "auth can-i --list -q", "auth can-i --list -A", "auth can-i get pods --no-headers",
    "auth can-i --list --subresource=log",
]


class PodClis(Clis):
    namespace: str = ""

    def both(self, command: str) -> None:
        # -n first: after an exec's `--` it would be part of the remote command
        args = ["-n", self.namespace, *command.split()]
        assert_same(*self.compare(*args))


@pytest.fixture(scope="module")
def clis(kubeconfig: Path, tmp_path_factory: pytest.TempPathFactory) -> PodClis:
    clis = PodClis(kubeconfig, tmp_path_factory.mktemp("mkctl-pods-cache"))
    clis.namespace = f"pods-{uuid.uuid4().hex[:6]}"
    assert clis.kubectl("create", "namespace", clis.namespace).code == 0
    created = clis.kubectl("create", "-n", clis.namespace, "-f", "-", input=MANIFEST)
    assert created.code == 0, created.err
    ready = clis.kubectl("patch", "pod", "one", "-n", clis.namespace, "--subresource=status",
                         "--type=merge", "-p", json.dumps(READY))
    assert ready.code == 0, ready.err
    return clis


@pytest.mark.parametrize("command", BAD_INPUT)
def test_bad_input_to_the_stream_commands_reads_as_kubectl(clis: PodClis, command: str
                                                           ) -> None:
    clis.both(command)


@pytest.mark.parametrize("command", WAITS)
def test_wait_on_what_is_already_there_answers_as_kubectl(clis: PodClis, command: str
                                                          ) -> None:
    clis.both(command)


def test_wait_on_the_objects_of_files_as_kubectl(clis: PodClis, tmp_path: Path) -> None:
    """-f names the objects as the files write them: their namespace, or the one given."""
    (tmp_path / "one.yaml").write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: one}\n")
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "gone.yaml").write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: gone}\n---\n"
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\n")
    (tmp_path / "bad.yaml").write_text("apiVersion: v1\nkind: Widget\nmetadata: {name: w}\n")
    for command in ("wait --for=condition=Ready -f {dir}/one.yaml",
                    "wait --for=condition=Ready -f {dir}/one.yaml -o name",
                    "wait --for=delete -f {dir}/one.yaml --timeout=1s",
                    "wait --for=condition=Ready -f {dir}/one.yaml pod/one",
                    "wait --for=condition=Ready -f {dir}/missing.yaml",
                    "wait --for=condition=Ready -f {dir}/bad.yaml"):
        clis.both(command.format(dir=tmp_path))


@pytest.mark.parametrize("command", CAN_I)
def test_can_i_on_a_server_that_allows_everything(clis: PodClis, command: str) -> None:
    clis.both(command)


def test_wait_returns_as_soon_as_the_condition_is_met_and_the_object_deleted(
        clis: PodClis, apiserver: APIServerProcess,
        processes: Callable[..., subprocess.Popen[str]]) -> None:
    """Both tools wait on the same pod: the pod becomes Ready while they wait, then it
    is deleted while they wait for that. A tool waits once it has read the pod (its
    last read before it watches): the pod changes only after both have."""
    ns = clis.namespace
    log = apiserver.log_path

    def start_both(*args: str) -> list[subprocess.Popen[str]]:
        before = [reads_by(log, agent, f"/namespaces/{ns}/pods") for agent in AGENTS]
        waits = [processes([*tool, *clis.flags(), *args], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True,
                           env={**os.environ, "PYTHONPATH": str(REPO)})
                 for tool in ([KUBECTL], mkctl_command())]
        until(lambda: all(reads_by(log, agent, f"/namespaces/{ns}/pods") >= count + 1
                          for agent, count in zip(AGENTS, before, strict=True)),
              "both tools' reads of the pod", 60, interval=0.1)
        return waits

    created = clis.kubectl("run", "later", "--image=nginx", "-n", ns)
    assert created.code == 0, created.err
    waits = start_both("wait", "--for=condition=Ready", "pod/later", "-n", ns,
                       "--timeout=60s")
    assert all(wait.poll() is None for wait in waits)  # still waiting
    assert clis.kubectl("patch", "pod", "later", "-n", ns, "--subresource=status",
                        "--type=merge", "-p", json.dumps(READY)).code == 0
    assert [wait.communicate(timeout=60) for wait in waits] == [
        ("pod/later condition met\n", "")] * 2
    held = {"metadata": {"finalizers": ["example.com/hold"]}}
    assert clis.kubectl("patch", "pod", "later", "-n", ns, "--type=merge",
                        "-p", json.dumps(held)).code == 0
    assert clis.kubectl("delete", "pod", "later", "-n", ns, "--wait=false").code == 0
    waits = start_both("wait", "--for=delete", "pod/later", "-n", ns)
    assert all(wait.poll() is None for wait in waits)  # the finalizer holds it
    assert clis.kubectl("patch", "pod", "later", "-n", ns, "--type=merge",
                        "-p", '{"metadata":{"finalizers":null}}').code == 0
    assert [(wait.communicate(timeout=60), wait.returncode) for wait in waits] == [
        (("pod/later condition met\n", ""), 0)] * 2


# -- can-i with RBAC: a TLS server of its own ------------------------------------------------

@pytest.fixture(scope="module")
async def rbac(fast_tmp: Path) -> AsyncIterator[tuple[Path, Path]]:
    """A server with RBAC: the admin's kubeconfig and bob's (a token, no bindings)."""
    from minikube_py.security import pki
    from tests.test_security import TOKEN, admin_cert, server_of_its_own

    ca = pki.new_ca()
    async with server_of_its_own(fast_tmp / f"mkctl-can-i-{uuid.uuid4().hex[:6]}",
                                 ca) as server:
        yield server.kubeconfig("admin", cert=admin_cert(ca)), server.kubeconfig(
            "bob", token=TOKEN)


@pytest.mark.slow
def test_can_i_says_no_with_kubectls_exit_code_and_impersonates_with_as(
        rbac: tuple[Path, Path], tmp_path: Path) -> None:
    admin, bob = rbac
    cases = [(bob, "auth can-i get pods"), (bob, "auth can-i list nodes -A"),
             (bob, "auth can-i create selfsubjectaccessreviews.authorization.k8s.io"),
             (bob, "auth can-i get /version"), (bob, "auth can-i get /metrics"),
             (bob, "auth can-i get pods -q"), (admin, "auth can-i '*' '*'"),
             (admin, "auth can-i get pods --as bob"),
             (admin, "auth can-i get pods --as bob --as-group system:masters")]
    answers = []
    for kubeconfig, command in cases:
        clis = Clis(kubeconfig, tmp_path / "cache")
        args = [arg.strip("'") for arg in command.split()]
        expected, actual = clis.compare(*args)
        assert_same(expected, actual)
        answers.append((actual.out, actual.code))
    assert answers[0] == ("no\n", 1) and answers[5] == ("", 1)
    assert answers[6] == ("yes\n", 0) and answers[7] == ("no\n", 1)
    assert answers[8] == ("yes\n", 0)


@pytest.mark.slow
def test_can_i_list_prints_the_rules_as_kubectl(rbac: tuple[Path, Path], tmp_path: Path
                                                ) -> None:
    """--list on what bob may do: the discovery and self-review roles every user has (the
    same URLs granted by several), then two roles of his own with names, subresources and
    verbs to join."""
    admin, bob = rbac
    as_admin = Clis(admin, tmp_path / "cache")
    for command in ("create role reader --verb=get,list,watch --resource=pods,pods/log",
                    "create role named --verb=get,update --resource=configmaps "
                    "--resource-name=a --resource-name=b",
                    "create role deploys --verb=get --verb=patch --resource=deployments.apps",
                    "create rolebinding bob-reader --role=reader --user=bob",
                    "create rolebinding bob-named --role=named --user=bob",
                    "create rolebinding bob-deploys --role=deploys --user=bob"):
        assert as_admin.kubectl(*command.split(), "-n", "default").code == 0
    listed = []
    for kubeconfig, command in [(bob, "auth can-i --list"),
                                (bob, "auth can-i --list -n kube-system"),
                                (admin, "auth can-i --list --as bob --no-headers"),
                                (admin, "auth can-i --list")]:
        expected, actual = Clis(kubeconfig, tmp_path / "cache").compare(*command.split())
        assert_same(expected, actual)
        listed.append(actual.out.splitlines())
    assert listed[0][0].split() == ["Resources", "Non-Resource", "URLs", "Resource", "Names",
                                    "Verbs"]
    assert ["configmaps", "[]", "[a]", "[get", "update]"] in [line.split() for line in listed[0]]
    assert ["deployments.apps", "[]", "[]", "[get", "patch]"] in [line.split()
                                                                for line in listed[0]]
    assert not any(line.startswith("pods/log") for line in listed[1])
    assert [line.split() for line in listed[2]] == [line.split() for line in listed[0][1:]]
    assert ["*.*", "[]", "[]", "[*]"] in [line.split() for line in listed[3]]
