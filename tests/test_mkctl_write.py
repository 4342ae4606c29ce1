"""mkctl's commands that change objects, next to the real kubectl.

Each case gets two fresh namespaces with the same objects in them: kubectl runs the
command in one, mkctl in the other, and the two runs must print the same thing (the
namespace's name read as NS, uids and timestamps masked), exit with the same code, and
leave the same objects behind. Bad input must leave everything as it was.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import urllib.request
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from minikube_py.cluster.apiserver import APIServerProcess
from tests.api_helpers import until
from tests.test_mkctl import (
    REPO,
    Clis,
    Result,
    answered,
    assert_same,
    mkctl_command,
    normalized,
)

UID = re.compile(r"[0-9a-z]{8}-[0-9a-z]{4}-[0-9a-z]{4}-[0-9a-z]{4}-[0-9a-z]{12}")
TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")
RESOURCE_VERSION = re.compile(r'(resourceVersion"?: "?)\d+')
VOLATILE_METADATA = ("uid", "resourceVersion", "creationTimestamp", "namespace",
                     "managedFields", "generation", "deletionTimestamp")

MANIFEST = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  labels: {app: web}
data: {color: blue}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: nginx, image: "nginx:1.25"}]
"""

APPLIED_AGAIN = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  labels: {app: web, tier: front}
data: {size: large}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: nginx
        image: "nginx:1.27"
        env: [{name: MODE, value: "on"}]
        ports: [{containerPort: 80}]
      - {name: sidecar, image: "busybox:1.36"}
"""

# What the patch's directives are for: a reordered list with an item inserted
# ($setElementOrder), a strategy whose type changes ($retainKeys drops rollingUpdate),
# a volume that changes its source ($retainKeys in a list item), a finalizer removed
# ($deleteFromPrimitiveList).
REORDERED = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web}
  finalizers: [example.com/a, example.com/b]
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 1}}
  template:
    metadata: {labels: {app: web}}
    spec:
      volumes: [{name: data, emptyDir: {}}]
      containers:
      - {name: nginx, image: "nginx:1.25", env: [{name: A, value: "1"}, {name: B, value: "2"}]}
      - {name: sidecar, image: "busybox:1.36"}
"""
REORDERED_AGAIN = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web}
  finalizers: [example.com/b]
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  strategy: {type: Recreate}
  template:
    metadata: {labels: {app: web}}
    spec:
      volumes: [{name: data, configMap: {name: settings}}]
      containers:
      - {name: sidecar, image: "busybox:1.36"}
      - {name: logger, image: "busybox:1.36"}
      - {name: nginx, image: "nginx:1.25", env: [{name: C, value: "3"}, {name: A, value: "1"}]}
"""

LIST = json.dumps({"apiVersion": "v1", "kind": "List", "items": [
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "first"}},
    {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "second"},
     "stringData": {"a": "b"}}]})

BROKEN = {
    "unknown-kind.yaml": "apiVersion: v1\nkind: Gadget\nmetadata: {name: x}\n",
    "no-kind.yaml": "apiVersion: v1\nmetadata: {name: x}\n",
    "bad-yaml.yaml": "a: [1\n",
    "mixed.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: one}\n---\n"
                  "apiVersion: v1\nkind: Gadget\nmetadata: {name: x}\n---\n"
                  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: two}\n",
}


@dataclass
class WriteClis(Clis):
    api_url: str  # the API server's: what a test sets up and reads back goes there directly

    def mkctl_input(self, *args: str, input: str | None = None) -> Result:
        completed = subprocess.run(mkctl_command(*self.flags(), *args), input=input,
                                   capture_output=True, text=True, timeout=60,
                                   env={**os.environ, "PYTHONPATH": str(REPO)})
        return Result(completed.stdout, completed.stderr, completed.returncode)


@pytest.fixture(scope="module")
def clis(kubeconfig: Path, apiserver: APIServerProcess,
         tmp_path_factory: pytest.TempPathFactory) -> WriteClis:
    return WriteClis(kubeconfig, tmp_path_factory.mktemp("mkctl-write-cache"), apiserver.url)


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("manifests")
    (directory / "web.yaml").write_text(MANIFEST)
    (directory / "list.json").write_text(LIST)
    (directory / "web-v2.yaml").write_text(APPLIED_AGAIN)
    (directory / "web-scaled.yaml").write_text(MANIFEST.replace("replicas: 2", "replicas: 5"))
    (directory / "prune-all.yaml").write_text(
        MANIFEST + "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n"
        "  labels: {app: web}\n")
    (directory / "prune-kept.yaml").write_text(MANIFEST.split("---\n")[0])
    (directory / "ordered.yaml").write_text(REORDERED)
    (directory / "ordered-v2.yaml").write_text(REORDERED_AGAIN)
    (directory / "held.json").write_text(json.dumps({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "held", "finalizers": ["example.com/hold"]}}))
    (directory / "web-v1.yaml").write_text(APPLIED_AGAIN.replace(
        "nginx:1.27", "nginx:1.25").replace("size: large", "size: small, old: x"))
    (directory / "dir").mkdir()
    (directory / "dir" / "a.yaml").write_text(MANIFEST.split("---\n")[0])
    (directory / "dir" / "b.json").write_text(LIST)
    (directory / "dir" / "notes.txt").write_text("not a manifest")
    (directory / "color.txt").write_text("blue\n")
    for name, text in BROKEN.items():
        (directory / name).write_text(text)
    return directory


class Pair:
    """Two namespaces set up alike: one for kubectl, one for mkctl."""

    def __init__(self, clis: WriteClis, files: Path, setup: list[str]) -> None:
        ident = uuid.uuid4().hex[:6]
        self.clis, self.files = clis, files
        self.kubectl_ns, self.mkctl_ns = f"w-{ident}-k", f"w-{ident}-m"
        for namespace in (self.kubectl_ns, self.mkctl_ns):
            api_request(clis.api_url, "POST", "/api/v1/namespaces",
                        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
            for command in setup:
                done = clis.kubectl(*self.expand(command, namespace), "-n", namespace)
                assert done.code == 0, done.err

    def expand(self, text: str, namespace: str) -> list[str]:
        return [part.format(ns=namespace, files=self.files) for part in shlex.split(text)]

    def masked(self, result: Result, namespace: str) -> Result:
        def clean(text: str) -> str:
            text = text.replace(namespace, "NS")
            return RESOURCE_VERSION.sub(r"\1RV", TIMESTAMP.sub("TIME", UID.sub("UID", text)))

        return normalized(Result(clean(result.out), clean(result.err), result.code))

    def run(self, case: str, stdin: str | None = None) -> tuple[Result, Result]:
        expected = self.clis.kubectl(*self.expand(case, self.kubectl_ns), "-n",
                                     self.kubectl_ns, input=stdin)
        actual = self.clis.mkctl_input(*self.expand(case, self.mkctl_ns), "-n", self.mkctl_ns,
                                       input=stdin)
        return self.masked(expected, self.kubectl_ns), self.masked(actual, self.mkctl_ns)

    def objects(self, namespace: str, kinds: str) -> list[dict]:
        """The objects of `kinds` ("cm,deploy") in the namespace, read from the API server
        (what kubectl get -o json prints of them, less each item's kind and apiVersion),
        without what differs between two namespaces set up alike."""
        items = []
        for kind in kinds.split(","):
            listed = api_request(self.clis.api_url, "GET", LISTS[kind].format(ns=namespace))
            items += json.loads(json.dumps(listed["items"]).replace(namespace, "NS"))
        for item in items:
            for key in VOLATILE_METADATA:
                item["metadata"].pop(key, None)
            annotations = item["metadata"].get("annotations") or {}
            annotations.pop("deployment.kubernetes.io/revision", None)
            item.pop("status", None)
        return items

    def assert_same_objects(self, kinds: str) -> None:
        assert self.objects(self.mkctl_ns, kinds) == self.objects(self.kubectl_ns, kinds)


LISTS = {"cm": "/api/v1/namespaces/{ns}/configmaps", "secret": "/api/v1/namespaces/{ns}/secrets",
         "svc": "/api/v1/namespaces/{ns}/services",
         "deploy": "/apis/apps/v1/namespaces/{ns}/deployments"}


def api_request(url: str, method: str, path: str, body: dict | None = None) -> dict:
    """One request to the test API server (plain HTTP, no authentication); its answer."""
    request = urllib.request.Request(
        url + path, method=method, data=json.dumps(body).encode() if body is not None else None,
        headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as answer:
        return json.loads(answer.read())


CREATE_SETUP = ["create configmap taken --from-literal=a=b"]
LABELED = [*CREATE_SETUP, "label cm taken tier=front keep=yes"]
ANNOTATED = [*CREATE_SETUP, "annotate cm taken note=hi"]
DEPLOYED = ["create deployment web --image=nginx"]
# (setup commands, the command both run, the kinds whose objects must then be equal)
CASES = [
    # create -f
    ([], "create -f {files}/web.yaml", "cm,deploy"),
    ([], "create -f {files}/list.json", "cm,secret"),
    ([], "create -f {files}/dir", "cm,secret"),
    ([], "create -f {files}/web.yaml -o name", "cm,deploy"),
    ([], "create -f {files}/web.yaml -o yaml", "cm,deploy"),
    ([], "create -f {files}/web.yaml --dry-run=server", "cm,deploy"),
    ([], "create -f {files}/web.yaml --dry-run=client -o yaml", "cm,deploy"),
    (["create -f {files}/web.yaml"], "create -f {files}/web.yaml", "cm,deploy"),
    ([], "create -f {files}/mixed.yaml", "cm"),
    ([], "create -f {files}/unknown-kind.yaml", "cm"),
    ([], "create -f {files}/no-kind.yaml", "cm"),
    ([], "create -f {files}/bad-yaml.yaml", "cm"),
    ([], "create -f {files}/web.yaml -f {files}/missing.yaml", "cm,deploy"),
    ([], "create -f {files}/web.yaml --dry-run=maybe", "cm,deploy"),
    ([], "create -f {files}/web.yaml --validate=sometimes", "cm,deploy"),
    ([], "create -f {files}/web.yaml --validate=false --field-manager=me", "cm,deploy"),
    ([], "create", "cm"),
    ([], "create nothing", "cm"),
    # create KIND NAME
    ([], "create deployment web --image=nginx:1.25 --replicas=3 --port=80", "deploy"),
    ([], "create deployment web --image=nginx --image=busybox:1.36", "deploy"),
    ([], "create deployment web --image=nginx -o yaml --dry-run=client", "deploy"),
    ([], "create deployment web --image=nginx -o json --dry-run=client", "deploy"),
    ([], "create deployment web", "deploy"),
    ([], "create deployment web --image=a --image=b --port=80", "deploy"),
    ([], "create deployment web --image=nginx --replicas=-1", "deploy"),
    (CREATE_SETUP, "create configmap taken", "cm"),
    ([], "create configmap c --from-literal=a=b --from-literal=c=d "
         "--from-file={files}/color.txt --from-file=k={files}/color.txt", "cm"),
    ([], "create configmap c --from-literal=a=b --from-literal=a=c", "cm"),
    ([], "create configmap c --from-literal=nokey", "cm"),
    ([], "create configmap c --from-file={files}/missing", "cm"),
    ([], "create cm c --from-file={files}/dir -o name", "cm"),
    ([], "create secret generic s --from-literal=user=admin --from-file={files}/color.txt",
     "secret"),
    ([], "create secret generic s --from-literal=a=1 --type=example.com/x -o yaml "
         "--dry-run=client", "secret"),
    (CREATE_SETUP, "create secret generic taken", "secret"),
    ([], "create namespace NAME_A NAME_B", "cm"),
    # delete
    (CREATE_SETUP, "delete configmap taken", "cm"),
    (CREATE_SETUP, "delete cm/taken nope", "cm"),
    (CREATE_SETUP, "delete cm taken nope", "cm"),
    (CREATE_SETUP, "delete cm nope --ignore-not-found", "cm"),
    (CREATE_SETUP, "delete cm taken -o name", "cm"),
    (CREATE_SETUP, "delete cm taken --dry-run=server", "cm"),
    (CREATE_SETUP, "delete cm taken --dry-run=client", "cm"),
    (CREATE_SETUP, "delete cm taken --wait=false --grace-period=5", "cm"),
    (CREATE_SETUP, "delete cm taken --force --grace-period=0", "cm"),
    (["create -f {files}/web.yaml"], "delete cm,deploy -l app=web", "cm,deploy"),
    (["create -f {files}/web.yaml"], "delete deploy --all --cascade=orphan --wait=false",
     "deploy"),
    (["create -f {files}/web.yaml"], "delete -f {files}/web.yaml", "cm,deploy"),
    ([], "delete -f {files}/list.json", "cm"),
    (CREATE_SETUP, "delete cm -l app=nothing", "cm"),
    (CREATE_SETUP, "delete cm", "cm"),
    (CREATE_SETUP, "delete", "cm"),
    (CREATE_SETUP, "delete gadgets x", "cm"),
    (CREATE_SETUP, "delete cm taken --cascade=sideways", "cm"),
    (CREATE_SETUP, "delete cm taken --bogus", "cm"),
    (CREATE_SETUP, "delete cm taken -o yaml", "cm"),
    (CREATE_SETUP, "delete cm taken --now", "cm"),
    (CREATE_SETUP, "delete cm taken --now --grace-period=3", "cm"),
    (CREATE_SETUP, "delete cm taken --timeout=soon", "cm"),
    # label and annotate
    (CREATE_SETUP, "label cm taken tier=front", "cm"),
    (LABELED, "label cm taken tier=back", "cm"),
    (LABELED, "label cm taken tier=back --overwrite", "cm"),
    (LABELED, "label cm taken tier=front", "cm"),
    (LABELED, "label cm taken tier-", "cm"),
    (LABELED, "label cm taken gone-", "cm"),
    (LABELED, "label cm taken extra=1 tier-", "cm"),
    (LABELED, "label cm/taken other=x -o name", "cm"),
    (LABELED, "label cm taken other=x --dry-run=server", "cm"),
    (LABELED, "label cm taken other=x --dry-run=client", "cm"),
    (["create -f {files}/web.yaml", *CREATE_SETUP], "label cm --all seen=yes", "cm"),
    (["create -f {files}/web.yaml", *CREATE_SETUP], "label cm,deploy -l app=web seen=yes",
     "cm,deploy"),
    (["create -f {files}/web.yaml"], "label -f {files}/web.yaml seen=yes", "cm,deploy"),
    (LABELED, "label cm taken", "cm"),
    (LABELED, "label cm taken a=b=c", "cm"),
    (LABELED, "label cm taken 'a=bad value'", "cm"),
    (LABELED, "label cm taken a=1 a-", "cm"),
    (LABELED, "label cm nope a=1", "cm"),
    (LABELED, "label cm a=1", "cm"),
    (LABELED, "label cm taken 'bad key=1'", "cm"),
    (CREATE_SETUP, "annotate cm taken note='hello world'", "cm"),
    (ANNOTATED, "annotate cm taken note=changed", "cm"),
    (ANNOTATED, "annotate cm taken note=changed --overwrite", "cm"),
    (ANNOTATED, "annotate cm taken note-", "cm"),
    (ANNOTATED, "annotate cm taken note=hi -o yaml", "cm"),
    # apply
    ([], "apply -f {files}/web.yaml", "cm,deploy"),
    (["apply -f {files}/web.yaml"], "apply -f {files}/web.yaml", "cm,deploy"),
    (["apply -f {files}/web.yaml"], "apply -f {files}/web-v2.yaml", "cm,deploy"),
    (["apply -f {files}/web-v1.yaml"], "apply -f {files}/web-v2.yaml", "cm,deploy"),
    (["create -f {files}/web.yaml"], "apply -f {files}/web-v2.yaml", "cm,deploy"),
    (["apply -f {files}/web.yaml"], "apply -f {files}/web-v2.yaml -o name", "cm,deploy"),
    (["apply -f {files}/web.yaml"], "apply -f {files}/web-v2.yaml --dry-run=server",
     "cm,deploy"),
    ([], "apply -f {files}/mixed.yaml", "cm"),
    ([], "create -f {files}/web.yaml --save-config", "cm,deploy"),
    ([], "create -f {files}/web.yaml --save-config -o yaml --dry-run=client", "cm,deploy"),
    (["create -f {files}/web.yaml --save-config"], "apply -f {files}/web-v2.yaml",
     "cm,deploy"),
    ([], "apply", "cm"),
    (["apply -f {files}/ordered.yaml"], "apply -f {files}/ordered-v2.yaml", "deploy"),
    (["apply -f {files}/ordered-v2.yaml"], "apply -f {files}/ordered.yaml", "deploy"),
    # apply -l and --prune
    ([], "apply -l tier=front -f {files}/web-v2.yaml", "cm,deploy"),
    (["apply -f {files}/prune-all.yaml", "create configmap manual"],
     "apply --prune -l app=web -f {files}/prune-kept.yaml", "cm,deploy"),
    (["apply -f {files}/prune-all.yaml"],
     "apply --prune -l app=web -f {files}/prune-kept.yaml --dry-run=client", "cm,deploy"),
    (["apply -f {files}/prune-all.yaml"],
     "apply --prune -l app=web -f {files}/prune-kept.yaml --dry-run=server", "cm,deploy"),
    (["apply -f {files}/prune-all.yaml"],
     "apply --prune --all --prune-allowlist=core/v1/ConfigMap -f {files}/prune-kept.yaml",
     "cm,deploy"),
    (["apply -f {files}/prune-all.yaml"],
     "apply --prune -l app=web -f {files}/prune-kept.yaml -o name", "cm,deploy"),
    (["apply -f {files}/prune-all.yaml"],
     "apply --server-side --prune -l app=web -f {files}/prune-kept.yaml", "cm,deploy"),
    (["apply -f {files}/prune-all.yaml"], "apply --prune -f {files}/prune-kept.yaml",
     "cm,deploy"),
    (["apply -f {files}/prune-all.yaml"],
     "apply --prune --all -l app=web -f {files}/prune-kept.yaml", "cm,deploy"),
    (["apply -f {files}/prune-all.yaml"],
     "apply --prune --all --prune-allowlist=v1/ConfigMap -f {files}/prune-kept.yaml",
     "cm,deploy"),
    (["apply -f {files}/prune-all.yaml"],
     "apply --prune -l app=web -f {files}/mixed.yaml", "cm,deploy"),
    # apply --server-side
    ([], "apply --server-side -f {files}/web.yaml", "cm,deploy"),
    (["apply --server-side -f {files}/web.yaml"], "apply --server-side -f {files}/web-v2.yaml",
     "cm,deploy"),
    (["apply -f {files}/web.yaml"], "apply --server-side -f {files}/web-v1.yaml", "cm,deploy"),
    (["apply -f {files}/web-v1.yaml"], "apply --server-side -f {files}/web-v2.yaml",
     "cm,deploy"),
    (["apply --server-side --field-manager=other -f {files}/web.yaml"],
     "apply --server-side -f {files}/web-scaled.yaml", "cm,deploy"),
    (["apply --server-side --field-manager=other -f {files}/web.yaml"],
     "apply --server-side --force-conflicts -f {files}/web-scaled.yaml", "cm,deploy"),
    ([], "apply --server-side -f {files}/web.yaml --dry-run=server", "cm,deploy"),
    ([], "apply --server-side -f {files}/web.yaml --dry-run=client", "cm,deploy"),
    ([], "apply --server-side -f {files}/web.yaml -o name", "cm,deploy"),
    ([], "apply --server-side -f {files}/web.yaml --field-manager=me", "cm,deploy"),
    ([], "apply --force-conflicts -f {files}/web.yaml", "cm,deploy"),
    ([], "apply --server-side -f {files}/mixed.yaml", "cm"),
    # scale
    (DEPLOYED, "scale deploy web --replicas=3", "deploy"),
    (DEPLOYED, "scale --replicas=0 deployment/web", "deploy"),
    (DEPLOYED, "scale deploy web --replicas=2 --current-replicas=1", "deploy"),
    (DEPLOYED, "scale deploy web --replicas=2 --current-replicas=5", "deploy"),
    (DEPLOYED, "scale deploy web --replicas=4 -o name", "deploy"),
    (DEPLOYED, "scale deploy web --replicas=4 --dry-run=server", "deploy"),
    (DEPLOYED, "scale deploy web", "deploy"),
    (DEPLOYED, "scale deploy web --replicas=-1", "deploy"),
    (DEPLOYED, "scale deploy nope --replicas=1", "deploy"),
    (CREATE_SETUP, "scale cm taken --replicas=1", "cm"),
]


@pytest.mark.parametrize(("setup", "case", "kinds"), CASES,
                         ids=[case for _, case, _ in CASES])
def test_mkctl_changes_objects_as_kubectl_does(clis: WriteClis, files: Path, setup: list[str],
                                               case: str, kinds: str) -> None:
    pair = Pair(clis, files, setup)
    case = case.replace("NAME_A", f"{pair.mkctl_ns}-a").replace("NAME_B", f"{pair.mkctl_ns}-b")
    expected, actual = pair.run(case)
    assert_same(expected, actual)
    pair.assert_same_objects(kinds)


def test_create_reads_stdin_and_names_it_in_errors(clis: WriteClis, files: Path) -> None:
    pair = Pair(clis, files, [])
    for _ in range(2):  # created, then AlreadyExists from "STDIN"
        expected, actual = pair.run("create -f -", stdin=LIST)
        assert_same(expected, actual)
    assert 'error when creating "STDIN"' in actual.err
    pair.assert_same_objects("cm,secret")


def test_bad_input_changes_nothing_on_the_server(clis: WriteClis, files: Path) -> None:
    pair = Pair(clis, files, ["create -f {files}/web.yaml"])
    before = pair.objects(pair.mkctl_ns, "cm,deploy,secret")
    versions = clis.kubectl("get", "cm,deploy", "-n", pair.mkctl_ns, "-o",
                            "jsonpath={.items[*].metadata.resourceVersion}").out
    for case in ("create -f {files}/unknown-kind.yaml", "create -f {files}/bad-yaml.yaml",
                 "create -f {files}/no-kind.yaml", "create -f {files}/missing.yaml",
                 "create -f {files}/web.yaml --dry-run=server",
                 "create -f {files}/list.json --dry-run=client",
                 "delete cm settings --dry-run=server", "delete cm settings --cascade=x",
                 "delete deploy web --dry-run=client", "delete gadget web",
                 "create deployment x --replicas=-1 --image=a"):
        result = clis.mkctl(*pair.expand(case, pair.mkctl_ns), "-n", pair.mkctl_ns)
        assert result.code in (0, 1)
    assert pair.objects(pair.mkctl_ns, "cm,deploy,secret") == before
    assert clis.kubectl("get", "cm,deploy", "-n", pair.mkctl_ns, "-o",
                        "jsonpath={.items[*].metadata.resourceVersion}").out == versions


NODE_CASES = [
    "cordon NODE", "cordon NODE", "uncordon NODE", "uncordon NODE", "cordon nope", "cordon",
    "cordon NODE --dry-run=server",
    "taint nodes NODE k=v:NoSchedule", "taint nodes NODE k=v:NoSchedule",
    "taint nodes NODE k=w:NoSchedule --overwrite", "taint nodes NODE k:NoSchedule-",
    "taint nodes NODE k:NoSchedule-", "taint nodes NODE k=v:Sometimes",
    "taint nodes NODE k2=v:NoExecute k3:PreferNoSchedule", "taint nodes NODE k2-",
    "taint nodes NODE", "taint nodes nope a=b:NoSchedule",
    "taint nodes -l pool=NODE z=1:NoSchedule -o name", "taint node/NODE y=1:NoSchedule",
]


def test_cordon_uncordon_and_taint_as_kubectl_on_nodes_of_their_own(clis: WriteClis) -> None:
    """Nodes are cluster-scoped: kubectl changes one node and mkctl a twin of it, each
    command in turn, and every output and the nodes' specs must agree."""
    ident = uuid.uuid4().hex[:6]
    names = (f"node-{ident}-k", f"node-{ident}-m")
    for name in names:
        node = json.dumps({"apiVersion": "v1", "kind": "Node",
                           "metadata": {"name": name, "labels": {"pool": name}}})
        assert clis.kubectl("create", "-f", "-", input=node).code == 0
    try:
        for case in NODE_CASES:
            results = []
            for name, program in zip(names, (clis.kubectl, clis.mkctl_input), strict=True):
                result = program(*case.replace("NODE", name).split())
                results.append(normalized(Result(result.out.replace(name, "NODE"),
                                                 result.err.replace(name, "NODE"),
                                                 result.code)))
            assert_same(*results)
        specs = [json.loads(clis.kubectl("get", "node", name, "-o", "json").out)["spec"]
                 for name in names]
        assert specs[0] == specs[1]
        assert [taint["key"] for taint in specs[1]["taints"]] == ["z", "k3"]
    finally:
        clis.kubectl("delete", "node", *names)


def test_delete_waits_until_the_object_is_gone(
        clis: WriteClis, files: Path, apiserver: APIServerProcess,
        processes: Callable[..., subprocess.Popen[str]]) -> None:
    """A finalizer keeps the object after the DELETE: mkctl, as kubectl, returns only
    once it is removed and the object goes."""
    pair = Pair(clis, files, [])
    held = json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": "held", "finalizers": ["example.com/hold"]}})
    assert clis.kubectl("create", "-n", pair.mkctl_ns, "-f", "-", input=held).code == 0
    deleting = processes(
        mkctl_command(*clis.flags(), "delete", "cm", "held", "-n", pair.mkctl_ns),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)})
    path = f"/namespaces/{pair.mkctl_ns}/configmaps"

    def reading_after_the_delete() -> bool:
        """mkctl's DELETE was answered, and then a read: it is waiting for the object."""
        verbs = [verb for verb, request, agent in answered(apiserver.log_path)
                 if agent.startswith("mkctl/") and path in request]
        return "DELETE" in verbs and any(
            verb in ("GET", "LIST") for verb in verbs[verbs.index("DELETE"):])

    until(reading_after_the_delete, "mkctl waiting for the object to go", 60, interval=0.1)
    assert deleting.poll() is None  # still waiting for the finalizer
    released = clis.kubectl("patch", "cm", "held", "-n", pair.mkctl_ns, "--type=merge",
                            "-p", '{"metadata":{"finalizers":null}}')
    assert released.code == 0, released.err
    out, err = deleting.communicate(timeout=60)
    assert (out, err, deleting.returncode) == (
        f'configmap "held" deleted from {pair.mkctl_ns} namespace\n', "", 0)
    gone = clis.kubectl("get", "cm", "held", "-n", pair.mkctl_ns)
    assert gone.code == 1 and "NotFound" in gone.err


def test_delete_gives_up_after_the_timeout_as_kubectl(clis: WriteClis, files: Path) -> None:
    """kubectl sometimes logs client-go's "Failed to watch" line before its error, as the
    deadline falls during a watch or between two: klog lines are left out."""
    pair = Pair(clis, files, ["create -f {files}/held.json"])
    expected, actual = pair.run("delete cm held --timeout=2s")
    expected = Result(expected.out, "\n".join(
        line for line in expected.err.splitlines() if not line.startswith("E ")) + "\n",
        expected.code)
    assert_same(expected, actual)
    assert actual.err == "error: timed out waiting for the condition on configmaps/held\n"
