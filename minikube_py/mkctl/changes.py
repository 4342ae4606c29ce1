"""What the commands that change objects share: the --dry-run, -f and -o flags, and the
line each change prints (`deployment.apps/web created`, `pod/x labeled (dry run)`).

    --dry-run=none      send the change (the default)
    --dry-run=server    send it with ?dryRun=All: the server checks it and stores nothing
    --dry-run=client    send nothing: print what would be sent

Output, as kubectl's PrintFlags with an operation: without -o, `kind[.group]/name
<operation>`, the operation followed by "(dry run)" or "(server dry run)"; with
`-o name` the name alone; with another -o format the object the server answered (or, for
a client dry run, the object that would have been sent).
"""

from __future__ import annotations

from minikube_py.api import Obj
from minikube_py.mkctl.command import Invocation
from minikube_py.mkctl.errors import MkctlError, StatusError
from minikube_py.mkctl.flags import BOOL, STRINGS, Flag
from minikube_py.mkctl.printers import ObjectPrinter, generic_printer, name_of

DRY_RUN_FLAG = Flag(
    "dry-run", default="none",
    help='Must be "none", "server", or "client". If client strategy, only print the object '
         "that would be sent, without sending it. If server strategy, submit server-side "
         "request without persisting the resource.")
OUTPUT_FLAG = Flag(
    "output", shorthand="o",
    help="Output format. One of: (json, yaml, name, go-template, go-template-file, template, "
         "templatefile, jsonpath, jsonpath-as-json, jsonpath-file).")
TEMPLATE_FLAG = Flag(
    "template",
    help="Template string or path to template file to use when -o=go-template, "
         "-o=go-template-file. The template format is golang templates "
         "[http://golang.org/pkg/text/template/#pkg-overview].")
RECURSIVE_FLAG = Flag(
    "recursive", BOOL, shorthand="R",
    help="Process the directory used in -f, --filename recursively. Useful when you want to "
         "manage related manifests organized within the same directory.")


def filename_flag(verb: str) -> Flag:
    return Flag("filename", STRINGS, shorthand="f",
                help=f"Filename, directory, or URL to files to use to {verb}")


def dry_run(inv: Invocation) -> str:
    """"none", "server" or "client", kubectl's error for anything else."""
    value = inv.flags["dry-run"]
    if value not in ("none", "server", "client"):
        raise MkctlError(f'Invalid dry-run value ({value}). Must be "none", "server", or '
                         '"client".')
    return value


VALIDATE_FLAG = Flag(
    "validate", default="strict",
    help='Must be one of: strict (or true), warn, ignore (or false). "true" or "strict" will '
         "use a schema to validate the input and fail the request if invalid. \"warn\" will "
         "warn about unknown or duplicate fields without blocking the request. \"false\" or "
         '"ignore" will not perform any schema validation, silently dropping any unknown or '
         "duplicate fields.")
VALIDATION = {"strict": "Strict", "true": "Strict", "warn": "Warn", "ignore": "Ignore",
              "false": "Ignore"}


def field_manager_flag(default: str) -> Flag:
    return Flag("field-manager", default=default,
                help="Name of the manager used to track field ownership.")


def write_params(inv: Invocation, field_manager: str) -> dict[str, str]:
    """The query of a change: its field manager (--field-manager, if the command has it),
    the server's field validation (--validate) and dryRun."""
    values = inv.flags.values
    validate = values.get("validate", "strict")
    if validate not in VALIDATION:
        raise MkctlError(f'invalid - validate option "{validate}"; must be one of: strict '
                         "(or true), warn, ignore (or false)")
    params = {"fieldManager": values.get("field-manager") or field_manager,
              "fieldValidation": VALIDATION[validate]}
    if dry_run(inv) == "server":
        params["dryRun"] = "All"
    return params


def in_file(error: StatusError, verb: str, source: str) -> StatusError:
    """The server's error, prefixed with the file the object came from."""
    return StatusError({**error.status,
                        "message": f'error when {verb} "{source}": {error.status["message"]}'})


class OperationPrinter:
    """What a command prints for each object it changed."""

    def __init__(self, inv: Invocation, operation: str) -> None:
        self.out = inv.out
        self.output = inv.flags.values.get("output", "")
        mode = dry_run(inv) if "dry-run" in inv.flags.values else "none"
        self.suffix = {"none": "", "client": " (dry run)", "server": " (server dry run)"}[mode]
        self.operation = operation
        self.printer: ObjectPrinter | None = None
        if self.output not in ("", "name"):
            self.printer = generic_printer(self.output, inv.flags.values.get("template", ""),
                                           no_headers=False, out=inv.out)

    def print_obj(self, obj: Obj, *, struct_order: bool = False, operation: str = "") -> None:
        """One changed object; `struct_order`: an object built as a Go struct, whose JSON
        keeps its fields in their declared order; `operation`: this object's, if not the
        command's."""
        if struct_order and self.output == "json":
            from minikube_py.mkctl.printers.gojson import dumps

            self.out.write(dumps(obj, sort_keys=False) + "\n")
        elif self.printer is not None:
            self.printer.print_obj(obj)
            self.printer.flush()
        elif self.output == "name":
            self.out.write(name_of(obj) + "\n")
        else:
            self.out.write(f"{name_of(obj)} {operation or self.operation}{self.suffix}\n")
        self.out.flush()
