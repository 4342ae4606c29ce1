"""`mkctl delete`: delete objects by name, by selector, or from files (kubectl delete).

    mkctl delete pod web                       configmap "x" deleted from default namespace
    mkctl delete pod/web svc/web -n dev
    mkctl delete pods -l app=web | --all
    mkctl delete -f web.yaml
    mkctl delete deploy web --cascade=orphan --grace-period=0 --wait=false

The steps of kubectl's delete.go:
1. the objects: resource arguments (builder.py; a kind alone needs -l or --all, which
   list it first) or -f files (manifests.py);
2. each is DELETEd with DeleteOptions in the body: `propagationPolicy` from --cascade
   (background by default), `gracePeriodSeconds` when --grace-period is set (0 with
   --force), `dryRun: ["All"]` for a server dry run;
3. each deletion is printed (`pod "x" deleted from dev namespace`, or `pod/x` with
   `-o name`);
4. unless --wait=false, wait for each object to be gone: a GET, and while it is still
   there (finalizers, a graceful pod) a watch until its DELETED event, for at most
   --timeout;
5. the failures, one line each, exit 1; NotFound is ignored with --ignore-not-found, and
   a selector that matched nothing prints "No resources found".
"""

from __future__ import annotations

from minikube_py.api import Obj
from minikube_py.mkctl import builder, manifests
from minikube_py.mkctl.changes import (
    DRY_RUN_FLAG,
    OUTPUT_FLAG,
    RECURSIVE_FLAG,
    dry_run,
    filename_flag,
    in_file,
)
from minikube_py.mkctl.command import Command, Invocation
from minikube_py.mkctl.discovery import APIResource
from minikube_py.mkctl.errors import Aggregate, CommandLineError, MkctlError, StatusError
from minikube_py.mkctl.flags import (
    ALL_NAMESPACES_FLAG,
    BOOL,
    FIELD_SELECTOR_FLAG,
    INT,
    SELECTOR_FLAG,
    Flag,
)
from minikube_py.mkctl.printers import name_of

NO_RESOURCES = """You must provide one or more resources by argument or filename.
Example resource specifications include:
   '-f rsrc.yaml'
   '--filename=rsrc.json'
   '<resource> <name>'
   '<resource>'"""
CASCADE = {"background": "Background", "true": "Background", "foreground": "Foreground",
           "orphan": "Orphan", "false": "Orphan"}


class Target:
    """One object to delete: its resource, namespace and name, and the file it came from."""

    def __init__(self, resource: APIResource, namespace: str, name: str, source: str = "",
                 ) -> None:
        self.resource, self.namespace, self.name, self.source = (
            resource, namespace, name, source)

    def path(self) -> str:
        return self.resource.path(self.namespace, self.name)


def _options(inv: Invocation) -> Obj:
    """DeleteOptions for the request body (step 2)."""
    cascade = inv.flags["cascade"]
    if cascade not in CASCADE:
        raise MkctlError(f'invalid cascade value ({cascade}). Must be "background", '
                         '"foreground", or "orphan"')
    grace = inv.flags["grace-period"]
    if inv.flags["now"]:
        if grace != -1:
            raise MkctlError("--now and --grace-period cannot be specified together")
        grace = 1
    if inv.flags["force"]:
        inv.warn("Immediate deletion does not wait for confirmation that the running resource "
                 "has been terminated. The resource may continue to run on the cluster "
                 "indefinitely.")
        if grace < 0:
            grace = 0
    options: Obj = {}
    if grace >= 0:
        options["gracePeriodSeconds"] = 1 if grace == 0 and not inv.flags["force"] else grace
    options["propagationPolicy"] = CASCADE[cascade]
    if dry_run(inv) == "server":
        options["dryRun"] = ["All"]
    return options


def _deadline(inv: Invocation) -> float | None:
    """When --timeout (a Go duration; 0, the default, waits as long as it takes) runs
    out, counted from the start of the command."""
    import time

    from minikube_py.api.duration import parse_duration

    seconds = parse_duration(inv.flags["timeout"])
    if seconds is None:
        raise CommandLineError(f'invalid argument "{inv.flags["timeout"]}" for "--timeout" '
                               f'flag: time: invalid duration "{inv.flags["timeout"]}"',
                               inv.path)
    return time.monotonic() + seconds if seconds > 0 else None


def _targets(inv: Invocation, errors: list[Exception]) -> list[Target]:
    """Step 1: the objects the arguments or files name (listing kinds for -l/--all)."""
    namespace, enforce = inv.namespace()
    flags = inv.flags
    if flags["filename"]:
        if inv.args:
            raise MkctlError("Unexpected args: " + str(inv.args))
        targets = []
        document_errors: list[Exception] = []
        for manifest in manifests.manifests(inv, flags["filename"], flags["recursive"],
                                            namespace, enforce):
            if isinstance(manifest, MkctlError):
                document_errors.append(manifest)
            else:
                targets.append(Target(manifest.resource, manifest.namespace, manifest.name,
                                      manifest.source))
        errors.extend(document_errors)
        return targets
    if not inv.args:
        raise MkctlError(NO_RESOURCES)
    selector = flags["selector"]
    listing = bool(selector or flags["all"] or flags["field-selector"])
    if len(inv.args) == 1 and "/" not in inv.args[0] and not listing:
        raise MkctlError("resource(s) were provided, but no name was specified")
    selection = builder.select(inv, list(inv.args), namespace=namespace,
                               all_namespaces=flags["all-namespaces"],
                               label_selector=selector,
                               field_selector=flags["field-selector"])
    return [Target(request.resource, request.namespace, request.name)
            for request in builder.named_objects(inv, selection, errors)]


def _deleted_line(target: Target, mode: str, force: bool) -> str:
    """`configmap "x" deleted from default namespace`, `namespace "x" force deleted`."""
    resource = target.resource
    kind = resource.kind.lower() + (f".{resource.group}" if resource.group else "")
    line = f'{kind} "{target.name}" {"force deleted" if force else "deleted"}'
    if target.namespace:
        line += f" from {target.namespace} namespace"
    return line + {"none": "", "client": " (dry run)", "server": " (server dry run)"}[mode]


def _wait_until_gone(inv: Invocation, target: Target, uid: str, deadline: float | None
                     ) -> None:
    """Step 4: the object is gone once a GET finds nothing (or another object of its
    name), or a watch on its name reports it DELETED; a watch the server ends is started
    again, until --timeout, if one was given, runs out."""
    import time

    while True:
        try:
            current = inv.client.get_json(target.path())
        except StatusError as error:
            if error.reason == "NotFound":
                return
            raise
        if uid and (current.get("metadata") or {}).get("uid") != uid:
            return
        params = {"fieldSelector": f"metadata.name={target.name}",
                  "resourceVersion": (current.get("metadata") or {}).get("resourceVersion", "")}
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                _timed_out(inv, target)
            params["timeoutSeconds"] = str(max(1, round(left)))
        for event in inv.client.watch(target.resource.path(target.namespace), params):
            if event.get("type") == "DELETED":
                return


def _timed_out(inv: Invocation, target: Target) -> None:
    """kubectl's words when --timeout runs out. (kubectl may also log client-go's "Failed
    to watch" line first, when the deadline ends a watch rather than falls between two.)"""
    raise MkctlError("timed out waiting for the condition on "
                     f"{target.resource.group_resource}/{target.name}")


def run(inv: Invocation) -> None:
    flags = inv.flags
    if flags["output"] not in ("", "name"):
        raise MkctlError(f"unexpected -o output mode: {flags['output']}. We only support "
                         "'-o name'")
    mode = dry_run(inv)
    deadline = _deadline(inv)
    options = _options(inv)
    errors: list[Exception] = []
    targets = _targets(inv, errors)
    ignore_missing = flags["ignore-not-found"] or (
        not flags["filename"] and bool(flags["selector"] or flags["all"]))
    printed = False
    deleted: list[tuple[Target, str]] = []
    server_errors: list[Exception] = []
    for target in targets:
        if mode != "client":
            try:
                answer = inv.client.request_json("DELETE", target.path(), body=options)
            except StatusError as error:
                if error.reason == "NotFound" and ignore_missing:
                    continue
                server_errors.append(in_file(error, "deleting", target.source)
                                     if target.source else error)
                continue
            uid = (answer.get("metadata") or {}).get("uid", "") if answer.get(
                "kind") != "Status" else ((answer.get("details") or {}).get("uid", ""))
            deleted.append((target, uid))
        if flags["output"] == "name":
            inv.out.write(name_of({"apiVersion": target.resource.group_version,
                                   "kind": target.resource.kind,
                                   "metadata": {"name": target.name}}) + "\n")
        else:
            inv.out.write(_deleted_line(target, mode, flags["force"]) + "\n")
        inv.out.flush()
        printed = True
    if not printed and not server_errors and not errors and not flags["ignore-not-found"]:
        inv.out.write("No resources found\n")
    if flags["wait"] and mode == "none":
        for target, uid in deleted:
            _wait_until_gone(inv, target, uid, deadline)
    if server_errors or errors:
        raise Aggregate(server_errors + errors)


COMMAND = Command(
    name="delete",
    summary="Delete resources by file names, stdin, resources and names, or by resources and "
            "label selector",
    usage="delete ([-f FILENAME] | [-k DIRECTORY] | TYPE [(NAME | -l label | --all)]) "
          "[options]",
    run=run,
    flags=[
        Flag("all", BOOL, help="Delete all resources, in the namespace of the specified "
                               "resource types."),
        ALL_NAMESPACES_FLAG,
        Flag("cascade", default="background",
             help='Must be "background", "orphan", or "foreground". Selects the deletion '
                  "cascading strategy for the dependents (e.g. Pods created by a "
                  'ReplicationController). Defaults to background.'),
        DRY_RUN_FLAG,
        FIELD_SELECTOR_FLAG,
        filename_flag("delete"),
        Flag("force", BOOL,
             help="If true, immediately remove resources from API and bypass graceful "
                  "deletion. Note that immediate deletion of some resources may result in "
                  "inconsistency or data loss and requires confirmation."),
        Flag("grace-period", INT, default=-1,
             help="Period of time in seconds given to the resource to terminate gracefully. "
                  "Ignored if negative. Set to 1 for immediate shutdown. Can only be set to 0 "
                  "when --force is true (force deletion)."),
        Flag("ignore-not-found", BOOL,
             help='Treat "resource not found" as a successful delete. Defaults to "true" when '
                  "--all is specified."),
        OUTPUT_FLAG,
        RECURSIVE_FLAG,
        SELECTOR_FLAG,
        Flag("now", BOOL, help="If true, resources are signaled for immediate shutdown (same "
                               "as --grace-period=1)."),
        Flag("timeout", default="0s",
             help="The length of time to wait before giving up on a delete, zero means "
                  "determine a timeout from the size of the object"),
        Flag("wait", BOOL, default=True,
             help="If true, wait for resources to be gone before returning. This waits for "
                  "finalizers."),
    ],
    examples="""  # Delete a pod using the type and name specified in pod.json
  mkctl delete -f ./pod.json

  # Delete pods and services with same names "baz" and "foo"
  mkctl delete pod,service baz foo

  # Delete pods and services with label name=myLabel
  mkctl delete pods,services -l name=myLabel""",
)
