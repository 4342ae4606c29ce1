"""`mkctl wait`: wait until objects meet a condition (kubectl wait).

    mkctl wait --for=condition=Ready pod/web --timeout=60s      pod/web condition met
    mkctl wait --for=delete pods -l app=web
    mkctl wait --for=jsonpath='{.status.phase}'=Running pod/web
    mkctl wait --for=create deploy/web
    mkctl wait --for=condition=complete -f job.yaml

The steps of kubectl's wait.go:
1. the conditions (--for, several are all waited for, in order): `delete`, `create`,
   `condition=NAME[=VALUE]` (VALUE "True" by default, compared without case),
   `jsonpath=EXPR[=VALUE]` (without VALUE: the field exists);
2. the objects (builder.py: TYPE NAME, TYPE/NAME, -l or --all with a kind), or those
   the -f files describe (manifests.py), each read from the server before it is waited
   for, and the first that cannot be ends the command (one already gone is skipped when
   waiting for deletion); none matching a selector is an error, except when waiting for
   deletion;
3. for each object, until the one deadline (--timeout; 0 looks once, a negative one
   waits a week): a GET, then a watch on its name until an event meets the condition;
4. `kind/name condition met` for each (`kind/name` with -o name, the only other output),
   and for each that did not, kubectl's error ("timed out waiting for the condition on
   pods/web"); any failure exits 1.
"""

from __future__ import annotations

import time

from minikube_py.api import Obj
from minikube_py.mkctl import builder, manifests
from minikube_py.mkctl.command import Command, Invocation
from minikube_py.mkctl.errors import Aggregate, CommandLineError, MkctlError, StatusError
from minikube_py.mkctl.flags import (
    ALL_NAMESPACES_FLAG,
    ARRAY,
    BOOL,
    FIELD_SELECTOR_FLAG,
    STRINGS,
    Flag,
)
from minikube_py.mkctl.printers import name_of

WEEK = 7 * 24 * 3600.0
NO_RESOURCES = """You must provide one or more resources by argument or filename.
Example resource specifications include:
   '-f rsrc.yaml'
   '--filename=rsrc.json'
   '<resource> <name>'
   '<resource>'"""


class Condition:
    """One --for: `kind` is delete, create, condition or jsonpath."""

    def __init__(self, kind: str, name: str = "", value: str = "") -> None:
        self.kind, self.name, self.value = kind, name, value

    def met(self, obj: Obj) -> bool:
        """Whether an existing object meets a condition= or jsonpath= condition."""
        if self.kind == "create":
            return True
        if self.kind == "condition":
            return _condition_met(obj, self.name, self.value)
        return _jsonpath_met(obj, self.name, self.value)


def parse_condition(text: str) -> Condition:
    """Step 1 for one --for value."""
    lowered = text.lower()
    if lowered in ("delete", "create"):
        return Condition(lowered)
    if lowered.startswith("condition="):
        name, _, value = text[len("condition="):].partition("=")
        return Condition("condition", name, value or "true")
    if lowered.startswith("jsonpath="):
        from minikube_py.mkctl.printers.customcolumns import SpecError, relaxed_jsonpath

        expression = text[len("jsonpath="):]
        value = ""
        if "}=" in expression:
            expression, _, value = expression.rpartition("}=")
            expression += "}"
        elif "=" in expression and "{" not in expression:
            expression, _, value = expression.partition("=")
        try:
            path = relaxed_jsonpath(expression)
        except SpecError as error:
            raise MkctlError(str(error)) from None
        return Condition("jsonpath", path, value.strip("'\""))
    raise MkctlError(f'unrecognized condition: "{text}"')


def _condition_met(obj: Obj, name: str, value: str) -> bool:
    """ConditionalWait: status.conditions[type=name].status equals value (without case),
    for the object's current generation when the condition records one."""
    generation = (obj.get("metadata") or {}).get("generation")
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if not isinstance(condition, dict) or str(condition.get("type", "")).lower() != (
                name.lower()):
            continue
        observed = condition.get("observedGeneration")
        if observed is not None and generation is not None and observed != generation:
            return False
        return str(condition.get("status", "")).casefold() == value.casefold()
    return False


def _jsonpath_met(obj: Obj, path: str, value: str) -> bool:
    """JSONPathWait: the one value the path finds equals `value` as text (or, without a
    value, the path finds something)."""
    from minikube_py.mkctl.printers.jsonpath import JSONPath

    results = [found for group in JSONPath(path).find_results(obj) for found in group]
    if not value:
        return bool(results)
    if len(results) > 1:
        raise MkctlError("given jsonpath expression matches more than one value")
    if not results:
        return False
    found = results[0]
    if isinstance(found, dict | list):
        raise MkctlError("jsonpath leads to a nested object or list which is not supported")
    text = ("true" if found else "false") if isinstance(found, bool) else str(found)
    return text == value


def _deadline(inv: Invocation) -> float:
    """--timeout as a monotonic deadline: 0 looks once, a negative one waits a week."""
    from minikube_py.api.duration import parse_duration

    seconds = parse_duration(inv.flags["timeout"])
    if seconds is None:
        raise CommandLineError(f'invalid argument "{inv.flags["timeout"]}" for "--timeout" '
                               f'flag: time: invalid duration "{inv.flags["timeout"]}"',
                               inv.path)
    return time.monotonic() + (WEEK if seconds < 0 else seconds)


class Waiter:
    """Step 3 for one object: look, then watch, until the deadline."""

    def __init__(self, inv: Invocation, request: builder.Request, name: str,
                 deadline: float) -> None:
        self.inv, self.request, self.name, self.deadline = inv, request, name, deadline
        self.path = request.resource.path(request.namespace, name)
        self.label = f"{request.resource.name}/{name}"  # kubectl names the resource alone

    def wait(self, condition: Condition, known: Obj | None = None) -> bool:
        """True once the object meets the condition; False when waiting for the deletion
        of an object already gone. Raises when time runs out. `known`: the object as just
        read, which saves the first GET."""
        first = True
        while True:
            try:
                current: Obj | None = known or self.inv.client.get_json(self.path)
            except StatusError as error:
                if error.reason != "NotFound" or condition.kind not in ("delete", "create"):
                    raise
                current = None
            known = None
            if current is None and condition.kind == "delete":
                return not first
            if current is not None and condition.kind != "delete" and condition.met(current):
                return True
            first = False
            left = self.deadline - time.monotonic()
            if left <= 0:
                if self.inv.flags["timeout"] in ("0", "0s"):
                    raise MkctlError(f"condition not met for {self.label}")
                raise MkctlError(f"timed out waiting for the condition on {self.label}")
            version = ((current or {}).get("metadata") or {}).get("resourceVersion", "")
            if self._watch(condition, version, left):
                return True

    def _watch(self, condition: Condition, version: str, left: float) -> bool:
        """One watch on the object's name; True once an event meets the condition."""
        params = {"fieldSelector": f"metadata.name={self.name}",
                  "timeoutSeconds": str(max(1, int(left + 0.999)))}
        if version:
            params["resourceVersion"] = version
        for event in self.inv.client.watch(self.request.resource.path(
                self.request.namespace), params):
            kind, obj = event.get("type"), event.get("object") or {}
            if kind == "DELETED" and condition.kind == "delete":
                return True
            if kind in ("ADDED", "MODIFIED") and condition.kind != "delete" and \
                    condition.met(obj):
                return True
            if time.monotonic() >= self.deadline:
                return False
        return False


def _targets(inv: Invocation, errors: list[Exception]) -> list[tuple[builder.Request, str]]:
    """Step 2: the objects the arguments name or select, or those of the -f files (as
    they are written there: the server is not asked for them)."""
    flags = inv.flags
    namespace, enforce = inv.namespace()
    if flags["filename"]:
        if inv.args:
            raise MkctlError("resource/name arguments cannot be provided when a path is "
                             "specified")
        targets = []
        for manifest in manifests.manifests(inv, flags["filename"], flags["recursive"],
                                            namespace, enforce):
            if isinstance(manifest, MkctlError):
                errors.append(manifest)
            else:
                targets.append((builder.Request(manifest.resource, manifest.namespace,
                                                manifest.name), manifest.name))
        return targets
    if not inv.args:
        raise MkctlError(NO_RESOURCES)
    selection = builder.select(inv, list(inv.args), namespace=namespace,
                               all_namespaces=flags["all-namespaces"],
                               label_selector=flags["selector"],
                               field_selector=flags["field-selector"])
    return [(request, request.name)
            for request in builder.named_objects(inv, selection, errors)]


def run(inv: Invocation) -> None:
    flags = inv.flags
    if not flags["for"]:
        raise MkctlError("unrecognized condition: []")
    conditions = [parse_condition(text) for text in flags["for"]]
    conditions.sort(key=lambda condition: condition.kind != "create")  # create first
    if flags["output"] not in ("", "name"):
        raise MkctlError(f"unable to match a printer suitable for the output format "
                         f'"{flags["output"]}", allowed formats are: name')
    suffix = "\n" if flags["output"] == "name" else " condition met\n"
    deadline = _deadline(inv)
    errors: list[Exception] = []
    targets = _targets(inv, errors)
    waiting_for_delete = any(condition.kind == "delete" for condition in conditions)
    if not targets and not errors and not waiting_for_delete:
        raise MkctlError("no matching resources found")
    for request, name in targets:
        waiter = Waiter(inv, request, name, deadline)
        read: Obj | None = None
        if flags["filename"]:
            try:  # the builder reads each object of the files from the server first
                read = inv.client.get_json(waiter.path)
            except StatusError as error:  # and stops at the first it cannot read,
                if waiting_for_delete and error.reason == "NotFound":
                    continue  # unless waiting for deletion: then that one is skipped
                errors.append(error)
                break
        try:
            met = all([waiter.wait(condition, read if i == 0 else None)
                       for i, condition in enumerate(conditions)])
        except (StatusError, MkctlError) as error:
            errors.append(error)
            continue
        if met:
            inv.out.write(name_of({"apiVersion": request.resource.group_version,
                                   "kind": request.resource.kind,
                                   "metadata": {"name": name}}) + suffix)
            inv.out.flush()
    if errors:
        raise Aggregate(errors)


COMMAND = Command(
    name="wait",
    summary="Experimental: Wait for a specific condition on one or many resources",
    usage="wait ([-f FILENAME] | resource.group/resource.name | resource.group [(-l label | "
          "--all)]) [--for=create|--for=delete|--for condition=available|--for=jsonpath='{}'"
          "[=value]] [options]",
    run=run,
    flags=[
        Flag("all", BOOL, help="Select all resources in the namespace of the specified "
                               "resource types"),
        ALL_NAMESPACES_FLAG,
        FIELD_SELECTOR_FLAG,
        Flag("filename", STRINGS, shorthand="f", help="identifying the resource."),
        Flag("for", ARRAY,
             help="The condition to wait on: [create|delete|condition=condition-name"
                  "[=condition-value]|jsonpath='{JSONPath expression}'=[JSONPath value]]. The "
                  "default condition-value is true. Condition values are compared after "
                  "Unicode simple case folding, which is a more general form of "
                  "case-insensitivity. Multiple conditions are supported and AND'ed to each "
                  "other in a sequential order. If --for=create is passed, it is always "
                  "waited first."),
        Flag("output", shorthand="o",
             help="Output format. One of: (name)."),
        Flag("selector", shorthand="l",
             help="Selector (label query) to filter on, supports '=', '==', and '!='.(e.g. -l "
                  "key1=value1,key2=value2)"),
        Flag("recursive", BOOL, default=True, shorthand="R",
             help="Process the directory used in -f, --filename recursively. Useful when you "
                  "want to manage related manifests organized within the same directory."),
        Flag("timeout", default="30s",
             help="The length of time to wait before giving up. Zero means check once and "
                  "don't wait, negative means wait for a week."),
    ],
    examples="""  # Wait for the pod "busybox1" to contain the status condition of type "Ready"
  mkctl wait --for=condition=Ready pod/busybox1

  # Wait for the pod "busybox1" to contain the status phase to be "Running"
  mkctl wait --for=jsonpath='{.status.phase}'=Running pod/busybox1

  # Wait for the pod "busybox1" to be deleted, with a timeout of 60s
  mkctl wait --for=delete pod/busybox1 --timeout=60s""",
)
