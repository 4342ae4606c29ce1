"""kubectl explain's plaintext output, rendered from a group-version's OpenAPI v3 document
(kubectl's explain/v2/templates/plaintext.tmpl, step for step):

    header       GROUP / KIND / VERSION of the GVK that the resource's REST paths name
    schema       the components/schemas entry carrying that GVK
    output       follow the field path (properties, then items, additionalProperties,
                 allOf); at its end print FIELD, DESCRIPTION and FIELDS
    fieldList    each property, `name<TAB><type>`, its enum and wrapped description;
                 --recursive prints the names alone, nested two spaces a level

Refs are followed within the document and each is entered once per branch, so a schema
that refers to itself ends. A field the path names and the schema lacks is the error
`field "x" does not exist`, printed after the header, as kubectl prints it.
"""

from __future__ import annotations

from typing import Any

from minikube_py.api import Obj
from minikube_py.api.gofmt import sprint
from minikube_py.mkctl.errors import MkctlError

GVK_EXTENSION = "x-kubernetes-group-version-kind"
METHODS = ("get", "post", "put", "patch", "delete")


def header_and_schema(document: Obj, group: str, version: str, resource: str
                      ) -> tuple[str, Obj]:
    """The header lines and the schema of the kind that the resource's paths serve."""
    prefix = f"/apis/{group}" if group else "/api"
    searched = [f"{prefix}/{version}/{resource}", f"{prefix}/{version}/{resource}/{{name}}",
                f"{prefix}/{version}/namespaces/{{namespace}}/{resource}",
                f"{prefix}/{version}/namespaces/{{namespace}}/{resource}/{{name}}"]
    gvk: Any = None
    for path in searched:
        operations = (document.get("paths") or {}).get(path)
        for method in METHODS if operations else ():
            if operations.get(method):
                gvk = operations[method].get(GVK_EXTENSION)
                if gvk:
                    break
    if not gvk:
        resource_string = f"{group}/{version}, Resource={resource}" if group else \
            f"/{version}, Resource={resource}"
        raise MkctlError(f"GVR ({resource_string}) not found in OpenAPI schema")
    header = f"GROUP:      {gvk['group']}\n" if gvk.get("group") else ""
    header += f"KIND:       {gvk['kind']}\nVERSION:    {gvk['version']}\n\n"
    schemas = (document.get("components") or {}).get("schemas") or {}
    for name in sorted(schemas):
        if gvk in (schemas[name].get(GVK_EXTENSION) or []):
            return header, schemas[name]
    return header, {}


def explain(document: Obj, schema: Obj, field_path: list[str], recursive: bool) -> str:
    """The body after the header; raises kubectl's error for a field that is not there."""
    if not schema:
        return ""
    text = Renderer(document, recursive).output(schema, {}, field_path)
    if not text:
        raise MkctlError(f'field "{field_path[-1]}" does not exist')
    return text + "\n"


class Renderer:
    """The template's named parts, as methods over one OpenAPI v3 document."""

    def __init__(self, document: Obj, recursive: bool) -> None:
        self.document, self.recursive = document, recursive

    def resolve(self, ref: Any) -> Obj | None:
        """resolveRef: a `#/components/schemas/...` reference within the document."""
        if not isinstance(ref, str) or not ref.startswith("#"):
            return None
        current: Any = self.document
        for key in ref[1:].split("/"):
            if not key:
                continue
            current = current.get(key) if isinstance(current, dict) else None
            if not isinstance(current, dict):
                return None
        return current

    def output(self, schema: Obj, history: dict[str, int], field_path: list[str]) -> str:
        """Follow the field path; at its end, the description and the field list."""
        ref = schema.get("$ref") or ""
        following = {**history, ref: 1}
        resolved = self.resolve(ref) or schema
        if not field_path:
            text = "DESCRIPTION:\n" + indent(4, wrap(76, self.description(resolved)
                                                     or "<empty>")) + "\n"
            docs = external_docs(resolved)
            if docs:
                text += "\n" + docs
            fields = self.field_list(resolved, 1, {})
            return text + ("FIELDS:\n" + fields if fields else "")
        if ref and history.get(ref):
            return ""
        properties = resolved.get("properties") or {}
        if properties.get(field_path[0]):
            subschema = properties[field_path[0]]
            text = ""
            if len(field_path) == 1:
                text = (f"FIELD: {field_path[0]} <{self.type_guess(subschema)}>\n"
                        + extract_enum(subschema, long_view=True, limit=-1) + "\n\n")
            return text + self.output(subschema, {}, field_path[1:])
        if resolved.get("items"):
            return self.output(resolved["items"], following, field_path)
        if map_values(resolved):
            return self.output(resolved["additionalProperties"], following, field_path)
        for subschema in resolved.get("allOf") or []:
            text = self.output(subschema, following, field_path)
            if text:
                return text
        return ""

    def field_list(self, schema: Obj, level: int, history: dict[str, int]) -> str:
        """Each property with its type and description (with --recursive, its own fields
        nested under it)."""
        ref = schema.get("$ref") or ""
        if ref and history.get(ref):
            return ""
        following = {**history, ref: 1}
        resolved = self.resolve(ref) or schema
        text = ""
        properties = resolved.get("properties") or {}
        for name in sorted(properties):
            text += self.field_detail(name, resolved, level)
            if self.recursive:
                text += self.field_list(properties[name], level + 1, following)
        for subschema in resolved.get("allOf") or []:
            text += self.field_list(subschema, level, following)
        if resolved.get("items"):
            text += self.field_list(resolved["items"], level, following)
        if map_values(resolved):
            text += self.field_list(resolved["additionalProperties"], level, following)
        return text

    def field_detail(self, name: str, schema: Obj, level: int) -> str:
        """One field: `name<TAB><type> -required-`, its enum, then (not recursive) its
        description."""
        amount = level * 2
        field = schema["properties"][name]
        text = indent(amount, name) + f"\t<{self.type_guess(field)}>"
        if name in (schema.get("required") or []):
            text += " -required-"
        text += extract_enum(field, long_view=False, limit=4, amount=amount) + "\n"
        if self.recursive:
            return text
        text += indent(amount + 2, wrap(78 - amount, field.get("description")
                                        or "<no description>")) + "\n"
        docs = field.get("externalDocs")
        if docs:
            text += "\n" + indent(amount + 2, "EXTERNAL DOCS:") + "\n"
            if docs.get("description"):
                text += indent(amount + 4, wrap(76 - amount, docs["description"])) + "\n"
            if docs.get("url"):
                text += indent(amount + 4, f"URL: {docs['url']}") + "\n"
        return text + "\n"

    def description(self, schema: Obj) -> str:
        """The schema's description, then those of its allOf, items and map values."""
        resolved = self.resolve(schema.get("$ref")) or schema
        if not resolved:
            return ""
        text = resolved["description"] + "\n" if resolved.get("description") else ""
        for subschema in resolved.get("allOf") or []:
            text += self.description(subschema)
        if resolved.get("items"):
            text += self.description(resolved["items"])
        if map_values(resolved):
            text += self.description(resolved["additionalProperties"])
        return text

    def type_guess(self, schema: Obj) -> str:
        """The type hint in angle brackets: `string`, `Object`, `[]Object`,
        `map[string]string`, or the name of the referenced kind."""
        if not schema:
            raise MkctlError("expected schema argument to subtemplate 'typeguess'")
        if schema.get("items"):
            return "[]" + self.type_guess(schema["items"])
        if map_values(schema):
            return "map[string]" + self.type_guess(schema["additionalProperties"])
        all_of = schema.get("allOf")
        if all_of and not schema.get("properties") and len(all_of) == 1:
            return self.type_guess(all_of[0])
        ref = schema.get("$ref")
        if ref:
            referred = self.resolve(ref)
            if not referred or not referred.get("type") or referred["type"] == "object":
                return str(ref).split("/")[-1].split(".")[-1] or "Object"
            return str(referred["type"])
        kind = schema.get("type")
        return "Object" if kind == "object" else str(kind or "Object")


def map_values(schema: Obj) -> bool:
    """Whether additionalProperties is a schema (not the boolean form)."""
    values = schema.get("additionalProperties")
    return bool(values) and isinstance(values, dict)


def extract_enum(schema: Obj, *, long_view: bool, limit: int, amount: int = 0) -> str:
    """The enum: `ENUM:` and a value a line (one field), or `enum: a, b, ....` after
    the field's line (a field list, four values at most)."""
    values = schema.get("enum") or []
    if not values:
        return ""
    limit = limit or -1
    text = "ENUM:" if long_view else "\n" + " " * amount + "enum: "
    for index, value in enumerate(values):
        if limit > -1 and index >= limit:
            text += ", ...."
            break
        if index > 0 and not long_view:
            text += ", "
        elif long_view:
            text += "\n    "
        text += '""' if value == "" else sprint(value)
    return text


def external_docs(schema: Obj) -> str:
    """EXTERNAL DOCS: its description and URL."""
    docs = schema.get("externalDocs")
    if not docs:
        return ""
    text = "EXTERNAL DOCS:\n"
    if docs.get("description"):
        text += indent(4, wrap(76, docs["description"])) + "\n"
    if docs.get("url"):
        text += indent(4, f"URL: {docs['url']}") + "\n"
    return text


def indent(amount: int, text: str) -> str:
    """Every line of the text, the empty last one too, after `amount` spaces."""
    pad = " " * amount
    return pad + text.replace("\n", "\n" + pad)


def wrap(limit: int, text: str) -> str:
    """go-wordwrap's WrapString: break at the last space that keeps a line within the
    limit; a word longer than the limit stays whole; line breaks in the text stay."""
    lines: list[str] = []
    line, spaces, word = "", "", ""
    for char in text:
        if char == "\n":
            lines.append(line + spaces + word)
            line, spaces, word = "", "", ""
        elif char.isspace() and char != "\u00a0":
            if not spaces or word:
                line += spaces + word
                spaces, word = "", ""
            spaces += char
        else:
            word += char
            if len(line) + len(spaces) + len(word) > limit and len(word) < limit:
                lines.append(line)
                line, spaces = "", ""
    if word:
        line += spaces + word
    elif len(line) + len(spaces) <= limit:
        line += spaces
    return "\n".join([*lines, line])
