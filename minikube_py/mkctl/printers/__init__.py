"""Output formats: which printer `-o` asks for (kubectl's PrintFlags).

    (none), wide            the server's Table, decorated (table.py)
    yaml, json              the objects as kubectl writes them (goyaml/, gojson.py)
    name                    kind[.group]/name, one per line
    jsonpath=TEMPLATE, jsonpath-as-json=..., jsonpath-file=FILE          (jsonpath.py)
    custom-columns=SPEC, custom-columns-file=FILE                        (customcolumns.py)

explain.py renders `explain`'s plaintext from an OpenAPI v3 document; it is no `-o`.

Go templates (go-template, template) and kubectl's newer kyaml are not supported.
"""

from __future__ import annotations

from typing import Any, Protocol, TextIO

from minikube_py.mkctl.errors import MkctlError

HUMAN_FORMATS = ("", "wide")
ALLOWED_FORMATS = ("custom-columns", "custom-columns-file", "json", "jsonpath",
                   "jsonpath-as-json", "jsonpath-file", "name", "wide", "yaml")
_JSONPATH_FORMATS = ("jsonpath", "jsonpath-as-json", "jsonpath-file")


class ObjectPrinter(Protocol):
    def print_obj(self, obj: dict[str, Any]) -> None: ...

    def flush(self) -> None: ...


def split_format(output: str, template: str) -> tuple[str, str]:
    """`-o jsonpath={.a}` -> ("jsonpath", "{.a}"); the template may come from --template."""
    name, _, value = output.partition("=")
    if name in _JSONPATH_FORMATS and not value:
        value = template
    return name, value


class JSONPrinter:
    def __init__(self, out: TextIO) -> None:
        self.out = out

    def print_obj(self, obj: dict[str, Any]) -> None:
        from minikube_py.mkctl.printers.gojson import dumps

        self.out.write(dumps(obj) + "\n")

    def flush(self) -> None:
        pass


class YAMLPrinter:
    """Objects as YAML, "---" between them."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.count = 0

    def print_obj(self, obj: dict[str, Any]) -> None:
        from minikube_py.api.goyaml.emit import YAMLError, dump

        try:
            text = dump(obj)
        except YAMLError as error:
            raise MkctlError(str(error)) from None
        self.count += 1
        if self.count > 1:
            self.out.write("---\n")
        self.out.write(text)

    def flush(self) -> None:
        pass


def name_of(obj: dict[str, Any]) -> str:
    """NamePrinter's `kind[.group]/name`."""
    api_version = obj.get("apiVersion", "")
    group = api_version.split("/", 1)[0] if "/" in api_version else ""
    kind = obj.get("kind", "").lower()
    name = (obj.get("metadata") or {}).get("name") or "<unknown>"
    return f"{kind}.{group}/{name}" if group else f"{kind}/{name}"


class NamePrinter:
    def __init__(self, out: TextIO) -> None:
        self.out = out

    def print_obj(self, obj: dict[str, Any]) -> None:
        items = obj.get("items") if isinstance(obj.get("items"), list) else [obj]
        for item in items:
            self.out.write(name_of(item) + "\n")

    def flush(self) -> None:
        pass


class JSONPathPrinter:
    def __init__(self, template: str, out: TextIO, *, as_json: bool) -> None:
        from minikube_py.mkctl.printers.jsonpath import JSONPath, JSONPathError

        self.template = template
        self.out = out
        try:
            self.jsonpath = JSONPath(template, output_json=as_json)
        except JSONPathError as error:
            raise MkctlError(f"error parsing jsonpath {template}, {error}\n") from None

    def print_obj(self, obj: dict[str, Any]) -> None:
        from minikube_py.api.gofmt import go_syntax, quote
        from minikube_py.mkctl.printers.jsonpath import JSONPathError

        try:
            self.out.write(self.jsonpath.execute(obj))
        except JSONPathError as error:
            raise MkctlError(
                f"error executing jsonpath {quote(self.template)}: Error executing template: "
                f"{error}. Printing more information for debugging the template:\n"
                f"\ttemplate was:\n\t\t{self.template}\n"
                f"\tobject given to jsonpath engine was:\n\t\t{go_syntax(obj)}\n\n\n"
                ) from None

    def flush(self) -> None:
        pass


class _CustomColumns:
    def __init__(self, spec: str, no_headers: bool, out: TextIO) -> None:
        from minikube_py.mkctl.printers.customcolumns import (
            CustomColumnsPrinter,
            SpecError,
            parse_spec,
        )
        from minikube_py.mkctl.printers.tabwriter import TabWriter

        try:
            columns = parse_spec(spec)
        except SpecError as error:
            raise MkctlError(str(error)) from None
        self.writer = TabWriter(out)
        self.printer = CustomColumnsPrinter(columns, no_headers, self.writer)

    def print_obj(self, obj: dict[str, Any]) -> None:
        from minikube_py.mkctl.printers.jsonpath import JSONPathError

        try:
            self.printer.print_obj(obj)
        except JSONPathError as error:
            raise MkctlError(str(error)) from None

    def flush(self) -> None:
        self.writer.flush()


def _read_file(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except OSError as error:
        raise MkctlError(f"error reading --template {path}, "
                         f"open {path}: {(error.strerror or 'error').lower()}\n") from None


def generic_printer(output: str, template: str, *, no_headers: bool, out: TextIO
                    ) -> ObjectPrinter:
    """The printer for a non-table output format, or kubectl's error for the format."""
    name, value = split_format(output, template)
    if name == "json":
        return JSONPrinter(out)
    if name == "yaml":
        return YAMLPrinter(out)
    if name == "name":
        return NamePrinter(out)
    if name in _JSONPATH_FORMATS:
        if not value:
            raise MkctlError("template format specified but no template given")
        if name == "jsonpath-file":
            value = _read_file(value)
        return JSONPathPrinter(value, out, as_json=name == "jsonpath-as-json")
    if name == "custom-columns":
        return _CustomColumns(value, no_headers, out)
    if name == "custom-columns-file":
        lines = [line.split() for line in _read_file(value).splitlines()[:2]]
        if len(lines) < 2 or len(lines[0]) != len(lines[1]):
            raise MkctlError("invalid template, expected one line of space separated headers "
                             "and one line of space separated column specs")
        spec = ",".join(f"{header}:{path}" for header, path in zip(*lines, strict=True))
        return _CustomColumns(spec, no_headers, out)
    raise unknown_format(output)


def unknown_format(output: str) -> MkctlError:
    return MkctlError(f'unable to match a printer suitable for the output format "{output}", '
                      f"allowed formats are: {','.join(ALLOWED_FORMATS)}")
