"""Generate minikube_py/api/schema/always_written.py from upstream's Go types.

Go's encoding/json writes a field even when it is empty unless its tag says `omitempty`
(or `omitzero`), and it never leaves out a struct value, tag or not. So upstream's JSON
always carries, for example, a Node's `status.nodeInfo.kubeProxyVersion: ""`, a Service's
`status: {loadBalancer: {}}` and a container status's `lastState: {}`, and clients
generated from the same types (the official Python client's models) expect them.

This reads the struct definitions of k8s.io/api (and meta/v1 of k8s.io/apimachinery) and
writes, for every kind minikube-py serves, the tree of fields that are always written:

    python tools/gen_always_written.py API_CHECKOUT APIMACHINERY_CHECKOUT AGGREGATOR_CHECKOUT

(checkouts of github.com/kubernetes/api, github.com/kubernetes/apimachinery and
github.com/kubernetes/kube-aggregator, whose pkg/apis holds apiregistration.k8s.io; the
commit of each goes into the generated file's header).

A tree node is {"z": value} for a string, number or boolean written as its zero value,
{"o": {field: node}} for a struct (written as an object, then its own fields), and
{"l": {...}} / {"m": {...}} for a slice / map of structs (each element's fields). A nil
slice, map or pointer would be written as null; clients read null and absent alike, so
those are left out.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from minikube_py.api.resources import RESOURCES  # noqa: E402

OUTPUT = REPO / "minikube_py" / "api" / "schema" / "always_written.py"
STRUCT = re.compile(r"^type (\w+) struct \{$")
ALIAS = re.compile(r"^type (\w+) (\S+)$")
TAG = re.compile(r'`json:"([^"]*)"')
IMPORT = re.compile(r'^\s*(\w+)?\s*"k8s\.io/(api|apimachinery)/(.+)"$')
INTS = {"int", "int32", "int64", "uint", "uint32", "uint64", "float32", "float64", "byte"}
# Types of other packages: what their zero value marshals to (custom MarshalJSON), or the
# struct they name in meta/v1.
EXTERNAL_ZERO = {
    "metav1.Time": None, "metav1.MicroTime": None, "resource.Quantity": "0",
    "intstr.IntOrString": 0, "metav1.Duration": "0s", "types.UID": "",
    "runtime.RawExtension": None,
}
SKIPPED = object()


class GoTypes:
    """Struct definitions and named types of one Go package (with a qualifier)."""

    def __init__(self) -> None:
        self.structs: dict[str, list[tuple[str, str, set[str]]]] = {}
        self.aliases: dict[str, str] = {}
        self.imports: dict[str, dict[str, str]] = {}
        """package -> import name -> our qualifier (`v1` -> `core/v1`, `metav1`)."""

    def read(self, qualifier: str, source: str) -> None:
        current: list[tuple[str, str, set[str]]] | None = None
        imports = self.imports.setdefault(qualifier.rstrip("."), {})
        for line in source.splitlines():
            if (match := IMPORT.match(line)) and current is None:
                name, repo, path = match.groups()
                alias = name or path.rsplit("/", 1)[-1]
                imports[alias] = ("metav1" if path == "pkg/apis/meta/v1"
                                  else path if repo == "api" else alias)
                continue
            if current is None:
                if match := STRUCT.match(line):
                    current = self.structs.setdefault(qualifier + match.group(1), [])
                elif (match := ALIAS.match(line)) and not line.endswith("{"):
                    self.aliases[qualifier + match.group(1)] = match.group(2)
                continue
            if line.startswith("}"):
                current = None
                continue
            stripped = line.strip()
            if not stripped or stripped.startswith("//"):
                continue
            tag = TAG.search(line)
            words = line.split("`", 1)[0].split()
            if tag and len(words) in (1, 2):  # `Name Type`, or an embedded `Type` whose
                json_name, *options = tag.group(1).split(",")  # tag may still name it
                current.append((json_name, words[-1], set(options)))


IMPORTS: dict[str, dict[str, str]] = {}


def qualify(go_type: str, package: str) -> str:
    """Give a type name our package qualifier: `Container` -> `core/v1.Container`, and in
    apps/v1 `v1.PodTemplateSpec` (its import of core/v1) -> `core/v1.PodTemplateSpec`."""
    bare = go_type.lstrip("*")
    if bare.startswith("[]") or bare.startswith("map["):
        return go_type
    if bare in INTS or bare in ("string", "bool"):
        return go_type
    if "." in bare:
        alias, name = bare.split(".", 1)
        target = IMPORTS.get(package, {}).get(alias)
        return go_type.replace(bare, f"{target}.{name}") if target else go_type
    return go_type.replace(bare, f"{package}.{bare}")


class Generator:
    def __init__(self, types: GoTypes) -> None:
        self.types = types
        self.memo: dict[str, dict[str, Any]] = {}

    def struct_fields(self, name: str, package: str, seen: frozenset[str]) -> dict[str, Any]:
        """The always-written fields of a struct, as tree nodes."""
        if name in self.memo:
            return self.memo[name]
        fields: dict[str, Any] = {}
        for json_name, go_type, options in self.types.structs.get(name, []):
            if "inline" in options or not json_name:
                if json_name == "" and "inline" in options:
                    inner = self.resolve(qualify(go_type, package))
                    if inner in self.types.structs and inner not in seen:
                        fields.update(self.struct_fields(inner, inner.rsplit(".", 1)[0],
                                                         seen | {inner}))
                continue
            if json_name == "-":
                continue
            node = self.node(qualify(go_type, package), options, seen, package)
            if node is not SKIPPED:
                fields[json_name] = node
        if not seen - {name}:
            self.memo[name] = fields
        return fields

    def resolve(self, go_type: str) -> str:
        while go_type in self.types.aliases:
            target = self.types.aliases[go_type]
            package = go_type.rsplit(".", 1)[0]
            go_type = qualify(target, package) if "." not in target else target
        return go_type

    def node(self, go_type: str, options: set[str], seen: frozenset[str], package: str) -> Any:
        """The tree node of one field, or SKIPPED when nothing of it is always written."""
        if "omitzero" in options:
            return SKIPPED
        omitempty = "omitempty" in options
        if go_type.startswith("*"):
            return SKIPPED  # nil pointer: omitted, or null
        resolved = self.resolve(go_type)
        if resolved.startswith("[]") or resolved.startswith("map["):
            element = resolved[2:] if resolved.startswith("[]") else resolved.split("]", 1)[1]
            if go_type != resolved:  # a named slice or map type: its package's names
                package = go_type.lstrip("*").rsplit(".", 1)[0]
            element = self.resolve(qualify(element, package))
            if element in self.types.structs and element not in seen:
                inner = self.struct_fields(element, element.rsplit(".", 1)[0], seen | {element})
                if inner:
                    return {"l" if resolved.startswith("[]") else "m": inner}
            return SKIPPED
        if resolved in EXTERNAL_ZERO:
            return SKIPPED if omitempty or EXTERNAL_ZERO[resolved] is None else {
                "z": EXTERNAL_ZERO[resolved]}
        if resolved in self.types.structs:
            if resolved in seen:
                return SKIPPED
            return {"o": self.struct_fields(resolved, resolved.rsplit(".", 1)[0],
                                            seen | {resolved})}
        if omitempty:
            return SKIPPED
        bare = resolved.rsplit(".", 1)[-1]
        if bare == "string":
            return {"z": ""}
        if bare == "bool":
            return {"z": False}
        if bare in INTS:
            return {"z": 0}
        return SKIPPED


def package_sources(checkout: Path, directory: str) -> list[str]:
    listed = subprocess.run(["git", "-C", str(checkout), "ls-tree", "--name-only", "HEAD",
                             f"{directory}/"], capture_output=True, text=True, check=True)
    sources = []
    for path in listed.stdout.split():
        if path.endswith(".go") and not path.endswith("_test.go") and "generated" not in path:
            sources.append(subprocess.run(["git", "-C", str(checkout), "show", f"HEAD:{path}"],
                                          capture_output=True, text=True, check=True).stdout)
    return sources


def commit(checkout: Path) -> str:
    return subprocess.run(["git", "-C", str(checkout), "rev-parse", "HEAD"],
                          capture_output=True, text=True, check=True).stdout.strip()


def main() -> None:
    api, apimachinery, aggregator = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
    types = GoTypes()
    for source in package_sources(apimachinery, "pkg/apis/meta/v1"):
        types.read("metav1.", source)
    kinds: dict[str, tuple[str, str]] = {}
    for resource in RESOURCES:
        group = resource.group or "core"
        package = f"{group.split('.')[0]}/{resource.version}"
        kinds[resource.api_version + "/" + resource.kind] = (package, resource.kind)
    for package in sorted({package for package, _ in kinds.values()}):
        checkout, directory = ((aggregator, f"pkg/apis/{package}")
                               if package.startswith("apiregistration/") else (api, package))
        for source in package_sources(checkout, directory):
            types.read(package + ".", source)
    IMPORTS.update(types.imports)
    generator = Generator(types)
    tree = {}
    for key, (package, kind) in sorted(kinds.items()):
        name = f"{package}.{kind}"
        if name in types.structs:
            tree[key] = generator.struct_fields(name, package, frozenset({name}))
    header = ('"""The fields upstream\'s JSON always carries, per served kind.\n\n'
              "Generated by tools/gen_always_written.py (do not edit; its docstring gives the\n"
              f"node format) from k8s.io/api {commit(api)[:12]}, k8s.io/apimachinery "
              f"{commit(apimachinery)[:12]} and\nk8s.io/kube-aggregator "
              f'{commit(aggregator)[:12]}.\n"""\n\n'
              "from typing import Any\n\n"
              "ALWAYS_WRITTEN: dict[str, dict[str, Any]] = ")
    OUTPUT.write_text(header + _python(tree) + "\n")
    print(f"wrote {OUTPUT} ({len(tree)} kinds)")


def _python(value: Any, indent: int = 0) -> str:
    """A Python literal, one key per line, so diffs of the data read well."""
    if isinstance(value, dict) and value:
        pad = "    " * (indent + 1)
        items = ",\n".join(f"{pad}{key!r}: {_python(item, indent + 1)}"
                           for key, item in value.items())
        return "{\n" + items + ",\n" + "    " * indent + "}"
    return repr(value)


if __name__ == "__main__":
    main()
