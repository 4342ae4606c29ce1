"""mkctl next to the real kubectl: the same command line, kubeconfig and server must give
the same output, the same messages on stderr and the same exit code.

Each case runs `kubectl ARGS` and `mkctl ARGS` back to back and compares them, "kubectl"
read as "mkctl" in messages and the cells that depend on the clock masked (AGE, and the
time and pid of klog lines). They are compared once: output that differs only sometimes
is a bug to find. The one exception is output that shows ages (prints_ages): two runs
can straddle a second where an age changes width, which moves the columns after it, so
such a case whose outputs differ in their spacing alone is run again before it fails.

The objects live in namespaces of this module's own, labelled with the suite's id so
that the `-A` cases see only them. Nothing a case runs may change them, which
`test_nothing_changed_on_the_server` checks at the end.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import pytest
import yaml

from minikube_py.cluster.apiserver import APIServerProcess
from minikube_py.cluster.etcd import EtcdProcess
from minikube_py.mkctl.cli import COMMANDS
from tests.api_helpers import until

REPO = Path(__file__).resolve().parent.parent
KUBECTL = str(Path(sys.executable).with_name("kubectl"))
AGE = re.compile(r"\b\d+[smhdy](?:\d+[smhd])?\b")
KLOG_PREFIX = re.compile(r"^([EWI])\d{4} \d\d:\d\d:\d\d\.\d{6} +\d+ ", re.MULTILINE)
Start = Callable[..., "subprocess.Popen[Any]"]  # the `processes` fixture
AGENTS = ("kubectl/", "mkctl/")  # how each names itself to the server (User-Agent)
# client-go's reflector notes, at info level, a watch that its own timeout closed within a
# second; whether it does depends on how long the list before it took, not on the server.
# And when a `wait --timeout` runs out while its reflector is still listing or watching, it
# notes, at error level, the deadline that cut that request; whether the deadline falls
# there or in the wait after it depends on how fast the machine is.
REFLECTOR_TIMING_NOTES = re.compile(
    r'^(I reflector\.go:\d+\] "Warning: watch ended with error"'
    r'|E reflector\.go:\d+\] "Failed to watch" err="context deadline exceeded").*\n?',
    re.MULTILINE)


@dataclass(frozen=True)
class Result:
    out: str
    err: str
    code: int


def mkctl_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "minikube_py.mkctl", *args]


def run(command: list[str], *, env: dict[str, str] | None = None, timeout: float = 60
        ) -> Result:
    completed = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                               env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})})
    return Result(completed.stdout, completed.stderr, completed.returncode)


def normalized(result: Result) -> Result:
    """What must be equal: the ages in the output and klog headers masked, kubectl's name
    read as mkctl's."""
    def clean(text: str) -> str:
        return KLOG_PREFIX.sub(r"\1 ", text).replace("kubectl", "mkctl")

    err = REFLECTOR_TIMING_NOTES.sub("", clean(result.err))
    return Result(clean(AGE.sub("AGE", result.out)), err, result.code)


@dataclass
class Clis:
    """kubectl and mkctl with one kubeconfig and one discovery cache directory."""

    kubeconfig: Path
    cache_dir: Path

    def flags(self) -> list[str]:
        return [f"--kubeconfig={self.kubeconfig}", f"--cache-dir={self.cache_dir}"]

    def kubectl(self, *args: str, input: str | None = None) -> Result:
        completed = subprocess.run([KUBECTL, *self.flags(), *args], input=input,
                                   capture_output=True, text=True, timeout=60)
        return Result(completed.stdout, completed.stderr, completed.returncode)

    def mkctl(self, *args: str, env: dict[str, str] | None = None) -> Result:
        return run(mkctl_command(*self.flags(), *args), env=env)

    def compare(self, *args: str) -> tuple[Result, Result]:
        """Both outputs, normalized, from one run of each. Where the output shows ages
        (prints_ages), and the outputs differ in nothing but their spacing, both run again
        (up to AGED_ATTEMPTS times): the runs straddled a second where an age changed
        width. Any other difference stands at once."""
        for _ in range(AGED_ATTEMPTS if prints_ages(args) else 1):
            expected, actual = normalized(self.kubectl(*args)), normalized(self.mkctl(*args))
            if expected == actual or not differs_in_spacing_alone(expected, actual):
                break
        return expected, actual


AGED_ATTEMPTS = 3
NOT_TABLES = ("json", "yaml", "name", "jsonpath", "jsonpath-as-json", "custom-columns",
              "go-template", "template")


def prints_ages(args: tuple[str, ...] | list[str]) -> bool:
    """Whether a command's output shows ages, the only part of it that depends on when it
    runs: `get` printing a table (its AGE column, an event's LAST SEEN) and `describe`
    (an event's age, "5s (x2 over 10s)"). Ages are masked, but their width moves the
    columns after them."""
    command = next((arg for arg in args if arg in COMMANDS), None)
    if command == "describe":
        return True
    if command != "get" or "--raw" in args:
        return False
    for position, arg in enumerate(args):
        value = (args[position + 1] if arg in ("-o", "--output") and position + 1 < len(args)
                 else arg.split("=", 1)[1] if arg.startswith(("-o=", "--output=")) else
                 arg[2:] if arg.startswith("-o") and arg != "-o" else None)
        if value is not None and value.split("=", 1)[0] in NOT_TABLES:
            return False
    return True


def differs_in_spacing_alone(expected: Result, actual: Result) -> bool:
    """Whether two results are the same once runs of spaces are read as one."""
    def squeezed(result: Result) -> Result:
        return Result(re.sub(r" +", " ", result.out), re.sub(r" +", " ", result.err),
                      result.code)

    return expected != actual and squeezed(expected) == squeezed(actual)


def assert_same(expected: Result, actual: Result) -> None:
    assert actual.out.splitlines() == expected.out.splitlines()
    assert actual.err.splitlines() == expected.err.splitlines()
    assert actual.code == expected.code


# -- the objects every case looks at -------------------------------------------------------

LONG_MESSAGE = ("a message long enough to be folded by the YAML emitter once it passes the "
                "eightieth column, as kubectl folds it")

MANIFEST = """\
apiVersion: v1
kind: Pod
metadata:
  name: web-a
  labels: {{app: web, tier: frontend, suite: "{suite}"}}
  annotations:
    note: "{long}"
    script: "line one\\nline two\\n"
    quoted: "yes"
    number: "0755"
    when: "2026-01-02T03:04:05Z"
spec:
  containers:
  - name: nginx
    image: nginx:1.25
    ports: [{{containerPort: 80}}]
    env: [{{name: MODE, value: "on"}}, {{name: EMPTY, value: ""}}]
  - name: sidecar
    image: busybox:1.36
    command: ["sleep", "infinity"]
---
apiVersion: v1
kind: Pod
metadata:
  name: db-b
  labels: {{app: db, suite: "{suite}"}}
spec:
  containers:
  - name: postgres
    image: postgres:16
---
apiVersion: v1
kind: Service
metadata:
  name: web
  labels: {{app: web, suite: "{suite}"}}
spec:
  selector: {{app: web}}
  ports: [{{name: http, port: 80, targetPort: 8080}}]
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  labels: {{suite: "{suite}"}}
data:
  a2: "yy"
  a10: x
  Z_last: q
  color: blue
  multi: |
    first
    second
  colon: "a: b"
  tab: "a\\tb"
  unicode: "héllo ☃"
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {{app: web, suite: "{suite}"}}
spec:
  replicas: 2
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec:
      containers: [{{name: nginx, image: "nginx:1.25"}}]
"""

OTHER_MANIFEST = """\
apiVersion: v1
kind: Pod
metadata:
  name: web-c
  labels: {{app: web, suite: "{suite}"}}
spec:
  containers: [{{name: nginx, image: "nginx:1.25"}}]
---
apiVersion: v1
kind: Service
metadata:
  name: other
  labels: {{suite: "{suite}"}}
spec:
  type: NodePort
  selector: {{app: web}}
  ports: [{{port: 8080}}]
"""


@dataclass
class Suite:
    clis: Clis
    id: str
    ns: str  # web-a, db-b, web (svc, deploy), settings (cm)
    other: str  # web-c, other (svc)
    empty: str  # nothing
    versions: dict[str, str]  # "kind/name" -> resourceVersion of every object, as created
    apiserver_log: Path  # its request log: which requests it has answered

    def expand(self, text: str) -> list[str]:
        return [part.format(ns=self.ns, other=self.other, empty=self.empty, suite=self.id)
                for part in shlex.split(text)]


@pytest.fixture(scope="module")
def suite(apiserver: APIServerProcess, kubeconfig: Path, tmp_path_factory: pytest.TempPathFactory
          ) -> Suite:
    clis = Clis(kubeconfig, tmp_path_factory.mktemp("mkctl-cache"))
    ident = uuid.uuid4().hex[:6]
    names = [f"mkctl-{ident}-{part}" for part in ("main", "other", "empty")]
    for name in names:
        created = clis.kubectl("create", "namespace", name)
        assert created.code == 0, created.err
    for namespace, manifest in zip(names, (MANIFEST, OTHER_MANIFEST), strict=False):
        applied = clis.kubectl("create", "-n", namespace, "-f", "-", input=manifest.format(
            suite=ident, long=LONG_MESSAGE))
        assert applied.code == 0, applied.err
    return Suite(clis, ident, *names, versions=object_versions(clis, names),
                 apiserver_log=apiserver.log_path)


def object_versions(clis: Clis, namespaces: list[str]) -> dict[str, str]:
    versions = {}
    for namespace in namespaces:
        listed = clis.kubectl("get", "all,cm", "-n", namespace, "-o", "json")
        for item in json.loads(listed.out)["items"]:
            key = f"{namespace}/{item['kind']}/{item['metadata']['name']}"
            versions[key] = item["metadata"]["resourceVersion"]
    return versions


# -- output compatibility ------------------------------------------------------------------

COMPATIBLE = [
    # tables
    "get pods -n {ns}",
    "get pods -n {ns} -o wide",
    "get pods,svc -n {ns}",
    "get all -n {ns}",
    "get all -n {ns} -o wide",
    "get pods -A -l suite={suite}",
    "get pods,svc,cm -A -l suite={suite}",
    "get pods -A -l suite={suite} -o wide --show-labels",
    "get pod/web-a svc/web -n {ns}",
    "get pod web-a db-b -n {ns}",
    "get pods --sort-by=.metadata.name -n {ns}",
    "get pods --sort-by=metadata.labels.app -o name -n {ns}",
    "get pods,svc,cm -A -l suite={suite} --sort-by=.metadata.uid",
    "get cm -A -l suite={suite} --sort-by=.metadata.namespace -o custom-columns=N:.metadata.name",
    "get pods --show-labels -n {ns}",
    "get pods -L app -L tier -n {ns}",
    "get pods -L app,tier --show-labels -n {ns}",
    "get pods --no-headers -n {ns}",
    "get cm,pods --no-headers -n {ns}",
    "get pods --show-kind -n {ns}",
    "get svc -o wide -n {other}",
    "get deploy -o wide -n {ns}",
    "get pods -l app=web -n {ns}",
    "get pods -l 'app in (web,db)' -n {ns}",
    "get pods --field-selector metadata.name=db-b -n {ns}",
    "get pods --chunk-size=1 -n {ns}",
    "get pods -A -l suite={suite} --chunk-size=1",
    "get pods --server-print=false -n {ns}",
    "get pods,svc --server-print=false -A -l suite={suite}",
    "get ns {ns}",
    "get nodes",
    "get pods -n {empty}",
    "get pods,svc -n {empty}",
    "get nodes -A",
    # resource names as kubectl resolves them
    "get po -n {ns}",
    "get pod -n {ns}",
    "get Pod -n {ns}",
    "get PODS -n {ns}",
    "get deploy.apps -n {ns}",
    "get deployments.v1.apps -n {ns}",
    "get Deployment.apps -n {ns}",
    "get pod.v1. -n {ns}",
    "get po,pods -n {ns}",
    "get events -n {ns}",
    "get ev -n {ns}",
    # other output formats
    "get pods -o name -n {ns}",
    "get pods,svc,deploy -o name -n {ns}",
    "get pod web-a -o name -n {ns}",
    "get pods -o yaml -n {ns}",
    "get pods -o json -n {ns}",
    "get pod web-a -o yaml -n {ns}",
    "get pod web-a -o json -n {ns}",
    "get cm settings -o yaml -n {ns}",
    "get cm settings -o json -n {ns}",
    "get pods,cm -o yaml -n {ns}",
    "get pod web-a db-b -o yaml -n {ns}",
    "get pods -A -l suite={suite} -o yaml",
    "get pods -n {empty} -o yaml",
    "get pods -o jsonpath={{.items[*].metadata.name}} -n {ns}",
    "get pods -o 'jsonpath={{range .items[*]}}{{.metadata.name}}{{\"\\t\"}}{{.status.phase}}"
    "{{\"\\n\"}}{{end}}' -n {ns}",
    "get pod web-a -o jsonpath={{.spec.containers[?(@.name==\"nginx\")].env}} -n {ns}",
    "get pods -o jsonpath-as-json={{.items[*].metadata.name}} -n {ns}",
    "get pods -o jsonpath --template={{.items[0].metadata.labels}} -n {ns}",
    "get pods -o custom-columns=NAME:.metadata.name,IMAGES:.spec.containers[*].image,"
    "MISSING:.metadata.missing -n {ns}",
    "get pods -o custom-columns=NAME:metadata.name --no-headers -n {ns}",
    "get --raw /api",
    "get --raw /api/v1/namespaces/{ns}/pods/nope",
    # --ignore-not-found
    "get pods --ignore-not-found -n {empty}",
    "get pod nope --ignore-not-found -n {ns}",
    "get pod nope web-a --ignore-not-found -n {ns}",
    "get pod nope -o yaml --ignore-not-found -n {ns}",
    # api-resources
    "api-resources",
    "api-resources -o wide",
    "api-resources --namespaced=false",
    "api-resources --namespaced=true",
    "api-resources --api-group=apps",
    "api-resources --api-group=nope",
    "api-resources -o name",
    "api-resources --sort-by=kind",
    "api-resources --sort-by=name --no-headers",
    "api-resources --verbs=list,watch --api-group=rbac.authorization.k8s.io",
    "api-resources --categories=all",
    # config
    "config view",
    "config view -o json",
    "config view --raw",
    "config view --minify",
    "config view -o jsonpath={{.contexts[*].name}}",
    "config current-context",
    "config get-contexts",
    "config get-contexts -o name",
    "config get-contexts --no-headers",
    # flags before the command, and pflag's forms of them
    "-n {ns} get pods",
    "get -n {ns} pods",
    "get pods -n{ns}",
    "get pods -n={ns}",
    "get pods --namespace={ns} -o=wide",
    "get pods -Aw=false -l suite={suite}",
]


@pytest.mark.parametrize("case", COMPATIBLE)
def test_mkctl_prints_what_kubectl_prints(suite: Suite, case: str) -> None:
    assert_same(*suite.clis.compare(*suite.expand(case)))


def test_a_table_of_several_kinds_names_each_object_kind_slash_name(suite: Suite) -> None:
    expected, actual = suite.clis.compare(*suite.expand("get pods,svc,cm -n {ns}"))
    assert_same(expected, actual)
    blocks = actual.out.split("\n\n")
    assert [block.splitlines()[1].split()[0] for block in blocks] == [
        "pod/db-b", "service/web", "configmap/settings"]


def test_no_resources_found_goes_to_stderr(suite: Suite) -> None:
    result = suite.clis.mkctl(*suite.expand("get pods -n {empty}"))
    assert (result.out, result.err, result.code) == (
        "", f"No resources found in {suite.empty} namespace.\n", 0)


def test_list_output_is_a_v1_list_with_an_empty_resource_version(suite: Suite) -> None:
    document = yaml.safe_load(suite.clis.mkctl(*suite.expand("get pods -n {ns} -o yaml")).out)
    assert (document["apiVersion"], document["kind"]) == ("v1", "List")
    assert document["metadata"] == {"resourceVersion": ""}
    assert [(item["kind"], item["metadata"]["name"]) for item in document["items"]] == [
        ("Pod", "db-b"), ("Pod", "web-a")]


def test_long_strings_fold_and_multiline_strings_become_literal_blocks(suite: Suite) -> None:
    out = suite.clis.mkctl(*suite.expand("get pod web-a -n {ns} -o yaml")).out
    assert "    note: a message long enough to be folded" in out
    assert "    script: |\n      line one\n      line two\n" in out
    assert '    quoted: "yes"\n' in out and '    number: "0755"\n' in out


# -- errors: kubectl's words, kubectl's exit codes ------------------------------------------

ERRORS = [
    ("get pod nope -n {ns}", 'Error from server (NotFound): pods "nope" not found'),
    ("get pod web-a nope -n {ns}", 'Error from server (NotFound): pods "nope" not found'),
    ("get pod/nope svc/web -n {ns}", 'Error from server (NotFound): pods "nope" not found'),
    ("get foo", 'error: the server doesn\'t have a resource type "foo"'),
    ("get foo.bar", 'error: the server doesn\'t have a resource type "foo" in group "bar"'),
    ("get pods.v2", 'error: the server doesn\'t have a resource type "pods" in group "v2"'),
    ("get pods --foo", "error: unknown flag: --foo\nSee 'mkctl get --help' for usage."),
    ("get pods -x", "error: unknown shorthand flag: 'x' in -x\nSee 'mkctl get --help' for "
                    "usage."),
    ("get pods --namespace", "error: flag needs an argument: --namespace\nSee 'mkctl get "
                             "--help' for usage."),
    ("get pods --watch=maybe", 'error: invalid argument "maybe" for "-w, --watch" flag: '
                               'strconv.ParseBool: parsing "maybe": invalid syntax\n'
                               "See 'mkctl get --help' for usage."),
    ("api-resources --foo", "error: unknown flag: --foo\nSee 'mkctl api-resources --help' "
                            "for usage."),
    ("get pod/a b", "error: there is no need to specify a resource type as a separate argument "
                    "when passing arguments in resource/name form (e.g. 'mkctl get "
                    "resource/<resource_name>' instead of 'mkctl get resource "
                    "resource/<resource_name>'"),
    ("get pod/", "error: arguments in resource/name form must have a single resource and name"),
    ("get pods -A web-a", "error: a resource cannot be retrieved by name across all "
                          "namespaces"),
    ("get pods web-a -l app=web -n {ns}", "error: name cannot be provided when a selector is "
                                          "specified"),
    ("get pods,svc -w", "error: you may only specify a single resource type"),
    ("get pods --output-watch-events", "error: --output-watch-events option can only be used "
                                       "with --watch or --watch-only"),
    ("get pods --show-labels -o yaml", "error: --show-labels option cannot be used with yaml "
                                       "printer"),
    ("get pods -o jsonpath -n {ns}", "error: template format specified but no template given"),
    ("get pods -o custom-columns=NAME", "error: unexpected custom-columns spec: NAME, expected "
                                        "<header>:<json-path-expr>"),
    ("get pods -l 'a b' -n {ns}", 'Error from server (BadRequest): Unable to find "/v1, '
                                  'Resource=pods" that match label selector "a b", field '
                                  "selector \"\": unable to parse requirement"),
    ("get pods --field-selector foo=bar -n {ns}", "Error from server (BadRequest): Unable to "
                                                 'find "/v1, Resource=pods" that match label '
                                                 'selector "", field selector "foo=bar"'),
    ("get --raw /api/v1/namespaces/{ns}/pods/nope", 'Error from server (NotFound): pods "nope" '
                                                   "not found"),
    ("get pods --raw /api", "error: arguments may not be passed when --raw is specified"),
    ("--context=nope get pods", "Error in configuration: context was not found for specified "
                                "context: nope"),
    ("--cluster=nope get pods", 'error: no server found for cluster "nope"'),
    ("--user=nope get pods", 'error: auth info "nope" does not exist'),
    ("--request-timeout=abc get pods", "error: Invalid timeout value. Timeout must be a single "
                                       "integer in seconds, or an integer followed by a "
                                       "corresponding time unit (e.g. 1s | 2m | 3h)"),
    ("--kubeconfig=/nonexistent/config get pods",
     "error: stat /nonexistent/config: no such file or directory"),
    ("--foo get pods", "Error: flags cannot be placed before plugin name: --kubeconfig="),
    ("--foo=1 get pods", "error: unknown flag: --foo\nSee 'mkctl get --help' for usage."),
    ("config use-context nope", 'error: no context exists with the name: "nope"'),
    ("config get-contexts nope", "error: context nope not found"),
    ("api-resources --sort-by=age", "error: --sort-by accepts only name or kind"),
    ("version -o table", "error: --output must be 'yaml' or 'json'"),
]


@pytest.mark.parametrize(("case", "message"), ERRORS)
def test_errors_read_and_exit_as_kubectl(suite: Suite, case: str, message: str) -> None:
    expected, actual = suite.clis.compare(*suite.expand(case))
    assert_same(expected, actual)
    assert actual.code == 1
    assert message.format(ns=suite.ns) in actual.err


def test_an_unreachable_server_is_refused_as_kubectl_says(suite: Suite, tmp_path: Path
                                                          ) -> None:
    for case in ("get pods", "get pods,svc", "get pod/a", "api-resources"):
        args = ["--server=http://127.0.0.1:1", f"--cache-dir={tmp_path}", *case.split()]
        expected = normalized(run([KUBECTL, f"--kubeconfig={suite.clis.kubeconfig}", *args]))
        actual = normalized(run(mkctl_command(f"--kubeconfig={suite.clis.kubeconfig}", *args)))
        assert_same(expected, actual)
        assert actual.err.splitlines()[-1] == (
            "The connection to the server 127.0.0.1:1 was refused - did you specify the right "
            "host or port?")
        assert actual.code == 1


@pytest.mark.parametrize(("text", "message"), [
    ("apiVersion: v1\nkind: Config\nclusters: [\n",
     "yaml: line 3: did not find expected node content"),
    ("foo: [1,2", "yaml: line 1: did not find expected ',' or ']'"),
    ("hello", "couldn't get version/kind; json parse error: json: cannot unmarshal string into "
              "Go value of type struct"),
    ("clusters: {a: 1}", "json: cannot unmarshal object into Go struct field Config.clusters "
                         "of type []v1.NamedCluster"),
])
def test_a_broken_kubeconfig_is_reported_as_kubectl_reports_it(tmp_path: Path, text: str,
                                                               message: str) -> None:
    path = tmp_path / "config"
    path.write_text(text)
    for args in (["get", "pods"], ["config", "view"]):
        expected = normalized(run([KUBECTL, f"--kubeconfig={path}", *args]))
        actual = normalized(run(mkctl_command(f"--kubeconfig={path}", *args)))
        assert_same(expected, actual)
        assert actual.err.startswith(f'error: error loading config file "{path}": {message}')


def test_an_unknown_command_suggests_the_near_ones() -> None:
    result = run(mkctl_command("list"))
    assert (result.err, result.code) == (
        'error: unknown command "list" for "mkctl"\n\nDid you mean this?\n\tget\n', 1)


def test_the_allowed_output_formats_are_the_ones_mkctl_has(suite: Suite) -> None:
    result = suite.clis.mkctl("get", "pods", "-o", "go-template")
    assert result.code == 1
    assert result.err == (
        'error: unable to match a printer suitable for the output format "go-template", '
        "allowed formats are: custom-columns,custom-columns-file,json,jsonpath,"
        "jsonpath-as-json,jsonpath-file,name,wide,yaml\n")


# -- kubeconfig: KUBECONFIG merging, use-context --------------------------------------------

def _server_of(kubeconfig: Path) -> str:
    return yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"]["server"]


def test_kubeconfig_files_merge_as_kubectl_merges_them(suite: Suite, tmp_path: Path) -> None:
    server = _server_of(suite.clis.kubeconfig)
    first = tmp_path / "first"
    second = tmp_path / "second"
    first.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "mine",
        "contexts": [{"name": "mine", "context": {"cluster": "real", "user": "me",
                                                  "namespace": suite.ns}}],
        "users": [{"name": "me", "user": {}}]}))
    second.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "theirs",
        "clusters": [{"name": "real", "cluster": {"server": server}},
                     {"name": "bogus", "cluster": {"server": "http://127.0.0.1:1"}}],
        "contexts": [{"name": "mine", "context": {"cluster": "bogus", "user": "me"}},
                     {"name": "theirs", "context": {"cluster": "bogus", "user": "me"}}],
        "users": [{"name": "me", "user": {"token": "ignored"}}]}))
    env = {"KUBECONFIG": f"{first}:{tmp_path / 'missing'}:{second}"}
    for case in ("get pods", "config view", "config get-contexts", "config current-context"):
        expected = normalized(run([KUBECTL, f"--cache-dir={tmp_path}", *case.split()],
                                  env=env))
        actual = normalized(run(mkctl_command(f"--cache-dir={tmp_path}", *case.split()),
                                env=env))
        assert_same(expected, actual)
    listed = run(mkctl_command(f"--cache-dir={tmp_path}", "get", "pods"), env=env)
    assert "web-a" in listed.out  # the first file's context, on the second file's cluster
    unmerged = run(mkctl_command("config", "view", "--merge=false"), env=env)
    assert unmerged.err == "error: if merge==false a precise file must be specified\n"


def test_use_context_rewrites_the_first_kubeconfig_file_in_kubectls_form(tmp_path: Path
                                                                         ) -> None:
    def files(directory: Path) -> tuple[Path, Path]:
        directory.mkdir()
        first, second = directory / "first", directory / "second"
        first.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "Config", "contexts": [
            {"name": "one", "context": {"cluster": "c", "user": "u", "namespace": "a"}}]}))
        second.write_text(yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config", "current-context": "one",
            "clusters": [{"name": "c", "cluster": {"server": "https://10.0.0.1:6443",
                                                   "certificate-authority": "ca.crt"}}],
            "users": [{"name": "u", "user": {"token": "t"}}],
            "contexts": [{"name": "two", "context": {"cluster": "c", "user": "u"}}],
            "preferences": {}}))
        return first, second

    results = []
    for program, directory in ((KUBECTL, tmp_path / "kubectl"),
                               (None, tmp_path / "mkctl")):
        first, second = files(directory)
        env = {"KUBECONFIG": f"{first}:{second}"}
        command = [program] if program else mkctl_command()
        switched = run([*command, "config", "use-context", "two"], env=env)
        results.append((normalized(switched), first.read_text(), second.read_text(),
                        sorted(path.name for path in directory.iterdir())))
    assert results[1] == results[0]
    switched, first, second, _ = results[1]
    assert switched.out == 'Switched to context "two".\n'
    assert first == ("apiVersion: v1\nclusters: null\ncontexts:\n- context:\n    cluster: c\n"
                     "    namespace: a\n    user: u\n  name: one\ncurrent-context: two\n"
                     "kind: Config\nusers: null\n")
    assert "current-context: one" in second  # the file that set it is left alone


# -- watching ------------------------------------------------------------------------------

class Output:
    """What a running process has printed on stdout so far, read by a thread."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.text = ""
        assert process.stdout is not None
        self.reader = threading.Thread(target=self._read, args=(process.stdout,), daemon=True)
        self.reader.start()

    def _read(self, stream: IO[str]) -> None:
        for line in stream:
            self.text += line


def answered(log: Path) -> list[tuple[str, str, str]]:
    """The requests the API server has answered, in order, from its request log: (verb,
    path, user agent). A tool has made a request once it is there."""
    found = []
    for line in log.read_text().splitlines():
        start = line.find('{"msg":"request"')  # after the klog header
        if start >= 0:
            request = json.loads(line[start:])
            found.append((request["verb"], request["path"], request.get("userAgent", "")))
    return found


def reads_by(log: Path, agent: str, *parts: str) -> int:
    """How many reads (GET, LIST) a client whose user agent starts with `agent` has
    made of paths naming every one of `parts`."""
    return sum(verb in ("GET", "LIST") and user.startswith(agent)
               and all(part in path for part in parts)
               for verb, path, user in answered(log))


def _watch_both(suite: Suite, start: Start, args: list[str], changes: list[list[str]],
                marker: str, printed_all: Callable[[str], bool]) -> list[Result]:
    """Start `get ... -w` in both programs; once the API server has answered the read
    of each (the list its watch starts from, whose path names `marker`), make the
    changes; once each has printed them all (`printed_all` of its output), interrupt
    both."""
    clis = suite.clis
    log = suite.apiserver_log
    read_before = [reads_by(log, agent, "/pods", marker) for agent in AGENTS]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    processes = [start(command, env=env, text=True, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
                 for command in ([KUBECTL, *clis.flags(), *args],
                                 mkctl_command(*clis.flags(), *args))]
    outputs = [Output(process) for process in processes]
    try:
        until(lambda: all(reads_by(log, agent, "/pods", marker) > before
                          for agent, before in zip(AGENTS, read_before, strict=True)),
              "both watches' lists", 60, interval=0.1)
        for change in changes:
            assert clis.kubectl(*change).code == 0
        until(lambda: all(printed_all(output.text) for output in outputs),
              "every change printed by both", 60, interval=0.1)
    finally:
        for process in processes:
            process.send_signal(signal.SIGINT)
    results = []
    for process, output in zip(processes, outputs, strict=True):
        assert process.stderr is not None
        process.wait(timeout=30)
        output.reader.join()
        results.append(normalized(Result(output.text, process.stderr.read(),
                                          process.returncode)))
    return results


@pytest.mark.slow
@pytest.mark.parametrize("flags", [[], ["--show-labels"], ["-A", "-l", "watch={suite}"],
                                   ["--output-watch-events"], ["--watch-only"],
                                   ["-o", "name"]])
def test_watch_prints_the_list_then_each_change_as_kubectl(suite: Suite, processes: Start,
                                                           flags: list[str]) -> None:
    """The changes to a pod, then a last pod created, whose name both must print: every
    event before it was printed by then."""
    name = f"watched-{uuid.uuid4().hex[:5]}x"  # never read as an age, as 1073d would be
    last = f"{name}-last"
    flags = [flag.format(suite=suite.id) for flag in flags]
    args = ["get", "pods", "-n", suite.empty, "-w", *flags]
    changes = [["run", name, "-n", suite.empty, "--image=busybox", f"--labels=watch={suite.id}"],
               ["label", "pod", name, "-n", suite.empty, "extra=yes"],
               ["delete", "pod", name, "-n", suite.empty, "--grace-period=0", "--force"],
               ["run", last, "-n", suite.empty, "--image=busybox", f"--labels=watch={suite.id}"]]
    marker = suite.id if "-A" in flags else suite.empty
    try:
        expected, actual = _watch_both(suite, processes, args, changes, marker,
                                       lambda out: last in out)
    finally:
        suite.clis.kubectl("delete", "pod", last, "-n", suite.empty, "--grace-period=0",
                           "--force", "--ignore-not-found")
    assert_same(expected, actual)
    assert name in actual.out
    assert actual.code == 1  # interrupted, as kubectl


@pytest.mark.slow
def test_watching_one_object_prints_it_then_its_changes(suite: Suite, processes: Start
                                                        ) -> None:
    name = f"watched-{uuid.uuid4().hex[:5]}x"  # never read as an age, as 1073d would be
    assert suite.clis.kubectl("run", name, "-n", suite.empty, "--image=busybox").code == 0
    expected, actual = _watch_both(
        suite, processes, ["get", "pod", name, "-n", suite.empty, "-w"],
        [["label", "pod", name, "-n", suite.empty, "changed=yes"],
         ["delete", "pod", name, "-n", suite.empty, "--grace-period=0", "--force"]],
        suite.empty, lambda out: len(out.splitlines()) >= 4)
    assert_same(expected, actual)
    assert len(actual.out.splitlines()) == 4  # header, the pod, the label, the deletion


# -- start-up and discovery cache ----------------------------------------------------------

def test_get_imports_no_yaml_library_asyncio_or_api_server_code(suite: Suite) -> None:
    completed = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "minikube_py.mkctl", *suite.clis.flags(),
         "get", "pods", "-n", suite.ns], capture_output=True, text=True, timeout=60,
        env={**os.environ, "PYTHONPATH": str(REPO)})
    assert completed.returncode == 0, completed.stderr
    imported = {line.split("|")[-1].strip() for line in completed.stderr.splitlines()
                if line.startswith("import time:")}
    for heavy in ("yaml", "asyncio", "aiohttp", "orjson", "http.client", "ssl",
                  "minikube_py.apiserver", "minikube_py.api.schema", "minikube_py.client"):
        assert heavy not in imported


def _cache_file(cache_dir: Path, kubeconfig: Path) -> Path:
    host = _server_of(kubeconfig).split("://", 1)[1].replace(":", "_")
    return cache_dir / "mkctl" / "discovery" / host / "resources.json"


def test_discovery_is_cached_on_disk_and_trusted_for_six_hours(suite: Suite, tmp_path: Path
                                                               ) -> None:
    clis = Clis(suite.clis.kubeconfig, tmp_path)
    assert clis.mkctl("get", "pods", "-n", suite.ns).code == 0
    cache = _cache_file(tmp_path, clis.kubeconfig)
    document = json.loads(cache.read_text())
    pods = next(r for r in document["resources"] if r["name"] == "pods" and not r["group"])
    pods["short_names"] = ["zz"]  # a short name only the cache knows
    cache.write_text(json.dumps(document))
    assert "web-a" in clis.mkctl("get", "zz", "-n", suite.ns).out  # the cache was used
    os.utime(cache, (time.time() - 7 * 3600,) * 2)
    stale = clis.mkctl("get", "zz", "-n", suite.ns)  # fetched again: the server knows no zz
    assert stale.err == "error: the server doesn't have a resource type \"zz\"\n"
    refetched = json.loads(cache.read_text())["resources"]
    assert next(r for r in refetched if r["name"] == "pods")["short_names"] == ["po"]


def test_a_name_the_cache_lacks_is_looked_up_again(suite: Suite, tmp_path: Path) -> None:
    clis = Clis(suite.clis.kubeconfig, tmp_path)
    assert clis.mkctl("get", "pods", "-n", suite.ns).code == 0
    cache = _cache_file(tmp_path, clis.kubeconfig)
    document = json.loads(cache.read_text())
    document["resources"] = [r for r in document["resources"] if r["name"] != "configmaps"]
    cache.write_text(json.dumps(document))
    assert "settings" in clis.mkctl("get", "cm", "-n", suite.ns).out  # refetched
    assert any(r["name"] == "configmaps" for r in json.loads(cache.read_text())["resources"])


# -- a secured server: TLS, client certificates, tokens --------------------------------------

@pytest.fixture(scope="module")
async def secured_etcd(fast_tmp: Path) -> AsyncIterator[EtcdProcess]:
    """An etcd of this module's own: the bootstrap roles stay out of the shared one."""
    async with EtcdProcess(fast_tmp / f"etcd-mkctl-{uuid.uuid4().hex[:8]}") as process:
        yield process


@pytest.fixture(scope="module")
def secured(secured_etcd: EtcdProcess, fast_tmp: Path) -> Iterator[tuple[Path, Path]]:
    """A TLS API server with RBAC (tests/test_security.py's), and two kubeconfigs: the
    admin's (embedded client certificate) and bob's (a bearer token, no bindings)."""
    from minikube_py.security import pki
    from tests.test_security import TOKEN, admin_cert, start_server, stop

    ca = pki.new_ca()
    server = start_server(secured_etcd.client_url, fast_tmp / "mkctl-secured", ca)
    try:
        yield server.kubeconfig("admin", cert=admin_cert(ca)), server.kubeconfig(
            "bob", token=TOKEN)
    finally:
        stop(server)


def _files_kubeconfig(admin: Path, directory: Path) -> Path:
    """The admin's kubeconfig with the CA and the certificate in files beside it, named by
    paths relative to the kubeconfig."""
    import base64

    document = yaml.safe_load(admin.read_text())
    cluster, user = document["clusters"][0]["cluster"], document["users"][0]["user"]
    for key, name, entry in (("certificate-authority", "ca.crt", cluster),
                             ("client-certificate", "admin.crt", user),
                             ("client-key", "admin.key", user)):
        (directory / name).write_bytes(base64.b64decode(entry.pop(f"{key}-data")))
        entry[key] = name
    path = directory / "files.kubeconfig"
    path.write_text(yaml.safe_dump(document))
    return path


@pytest.mark.slow
def test_over_tls_mkctl_and_kubectl_agree_for_each_way_of_giving_credentials(
        secured: tuple[Path, Path], tmp_path: Path) -> None:
    admin, bob = secured
    files = _files_kubeconfig(admin, tmp_path)
    ca, cert, key = (str(tmp_path / name) for name in ("ca.crt", "admin.crt", "admin.key"))
    cases = [
        (admin, ["get", "ns"]),
        (admin, ["api-resources"]),
        (admin, ["config", "view"]),
        (files, ["get", "ns", "default"]),
        (bob, ["get", "pods"]),
        (bob, ["get", "ns", "default", "-o", "yaml"]),
        (bob, ["--token=wrong", "get", "ns"]),
        (bob, [f"--client-certificate={cert}", f"--client-key={key}", "get", "ns"]),
        (admin, ["--as=bob", "get", "pods"]),
        (admin, ["--as=bob", "--as-group=system:masters", "get", "ns", "default"]),
        (files, ["--certificate-authority=/nonexistent", "get", "ns"]),
        (files, ["--tls-server-name=wrong.example", "get", "ns"]),
        (files, ["--server=" + _server_of(admin).replace("127.0.0.1", "127.0.0.2"),
                 "get", "ns"]),
    ]
    no_ca = tmp_path / "noca.kubeconfig"
    document = yaml.safe_load(files.read_text())
    document["clusters"][0]["cluster"].pop("certificate-authority")
    no_ca.write_text(yaml.safe_dump(document))
    cases += [(no_ca, ["get", "ns", "default"]),
              (no_ca, ["--insecure-skip-tls-verify", "get", "ns", "default"]),
              (no_ca, [f"--certificate-authority={ca}", "get", "ns", "default"])]
    for kubeconfig, args in cases:
        clis = Clis(kubeconfig, tmp_path / "cache")
        assert_same(*clis.compare(*args))


@pytest.mark.slow
def test_over_tls_the_failures_read_as_kubectl_reads_them(secured: tuple[Path, Path],
                                                          tmp_path: Path) -> None:
    admin, bob = secured
    files = _files_kubeconfig(admin, tmp_path)
    no_ca = tmp_path / "noca.kubeconfig"
    document = yaml.safe_load(files.read_text())
    document["clusters"][0]["cluster"].pop("certificate-authority")
    no_ca.write_text(yaml.safe_dump(document))
    expectations = [
        (bob, ["get", "pods"], 'Error from server (Forbidden): pods is forbidden: User "bob" '
                               'cannot list resource "pods" in API group "" in the namespace '
                               '"default"'),
        (bob, ["--token=wrong", "get", "ns"], "error: You must be logged in to the server "
                                              "(Unauthorized)"),
        (no_ca, ["get", "ns"], "Unable to connect to the server: tls: failed to verify "
                               "certificate: x509: certificate signed by unknown authority"),
        (files, ["--tls-server-name=wrong.example", "get", "ns"],
         "Unable to connect to the server: tls: failed to verify certificate: x509: "
         "certificate is valid for kubernetes, kubernetes.default, kubernetes.default.svc, "
         "kubernetes.default.svc.cluster.local, localhost, not wrong.example"),
    ]
    for kubeconfig, args, message in expectations:
        result = Clis(kubeconfig, tmp_path / "cache").mkctl(*args)
        assert result.code == 1
        assert result.err.splitlines()[-1] == message


# -- and nothing a case ran changed anything -------------------------------------------------

def test_nothing_changed_on_the_server(suite: Suite) -> None:
    """Runs last in this module: every object is at the resourceVersion it was created
    with, whatever the cases asked, and the shared kubeconfig is as it was."""
    assert object_versions(suite.clis, [suite.ns, suite.other]) == {
        key: version for key, version in suite.versions.items()
        if not key.startswith(suite.empty + "/")}
    assert yaml.safe_load(suite.clis.kubeconfig.read_text())["current-context"] == "minikube-py"
    assert not list(suite.clis.kubeconfig.parent.glob("*.lock"))
