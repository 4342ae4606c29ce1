"""`mkctl drain`: cordon a node, then evict its pods (kubectl drain).

    mkctl drain node-1 --ignore-daemonsets        node/node-1 cordoned
                                                  evicting pod web/web-7d4b9-x2k8p
                                                  pod/web-7d4b9-x2k8p evicted
                                                  node/node-1 drained

The steps of kubectl's drain.go:
1. cordon the node (cordon.py), so no new pod lands on it;
2. list its pods (`spec.nodeName=NODE`, every namespace) and pass each through the
   filters, in order, the first that does not let the pod go deciding:
     DaemonSet-managed  its DaemonSet would only make it again: an error without
                        --ignore-daemonsets, skipped with a warning with it;
     mirror pod         the kubelet's own copy of a static pod: skipped;
     emptyDir           its data would be lost: an error without --delete-emptydir-data;
     no controller      nothing would make it again: an error without --force;
   any error stops the drain of this node before anything is evicted;
3. evict each pod through the pods/eviction subresource; a 429 means a
   PodDisruptionBudget forbids it for now: print why, wait 5 s and try again, until
   --timeout (0: no end);
4. wait until each evicted pod is gone, print `pod/NAME evicted`, then `node/NAME drained`.
With --dry-run=client nothing is cordoned or evicted; with --dry-run=server the server
checks each eviction (?dryRun=All) and no pod goes.
"""

from __future__ import annotations

import time

from minikube_py.api import Obj
from minikube_py.mkctl.changes import DRY_RUN_FLAG, dry_run
from minikube_py.mkctl.command import Command, Invocation
from minikube_py.mkctl.commands.cordon import set_unschedulable
from minikube_py.mkctl.errors import CommandLineError, Exit, StatusError
from minikube_py.mkctl.flags import BOOL, INT, Flag

RETRY_AFTER = 5.0  # seconds between evictions a disruption budget refused
DAEMONSET_FATAL = "DaemonSet-managed Pods (use --ignore-daemonsets to ignore)"
DAEMONSET_WARNING = "ignoring DaemonSet-managed Pods"
LOCAL_STORAGE_FATAL = "Pods with local storage (use --delete-emptydir-data to override)"
LOCAL_STORAGE_WARNING = "deleting Pods with local storage"
UNMANAGED_FATAL = "Pods that declare no controller (use --force to override)"
UNMANAGED_WARNING = "deleting Pods that declare no controller"
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"


class Verdict:
    """What the filters decided for one pod (PodDeleteStatus)."""

    def __init__(self, delete: bool, reason: str = "okay", message: str = "") -> None:
        self.delete, self.reason, self.message = delete, reason, message


def _name(pod: Obj) -> str:
    return f'{pod["metadata"].get("namespace", "")}/{pod["metadata"]["name"]}'


def _finished(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def _controller(pod: Obj) -> Obj | None:
    return next((ref for ref in pod["metadata"].get("ownerReferences") or []
                 if ref.get("controller")), None)


class Drainer:
    """One drain: the flags, and the client to list, read and evict pods with."""

    def __init__(self, inv: Invocation, deadline: float | None, timeout_text: str) -> None:
        self.inv = inv
        self.flags = inv.flags
        self.deadline = deadline
        self.timeout_text = timeout_text
        self.mode = dry_run(inv)
        self.suffix = {"none": "", "client": " (dry run)", "server": " (server dry run)"}[
            self.mode]

    # -- step 2: which pods go --

    def verdict(self, pod: Obj) -> Verdict:
        """The filters of drain.makeFilters, in order; the first that keeps the pod wins."""
        for check in (self._daemonset, self._mirror, self._local_storage, self._unreplicated):
            verdict = check(pod)
            if not verdict.delete:
                return verdict
        return verdict

    def _daemonset(self, pod: Obj) -> Verdict:
        owner = _controller(pod)
        if owner is None or owner.get("kind") != "DaemonSet":
            return Verdict(True)
        namespace = pod["metadata"].get("namespace", "")
        try:
            self.inv.client.get_json(
                f"/apis/apps/v1/namespaces/{namespace}/daemonsets/{owner.get('name', '')}")
        except StatusError as error:
            if error.reason == "NotFound" and self.flags["force"]:
                return Verdict(True, "warning", str(error))
            return Verdict(False, "error", str(error))
        if not self.flags["ignore-daemonsets"]:
            return Verdict(False, "error", DAEMONSET_FATAL)
        return Verdict(False, "warning", DAEMONSET_WARNING)

    def _mirror(self, pod: Obj) -> Verdict:
        if MIRROR_ANNOTATION in (pod["metadata"].get("annotations") or {}):
            return Verdict(False, "skip")
        return Verdict(True)

    def _local_storage(self, pod: Obj) -> Verdict:
        volumes = (pod.get("spec") or {}).get("volumes") or []
        if not any("emptyDir" in volume for volume in volumes) or _finished(pod):
            return Verdict(True)
        if not self.flags["delete-emptydir-data"]:
            return Verdict(False, "error", LOCAL_STORAGE_FATAL)
        return Verdict(True, "warning", LOCAL_STORAGE_WARNING)

    def _unreplicated(self, pod: Obj) -> Verdict:
        if _finished(pod) or _controller(pod) is not None:
            return Verdict(True)
        if self.flags["force"]:
            return Verdict(True, "warning", UNMANAGED_WARNING)
        return Verdict(False, "error", UNMANAGED_FATAL)

    def pods_for_deletion(self, node: str) -> tuple[list[Obj], list[str], list[str]]:
        """The node's pods to evict, the errors (one per reason, naming its pods) and the
        warnings, as GetPodsForDeletion groups them."""
        params = {"fieldSelector": f"spec.nodeName={node}"}
        if self.flags["pod-selector"]:
            params["labelSelector"] = self.flags["pod-selector"]
        pods = self.inv.client.get_json("/api/v1/pods", params).get("items") or []
        chosen: list[Obj] = []
        errors: dict[str, list[str]] = {}
        warnings: dict[str, list[str]] = {}
        for pod in pods:
            verdict = self.verdict(pod)
            if verdict.reason == "error":
                errors.setdefault(verdict.message, []).append(_name(pod))
            elif verdict.reason == "warning":
                warnings.setdefault(verdict.message, []).append(_name(pod))
            if verdict.delete:
                chosen.append(pod)
        return (chosen,
                [f"cannot delete {message}: {', '.join(names)}"
                 for message, names in errors.items()],
                sorted(f"{message}: {', '.join(names)}" for message, names in warnings.items()))

    # -- steps 3 and 4: evict, and wait --

    def evict_all(self, pods: list[Obj]) -> list[str]:
        """Evict every pod, retrying those a budget protects; the errors."""
        out, err = self.inv.out, self.inv.err
        failures: list[str] = []
        evicted: list[Obj] = []
        if self.mode == "client":  # nothing is sent
            out.write("".join(f"evicting pod {_name(pod)} (dry run)\n" for pod in pods))
            return failures
        pending = pods
        while pending:
            refused = []
            for pod in pending:
                name, namespace = pod["metadata"]["name"], pod["metadata"]["namespace"]
                out.write(f"evicting pod {namespace}/{name}{self.suffix}\n")  # first
                out.flush()
                if self.deadline is not None and time.monotonic() >= self.deadline:
                    failures.append(f'error when evicting pods/"{name}" -n "{namespace}": '
                                    f"global timeout reached: {self.timeout_text}")
                    continue
                try:
                    self.evict(pod)
                except StatusError as error:
                    if error.reason == "NotFound":
                        continue
                    if error.code == 429:
                        err.write(f'error when evicting pods/"{name}" -n "{namespace}" (will '
                                  f"retry after 5s): {error}\n")
                        err.flush()
                        refused.append(pod)
                    else:
                        failures.append(f'error when evicting pods/"{name}" -n "{namespace}"'
                                        f": {error}")
                    continue
                if self.mode == "none":  # a dry run's pods stay
                    evicted.append(pod)
            pending = refused
            if pending:
                time.sleep(RETRY_AFTER)
        for pod in evicted:
            failure = self.wait_for_delete(pod)
            if failure:
                failures.append(failure)
            else:
                out.write(f"pod/{pod['metadata']['name']} evicted\n")
                out.flush()
        return failures

    def evict(self, pod: Obj) -> None:
        """POST a policy/v1 Eviction to the pod's eviction subresource."""
        metadata = pod["metadata"]
        eviction: Obj = {"apiVersion": "policy/v1", "kind": "Eviction",
                         "metadata": {"name": metadata["name"],
                                      "namespace": metadata["namespace"]}}
        if self.flags["grace-period"] >= 0:
            eviction["deleteOptions"] = {"gracePeriodSeconds": self.flags["grace-period"]}
        params = {"dryRun": "All"} if self.mode == "server" else {}
        self.inv.client.request_json(
            "POST", f"/api/v1/namespaces/{metadata['namespace']}/pods/{metadata['name']}"
                    "/eviction", params, body=eviction)

    def wait_for_delete(self, pod: Obj) -> str:
        """Poll each second until the pod is gone (or replaced by one of the same name);
        an error text when --timeout ends first."""
        metadata = pod["metadata"]
        path = f"/api/v1/namespaces/{metadata['namespace']}/pods/{metadata['name']}"
        while True:
            try:
                current = self.inv.client.get_json(path)
            except StatusError as error:
                if error.reason == "NotFound":
                    return ""
                raise
            if current["metadata"].get("uid") != metadata.get("uid"):
                return ""
            if self.deadline is not None and time.monotonic() >= self.deadline:
                return (f'error when waiting for pod "{metadata["name"]}" in namespace '
                        f'"{metadata["namespace"]}" to terminate: global timeout reached: '
                        f"{self.timeout_text}")
            time.sleep(1.0)

    def drain(self, node: str) -> list[str]:
        """Steps 2 to 4 for one cordoned node; the errors that stopped it."""
        pods, errors, warnings = self.pods_for_deletion(node)
        if errors:
            return errors
        if warnings:
            self.inv.err.write(f"Warning: {'; '.join(warnings)}\n")
        failures = self.evict_all(pods)
        if failures:
            left, _, _ = self.pods_for_deletion(node)
            if left:
                self.inv.err.write(f'There are pending pods in node "{node}" when an error '
                                   f"occurred: {_aggregate(failures)}\n")
                self.inv.err.write("".join(f"pod/{pod['metadata']['name']}\n" for pod in left))
        return failures


def _aggregate(messages: list[str]) -> str:
    """utilerrors.Aggregate's text: one message, or "[a, b]"."""
    return messages[0] if len(messages) == 1 else "[" + ", ".join(messages) + "]"


def run(inv: Invocation) -> None:
    from minikube_py.api.duration import parse_duration
    from minikube_py.api.gofmt import format_duration

    timeout = parse_duration(inv.flags["timeout"])
    if timeout is None:
        raise CommandLineError(f'invalid argument "{inv.flags["timeout"]}" for "--timeout" '
                               f'flag: time: invalid duration "{inv.flags["timeout"]}"',
                               inv.path)
    if inv.flags["delete-local-data"]:
        inv.err.write("Flag --delete-local-data has been deprecated, This option is "
                      "deprecated and will be deleted. Use --delete-emptydir-data.\n")
        inv.flags.values["delete-emptydir-data"] = True
    nodes = set_unschedulable(inv, True, "drain")
    deadline = time.monotonic() + timeout if timeout > 0 else None
    drainer = Drainer(inv, deadline, format_duration(timeout))
    pending: list[str] = []
    fatal: list[str] = []
    for node in nodes:
        errors = drainer.drain(node)
        if errors:
            inv.err.write(f'error: unable to drain node "{node}" due to error: '
                          f"{_aggregate(errors)}, continuing command...\n")
            pending.append(node)
            fatal = errors
            continue
        inv.out.write(f"node/{node} drained{drainer.suffix}\n")
        inv.out.flush()
    if pending:
        inv.err.write("There are pending nodes to be drained:\n"
                      + "".join(f" {node}\n" for node in pending))
        inv.err.write("".join(f"{message}\n" for message in fatal))
        raise Exit(1)


COMMAND = Command(
    name="drain",
    summary="Drain node in preparation for maintenance",
    usage="drain NODE [options]",
    run=run,
    flags=[
        DRY_RUN_FLAG,
        Flag("delete-emptydir-data", BOOL,
             help="Continue even if there are pods using emptyDir (local data that will be "
                  "deleted when the node is drained)."),
        Flag("delete-local-data", BOOL,
             help="Continue even if there are pods using emptyDir (local data that will be "
                  "deleted when the node is drained)."),
        Flag("force", BOOL,
             help="Continue even if there are pods that do not declare a controller."),
        Flag("grace-period", INT, default=-1,
             help="Period of time in seconds given to each pod to terminate gracefully. If "
                  "negative, the default value specified in the pod will be used."),
        Flag("ignore-daemonsets", BOOL, help="Ignore DaemonSet-managed pods."),
        Flag("pod-selector", help="Label selector to filter pods on the node"),
        Flag("selector", shorthand="l", help="Selector (label query) to filter on"),
        Flag("timeout", default="0s",
             help="The length of time to wait before giving up, zero means infinite"),
    ],
    examples="""  # Drain node "foo", even if there are pods not managed by a replication
  # controller, replica set, job, daemon set, or stateful set on it
  mkctl drain foo --force""",
)
