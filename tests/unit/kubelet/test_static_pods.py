"""Static pods, the pure parts: a manifest decoded and defaulted into a pod (its uid a
hash of the manifest, the node and the file), the file source's reading of a folder,
and the mirror pod made from a static pod."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pytest

from minikube_py.api import Obj
from minikube_py.kubelet.config_file import FileSource, ManifestError, decode_pod
from minikube_py.kubelet.mirror_client import (
    CONFIG_HASH_ANNOTATION,
    CONFIG_MIRROR_ANNOTATION,
    CONFIG_SOURCE_ANNOTATION,
    is_mirror_pod,
    is_mirror_pod_of,
    is_static_pod,
    mirror_pod_for,
    pod_full_name,
)

NODE = "Node-1"
MANIFEST = """\
apiVersion: v1
kind: Pod
metadata:
  name: web
  labels: {app: web}
spec:
  containers:
  - name: httpd
    image: localhost/busybox:1.36
    command: [httpd, -f]
    ports: [{containerPort: 80}]
"""


def decode(text: str = MANIFEST, source: str = "/etc/manifests/web.yaml",
           node: str = NODE) -> Obj:
    return decode_pod(text.encode(), source, node)


def test_a_manifest_becomes_a_pod_of_this_node_with_the_api_defaults():
    pod = decode()
    metadata, spec = pod["metadata"], pod["spec"]
    assert metadata["name"] == "web-node-1"  # <name>-<node name, lower case>
    assert metadata["namespace"] == "default"
    assert spec["nodeName"] == NODE
    assert metadata["annotations"] == {CONFIG_HASH_ANNOTATION: metadata["uid"],
                                       CONFIG_SOURCE_ANNOTATION: "file"}
    assert metadata["labels"] == {"app": "web"}
    # what upstream's decoder defaults, as the API server would
    assert spec["restartPolicy"] == "Always" and spec["dnsPolicy"] == "ClusterFirst"
    assert spec["terminationGracePeriodSeconds"] == 30
    assert spec["schedulerName"] == "default-scheduler"
    container = spec["containers"][0]
    assert container["imagePullPolicy"] == "IfNotPresent"
    assert container["terminationMessagePath"] == "/dev/termination-log"
    assert container["ports"] == [{"containerPort": 80, "protocol": "TCP"}]
    # no node taint evicts a static pod; it starts Pending
    assert spec["tolerations"] == [{"operator": "Exists", "effect": "NoExecute"}]
    assert pod["status"] == {"phase": "Pending"}
    assert is_static_pod(pod) and not is_mirror_pod(pod)


def test_the_uid_is_a_hash_of_the_manifest_the_node_and_the_file():
    uid = decode()["metadata"]["uid"]
    assert len(uid) == 32 and int(uid, 16) >= 0  # md5, in hex
    assert decode()["metadata"]["uid"] == uid  # the same manifest, the same pod
    # the same pod written as JSON, or with its defaults spelled out, is the same pod
    as_json = json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": "web", "labels": {"app": "web"}}, "spec": {"restartPolicy": "Always",
        "containers": [{"name": "httpd", "image": "localhost/busybox:1.36",
                        "command": ["httpd", "-f"], "ports": [{"containerPort": 80}]}]}})
    assert decode(as_json)["metadata"]["uid"] == uid
    assert decode(node="node-2")["metadata"]["uid"] != uid
    assert decode(source="/etc/manifests/other.yaml")["metadata"]["uid"] != uid
    changed = MANIFEST.replace("httpd, -f", "httpd, -f, -v")
    assert decode(changed)["metadata"]["uid"] != uid


def test_a_manifest_that_names_its_uid_and_namespace_keeps_them():
    text = MANIFEST.replace("  name: web\n", "  name: web\n  uid: fixed-uid\n"
                                             "  namespace: kube-system\n")
    pod = decode(text)
    assert pod["metadata"]["uid"] == "fixed-uid"
    assert pod["metadata"]["namespace"] == "kube-system"
    assert pod["metadata"]["annotations"][CONFIG_HASH_ANNOTATION] == "fixed-uid"


def test_the_no_execute_toleration_is_added_once():
    text = MANIFEST + "  tolerations:\n  - {operator: Exists, effect: NoExecute}\n" \
                      "  - {key: k, operator: Equal, value: v, effect: NoSchedule}\n"
    tolerations = decode(text)["spec"]["tolerations"]
    assert tolerations == [{"key": "k", "operator": "Equal", "value": "v",
                            "effect": "NoSchedule"},
                           {"operator": "Exists", "effect": "NoExecute"}]


@pytest.mark.parametrize(("text", "message"), [
    ("metadata: [", "/m/bad.yaml: couldn't parse as pod(yaml: line 1: "),
    ("apiVersion: v1\nmetadata: {name: x}\n", "couldn't parse as pod(Object 'Kind' is missing)"),
    ("apiVersion: v2\nkind: Pod\nmetadata: {name: x}\n",
     'couldn\'t parse as pod(no kind "Pod" is registered for version "v2")'),
    ("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\n",
     "couldn't parse as pod(invalid pod: kind 'Deployment')"),
    ("apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {containers: {}}\n",
     "json: cannot unmarshal object into Go struct field PodSpec.spec.containers of type "),
    ("apiVersion: v1\nkind: Pod\nspec: {containers: [{name: c, image: i}]}\n",
     "invalid pod: name is needed for the pod"),
    ("apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {}\n",
     "invalid pod: [spec.containers: Required value]"),
    ("apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {containers: [{name: c}]}\n",
     "invalid pod: [spec.containers[0].image: Required value]"),
])
def test_a_manifest_that_is_no_pod_is_refused_with_upstreams_words(text, message):
    with pytest.raises(ManifestError) as refused:
        decode(text, source="/m/bad.yaml")
    assert message in str(refused.value)


class Updates:
    """The sets the file source sends, as the kubelet receives them."""

    def __init__(self) -> None:
        self.sets: list[list[str]] = []

    def __call__(self, pods: list[Obj]) -> None:
        self.sets.append(sorted(pod["metadata"]["name"] for pod in pods))


def test_the_folder_is_read_once_and_then_only_what_changed(tmp_path: Path,
                                                             caplog: pytest.LogCaptureFixture):
    (tmp_path / "web.yaml").write_text(MANIFEST)
    (tmp_path / "bad.yaml").write_text("apiVersion: v1\nkind: Pod\nmetadata: [\n")
    (tmp_path / ".web.yaml.swp").write_text(MANIFEST.replace("name: web", "name: hidden"))
    (tmp_path / "subdir").mkdir()
    (tmp_path / "subdir" / "deep.yaml").write_text(MANIFEST.replace("name: web", "name: deep"))
    updates = Updates()
    source = FileSource(tmp_path, NODE, updates)
    with caplog.at_level(logging.INFO, logger="minikube_py.kubelet.config_file"):
        source.list_config()
        source.list_config()
    # the good manifest runs; the bad one, the hidden file and the folder do not
    assert updates.sets == [["web-node-1"]]
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1  # one line for the bad manifest, not one per look
    assert errors[0].startswith('"Could not process manifest file" err="')
    assert f'path="{tmp_path / "bad.yaml"}"' in errors[0]

    # a second manifest is added, the bad one fixed: one new set with all three
    (tmp_path / "db.json").write_text(json.dumps({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "db"},
        "spec": {"containers": [{"name": "c", "image": "localhost/busybox:1.36"}]}}))
    (tmp_path / "bad.yaml").write_text(MANIFEST.replace("name: web", "name: fixed"))
    source.list_config()
    assert updates.sets[-1] == ["db-node-1", "fixed-node-1", "web-node-1"]
    # a manifest removed: the set without it
    (tmp_path / "web.yaml").unlink()
    source.list_config()
    source.list_config()
    assert updates.sets[1:] == [["db-node-1", "fixed-node-1", "web-node-1"],
                                ["db-node-1", "fixed-node-1"]]


def test_an_unchanged_file_is_not_read_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    manifest = tmp_path / "web.yaml"
    manifest.write_text(MANIFEST)
    source = FileSource(tmp_path, NODE, Updates())
    reads: list[Path] = []
    extract = source.extract_from_file
    monkeypatch.setattr(source, "extract_from_file",
                        lambda path: reads.append(path) or extract(path))
    source.list_config()
    source.list_config()
    assert reads == [manifest]
    stat = manifest.stat()
    manifest.write_text(MANIFEST.replace("httpd, -f", "httpd, -f, -v"))
    os.utime(manifest, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    source.list_config()
    assert reads == [manifest, manifest]


def test_a_missing_folder_is_no_static_pods_and_said_once(tmp_path: Path,
                                                           caplog: pytest.LogCaptureFixture):
    updates = Updates()
    source = FileSource(tmp_path / "absent", NODE, updates)
    source.list_config()
    source.list_config()
    assert updates.sets == [[]]  # the source is seen, with no pods
    said = [r.getMessage() for r in caplog.records if "Unable to read config path" in
            r.getMessage()]
    assert said == [f'"Unable to read config path" err="path does not exist, ignoring" '
                    f'path="{tmp_path / "absent"}"']


def test_one_file_as_the_path_is_one_static_pod(tmp_path: Path):
    manifest = tmp_path / "web.yaml"
    manifest.write_text(MANIFEST)
    updates = Updates()
    FileSource(manifest, NODE, updates).list_config()
    assert updates.sets == [["web-node-1"]]


def test_the_mirror_pod_is_the_static_pod_owned_by_its_node():
    static = decode()
    static["metadata"]["annotations"]["kubernetes.io/config.seen"] = "2026-01-01T00:00:00Z"
    node = {"metadata": {"name": NODE, "uid": "node-uid"}}
    mirror = mirror_pod_for(static, node)
    metadata = mirror["metadata"]
    assert "uid" not in metadata  # the API server gives the mirror pod its own
    assert (metadata["name"], metadata["namespace"]) == ("web-node-1", "default")
    assert metadata["annotations"] == {**static["metadata"]["annotations"],
                                       CONFIG_MIRROR_ANNOTATION: static["metadata"]["uid"]}
    assert metadata["ownerReferences"] == [{"apiVersion": "v1", "kind": "Node",
                                            "name": NODE, "uid": "node-uid",
                                            "controller": True}]
    assert mirror["spec"] == static["spec"] and "status" not in mirror
    # the API's copy (with a uid of its own) is the mirror of this static pod only
    mirror["metadata"]["uid"] = "api-uid"
    assert is_mirror_pod(mirror) and not is_static_pod({"metadata": {"annotations": {
        CONFIG_SOURCE_ANNOTATION: "api"}}})
    assert is_mirror_pod_of(mirror, static)
    assert pod_full_name(mirror) == pod_full_name(static) == "web-node-1_default"
    changed = decode(MANIFEST.replace("httpd, -f", "httpd, -f, -v"))
    assert not is_mirror_pod_of(mirror, changed)
