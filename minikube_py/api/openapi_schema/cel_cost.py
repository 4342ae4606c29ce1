"""The cost of a CEL rule, as upstream's cost model gives it (cel-go's checker/cost.go with
apiserver's library/cost.go and the apiextensions sizeEstimator): the estimated worst case
when a definition is written, from the schema's declared or derived bounds, and the cost of
one call when a value is validated, from the value's actual sizes.

cel-expr-python evaluates the rules but neither estimates nor tracks cost; its checked
expression (Expression.serialize: the macro-expanded AST with the checker's types and
overload candidates) is decoded here, the types of values derived from `self` are taken
from the schema (the checker sees `self` as dyn), and the estimate is walked in cel-go's
order. The runtime cost of a call is this estimate with each size the value's own: the
iterations every comprehension could run on that value, an upper bound of what cel-go's
tracker counts while it evaluates."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

MAX_REQUEST_SIZE_BYTES = 3 * 1024 * 1024
# apiextensions validation.go
STATIC_ESTIMATED_COST_LIMIT = 10_000_000
STATIC_ESTIMATED_CRD_COST_LIMIT = 100_000_000
_MAX = 2**64 - 1
_STRING_TRAVERSAL = 0.1
_REGEX_LENGTH = 0.25
_MAX_NAME_FORMAT_REGEX_SIZE = 128
_LIST_CREATE, _MAP_CREATE, _STRUCT_CREATE = 10, 30, 40

Size = tuple[int, int]
Cost = tuple[int, int]
UNKNOWN: Size = (0, _MAX)


# --- declared types (apiserver's DeclType, from a structural schema) ---------------------


@dataclass(slots=True)
class Decl:
    """A type as the cost model sees it: its kind, and for a schema's type the most
    elements it can hold (MaxElements) and the smallest JSON it serializes to."""

    kind: str  # dyn bool int uint double string bytes duration timestamp list map struct null
    max_elements: int = 0
    min_size: int = 1
    fields: dict[str, Decl] = field(default_factory=dict)
    elem: Decl | None = None
    key: Decl | None = None
    name: str = ""  # an opaque or abstract type's name (optional_type)


DYN = Decl("dyn")
_SCALARS = frozenset(("bool", "double", "duration", "int", "timestamp", "uint"))
_STRING_MIN, _BOOL_MIN, _NUMBER_MIN = 2, 4, 1
_MAX_DURATION_JSON, _MAX_DATETIME_JSON, _MIN_DURATION_JSON = 32, 32, 3
_JSON_DATE, _MIN_DATETIME_JSON = 12, 21
_RESOURCE_META = {"kind": {"type": "string"}, "apiVersion": {"type": "string"},
                  "metadata": {"type": "object", "properties": {
                      "name": {"type": "string"}, "generateName": {"type": "string"}}}}


# cel.Escape: property names that are CEL reserved words become __name__
_RESERVED = frozenset((
    "true", "false", "null", "in", "as", "break", "const", "continue", "else", "for",
    "function", "if", "import", "let", "loop", "package", "namespace", "return", "var",
    "void", "while"))
_ESCAPES = (("__", "__underscores__"), (".", "__dot__"), ("-", "__dash__"),
            ("/", "__slash__"))


def escape(name: str) -> str:
    """cel.Escape: the name a rule uses for a property (namespace is __namespace__,
    x-y is x__dash__y)."""
    if name in _RESERVED:
        return f"__{name}__"
    for plain, escaped in _ESCAPES:
        name = name.replace(plain, escaped)
    return name


def _zero_if_negative(value: int) -> int:
    return max(0, int(value))


def _string_length_per_request(schema: dict[str, Any]) -> int:
    """estimateMaxStringLengthPerRequest."""
    if schema.get("x-kubernetes-int-or-string"):
        return MAX_REQUEST_SIZE_BYTES - 2
    return {"duration": _MAX_DURATION_JSON, "date": _JSON_DATE,
            "date-time": _MAX_DATETIME_JSON}.get(schema.get("format", ""),
                                                 MAX_REQUEST_SIZE_BYTES - 2)


def _with_resource_meta(schema: dict[str, Any]) -> dict[str, Any]:
    """WithTypeAndObjectMeta: apiVersion, kind and metadata.name/generateName declared."""
    properties = dict(schema.get("properties") or {})
    properties.update(_RESOURCE_META)
    return {**schema, "properties": properties}


def schema_decl(schema: dict[str, Any], is_root: bool) -> Decl | None:
    """SchemaDeclType: the type rules see a schema as, None if rules cannot see it."""
    if schema.get("x-kubernetes-int-or-string"):
        max_length = schema.get("maxLength")
        return Decl("dyn", _zero_if_negative(max_length) * 4 if max_length is not None
                    else _string_length_per_request(schema), 1)
    if is_root:
        schema = _with_resource_meta(schema)
    kind = schema.get("type", "")
    if kind == "array":
        items = schema.get("items")
        if not isinstance(items, dict):
            return None
        item = schema_decl(items, bool(items.get("x-kubernetes-embedded-resource")))
        if item is None:
            return None
        max_items = schema.get("maxItems")
        bound = _zero_if_negative(max_items) if max_items is not None else \
            (MAX_REQUEST_SIZE_BYTES - 2) // (item.min_size + 1)
        return Decl("list", bound, 2, elem=item)
    if kind == "object":
        additional = schema.get("additionalProperties")
        if isinstance(additional, dict):
            value = schema_decl(additional,
                                bool(additional.get("x-kubernetes-embedded-resource")))
            if value is None:
                return None
            max_properties = schema.get("maxProperties")
            bound = _zero_if_negative(max_properties) if max_properties is not None else \
                (MAX_REQUEST_SIZE_BYTES - 2) // (value.min_size + 6)
            return Decl("map", bound, 2, elem=value, key=Decl("string", 0, _STRING_MIN))
        required = set(schema.get("required") or ())
        fields: dict[str, Decl] = {}
        min_size = 2
        for name, prop in (schema.get("properties") or {}).items():
            sub = schema_decl(prop, bool(prop.get("x-kubernetes-embedded-resource")))
            if sub is None:
                continue
            fields[escape(name)] = sub
            if name in required and "default" not in prop:
                min_size += len(name) + sub.min_size + 4
        return Decl("struct", 0, min_size, fields=fields)
    if kind == "string":
        fmt = schema.get("format", "")
        max_length = schema.get("maxLength")
        if fmt == "byte":
            return Decl("bytes", _zero_if_negative(max_length) if max_length is not None
                        else _string_length_per_request(schema), _STRING_MIN)
        if fmt == "duration":
            return Decl("duration", _string_length_per_request(schema), _MIN_DURATION_JSON)
        if fmt in ("date", "date-time"):
            return Decl("timestamp", _string_length_per_request(schema),
                        _JSON_DATE if fmt == "date" else _MIN_DATETIME_JSON)
        if max_length is not None:
            bound = _zero_if_negative(max_length) * 4
        elif schema.get("enum"):
            bound = max((len(v) for v in schema["enum"] if isinstance(v, str)), default=0)
        else:
            bound = _string_length_per_request(schema)
        return Decl("string", bound, _STRING_MIN)
    if kind == "boolean":
        return Decl("bool", 0, _BOOL_MIN)
    if kind == "number":
        return Decl("double", 0, _NUMBER_MIN)
    if kind == "integer":
        return Decl("int", 0, _NUMBER_MIN)
    return None


def max_cardinality(min_size: int) -> int:
    """compilation.go's maxCardinality: how often data of that smallest size fits in a
    request."""
    return MAX_REQUEST_SIZE_BYTES // (min_size + 1)


# --- the checked expression, decoded from its protobuf ------------------------------------


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7


def _fields(data: bytes) -> list[tuple[int, Any]]:
    """The fields of a protobuf message, in wire order (fixed-width ones as raw bytes)."""
    out: list[tuple[int, Any]] = []
    pos, end = 0, len(data)
    while pos < end:
        key = data[pos]  # one byte for every field number this schema uses
        if key < 0x80:
            pos += 1
        else:
            key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value = data[pos]
            if value < 0x80:
                pos += 1
            else:
                value, pos = _varint(data, pos)
            out.append((number, value))
        elif wire == 2:
            size = data[pos]
            if size < 0x80:
                pos += 1
            else:
                size, pos = _varint(data, pos)
            out.append((number, data[pos:pos + size]))
            pos += size
        elif wire == 1:
            out.append((number, data[pos:pos + 8]))
            pos += 8
        elif wire == 5:
            out.append((number, data[pos:pos + 4]))
            pos += 4
        else:
            raise ValueError(f"unexpected wire type {wire}")
    return out


@dataclass(slots=True)
class Expr:
    """One node of a checked CEL expression (cel.expr.Expr)."""

    id: int
    kind: str  # const ident select call list map struct comprehension
    name: str = ""  # ident name, select field, call function
    literal: tuple[str, Any] = ("null", None)  # const: its kind and value
    target: Expr | None = None
    args: list[Expr] = field(default_factory=list)  # operand, call args, list elements
    test_only: bool = False
    # comprehension
    iter_var: str = ""
    iter_var2: str = ""
    accu_var: str = ""
    parts: list[Expr] = field(default_factory=list)  # range, init, condition, step, result


_CONSTANTS = {1: "null", 2: "bool", 3: "int", 4: "uint", 5: "double", 8: "duration",
              9: "timestamp"}


def _expr(data: bytes) -> Expr:
    node_id = 0
    for number, value in _fields(data):
        if number == 2:
            node_id = value
        elif number == 3:
            literal: tuple[str, Any] = ("null", None)
            for n, v in _fields(value):
                if n == 6:
                    literal = ("string", v.decode())
                elif n == 7:
                    literal = ("bytes", bytes(v))
                else:
                    literal = (_CONSTANTS.get(n, "null"), v)
            return Expr(node_id, "const", literal=literal)
        elif number == 4:
            name = next((v for n, v in _fields(value) if n == 1), b"")
            return Expr(node_id, "ident", name.decode())
        elif number == 5:
            parts = _fields(value)
            operand = next((_expr(v) for n, v in parts if n == 1), None)
            name = next((v for n, v in parts if n == 2), b"")
            test_only = any(n == 3 and v for n, v in parts)
            return Expr(node_id, "select", name.decode(), args=[operand] if operand else [],
                        test_only=test_only)
        elif number == 6:
            parts = _fields(value)
            target = next((_expr(v) for n, v in parts if n == 1), None)
            name = next((v for n, v in parts if n == 2), b"")
            return Expr(node_id, "call", name.decode(), target=target,
                        args=[_expr(v) for n, v in parts if n == 3])
        elif number == 7:
            return Expr(node_id, "list", args=[_expr(v) for n, v in _fields(value) if n == 1])
        elif number == 8:
            parts = _fields(value)
            struct = any(n == 1 and v for n, v in parts)
            entries: list[Expr] = []
            for n, entry in parts:
                if n != 2:
                    continue
                for m, child in _fields(entry):
                    if m in (3, 4) and isinstance(child, bytes):
                        entries.append(_expr(child))
            return Expr(node_id, "struct" if struct else "map", args=entries)
        elif number == 9:
            parts = _fields(value)
            names = {n: v.decode() for n, v in parts if n in (1, 3, 8)}
            children = {n: _expr(v) for n, v in parts if n in (2, 4, 5, 6, 7)}
            return Expr(node_id, "comprehension", iter_var=names.get(1, ""),
                        iter_var2=names.get(8, ""), accu_var=names.get(3, ""),
                        parts=[children.get(n) or Expr(0, "const") for n in (2, 4, 5, 6, 7)])
    return Expr(node_id, "const")


_PRIMITIVES = {1: "bool", 2: "int", 3: "uint", 4: "double", 5: "string", 6: "bytes"}
_WELL_KNOWN = {1: "dyn", 2: "timestamp", 3: "duration"}


def _type(data: bytes) -> Decl:
    """A checker type (cel.expr.Type) as a Decl without bounds."""
    for number, value in _fields(data):
        if number == 3:
            return Decl(_PRIMITIVES.get(value, "dyn"))
        if number == 4:
            return Decl(_PRIMITIVES.get(value, "dyn"))
        if number == 5:
            return Decl(_WELL_KNOWN.get(value, "dyn"))
        if number == 2:
            return Decl("null")
        if number == 6:
            elem = next((_type(v) for n, v in _fields(value) if n == 1), DYN)
            return Decl("list", elem=elem)
        if number == 7:
            parts = dict(_fields(value))
            return Decl("map", key=_type(parts[1]) if 1 in parts else DYN,
                        elem=_type(parts[2]) if 2 in parts else DYN)
        if number == 9:
            return Decl("struct", name=value.decode())
        if number == 11:
            return Decl("type")
        if number == 14:
            parts = _fields(value)
            name = next((v.decode() for n, v in parts if n == 1), "")
            params = [_type(v) for n, v in parts if n == 2]
            return Decl("opaque", name=name, elem=params[0] if params else None)
    return DYN


@dataclass(slots=True)
class Checked:
    """A checked expression: its AST, each node's type, each call's overload candidates."""

    expr: Expr
    types: dict[int, Decl]
    overloads: dict[int, list[str]]


_DECODED: dict[bytes, Checked] = {}


def decode(program: Any) -> Checked:
    """The checked expression of a cel-expr-python program (kept by its serialized form:
    definitions repeat rules across versions)."""
    serialized = program.serialize()
    known = _DECODED.get(serialized)
    if known is None:
        if len(_DECODED) >= 4096:
            _DECODED.clear()
        known = _DECODED[serialized] = _decode(serialized)
    return known


def _decode(serialized: bytes) -> Checked:
    wrapped = dict((n, v) for n, v in _fields(serialized) if n == 2)
    checked = wrapped.get(2, b"")
    types: dict[int, Decl] = {}
    overloads: dict[int, list[str]] = {}
    expr = Expr(0, "const")
    for number, value in _fields(checked):
        if number == 2:
            entry = dict(_fields(value))
            overloads[entry.get(1, 0)] = [v.decode() for n, v in _fields(entry.get(2, b""))
                                          if n == 3]
        elif number == 3:
            entry = dict(_fields(value))
            types[entry.get(1, 0)] = _type(entry.get(2, b""))
        elif number == 4:
            expr = _expr(value)
    return Checked(expr, types, overloads)


# --- arithmetic that saturates at the largest uint64, as cel-go's ---------------------------


def _add(a: Cost, b: Cost) -> Cost:
    return min(a[0] + b[0], _MAX), min(a[1] + b[1], _MAX)


def _mul(a: Cost, b: Cost) -> Cost:
    return min(a[0] * b[0], _MAX), min(a[1] * b[1], _MAX)


def _factor(x: int, y: float) -> int:
    if x > 0 and y > 0 and x > _MAX / y:
        return _MAX
    return min(math.ceil(x * y), _MAX)


def _by_factor(a: Cost, y: float) -> Cost:
    return _factor(a[0], y), _factor(a[1], y)


def _union(a: Cost, b: Cost) -> Cost:
    return min(a[0], b[0]), max(a[1], b[1])


# --- overload resolution, for what the checker left open on dyn values ---------------------

_OPERAND_KINDS = {"int64": "int", "uint64": "uint", "double": "double", "string": "string",
                  "bytes": "bytes", "bool": "bool", "list": "list", "map": "map",
                  "duration": "duration", "timestamp": "timestamp"}
_COMPARISONS = ("less_equals_", "greater_equals_", "less_", "greater_")
_ARITHMETIC = ("add_", "subtract_", "multiply_", "divide_", "modulo_", "negate_")


def _overload_kinds(overload: str) -> tuple[list[str], str] | None:
    """The operand kinds and result kind an operator overload id names, if it is one of
    the standard operators' (add_int64, less_string_double, size_list, int64_to_string)."""
    if "_to_" in overload:
        source, _, result = overload.partition("_to_")
        if source in _OPERAND_KINDS and result in _OPERAND_KINDS:
            return [_OPERAND_KINDS[source]], _OPERAND_KINDS[result]
        return None
    for prefix in (*_COMPARISONS, *_ARITHMETIC, "size_"):
        if overload.startswith(prefix):
            tokens = overload[len(prefix):].split("_")
            if not all(t in _OPERAND_KINDS for t in tokens):
                return None
            kinds = [_OPERAND_KINDS[t] for t in tokens]
            if prefix == "size_":
                return kinds, "int"
            if prefix in _COMPARISONS:
                return (kinds * 2 if len(kinds) == 1 else kinds), "bool"
            if prefix == "negate_":
                return kinds, kinds[0]
            if len(kinds) == 1:
                return kinds * 2, kinds[0]
            if kinds == ["timestamp", "timestamp"]:
                return kinds, "duration"
            return kinds, "timestamp" if "timestamp" in kinds else kinds[0]
    return None


def _matches(kind: str, wanted: str) -> bool:
    return "dyn" in (kind, wanted) or kind == wanted or (wanted == "map" and kind == "struct")


# --- the estimator ----------------------------------------------------------------------

# the library functions whose cost depends on sizes (k8s library/cost.go)
_LIST_SCANS = frozenset(("isSorted", "sum", "max", "min", "indexOf", "lastIndexOf"))
_NOMINAL = frozenset((
    "masked", "prefixLength", "family", "isUnspecified", "isLoopback", "isLinkLocalMulticast",
    "isLinkLocalUnicast", "isGlobalUnicast", "sign", "asInteger", "isInteger",
    "asApproximateFloat", "isGreaterThan", "isLessThan", "compareTo", "add", "sub",
    "getScheme", "getHostname", "getHost", "getPort", "getEscapedPath", "getQuery",
    "format.named"))
_PARSES = frozenset(("cidr", "isIP", "isCIDR", "quantity", "isQuantity", "isURL"))
_ACCUMULATORS = frozenset(("@result", "__result__"))

SizeOf = Callable[[list[str]], Size | None]


@dataclass(slots=True)
class _Var:
    path: list[str] | None
    size: Size | None
    entry: tuple[str, Size, Size] | None  # container kind, key/index size, value size


class Estimator:
    """cel-go's coster over one checked expression: `size_of` gives the size of the
    value a field path ("self", then field names, @items, @keys, @values) reaches, or
    None; `root` is the type of self, for the types of what rules select from it."""

    def __init__(self, checked: Checked, root: Decl | None, size_of: SizeOf,
                 unknown: Size = UNKNOWN) -> None:
        self.unknown = unknown
        self.checked = checked
        self.root = root
        self.size_of = size_of
        self.paths: dict[int, list[str]] = {}
        self.sizes: dict[int, Size] = {}
        self.entries: dict[int, tuple[str, Size, Size]] = {}
        self.types: dict[int, Decl] = {}
        self.vars: dict[str, list[_Var]] = {}

    # types

    def _decl_at(self, path: list[str]) -> Decl | None:
        """The schema type at a field path below self (the root names any variable)."""
        node = self.root
        for name in path[1:]:
            if node is None:
                return None
            if name in ("@items", "@values"):
                node = node.elem
            elif name == "@keys":
                node = node.key
            elif name == "@indices":
                return Decl("int")
            else:
                node = node.fields.get(name)
        return node

    def type_of(self, e: Expr) -> Decl:
        """The node's type: the checker's unless dyn, else the schema's at its path."""
        known = self.types.get(e.id)
        if known is not None:
            return known
        checked = self.checked.types.get(e.id, DYN)
        if checked.kind != "dyn":
            return checked
        path = self.path_of(e)
        if path and path[0] not in _ACCUMULATORS:
            decl = self._decl_at(path)
            if decl is not None:
                return decl
        return checked

    # paths and sizes

    def path_of(self, e: Expr) -> list[str]:
        if e.kind == "ident":
            stack = self.vars.get(e.name)
            if stack:
                return list(stack[-1].path or [])
        return list(self.paths.get(e.id, []))

    def _estimate_size(self, e: Expr) -> Size | None:
        path = self.path_of(e)
        if not path:
            return None
        return self.size_of(path)

    def size(self, e: Expr) -> Size | None:
        """computeSize."""
        if e.id in self.sizes:
            return self.sizes[e.id]
        if e.kind == "const":
            kind, literal = e.literal
            if kind in ("string", "bytes"):
                return (len(literal), len(literal))
            return (1, 1)
        if e.kind in ("list", "map"):
            count = len(e.args) if e.kind == "list" else len(e.args) // 2
            return (count, count)
        estimated = self._estimate_size(e)
        if estimated is not None:
            self.sizes[e.id] = estimated
            return estimated
        kind = self.type_of(e)
        if kind.kind in _SCALARS or (kind.kind == "opaque" and kind.name == "optional_type"
                                     and kind.elem is not None and kind.elem.kind in _SCALARS):
            return (1, 1)
        if e.kind == "ident":
            stack = self.vars.get(e.name)
            if stack and stack[-1].size is not None:
                return stack[-1].size
        return None

    def size_or_unknown(self, e: Expr) -> Size:
        return self.size(e) or self.unknown

    def entry(self, e: Expr) -> tuple[str, Size, Size] | None:
        if e.id in self.entries:
            return self.entries[e.id]
        if e.kind == "ident":
            stack = self.vars.get(e.name)
            if stack and stack[-1].entry is not None:
                return stack[-1].entry
        return None

    def _push(self, name: str, path: list[str] | None, size: Size | None,
              entry: tuple[str, Size, Size] | None = None) -> None:
        self.vars.setdefault(name, []).append(_Var(path, size, entry))

    def _pop(self, name: str) -> None:
        self.vars[name].pop()

    # the walk

    def cost(self, e: Expr | None) -> Cost:
        if e is None:
            return (0, 0)
        if e.kind == "const":
            return (0, 0)
        if e.kind == "ident":
            stack = self.vars.get(e.name)
            self.paths[e.id] = list(stack[-1].path or []) if stack else [e.name]
            return (1, 1)
        if e.kind == "select":
            return self._select(e)
        if e.kind == "call":
            return self._call(e)
        if e.kind == "list":
            return self._list(e)
        if e.kind == "map":
            return self._map(e)
        if e.kind == "struct":
            total: Cost = (0, 0)
            for value in e.args[1::2]:
                total = _add(total, self.cost(value))
            return _add(total, (_STRUCT_CREATE, _STRUCT_CREATE))
        return self._comprehension(e)

    def _select(self, e: Expr) -> Cost:
        operand = e.args[0]
        if e.test_only:  # apiserver's environment: presence tests cost nothing
            return self.cost(operand)
        total = self.cost(operand)
        if self.type_of(operand).kind in ("map", "struct"):
            total = _add(total, (1, 1))
        self.paths[e.id] = [*self.path_of(operand), e.name]
        return total

    def _list(self, e: Expr) -> Cost:
        total: Cost = (0, 0)
        item: Size = (_MAX, 0) if e.args else (0, 0)
        for element in e.args:
            total = _add(total, self.cost(element))
            item = _union(item, self.size_or_unknown(element))
        self.entries[e.id] = ("list", (1, 1), item)
        return _add(total, (_LIST_CREATE, _LIST_CREATE))

    def _map(self, e: Expr) -> Cost:
        total: Cost = (0, 0)
        keys: Size = (_MAX, 0) if e.args else (0, 0)
        values: Size = (_MAX, 0) if e.args else (0, 0)
        for key, value in zip(e.args[::2], e.args[1::2], strict=False):
            total = _add(_add(total, self.cost(key)), self.cost(value))
            keys = _union(keys, self.size_or_unknown(key))
            values = _union(values, self.size_or_unknown(value))
        self.entries[e.id] = ("map", keys, values)
        return _add(total, (_MAP_CREATE, _MAP_CREATE))

    def _container(self, e: Expr) -> str:
        entry = self.entry(e)
        if entry is not None:
            return entry[0]
        kind = self.type_of(e).kind
        return "list" if kind == "list" else "map" if kind in ("map", "struct") else ""

    def _comprehension(self, e: Expr) -> Cost:
        iter_range, init, condition, step, result = e.parts
        if iter_range.kind == "list" and not iter_range.args and condition.kind == "const" \
                and condition.literal == ("bool", 0) and e.accu_var not in _ACCUMULATORS:
            return self._bind(e)
        total = _add(self.cost(iter_range), self.cost(init))
        self._push(e.accu_var, self.path_of(init), self.size(init), self.entry(init))
        entry = self.entry(iter_range)
        container = self._container(iter_range)
        range_path = self.path_of(iter_range)
        if e.iter_var2:
            self._push(e.iter_var, [*range_path, "@indices" if container == "list"
                                    else "@keys"], entry[1] if entry else None)
            self._push(e.iter_var2, [*range_path, "@items" if container == "list"
                                     else "@values"], entry[2] if entry else None)
        elif container == "list":
            self._push(e.iter_var, [*range_path, "@items"], entry[2] if entry else None)
        else:
            self._push(e.iter_var, [*range_path, "@keys"], entry[1] if entry else None)
        loop = self.cost(condition)
        step_cost = self.cost(step)
        self._pop(e.iter_var)
        if e.iter_var2:
            self._pop(e.iter_var2)
        total = _add(total, self.cost(result))
        self._pop(e.accu_var)
        count = self.size_or_unknown(iter_range)
        total = _add(total, _mul(count, _add(step_cost, loop)))
        if init.kind == "const":
            size = self.size(init)
            if size is not None:
                self.sizes[e.id] = size
        elif init.kind in ("list", "map"):
            self.sizes[e.id] = count
            step_entry = self.entry(step)
            if step_entry is not None:
                self.entries[e.id] = step_entry
        return total

    def _bind(self, e: Expr) -> Cost:
        iter_range, init, _, _, result = e.parts
        total = _add(self.cost(iter_range), self.cost(init))
        self._push(e.accu_var, self.path_of(init), self.size(init), self.entry(init))
        total = _add(total, self.cost(result))
        self._pop(e.accu_var)
        size = self.size(result)
        if size is not None:
            self.sizes[e.id] = size
        entry = self.entry(result)
        if entry is not None:
            self.entries[e.id] = entry
        return total

    def _candidates(self, e: Expr, args: list[Expr]) -> list[str]:
        """The overloads the checker left, narrowed by the operands' schema types."""
        candidates = self.checked.overloads.get(e.id, [])
        if len(candidates) < 2:
            return candidates
        operands = ([e.target] if e.target is not None else []) + args
        kinds = [self.type_of(a).kind for a in operands]
        kept: list[str] = []
        for overload in candidates:
            if overload in ("index_list", "in_list"):
                wanted = ["list", "int"] if overload == "index_list" else ["dyn", "list"]
            elif overload in ("index_map", "in_map"):
                wanted = ["map", "dyn"] if overload == "index_map" else ["dyn", "map"]
            else:
                signature = _overload_kinds(overload)
                if signature is None:
                    kept.append(overload)
                    continue
                wanted = signature[0]
            if len(wanted) == len(kinds) and all(
                    _matches(k, w) for k, w in zip(kinds, wanted, strict=True)):
                kept.append(overload)
        return kept or candidates

    def _result_type(self, e: Expr, overloads: list[str], args: list[Expr]) -> None:
        """Record the call's type where the checker said dyn and one overload remains."""
        if self.checked.types.get(e.id, DYN).kind != "dyn":
            return
        if e.name in ("sum", "min", "max") and e.target is not None:
            elem = self.type_of(e.target).elem
            if elem is not None:
                self.types[e.id] = elem
            return
        if len(overloads) != 1:
            return
        overload = overloads[0]
        if overload == "index_list":
            elem = self.type_of(args[0]).elem
            if elem is not None:
                self.types[e.id] = elem
            return
        if overload == "index_map":
            value = self.type_of(args[0]).elem
            if value is not None:
                self.types[e.id] = value
            return
        signature = _overload_kinds(overload)
        if signature is not None and signature[1] not in ("list", "map"):
            self.types[e.id] = Decl(signature[1])

    def _call(self, e: Expr) -> Cost:
        args = e.args
        if e.name == "dyn" and args:
            cost = self.cost(args[0])
            size = self.size(args[0])
            if size is not None:
                self.sizes[e.id] = size
            entry = self.entry(args[0])
            if entry is not None:
                self.entries[e.id] = entry
            return _add((1, 1), cost)
        arg_costs = [self.cost(a) for a in args]
        overloads = self._candidates(e, args)
        if not overloads:
            return (0, 0)
        total: Cost = (0, 0)
        if e.target is not None:
            total = self.cost(e.target)
        self._result_type(e, overloads, args)
        function_cost: Cost = (_MAX, 0)
        result_size: Size | None = None
        for overload in overloads:
            cost, size = self._function_cost(e, overload, args, arg_costs)
            function_cost = _union(function_cost, cost)
            if size is not None:
                result_size = size if result_size is None else _union(result_size, size)
            if overload in ("index_list", "index_map") and args:
                entry = self.entry(args[0])
                result_size = entry[2] if entry else None
                self.paths[e.id] = [*self.path_of(args[0]),
                                    "@items" if overload == "index_list" else "@values"]
            if result_size is None:
                result_size = self.size(e)
        if result_size is not None:
            self.sizes[e.id] = result_size
        return _add(total, function_cost)

    def _elem_size(self, target: Expr) -> Size | None:
        """listElementNode's size: the items at the list's path."""
        path = self.path_of(target)
        if path and path[0] not in _ACCUMULATORS:
            return self.size_of([*path, "@items"])
        return None

    def _library_cost(self, e: Expr, overload: str, args: list[Expr]
                      ) -> tuple[Cost, Size | None] | None:
        """library/cost.go's EstimateCallCost, or None where it has none."""
        name, target = e.name, e.target
        if name in _LIST_SCANS and target is not None:
            target_type = self.type_of(target)
            if target_type.kind == "list":
                element: Cost = (1, 1)
                elem_kind = target_type.elem.kind if target_type.elem else "dyn"
                if elem_kind in ("string", "bytes"):
                    element = _add(element, _by_factor(self._elem_size(target) or self.unknown,
                                                       _STRING_TRAVERSAL))
                return _mul(self.size_or_unknown(target), element), None
            if name in ("indexOf", "lastIndexOf"):
                return _by_factor(self.size_or_unknown(target), _STRING_TRAVERSAL), None
            return _mul(self.size_or_unknown(target), (1, 1)), None
        if name == "url" and len(args) == 1:
            size = self.size_or_unknown(args[0])
            return _by_factor(size, _STRING_TRAVERSAL), size
        if name in ("lowerAscii", "upperAscii", "substring", "trim") and target is not None:
            size = self.size_or_unknown(target)
            return _by_factor(size, _STRING_TRAVERSAL), size
        if name == "replace" and target is not None and len(args) >= 2:
            size = self.size_or_unknown(target)
            return _by_factor(size, 2 * _STRING_TRAVERSAL), None
        if name == "split" and target is not None:
            size = self.size_or_unknown(target)
            return _by_factor(size, 2 * _STRING_TRAVERSAL), (0, size[1])
        if name == "join" and target is not None:
            list_size = self.size_or_unknown(target)
            joined = _mul(list_size, self._elem_size(target) or self.unknown)
            if args:
                separators = (max(list_size[0] - 1, 0), max(list_size[1] - 1, 0))
                joined = _add(joined, _mul(self.size_or_unknown(args[0]), separators))
            return _by_factor(joined, _STRING_TRAVERSAL), joined
        if name in ("find", "findAll") and target is not None and args:
            size = self.size_or_unknown(target)
            text = _by_factor(_add(size, (1, 1)), _STRING_TRAVERSAL)
            regex = _by_factor(self.size_or_unknown(args[0]), _REGEX_LENGTH)
            return _mul(text, regex), (0, size[1])
        if name == "validate" and target is not None and args:
            # format.go's Format.validate: the string against a regex as long as the
            # longest format's (cel.MaxNameFormatRegexSize)
            size = _by_factor(self.size_or_unknown(args[0]), _STRING_TRAVERSAL)
            return _by_factor(size, _MAX_NAME_FORMAT_REGEX_SIZE * _REGEX_LENGTH), None
        if name in _PARSES and args:
            return _by_factor(self.size_or_unknown(args[0]), _STRING_TRAVERSAL), None
        if name == "ip":
            if overload == "cidr_ip":
                return (1, 1), None
            if args:
                return _by_factor(self.size_or_unknown(args[0]), _STRING_TRAVERSAL), None
        if name == "ip.isCanonical" and args:
            return _by_factor(self.size_or_unknown(args[0]), 2 * _STRING_TRAVERSAL), None
        if name in _NOMINAL:
            return (1, 1), None
        if name in ("containsIP", "containsCIDR") and args:
            address: Size = (4, 16)
            cost = _by_factor(_add(address, address), _STRING_TRAVERSAL)
            if name == "containsCIDR":
                cost = _add(_add(cost, _by_factor(address, _STRING_TRAVERSAL)), (1, 1))
            if overload.endswith("_string"):
                cost = _add(cost, _by_factor(self.size_or_unknown(args[0]),
                                             _STRING_TRAVERSAL))
            return cost, None
        return None

    def _function_cost(self, e: Expr, overload: str, args: list[Expr],
                       arg_costs: list[Cost]) -> tuple[Cost, Size | None]:
        """functionCost: one overload's cost, with its arguments', and its result size."""
        arg_sum: Cost = (0, 0)
        for cost in arg_costs:
            arg_sum = _add(arg_sum, cost)
        library = self._library_cost(e, overload, args)
        if library is not None:
            return _add(library[0], arg_sum), library[1]
        target = e.target
        if overload == "string_to_bytes" and len(args) == 1:
            size = self.size_or_unknown(args[0])
            return _add(_by_factor(size, _STRING_TRAVERSAL), arg_sum), (size[0], size[1] * 4)
        if overload == "bytes_to_string" and len(args) == 1:
            size = self.size_or_unknown(args[0])
            return _add(_by_factor(size, _STRING_TRAVERSAL), arg_sum), (size[0] // 4, size[1])
        if overload in ("starts_with_string", "ends_with_string") and len(args) == 1:
            return _add(_by_factor(self.size_or_unknown(args[0]), _STRING_TRAVERSAL),
                        arg_sum), None
        if overload == "in_list" and len(args) == 2:
            return _add(self.size_or_unknown(args[1]), arg_sum), None
        if overload in ("matches", "matches_string") and target is not None and \
                len(args) == 1:
            text = _by_factor(_add(self.size_or_unknown(target), (1, 1)), _STRING_TRAVERSAL)
            regex = _by_factor(self.size_or_unknown(args[0]), _REGEX_LENGTH)
            return _add(_mul(text, regex), arg_sum), None
        if overload == "matches" and target is None and len(args) == 2:
            text = _by_factor(_add(self.size_or_unknown(args[0]), (1, 1)), _STRING_TRAVERSAL)
            regex = _by_factor(self.size_or_unknown(args[1]), _REGEX_LENGTH)
            return _add(_mul(text, regex), arg_sum), None
        if overload == "contains_string" and target is not None and len(args) == 1:
            text = _by_factor(self.size_or_unknown(target), _STRING_TRAVERSAL)
            sub = _by_factor(self.size_or_unknown(args[0]), _STRING_TRAVERSAL)
            return _add(_mul(text, sub), arg_sum), None
        if overload in ("logical_or", "logical_and"):
            lhs, rhs = arg_costs[0], arg_costs[1]
            return (lhs[0], _add(lhs, rhs)[1]), None
        if overload == "conditional":
            size = _union(self.size_or_unknown(args[1]), self.size_or_unknown(args[2]))
            left, right = self.entry(args[1]), self.entry(args[2])
            if left is not None and right is not None:
                self.entries[e.id] = (left[0], _union(left[1], right[1]),
                                      _union(left[2], right[2]))
            return _add(arg_costs[0], _union(arg_costs[1], arg_costs[2])), size
        if overload in ("add_string", "add_bytes", "add_list") and len(args) == 2:
            size = _add(self.size_or_unknown(args[0]), self.size_or_unknown(args[1]))
            left, right = self.entry(args[0]), self.entry(args[1])
            if left is not None and right is not None:
                self.entries[e.id] = (left[0], _union(left[1], right[1]),
                                      _union(left[2], right[2]))
            if overload == "add_list":
                return _add((1, 1), arg_sum), size
            return _add(_by_factor(size, _STRING_TRAVERSAL), arg_sum), size
        if overload in ("less_string", "greater_string", "less_equals_string",
                        "greater_equals_string", "less_bytes", "greater_bytes",
                        "less_equals_bytes", "greater_equals_bytes", "equals",
                        "not_equals"):
            left, right = self.size_or_unknown(args[0]), self.size_or_unknown(args[1])
            smallest = min(left[1], right[1])
            return _add(_by_factor((1 if smallest > 0 else 0, smallest), _STRING_TRAVERSAL),
                        arg_sum), None
        return _add((1, 1), arg_sum), None


def decl_size_of(root: Decl | None) -> SizeOf:
    """The apiextensions sizeEstimator: MaxElements of the schema type at a path."""
    def size_of(path: list[str]) -> Size | None:
        node = root
        for name in path[1:]:
            if node is None:
                return None
            if name in ("@items", "@values"):
                node = node.elem
            elif name == "@keys":
                node = node.key
            else:
                node = node.fields.get(name)
        if node is None:
            return None
        return (0, node.max_elements)
    return size_of


def estimate(checked: Checked, root: Decl | None) -> int:
    """The estimated worst-case cost (EstimateCost's Max) of a checked expression."""
    return Estimator(checked, root, decl_size_of(root)).cost(checked.expr)[1]


def _actual_size(value: Any) -> int:
    """actualSize: a string's, bytes', list's or map's size; 1 for other values."""
    if isinstance(value, (str, bytes, list, dict)):
        return len(value)
    return 1


def value_size_of(value: Any) -> Callable[[list[str]], Size]:
    """Sizes from a value: the largest of the values a path reaches; 0 where it reaches
    none."""
    def size_of(path: list[str]) -> Size:
        found = [value]
        for name in path[1:]:
            reached: list[Any] = []
            for item in found:
                if name == "@items" and isinstance(item, list):
                    reached.extend(item)
                elif name == "@values" and isinstance(item, dict):
                    reached.extend(item.values())
                elif name == "@keys" and isinstance(item, dict):
                    reached.extend(item)
                elif name == "@indices" and isinstance(item, list):
                    reached.append(0)
                elif isinstance(item, dict) and name in item:
                    reached.append(item[name])
            found = reached
            if not found:
                return (0, 0)
        largest = max((_actual_size(item) for item in found), default=0)
        return (largest, largest)
    return size_of


def cost_error_message(cost_name: str, cost: int, limit: int) -> str:
    """getCostErrorMessage."""
    factor = cost / limit
    if factor > 100.0:
        text = "more than 100x"
    elif factor < 1.5:
        text = f"{factor:f}x"
    else:
        text = f"{factor:.1f}x"
    return (f"{cost_name} exceeds budget by factor of {text} (try simplifying the rule, or "
            "adding maxItems, maxProperties, and maxLength where arrays, maps, and strings "
            "are declared)")


class TotalCost:
    """The estimated cost of all of a schema's rules (validation.go's TotalCost), with the
    four most expensive rules that make up at least 1% of the limit; `suppress_per_expression`
    when each expression's own limit is not checked (an unchanged schema)."""

    __slots__ = ("most_expensive", "suppress_per_expression", "total")

    def __init__(self, suppress_per_expression: bool = False) -> None:
        self.suppress_per_expression = suppress_per_expression
        self.total = 0
        self.most_expensive: list[tuple[str, int]] = []

    def observe(self, path: str, cost: int) -> None:
        """ObserveExpressionCost."""
        self.total = min(self.total + cost, _MAX)
        if cost < STATIC_ESTIMATED_CRD_COST_LIMIT // 100:
            return
        self.most_expensive.append((path, cost))
        self.most_expensive.sort(key=lambda entry: -entry[1])
        del self.most_expensive[4:]


def expression_cost(max_cost: int, cardinality: int | None, decl: Decl | None) -> int:
    """getExpressionCost: the estimate times how often the node can occur, bounded by the
    schemas above or else by how often its smallest value fits in a request."""
    if max_cost == 0:
        return 0
    times = cardinality if cardinality is not None else \
        max_cardinality(decl.min_size if decl is not None else 1)
    return min(max_cost * times, _MAX)


class CallCost:
    """The runtime cost of one expression, per value: the paths whose sizes the estimate
    reads are found once, and each distinct set of their sizes is costed once."""

    __slots__ = ("_cache", "checked", "max_cost", "paths", "root",
                 "runtime_cost_without_sizes")

    def __init__(self, checked: Checked, root: Decl | None) -> None:
        self.checked = checked
        self.root = root
        schema_sizes = decl_size_of(root)
        paths: dict[tuple[str, ...], None] = {}

        def recording(path: list[str]) -> Size | None:
            size = schema_sizes(path)
            if size is not None:
                paths[tuple(path)] = None
            return size
        self.max_cost = Estimator(checked, root, recording).cost(checked.expr)[1]
        self.paths = tuple(paths)
        self.runtime_cost_without_sizes = 0 if paths else Estimator(
            checked, root, lambda path: None, (1, 1)).cost(checked.expr)[1]
        self._cache: dict[tuple[int, ...], int] = {}

    def of(self, value: Any) -> int:
        """The cost of a call with `value` as self."""
        if not self.paths:
            return self.runtime_cost_without_sizes
        actual = value_size_of(value)
        sizes = tuple(actual(list(path))[1] for path in self.paths)
        cost = self._cache.get(sizes)
        if cost is None:
            known = dict(zip(self.paths, sizes, strict=True))

            def size_of(path: list[str]) -> Size | None:
                size = known.get(tuple(path))
                return None if size is None else (size, size)
            # what the estimate cannot size (a call's result) is taken as no larger than
            # the largest value the expression reads
            largest = max(1, *sizes)
            cost = Estimator(self.checked, self.root, size_of, (largest, largest)).cost(
                self.checked.expr)[1]
            if len(self._cache) >= 256:
                self._cache.clear()
            self._cache[sizes] = cost
        return cost


def activation_cost(checked: Checked, data: dict[str, Any]) -> int:
    """The runtime cost of one call of an expression whose variables have no schema (a
    ValidatingAdmissionPolicy's): its estimate with the sizes of the values in `data`,
    each path read from the variable it starts at; what it cannot size is taken as no
    larger than the largest value it reads."""
    seen = [1]

    def size_of(path: list[str]) -> Size | None:
        if not path or path[0] not in data:
            return None
        size = value_size_of(data[path[0]])(path)
        seen.append(size[1])
        return size
    Estimator(checked, None, size_of, (1, 1)).cost(checked.expr)
    largest = max(seen)
    return Estimator(checked, None, size_of, (largest, largest)).cost(checked.expr)[1]
