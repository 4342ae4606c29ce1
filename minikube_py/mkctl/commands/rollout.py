"""`mkctl rollout`: watch, list, undo, restart, pause and resume a Deployment's rollouts
(kubectl rollout and its polymorphichelpers for Deployments; `status` and `restart` take
DaemonSets and StatefulSets too).

    mkctl rollout status deployment/web        Waiting for deployment "web" rollout to
                                               finish: 1 of 3 updated replicas are available...
                                               deployment "web" successfully rolled out
    mkctl rollout history deployment/web       REVISION  CHANGE-CAUSE, one row per ReplicaSet
    mkctl rollout undo deployment/web [--to-revision=N]        deployment.apps/web rolled back
    mkctl rollout restart deployment/web       deployment.apps/web restarted
    mkctl rollout pause deployment/web         deployment.apps/web paused
    mkctl rollout resume deployment/web        deployment.apps/web resumed

A Deployment's history is its ReplicaSets: each carries the revision it was in the
`deployment.kubernetes.io/revision` annotation and the pod template of that revision.
So `undo` is done by the client, as kubectl does it: find the ReplicaSet of the wanted
revision (the one before the latest, without --to-revision), and write its template
(without the pod-template-hash label) and its annotations back into the Deployment with
one JSON patch; the deployment controller then rolls out that template as a new revision.
A DaemonSet's or StatefulSet's history is its ControllerRevisions instead: each holds a
revision number and a strategic merge patch that puts that revision's template back.

`restart` changes the template in a way nothing else does, an annotation with the time
(`kubectl.kubernetes.io/restartedAt`), so the controller rolls out new pods. `pause` and
`resume` set `spec.paused`, which the controller reads before it changes ReplicaSets.
"""

from __future__ import annotations

import copy
import time
from typing import Any

from minikube_py.api import Obj
from minikube_py.mkctl import builder
from minikube_py.mkctl.changes import DRY_RUN_FLAG, OperationPrinter, dry_run
from minikube_py.mkctl.command import Command, Invocation, run_group
from minikube_py.mkctl.errors import Aggregate, CommandLineError, MkctlError, StatusError
from minikube_py.mkctl.flags import BOOL, INT, SELECTOR_FLAG, Flag

REVISION = "deployment.kubernetes.io/revision"
CHANGE_CAUSE = "kubernetes.io/change-cause"
RESTARTED_AT = "kubectl.kubernetes.io/restartedAt"
HASH_LABEL = "pod-template-hash"
# Annotations of a ReplicaSet that describe it, not the revision: undo keeps the
# Deployment's own values of these (kubectl's annotationsToSkip).
ANNOTATIONS_TO_SKIP = ("kubectl.kubernetes.io/last-applied-configuration", REVISION,
                       "deployment.kubernetes.io/revision-history",
                       "deployment.kubernetes.io/desired-replicas",
                       "deployment.kubernetes.io/max-replicas",
                       "deprecated.deployment.rollback.to")


class Workload:
    """One object the arguments named: what the server answered, and its resource."""

    def __init__(self, info: builder.Info, obj: Obj) -> None:
        self.resource = info.request.resource
        self.object = {"apiVersion": self.resource.group_version,
                       "kind": self.resource.kind, **obj}
        self.name = (obj.get("metadata") or {}).get("name", "")
        self.namespace = (obj.get("metadata") or {}).get("namespace", "")

    @property
    def is_deployment(self) -> bool:
        return (self.resource.group, self.resource.kind) == ("apps", "Deployment")

    @property
    def restartable(self) -> bool:
        """Whether kubectl restarts this kind (ObjectRestarter)."""
        return self.resource.group == "apps" and self.resource.kind in (
            "Deployment", "DaemonSet", "StatefulSet")

    @property
    def group_kind(self) -> str:
        """schema.GroupKind as Go's %v prints the struct: "{apps Deployment}"."""
        return f"{{{self.resource.group} {self.resource.kind}}}"

    @property
    def quoted(self) -> str:
        """How kubectl names the object in errors: `deployments.apps "web"`."""
        return f'{self.resource.group_resource} "{self.name}"'

    def path(self) -> str:
        return self.resource.path(self.namespace, self.name)


def _workloads(inv: Invocation) -> list[Workload]:
    """The objects the arguments name, each read (TYPE NAME, TYPE/NAME, or -l)."""
    namespace, _ = inv.namespace()
    selector = inv.flags.values.get("selector", "")
    if not inv.args:
        raise MkctlError("required resource not specified")
    selection = builder.select(inv, list(inv.args), namespace=namespace,
                               all_namespaces=False, label_selector=selector,
                               field_selector="", single_type=True)
    results = builder.fetch(inv, selection, accept="", chunk_size=builder.DEFAULT_CHUNK_SIZE)
    if results.errors:
        raise Aggregate(results.errors)
    workloads = []
    for info in results.infos:
        items = info.object["items"] if isinstance(info.object.get("items"), list) else [
            info.object]
        workloads += [Workload(info, obj) for obj in items]
    return workloads


def _patch(inv: Invocation, workload: Workload, body: Any, content_type: str) -> None:
    """The change, unless a client dry run (only `undo` has --dry-run)."""
    mode = dry_run(inv) if "dry-run" in inv.flags.values else "none"
    params = {"fieldManager": "kubectl-rollout"}
    if mode == "server":
        params["dryRun"] = "All"
    if mode != "client":
        inv.client.request_json("PATCH", workload.path(), params, body=body,
                                content_type=content_type)


def revision_of(obj: Obj) -> int | None:
    """deploymentutil.Revision: the revision annotation as a number, None without one."""
    text = ((obj.get("metadata") or {}).get("annotations") or {}).get(REVISION, "")
    try:
        return int(text)
    except ValueError:
        return None


def replica_sets_of(inv: Invocation, deployment: Workload) -> list[Obj]:
    """The ReplicaSets the Deployment controls (an owner reference with its uid)."""
    uid = deployment.object["metadata"].get("uid")
    listed = inv.client.get_json(f"/apis/apps/v1/namespaces/{deployment.namespace}/replicasets")
    return [rs for rs in listed.get("items") or []
            if any(ref.get("controller") and ref.get("uid") == uid
                   for ref in (rs.get("metadata") or {}).get("ownerReferences") or [])]


# -- status --

def deployment_status(deployment: Obj, revision: int) -> tuple[str, bool]:
    """DeploymentStatusViewer.Status: the line to print and whether the rollout is done."""
    name = deployment["metadata"]["name"]
    if revision > 0:
        running = revision_of(deployment)
        if running is None:
            raise MkctlError(f'cannot get the revision of deployment "{name}"')
        if running != revision:
            raise MkctlError(f"desired revision ({revision}) is different from the running "
                             f"revision ({running})")
    spec, status = deployment.get("spec") or {}, deployment.get("status") or {}
    if (deployment["metadata"].get("generation") or 0) > (status.get("observedGeneration") or 0):
        return "Waiting for deployment spec update to be observed...", False
    progressing = next((c for c in status.get("conditions") or []
                        if c.get("type") == "Progressing"), None)
    if progressing is not None and progressing.get("reason") == "ProgressDeadlineExceeded":
        raise MkctlError(f'deployment "{name}" exceeded its progress deadline')
    updated = status.get("updatedReplicas") or 0
    replicas = status.get("replicas") or 0
    available = status.get("availableReplicas") or 0
    if spec.get("replicas") is not None and updated < spec["replicas"]:
        return (f'Waiting for deployment "{name}" rollout to finish: {updated} out of '
                f"{spec['replicas']} new replicas have been updated..."), False
    if replicas > updated:
        return (f'Waiting for deployment "{name}" rollout to finish: {replicas - updated} '
                "old replicas are pending termination..."), False
    if available < updated:
        return (f'Waiting for deployment "{name}" rollout to finish: {available} of '
                f"{updated} updated replicas are available..."), False
    return f'deployment "{name}" successfully rolled out', True


def daemon_set_status(daemon: Obj, revision: int) -> tuple[str, bool]:
    """DaemonSetStatusViewer.Status (a DaemonSet has no revision to pin)."""
    name = daemon["metadata"]["name"]
    spec, status = daemon.get("spec") or {}, daemon.get("status") or {}
    if ((spec.get("updateStrategy") or {}).get("type") or "RollingUpdate") != "RollingUpdate":
        raise MkctlError("rollout status is only available for RollingUpdate strategy type")
    if (daemon["metadata"].get("generation") or 0) > (status.get("observedGeneration") or 0):
        return "Waiting for daemon set spec update to be observed...", False
    desired = status.get("desiredNumberScheduled") or 0
    updated = status.get("updatedNumberScheduled") or 0
    available = status.get("numberAvailable") or 0
    if updated < desired:
        return (f'Waiting for daemon set "{name}" rollout to finish: {updated} out of '
                f"{desired} new pods have been updated..."), False
    if available < desired:
        return (f'Waiting for daemon set "{name}" rollout to finish: {available} of '
                f"{desired} updated pods are available..."), False
    return f'daemon set "{name}" successfully rolled out', True


def stateful_set_status(sts: Obj, revision: int) -> tuple[str, bool]:
    """StatefulSetStatusViewer.Status."""
    spec, status = sts.get("spec") or {}, sts.get("status") or {}
    strategy = spec.get("updateStrategy") or {}
    if (strategy.get("type") or "RollingUpdate") != "RollingUpdate":
        raise MkctlError("rollout status is only available for RollingUpdate strategy type")
    observed = status.get("observedGeneration") or 0
    if not observed or (sts["metadata"].get("generation") or 0) > observed:
        return "Waiting for statefulset spec update to be observed...", False
    replicas = spec.get("replicas")
    ready = status.get("readyReplicas") or 0
    updated = status.get("updatedReplicas") or 0
    if replicas is not None and ready < replicas:
        return f"Waiting for {replicas - ready} pods to be ready...", False
    rolling = strategy.get("rollingUpdate")
    if rolling is not None:
        partition = rolling.get("partition")
        if replicas is not None and partition is not None and updated < replicas - partition:
            return (f"Waiting for partitioned roll out to finish: {updated} out of "
                    f"{replicas - partition} new pods have been updated..."), False
        return f"partitioned roll out complete: {updated} new pods have been updated...", True
    if status.get("updateRevision") != status.get("currentRevision"):
        return (f"waiting for statefulset rolling update to complete {updated} pods at "
                f"revision {status.get('updateRevision', '')}..."), False
    return (f"statefulset rolling update complete {status.get('currentReplicas') or 0} pods "
            f"at revision {status.get('currentRevision', '')}..."), True


STATUS_VIEWERS = {"Deployment": deployment_status, "DaemonSet": daemon_set_status,
                  "StatefulSet": stateful_set_status}


def run_status(inv: Invocation) -> None:
    """Print the status, then, with --watch (the default), each change of it until the
    rollout is done or --timeout runs out; the watch on the object's name is started
    again from the last version seen whenever the server ends it."""
    from minikube_py.api.duration import parse_duration

    flags = inv.flags
    timeout = parse_duration(flags["timeout"])
    if timeout is None:
        raise CommandLineError(f'invalid argument "{flags["timeout"]}" for "--timeout" flag: '
                               f'time: invalid duration "{flags["timeout"]}"', inv.path)
    if not inv.args:
        raise MkctlError("required resource not specified")
    if flags["revision"] < 0:
        raise MkctlError(f"revision must be a positive integer: {flags['revision']}")
    workloads = _workloads(inv)
    if len(workloads) != 1:
        raise MkctlError("rollout status is only supported on individual resources and "
                         f"resource collections - {len(workloads)} resources were found")
    workload = workloads[0]
    viewer = STATUS_VIEWERS.get(workload.resource.kind) if workload.restartable else None
    if viewer is None:
        raise MkctlError(f"no status viewer has been implemented for {workload.resource.kind}")
    deadline = time.monotonic() + timeout if timeout > 0 else None
    current = workload.object
    while True:
        line, done = viewer(current, flags["revision"])
        inv.out.write(line + "\n")
        inv.out.flush()
        if done or not flags["watch"]:
            return
        current = _next_version(inv, workload, current, deadline)


def _next_version(inv: Invocation, workload: Workload, current: Obj, deadline: float | None
                  ) -> Obj:
    """The Deployment's next version, from a watch on its name; when the watch cannot
    resume from `current` (one ERROR event, a 410 Expired once the server keeps no events
    that old), the object as a GET reads it now, as kubectl's UntilWithSync lists again
    (watching again from the same version would get the same ERROR at once, forever)."""
    while True:
        params = {"fieldSelector": f"metadata.name={workload.name}",
                  "resourceVersion": current["metadata"].get("resourceVersion", ""),
                  "allowWatchBookmarks": "true"}
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise MkctlError("timed out waiting for the condition")
            params["timeoutSeconds"] = str(max(1, round(left)))
        for event in inv.client.watch(workload.resource.path(workload.namespace), params):
            kind = event.get("type")
            if kind == "DELETED":
                raise MkctlError("object has been deleted")
            if kind in ("ADDED", "MODIFIED"):
                return event["object"]
            if kind == "ERROR":
                return {"apiVersion": workload.resource.group_version,
                        "kind": workload.resource.kind,
                        **inv.client.get_json(workload.resource.path(workload.namespace,
                                                                     workload.name))}
            if kind == "BOOKMARK":
                current["metadata"]["resourceVersion"] = (
                    event["object"]["metadata"]["resourceVersion"])


# -- history --

class Revision:
    """One entry of a workload's history: the pod template of that revision and the
    object that keeps it (a ReplicaSet, or a DaemonSet's or StatefulSet's
    ControllerRevision)."""

    def __init__(self, source: Obj, template: Obj | None) -> None:
        self.source = source
        self.template = template

    @property
    def change_cause(self) -> str:
        return ((self.source.get("metadata") or {}).get("annotations") or {}).get(
            CHANGE_CAUSE, "")


def history_of(inv: Invocation, workload: Workload) -> dict[int, Revision]:
    """The workload's revisions by number (kubectl's HistoryViewer for each kind)."""
    if workload.is_deployment:
        return {number: Revision(rs, (rs.get("spec") or {}).get("template"))
                for rs in replica_sets_of(inv, workload)
                if (number := revision_of(rs)) is not None}
    return {revision.get("revision", 0): Revision(revision, _revision_template(revision))
            for revision in controller_revisions_of(inv, workload)}


def controller_revisions_of(inv: Invocation, workload: Workload) -> list[Obj]:
    """The ControllerRevisions the DaemonSet or StatefulSet controls (controlledHistories:
    listed by its selector, kept when their controller is it)."""
    from minikube_py.api.selectors import label_selector_to_string

    spec = workload.object.get("spec") or {}
    params = {"labelSelector": label_selector_to_string(spec.get("selector"))}
    try:
        listed = inv.client.get_json(
            f"/apis/apps/v1/namespaces/{workload.namespace}/controllerrevisions", params)
    except StatusError as error:
        raise MkctlError(f"unable to find history controlled by {workload.resource.kind} "
                         f"{workload.name}: {error}") from None
    uid = workload.object["metadata"].get("uid")
    return [revision for revision in listed.get("items") or []
            if any(ref.get("controller") and ref.get("uid") == uid
                   for ref in (revision.get("metadata") or {}).get("ownerReferences") or [])]


def _revision_template(revision: Obj) -> Obj | None:
    """The pod template a ControllerRevision keeps, in its patch of the object."""
    template = ((revision.get("data") or {}).get("spec") or {}).get("template")
    if template is None:
        return None
    return {key: value for key, value in template.items() if key != "$patch"}


def _has_history(workload: Workload) -> bool:
    """Whether kubectl has a HistoryViewer and a Rollbacker for the kind."""
    return workload.restartable


def run_history(inv: Invocation) -> None:
    """For each workload: its name, then REVISION and CHANGE-CAUSE of each revision (or,
    with --revision, that revision's pod template)."""
    import io

    from minikube_py.mkctl.describers.workloads import describe_pod_template
    from minikube_py.mkctl.describers.writer import PrefixWriter
    from minikube_py.mkctl.printers.tabwriter import TabWriter

    wanted = inv.flags["revision"]
    errors: list[Exception] = []
    for workload in _workloads(inv):
        if not _has_history(workload):
            errors.append(MkctlError(
                f'error retrieving history for "{workload.resource.kind}", no visitor method '
                f"exists for {workload.group_kind}"))
            continue
        try:
            history = history_of(inv, workload)
        except MkctlError as error:
            errors.append(error)
            continue
        name = f"{workload.resource.kind.lower()}.apps/{workload.name}"
        if wanted > 0:
            if wanted not in history:
                errors.append(MkctlError("unable to find the specified revision"))
                continue
            writer = PrefixWriter()
            describe_pod_template(history[wanted].template, writer)
            inv.out.write(f"{name} with revision #{wanted}\n{writer.raw()}\n")
            continue
        inv.out.write(f"{name} \n")
        if not history:
            inv.out.write("No rollout history found.\n")
            continue
        table = io.StringIO()
        tabs = TabWriter(table, min_width=0, padding=2)
        tabs.write_row(["REVISION", "CHANGE-CAUSE"])
        for revision in sorted(history):
            tabs.write_row([str(revision), history[revision].change_cause or "<none>"])
        tabs.flush()
        inv.out.write(table.getvalue() + "\n")
    if errors:
        raise Aggregate(errors)


# -- undo --

def _rollback_target(deployment: Workload, history: dict[int, Revision], to_revision: int
                     ) -> Revision:
    """The revision to go back to: the one of --to-revision, or the one before the
    latest."""
    revisions = sorted(history)
    if to_revision == 0 and len(revisions) < 2 and not deployment.is_deployment:
        raise MkctlError("no last revision to roll back to")
    if to_revision > 0:
        if to_revision not in history:
            raise MkctlError(f"unable to find specified revision {to_revision} in history")
        return history[to_revision]
    if len(revisions) < 2:
        raise MkctlError(f'no rollout history found for deployment "{deployment.name}"')
    return history[revisions[-2]]


def _without_hash(template: Obj) -> Obj:
    template = copy.deepcopy(template)
    labels = (template.get("metadata") or {}).get("labels") or {}
    labels.pop(HASH_LABEL, None)
    return template


def run_undo(inv: Invocation) -> None:
    """Copy the pod template of the chosen revision back into each Deployment."""
    to_revision = inv.flags["to-revision"]
    printer = OperationPrinter(inv, "rolled back")
    errors: list[Exception] = []
    for workload in _workloads(inv):
        try:
            operation = _undo(inv, workload, to_revision)
        except (StatusError, MkctlError) as error:
            errors.append(error)
            continue
        printer.print_obj(workload.object, operation=operation)
    if errors:
        raise Aggregate(errors)


def _undo(inv: Invocation, workload: Workload, to_revision: int) -> str:
    """DeploymentRollbacker.Rollback for one Deployment; the operation to print."""
    if not _has_history(workload):
        raise MkctlError(f'error retrieving rollbacker for "{workload.resource.kind}", no '
                         f"visitor method exists for {workload.group_kind}")
    deployment = workload.object
    target = _rollback_target(workload, history_of(inv, workload), to_revision)
    if dry_run(inv) == "client":  # kubectl then prints the template it would go back to
        from minikube_py.mkctl.describers.workloads import describe_pod_template
        from minikube_py.mkctl.describers.writer import PrefixWriter

        writer = PrefixWriter()
        describe_pod_template(target.template, writer)
        # printTemplate for a Deployment, printPodTemplate for the others
        return writer.raw() if workload.is_deployment else f"will roll back to {writer.raw()}"
    if not workload.is_deployment:
        return _undo_from_controller_revision(inv, workload, target, to_revision)
    if (deployment.get("spec") or {}).get("paused"):
        raise MkctlError("you cannot rollback a paused deployment; resume it first with "
                         "'kubectl rollout resume' and try again")
    template = _without_hash(target.template or {})
    if template == _without_hash(deployment["spec"]["template"]):
        return ("skipped rollback (current template already matches revision "
                f"{to_revision})")
    own = deployment["metadata"].get("annotations") or {}
    annotations = {key: own[key] for key in ANNOTATIONS_TO_SKIP if key in own}
    annotations.update({key: value for key, value in
                        (target.source["metadata"].get("annotations") or {}).items()
                        if key not in ANNOTATIONS_TO_SKIP})
    _patch(inv, workload, [
        {"op": "replace", "path": "/spec/template", "value": template},
        {"op": "replace", "path": "/metadata/annotations", "value": annotations}],
        "application/json-patch+json")
    return "rolled back"


def _undo_from_controller_revision(inv: Invocation, workload: Workload, target: Revision,
                                   to_revision: int) -> str:
    """DaemonSetRollbacker and StatefulSetRollbacker: the revision's data is a strategic
    merge patch of the object; sent as it is, unless the template already matches."""
    if target.template == (workload.object.get("spec") or {}).get("template"):
        return ("skipped rollback (current template already matches revision "
                f"{to_revision})")
    try:
        _patch(inv, workload, target.source.get("data"),
               "application/strategic-merge-patch+json")
    except StatusError as error:
        raise MkctlError(f"failed restoring revision {to_revision}: {error}") from None
    return "rolled back"


# -- restart, pause, resume --

def run_restart(inv: Invocation) -> None:
    from datetime import UTC, datetime

    stamp = datetime.now(UTC).astimezone().isoformat(timespec="seconds").replace(
        "+00:00", "Z")
    body = {"spec": {"template": {"metadata": {"annotations": {RESTARTED_AT: stamp}}}}}
    printer = OperationPrinter(inv, "restarted")
    errors: list[Exception] = []
    for workload in _workloads(inv):
        try:
            if not workload.restartable:
                raise MkctlError(f"{workload.quoted} restarting is not supported")
            if (workload.object.get("spec") or {}).get("paused"):
                raise MkctlError(f"{workload.quoted} can't restart paused deployment (run "
                                 "rollout resume first)")
            _patch(inv, workload, body, "application/strategic-merge-patch+json")
        except (StatusError, MkctlError) as error:
            errors.append(error)
            continue
        printer.print_obj(workload.object)
    if errors:
        raise Aggregate(errors)


def _set_paused(inv: Invocation, paused: bool) -> None:
    verb, done = ("pausing", "paused") if paused else ("resuming", "resumed")
    printer = OperationPrinter(inv, done)
    errors: list[Exception] = []
    for workload in _workloads(inv):
        try:
            if not workload.is_deployment:
                raise MkctlError(f"{workload.quoted} {verb} is not supported")
            if bool((workload.object.get("spec") or {}).get("paused")) == paused:
                raise MkctlError(f"{workload.quoted} is already paused" if paused else
                                 f"{workload.quoted} is not paused")
            _patch(inv, workload, {"spec": {"paused": True if paused else None}},
                   "application/strategic-merge-patch+json")
        except (StatusError, MkctlError) as error:
            errors.append(error)
            continue
        printer.print_obj(workload.object)
    if errors:
        raise Aggregate(errors)


def run_pause(inv: Invocation) -> None:
    _set_paused(inv, True)


def run_resume(inv: Invocation) -> None:
    _set_paused(inv, False)


COMMAND = Command(
    name="rollout",
    summary="Manage the rollout of a resource",
    description="Manage the rollout of one or many resources.\n\n Valid resource types "
                "include:\n\n  *  deployments\n  *  daemonsets\n  *  statefulsets",
    usage="rollout SUBCOMMAND [options]",
    run=lambda inv: run_group(inv, COMMAND),
    subcommands=[
        Command(name="history", summary="View rollout history", run=run_history,
                usage="rollout history (TYPE NAME | TYPE/NAME) [flags] [options]",
                flags=[Flag("revision", INT, help="See the details, including podTemplate of "
                                                  "the revision specified"), SELECTOR_FLAG]),
        Command(name="pause", summary="Mark the provided resource as paused", run=run_pause,
                usage="rollout pause RESOURCE [options]", flags=[SELECTOR_FLAG]),
        Command(name="restart", summary="Restart a resource", run=run_restart,
                usage="rollout restart RESOURCE [options]", flags=[SELECTOR_FLAG]),
        Command(name="resume", summary="Resume a paused resource", run=run_resume,
                usage="rollout resume RESOURCE [options]", flags=[SELECTOR_FLAG]),
        Command(name="status", summary="Show the status of the rollout", run=run_status,
                usage="rollout status (TYPE NAME | TYPE/NAME) [flags] [options]",
                flags=[
                    Flag("revision", INT, help="Pin to a specific revision for showing its "
                                               "status. Defaults to 0 (last revision)."),
                    SELECTOR_FLAG,
                    Flag("timeout", default="0s",
                         help="The length of time to wait before ending watch, zero means "
                              "never. Any other values should contain a corresponding time "
                              "unit (e.g. 1s, 2m, 3h)."),
                    Flag("watch", BOOL, default=True, shorthand="w",
                         help="Watch the status of the rollout until it's done.")]),
        Command(name="undo", summary="Undo a previous rollout", run=run_undo,
                usage="rollout undo (TYPE NAME | TYPE/NAME) [flags] [options]",
                flags=[DRY_RUN_FLAG, SELECTOR_FLAG,
                       Flag("to-revision", INT, help="The revision to rollback to. Default "
                                                     "to 0 (last revision).")]),
    ],
    examples="""  # Rollback to the previous deployment
  mkctl rollout undo deployment/abc

  # Restart a deployment
  mkctl rollout restart deployment/abc""",
)
