"""The file source: static pods, read from manifests in a folder of the node.

Upstream pkg/kubelet/config/file.go, file_linux.go and common.go. With
--pod-manifest-path, the kubelet runs every pod described in that folder, whether an
API server answers or not: that is how a kubeadm node's kubelet starts the control plane
(the API server among it) before there is one.

    list_config, at start and then every second
        stat each file of the folder (names starting with "." are skipped, folders are
        not entered); a file read before is read again only when its size, mtime, ctime
        or inode changed, so an unchanged folder costs one stat per file
        extract_from_file   YAML or JSON, one Pod per file (the first document)
            decode          apiVersion v1, kind Pod; JSON types as Go's decoder takes them
            default         the API's pod defaults (api/poddefaults.py), which upstream's
                            decoder applies
            apply_defaults  uid          md5 of the pod, the node's name and the file's
                                         path, unless the manifest sets one: a changed
                                         manifest is a new pod (the old one stops, the
                                         new one starts)
                            name         <name>-<node name>, namespace "default" if unset
                            nodeName     this node
                            annotations  config.hash = the uid, config.source = "file"
                            tolerations  Exists/NoExecute: no node taint evicts it
                            status       phase Pending
            check           a name, and containers with names and images (what the
                            kubelet needs; the API server validates the rest when it
                            refuses or takes the mirror pod)
        if anything changed: the whole set goes to the kubelet (upstream's PodUpdate, op
        SET, source "file"), which starts the pods it did not have and stops the ones
        that are gone
    A file that cannot be read or decoded is skipped with one log line ("Could not
    process manifest file"), repeated only when the file changes; the others still run.

Upstream watches the folder with inotify and lists it again every 20 s (fileCheckFrequency);
here a stat of each file every second (--file-check-frequency) stands for both: as quick
to react, and as cheap for the handful of manifests a node has.
"""

from __future__ import annotations

import asyncio
import copy
import hashlib
import logging
import os
import stat
from collections.abc import Callable
from pathlib import Path

import orjson
import yaml

from minikube_py.api import Obj
from minikube_py.api.poddefaults import set_pod_defaults
from minikube_py.api.schema import schema_for
from minikube_py.api.schema.strict import type_error
from minikube_py.client.logs import kv, log_v
from minikube_py.kubelet.mirror_client import (
    CONFIG_HASH_ANNOTATION,
    CONFIG_SOURCE_ANNOTATION,
    FILE_SOURCE,
)
from minikube_py.lifecycle import Component

log = logging.getLogger(__name__)

FILE_CHECK_FREQUENCY = 1.0
NAMESPACE_DEFAULT = "default"
# What tells a file that changed from one that did not: inode, size, mtime, ctime.
Signature = tuple[int, int, int, int]


class ManifestError(Exception):
    """A manifest that is no static pod; the message is upstream's wording."""


def generate_pod_name(name: str, node_name: str) -> str:
    """generatePodName: unique among nodes by the node's name."""
    return f"{name}-{node_name.lower()}"


def static_pod_uid(pod: Obj, node_name: str, source: str) -> str:
    """The UID of a static pod: md5 of the decoded pod, then host:<node> and
    file:<path> (upstream hashes its Go object with DeepHashObject; this hashes its
    JSON with sorted keys)."""
    hasher = hashlib.md5(usedforsecurity=False)
    hasher.update(orjson.dumps(pod, option=orjson.OPT_SORT_KEYS))
    hasher.update(f"host:{node_name}".encode())
    hasher.update(f"file:{source}".encode())
    return hasher.hexdigest()


def apply_defaults(pod: Obj, source: str, node_name: str) -> None:
    """applyDefaults (isFile): uid, name, namespace, node, the hash annotation, the
    NoExecute toleration and phase Pending; and the source annotation, which upstream's
    PodConfig adds for every source."""
    metadata = pod.setdefault("metadata", {})
    if not metadata.get("uid"):
        metadata["uid"] = static_pod_uid(pod, node_name, source)
        log_v(log, 5, "Generated UID", pod=metadata.get("name", ""), podUID=metadata["uid"],
              source=source)
    metadata["name"] = generate_pod_name(metadata["name"], node_name)
    if not metadata.get("namespace"):
        metadata["namespace"] = NAMESPACE_DEFAULT
    pod["spec"]["nodeName"] = node_name
    annotations = metadata.get("annotations") or {}
    metadata["annotations"] = {**annotations, CONFIG_HASH_ANNOTATION: metadata["uid"],
                               CONFIG_SOURCE_ANNOTATION: FILE_SOURCE}
    add_or_update_toleration(pod, {"operator": "Exists", "effect": "NoExecute"})
    status = pod.get("status") or {}
    pod["status"] = {**status, "phase": "Pending"}


def add_or_update_toleration(pod: Obj, toleration: Obj) -> None:
    """AddOrUpdateTolerationInPod: replace the toleration that matches this one (same
    key, operator, value and effect), or add it."""
    fields = ("key", "operator", "value", "effect")
    tolerations = pod["spec"].get("tolerations") or []
    kept = [t for t in tolerations
            if any((t.get(name) or "") != (toleration.get(name) or "") for name in fields)]
    pod["spec"]["tolerations"] = [*kept, toleration]


def decode_pod(data: bytes, source: str, node_name: str) -> Obj:
    """tryDecodeSinglePod: bytes -> the static pod, or ManifestError."""
    try:
        document = next(iter(yaml.safe_load_all(data)), None)
    except yaml.YAMLError as error:
        raise ManifestError(_unparsed(source, f"yaml: {_yaml_problem(error)}")) from None
    if not isinstance(document, dict) or not document.get("kind"):
        raise ManifestError(_unparsed(source, "Object 'Kind' is missing"))
    kind, version = document.get("kind"), document.get("apiVersion")
    if version != "v1" or kind != "Pod":
        reason = (f'no kind "{kind}" is registered for version "{version}"'
                  if kind == "Pod" else f"invalid pod: kind {kind!r}")
        raise ManifestError(_unparsed(source, reason))
    schema = schema_for("", "v1", "Pod")
    assert schema is not None
    wrong_type = type_error(document, schema)
    if wrong_type is not None:
        raise ManifestError(_unparsed(source, wrong_type))
    pod: Obj = document
    if not (pod.get("metadata") or {}).get("name"):
        raise ManifestError("invalid pod: name is needed for the pod")
    pod.setdefault("spec", {})
    set_pod_defaults(pod)
    apply_defaults(pod, source, node_name)
    problems = _missing_fields(pod["spec"])
    if problems:
        raise ManifestError(f"invalid pod: [{', '.join(problems)}]")
    return pod


def _missing_fields(spec: Obj) -> list[str]:
    """The required fields the kubelet reads: containers, each with a name and image."""
    containers = spec.get("containers") or []
    if not containers:
        return ["spec.containers: Required value"]
    problems = []
    for kind in ("initContainers", "containers"):
        for i, container in enumerate(spec.get(kind) or []):
            problems += [f"spec.{kind}[{i}].{field}: Required value"
                         for field in ("name", "image") if not container.get(field)]
    return problems


def _unparsed(source: str, reason: str) -> str:
    return f"{source}: couldn't parse as pod({reason}), please check config file"


def _yaml_problem(error: yaml.YAMLError) -> str:
    mark = getattr(error, "problem_mark", None)
    problem = getattr(error, "problem", None) or str(error)
    return f"line {mark.line + 1}: {problem}" if mark is not None else problem


def _signature(info: os.stat_result) -> Signature:
    return (info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


class FileSource(Component):
    """sourceFile: the static pods of one folder (or one file), told to `update` as a
    whole set after the first read and whenever a manifest changed."""

    def __init__(self, path: Path, node_name: str, update: Callable[[list[Obj]], None], *,
                 period: float = FILE_CHECK_FREQUENCY) -> None:
        self.path = path
        self.node_name = node_name
        self.update = update
        self.period = period
        # path -> (signature when read, the pod or None when it failed)
        self._files: dict[Path, tuple[Signature, Obj | None]] = {}
        self._path_problem: str | None = None
        self._listed = False

    async def run(self) -> None:
        """List the folder once a period, forever (the first list is the caller's:
        list_config() before run(), so the kubelet has its static pods at once)."""
        log_v(log, 1, "Watching path", path=str(self.path))
        while True:
            self.list_config()
            await asyncio.sleep(self.period)

    def list_config(self) -> None:
        """listConfig: read what changed and, if anything did, send the whole set (a
        missing path is an empty set; one that cannot be read keeps the pods running)."""
        files = self._read_path()
        if files is None:
            return
        changed = files.keys() != self._files.keys() or any(
            signature != self._files[path][0] for path, (signature, _) in files.items())
        self._files = files
        if changed or not self._listed:
            self._listed = True
            self.update([copy.deepcopy(pod) for _, pod in files.values() if pod is not None])

    def _read_path(self) -> dict[Path, tuple[Signature, Obj | None]] | None:
        """The pods of the folder (or of the one file), or None when it cannot be read."""
        try:
            info = self.path.stat()
        except FileNotFoundError:
            self._report_path("path does not exist, ignoring")
            return {}
        except OSError as error:
            self._report_path(str(error))
            return None
        if stat.S_ISDIR(info.st_mode):
            files = self._extract_from_dir()
        elif stat.S_ISREG(info.st_mode):
            files = {self.path: self._extract(self.path, info)}
        else:
            self._report_path("path is not a directory or file")
            return None
        if files is not None:
            self._path_problem = None
        return files

    def _report_path(self, problem: str) -> None:
        """Unable to read config path: said once, until the problem changes."""
        if problem != self._path_problem:
            self._path_problem = problem
            log.error("%s", kv("Unable to read config path", err=problem, path=str(self.path)))

    def _extract_from_dir(self) -> dict[Path, tuple[Signature, Obj | None]] | None:
        """extractFromDir: every regular file not starting with ".", in name order."""
        found: dict[Path, tuple[Signature, Obj | None]] = {}
        try:
            entries = sorted(entry for entry in os.listdir(self.path)
                             if not entry.startswith("."))
        except OSError as error:
            self._report_path(str(error))
            return None
        for entry in entries:
            path = self.path / entry
            try:
                info = path.stat()
            except OSError:
                continue  # removed between the listing and the stat
            if stat.S_ISDIR(info.st_mode):
                log_v(log, 4, "Provided manifest path is a directory, not recursing into "
                      "manifest path", path=str(path))
                continue
            if stat.S_ISREG(info.st_mode):
                found[path] = self._extract(path, info)
        return found

    def _extract(self, path: Path, info: os.stat_result) -> tuple[Signature, Obj | None]:
        """The file's pod, read again only when the file changed since the last read."""
        signature = _signature(info)
        known = self._files.get(path)
        if known is not None and known[0] == signature:
            return known
        return signature, self.extract_from_file(path)

    def extract_from_file(self, path: Path) -> Obj | None:
        """extractFromFile: the file's pod, or None (logged) when it is not one."""
        log_v(log, 3, "Reading config file", path=str(path))
        try:
            return decode_pod(path.read_bytes(), str(path), self.node_name)
        except (OSError, ManifestError) as error:
            log.error("%s", kv("Could not process manifest file", err=str(error),
                               path=str(path)))
            return None
