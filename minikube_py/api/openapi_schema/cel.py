"""x-kubernetes-validations: each node's CEL rules compiled once per schema and run against
a value, and its old value on update, as apiextensions-apiserver's schema/cel package
does (validation.go's Validator, compilation.go's Compile), with cel-expr-python as the
CEL implementation and cel_library.py's Kubernetes functions.

`self` and `oldSelf` are declared dyn, not typed from the schema as upstream's DeclType
does: a rule that upstream's type checker refuses may compile here and fail at run time.
Costs follow upstream's model (cel_cost.py): each rule's estimated cost, times how often
its node can occur, is checked when the definition is written, and each call is charged
before it runs (cel-expr-python has no cost tracker) as its estimate with the value's own
sizes, against the per-call limit and the per-object budget."""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from cel_expr_python import cel
from cel_expr_python.ext import ext_bindings, ext_optional, ext_strings
from google.protobuf import duration_pb2, timestamp_pb2

from minikube_py.api.validation import (
    FieldError,
    GoValue,
    duplicate,
    forbidden,
    invalid,
    not_supported,
    required,
)

from . import cel_format, cel_library, cel_objects
from .cel_cost import (
    STATIC_ESTIMATED_COST_LIMIT,
    CallCost,
    Decl,
    TotalCost,
    _fields,
    cost_error_message,
    decode,
    escape,
    expression_cost,
    schema_decl,
)
from .cel_library import STRING_LITERAL

if TYPE_CHECKING:
    from .compiled import Node

# k8s.io/apiserver/pkg/apis/cel/config.go
PER_CALL_LIMIT = 1_000_000
RUNTIME_CEL_COST_BUDGET = 10_000_000
MAX_EVALUATED_MESSAGE_EXPRESSION_SIZE_BYTES = 5 * 1024
BUDGET_EXHAUSTED = ("validation failed due to running out of cost budget, no further "
                    "validation rules will be run")
BLOCKING_DETAIL = ("some validation rules were not checked because the object was invalid; "
                   "correct the existing errors to complete validation")

_ENV: Any = None
# an optionalOldSelf rule compiles bound to oldSelf = optional of these two variables
_OLD = "__minikube_old_self"
_HAS_OLD = "__minikube_has_old_self"
_OLD_SELF = re.compile(r"\boldSelf\b")
_STATUS_PREFIX = re.compile(r"^[A-Z_]+: ")
_STATUS_SUFFIX = re.compile(r" \[[A-Z_]+\]$")
_NO_SUCH_KEY = re.compile(r'^Key not found in map : "?(.*?)"?$')


# string formats whose values rules see as bytes, durations or timestamps
CEL_TYPED_FORMATS = frozenset(("byte", "duration", "date", "date-time"))


# strfmt.ParseDuration's units, in nanoseconds
_DURATION_UNITS = {"ns": 1, "us": 1_000, "µs": 1_000, "ms": 1_000_000, "s": 10**9,
                   "m": 60 * 10**9, "h": 3600 * 10**9, "d": 86400 * 10**9,
                   "w": 7 * 86400 * 10**9}
_DURATION_PART = re.compile(r"([0-9]+(?:\.[0-9]*)?)(ns|us|µs|ms|s|m|h|d|w)")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def _duration(text: str) -> duration_pb2.Duration | None:
    """strfmt.ParseDuration: Go durations, plus d and w units; as the protobuf message
    cel-expr-python takes for a CEL duration."""
    body = text.strip()
    sign = -1 if body.startswith("-") else 1
    body = body.lstrip("+-")
    if body == "0":
        return duration_pb2.Duration()
    nanos, pos = 0, 0
    for match in _DURATION_PART.finditer(body):
        if match.start() != pos:
            return None
        nanos += round(float(match.group(1)) * _DURATION_UNITS[match.group(2)])
        pos = match.end()
    if pos != len(body) or pos == 0:
        return None
    seconds, rest = divmod(nanos, 10**9)
    return duration_pb2.Duration(seconds=sign * seconds, nanos=sign * rest)


def _timestamp(text: str, date_only: bool) -> timestamp_pb2.Timestamp | None:
    try:
        if date_only:
            if not _DATE.match(text):
                return None
            parsed = datetime.fromisoformat(text).replace(tzinfo=UTC)
        else:
            parsed = datetime.fromisoformat(text.replace("z", "Z").replace("Z", "+00:00"))
    except ValueError:
        return None
    stamp = timestamp_pb2.Timestamp()
    stamp.FromDatetime(parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC))
    return stamp


def _typed_string(fmt: str, text: str) -> Any:
    """UnstructuredToVal's formatted strings: byte as bytes, duration, date and date-time
    as CEL durations and timestamps; a string that does not parse stays a string."""
    converted: Any = None
    if fmt == "byte":
        try:
            converted = base64.b64decode(text, validate=True)
        except (ValueError, binascii.Error):
            converted = None
    elif fmt == "duration":
        converted = _duration(text)
    else:
        converted = _timestamp(text, fmt == "date")
    return text if converted is None else converted


def to_cel(node: Node | None, value: Any) -> Any:
    """A value as rules see it (UnstructuredToVal): object properties under their escaped
    names, numbers as doubles, formatted strings as their CEL types."""
    if node is None or not node.cel_convert:
        return value
    if isinstance(value, dict):
        if node.properties:
            names = node.cel_names
            return {names.get(key, key): to_cel(node.properties.get(key), item)
                    for key, item in value.items()}
        if node.additional is not None:
            return {key: to_cel(node.additional, item) for key, item in value.items()}
    elif isinstance(value, list) and node.items is not None:
        return [to_cel(node.items, item) for item in value]
    elif node.type == "number" and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    elif isinstance(value, str) and node.format in CEL_TYPED_FORMATS:
        return _typed_string(node.format, value)
    return value


def environment() -> Any:
    """The one CEL environment every rule compiles in: self and oldSelf, the strings
    extension and the Kubernetes libraries (format's optionals need its source rewrite,
    cel_format.optional_results, before a compile)."""
    global _ENV
    if _ENV is None:
        _ENV = cel.NewEnv(variables={"self": cel.Type.DYN, "oldSelf": cel.Type.DYN,
                                     _OLD: cel.Type.DYN, _HAS_OLD: cel.Type.BOOL},
                          extensions=[ext_strings.ExtStrings(), ext_optional.ExtOptional(),
                                      ext_bindings.ExtBindings()],
                          functions=(cel_library.functions() + cel_objects.functions()
                                     + cel_format.functions()))
    return _ENV


def _status_text(text: str) -> str:
    """A cel-cpp status message without its code, in cel-go's words where they differ."""
    text = _STATUS_SUFFIX.sub("", _STATUS_PREFIX.sub("", text.strip()))
    match = _NO_SUCH_KEY.match(text)
    if match:
        return f"no such key: {match.group(1)}"
    if text.startswith("No matching overloads found"):
        return "no such overload"
    if text == "divide by zero":
        return "division by zero"
    return text


_EXPR_KINDS = (4, 5, 6, 7, 8, 9)  # ident, select, call, list, struct, comprehension
# the Expr fields of each compound expression's message (cel/expr/syntax.proto)
_CHILD_EXPRS = {6: (1, 3), 7: (1,), 9: (2, 4, 5, 6, 7)}


def _selections(expr: bytes, positions: dict[int, int],
                found: list[tuple[list[str], int]]) -> list[str] | None:
    """Walk a serialized Expr: every chain of field selections rooted at `self` or
    `oldSelf` goes into `found` as (field names, offset of its last selection). Returns
    the chain `expr` itself is, if any, for its parent select to extend."""
    fields = _fields(expr)
    node_id = next((v for n, v in fields if n == 2 and isinstance(v, int)), 0)
    for number, value in fields:
        if number not in _EXPR_KINDS or not isinstance(value, bytes):
            continue
        parts = _fields(value)
        if number == 4:
            name = next((v for n, v in parts if n == 1), b"")
            return [] if name in (b"self", b"oldSelf") else None
        if number == 5:
            operand = next((v for n, v in parts if n == 1 and isinstance(v, bytes)), b"")
            field = next((v for n, v in parts if n == 2 and isinstance(v, bytes)), b"")
            chain = _selections(operand, positions, found)
            if chain is None:
                return None
            chain = [*chain, field.decode()]
            found.append((chain, positions.get(node_id, 0)))
            return chain
        if number == 8:  # struct: its entries' map keys and values
            for n, entry in parts:
                if n == 2 and isinstance(entry, bytes):
                    for m, child in _fields(entry):
                        if m in (3, 4) and isinstance(child, bytes):
                            _selections(child, positions, found)
            continue
        for n, child in parts:
            if n in _CHILD_EXPRS.get(number, ()) and isinstance(child, bytes):
                _selections(child, positions, found)
    return None


def undefined_field(program: Any, expression: str, schema: dict[str, Any],
                    is_root: bool) -> str:
    """The checker's `undefined field` error for the first selection from `self` or
    `oldSelf` of a property the schema does not declare, "" if none (self is declared
    dyn here, so the compiler cannot see this; upstream types self from the schema)."""
    wrapped = dict((n, v) for n, v in _fields(program.serialize()) if n == 2)
    checked = wrapped.get(2)
    if not isinstance(checked, bytes):
        return ""
    parts = _fields(checked)
    positions: dict[int, int] = {}
    for number, value in parts:
        if number == 5 and isinstance(value, bytes):
            for n, entry in _fields(value):
                if n == 4 and isinstance(entry, bytes):
                    pair = dict(_fields(entry))
                    positions[int(pair.get(1, 0))] = int(pair.get(2, 0))
    found: list[tuple[list[str], int]] = []
    for number, value in parts:
        if number == 4 and isinstance(value, bytes):
            _selections(value, positions, found)
    for chain, _ in found:
        node, root = schema, is_root
        for depth, name in enumerate(chain):
            if node.get("x-kubernetes-preserve-unknown-fields") or node.get(
                    "x-kubernetes-embedded-resource") or node.get("type") != "object":
                break
            properties = {escape(key): sub for key, sub in
                          (node.get("properties") or {}).items()}
            additional = node.get("additionalProperties")
            if name in properties:
                node, root = properties[name], False
            elif root and name in ("apiVersion", "kind", "metadata"):
                break
            elif isinstance(additional, dict):
                node, root = additional, False
            elif properties:
                offset = _offset_of(chain[:depth + 1], found)
                line = expression.count("\n", 0, offset) + 1
                start = expression.rfind("\n", 0, offset) + 1
                column = offset - start
                source = expression.splitlines()[line - 1] if expression else ""
                return (f"compilation failed: ERROR: <input>:{line}:{column + 1}: undefined "
                        f"field '{name}'\n | {source}\n | {'.' * column}^")
            else:
                break
    return ""


def _offset_of(chain: list[str], found: list[tuple[list[str], int]]) -> int:
    """The source offset of the selection ending `chain`."""
    return next((offset for names, offset in found if names == chain), 0)


@dataclass(slots=True)
class CompiledRule:
    """One x-kubernetes-validations entry compiled (compilation.go's CompilationResult)."""

    rule: str
    message: str
    message_expression: str
    reason: str
    field_path: str  # normalized, "" when the rule has none
    uses_old_self: bool
    optional_old_self: bool  # oldSelf is an optional, and the rule runs on create too
    program: Any
    message_program: Any
    error: str  # compilation error detail, "" when compiled
    message_error: str
    cost: CallCost | None  # the rule's cost model, and its messageExpression's
    message_cost: CallCost | None

    def error_string(self) -> str:
        """ruleErrorString: the message if any, else the rule."""
        return self.message.strip() or self.rule.strip()

    def message_or_default(self) -> str:
        """ruleMessageOrDefault."""
        return self.message.strip() or f"failed rule: {self.rule.strip()}"


def _compile(expression: str, want: Any, want_name: str) -> tuple[Any, str]:
    try:
        program = environment().compile(cel_format.optional_results(expression))
    except RuntimeError as error:
        return None, f"compilation failed: {_status_text(str(error))}"
    result = program.return_type()
    if result != want and result != cel.Type.DYN:
        return None, f"cel expression must evaluate to a {want_name}"
    return program, ""


def uses_old_self(expression: str) -> bool:
    """Whether an expression names oldSelf outside its string literals."""
    return bool(_OLD_SELF.search(STRING_LITERAL.sub("''", expression)))


def compile_rule(validation: dict[str, Any], node: Node | None = None,
                 decl: Decl | None = None) -> CompiledRule:
    """Compile one rule and its messageExpression, and normalize its fieldPath; `decl`
    is the type self has, for their costs."""
    rule = validation.get("rule") or ""
    message_expression = validation.get("messageExpression") or ""
    optional_old_self = bool(validation.get("optionalOldSelf")) and uses_old_self(rule)
    source = (f"cel.bind(oldSelf, {_HAS_OLD} ? optional.of({_OLD}) : optional.none(), "
              f"({rule}\n))" if optional_old_self else rule)
    program, error = _compile(source, cel.Type.BOOL, "bool") if rule else (None, "")
    message_program, message_error = (
        _compile(message_expression, cel.Type.STRING, "string") if message_expression
        else (None, ""))
    if message_error == "cel expression must evaluate to a string":
        message_error = "messageExpression must evaluate to a string"
    field_path = validation.get("fieldPath") or ""
    normalized = ""
    if field_path and node is not None:
        normalized, path_error = normalize_field_path(field_path, node)
        if path_error:
            error = error or f"fieldPath {field_path!r}: {path_error}"
    cost = CallCost(decode(program), decl) if program is not None else None
    message_cost = CallCost(decode(message_program), decl) \
        if message_program is not None else None
    return CompiledRule(rule, validation.get("message") or "", message_expression,
                        validation.get("reason") or "", normalized,
                        uses_old_self(rule), optional_old_self, program, message_program, error,
                        message_error, cost, message_cost)


def _unescape_single_quote(text: str) -> str:
    escapes = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v",
               "'": "'", "\\": "\\"}

    def one(match: re.Match[str]) -> str:
        if match.group(1) not in escapes:
            raise ValueError(f"invalid string literal: invalid escape char {match.group(0)}")
        return escapes[match.group(1)]
    return re.sub(r"\\(.)", one, text)


def _path_tokens(path: str) -> list[str]:
    tokens: list[str] = []
    pos = 0
    while pos < len(path):
        char = path[pos]
        if char == "'":
            end = pos + 1
            while end < len(path) and not (path[end] == "'" and path[end - 1] != "\\"):
                end += 1
            tokens.append(path[pos:end + 1])
            pos = end + 1
        elif char in ".[]":
            tokens.append(char)
            pos += 1
        else:
            end = pos
            while end < len(path) and path[end] not in ".[]":
                end += 1
            tokens.append(path[pos:end])
            pos = end
    return tokens


def normalize_field_path(path: str, node: Node) -> tuple[str, str]:
    """ValidFieldPath: a JSON path of field and map accessors valid for the schema, as a
    field path, or the reason it is not."""
    tokens = _path_tokens(path)
    out = ""
    index = 0

    def step(name: str, current: Node) -> tuple[Node | None, str]:
        nonlocal out
        if current.properties:
            out = f"{out}.{name}" if out else name
            return current.properties.get(name), "does not refer to a valid field"
        if current.additional is not None:
            out = f"{out}[{name}]"
            return current.additional, ""
        return None, "does not refer to a valid field"

    current: Node | None = node
    while index < len(tokens):
        token = tokens[index]
        if token == "[":
            if index + 1 >= len(tokens):
                return "", "unexpected end of JSON path"
            quoted = tokens[index + 1]
            if len(quoted) < 2 or quoted[0] != "'" or quoted[-1] != "'":
                return "", f"expected single quoted string but got {quoted}"
            try:
                name = _unescape_single_quote(quoted[1:-1])
            except ValueError as error:
                return "", str(error)
            if index + 2 >= len(tokens):
                return "", "unexpected end of JSON path"
            if tokens[index + 2] != "]":
                return "", f"expected ] but got {tokens[index + 2]}"
            index += 3
        elif token == ".":
            if index + 1 >= len(tokens):
                return "", "unexpected end of JSON path"
            name = tokens[index + 1]
            index += 2
        else:
            return "", f"expected [ or . but got: {token}"
        assert current is not None
        current, problem = step(name, current)
        if current is None:
            return "", problem or "does not refer to a valid field"
    return out, ""


_REASONS = ["FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid",
            "FieldValueRequired"]
_NEWLINES = re.compile(r"[\n\r]+")


def _go_rule(validation: dict[str, Any]) -> GoValue:
    """A ValidationRule as Go's %#v prints it in a field error (a set pointer field
    prints an address upstream; a fixed one here)."""
    def pointer(kind: str, key: str) -> str:
        return f"(*{kind})(nil)" if validation.get(key) is None else f"(*{kind})(0xc000000000)"
    return GoValue(
        f"apiextensions.ValidationRule{{Rule:{_go_quote(validation.get('rule') or '')}, "
        f"Message:{_go_quote(validation.get('message') or '')}, "
        f"MessageExpression:{_go_quote(validation.get('messageExpression') or '')}, "
        f"Reason:{pointer('apiextensions.FieldValueErrorReason', 'reason')}, "
        f"FieldPath:{_go_quote(validation.get('fieldPath') or '')}, "
        f"OptionalOldSelf:{pointer('bool', 'optionalOldSelf')}}}")


def _shape_errors(validation: dict[str, Any], node: Node | None, at: str) -> list[FieldError]:
    """The checks of one rule's fields that come before compiling it."""
    errors: list[FieldError] = []
    rule = (validation.get("rule") or "").strip()
    message = validation.get("message") or ""
    if not rule:
        errors.append(required(f"{at}.rule", "rule is not specified"))
    elif message and not message.strip():
        errors.append(invalid(f"{at}.message", message, "message must be non-empty if specified"))
    elif _NEWLINES.search(message.strip()):
        errors.append(invalid(f"{at}.message", message, "message must not contain line breaks"))
    elif _NEWLINES.search(rule) and not message.strip():
        errors.append(required(f"{at}.message",
                               "message must be specified if rule contains line breaks"))
    expression = validation.get("messageExpression") or ""
    if expression and not expression.strip():
        errors.append(required(f"{at}.messageExpression",
                               "messageExpression must be non-empty if specified"))
    reason = validation.get("reason")
    if reason is not None and reason not in _REASONS:
        errors.append(not_supported(f"{at}.reason", reason, _REASONS))
    field_path = validation.get("fieldPath") or ""
    if field_path and not field_path.strip():
        errors.append(invalid(f"{at}.fieldPath", field_path,
                              "fieldPath must be non-empty if specified"))
    if _NEWLINES.search(field_path):
        errors.append(invalid(f"{at}.fieldPath", field_path,
                              "fieldPath must not contain line breaks"))
    if field_path and node is not None and normalize_field_path(field_path, node)[1]:
        errors.append(invalid(f"{at}.fieldPath", field_path, "fieldPath must be a valid path"))
    return errors


def rule_shape_errors(validations: list[dict[str, Any]], node: Node | None,
                      path: str) -> list[FieldError]:
    """The checks of a node's x-kubernetes-validations fields (rule, message, reason,
    fieldPath) that come before compiling, as upstream's schema errors."""
    errors: list[FieldError] = []
    for index, validation in enumerate(validations):
        errors += _shape_errors(validation, node,
                                f"{path}.x-kubernetes-validations[{index}]")
    return errors


def rule_compile_errors(validations: list[dict[str, Any]], path: str,
                        uncorrelatable: str = "", schema: dict[str, Any] | None = None,
                        is_root: bool = False, cardinality: int | None = None,
                        total: TotalCost | None = None) -> list[FieldError]:
    """Each rule and messageExpression compiled, as upstream's CEL errors, a selection
    of a field `schema` does not declare among them; `uncorrelatable` is the path of the
    list or atomic map above the node, if any, where a rule may not use oldSelf. Each
    expression's estimated cost, times `cardinality` (how often the node can occur, None
    without bound), must stay within the per-expression limit, and adds to `total`."""
    errors: list[FieldError] = []
    decl = schema_decl(schema, is_root or bool(schema.get("x-kubernetes-embedded-resource"))) \
        if schema is not None else None
    for index, validation in enumerate(validations):
        at = f"{path}.x-kubernetes-validations[{index}]"
        compiled = compile_rule(validation, decl=decl)
        if schema is not None and compiled.program is not None and \
                not compiled.optional_old_self:
            compiled.error = undefined_field(compiled.program, compiled.rule, schema, is_root)
        if schema is not None and compiled.message_program is not None:
            compiled.message_error = undefined_field(
                compiled.message_program, compiled.message_expression, schema, is_root)
        if not compiled.error and compiled.cost is not None:
            cost = expression_cost(compiled.cost.max_cost, cardinality, decl)
            if cost > STATIC_ESTIMATED_COST_LIMIT and not (
                    total is not None and total.suppress_per_expression):
                errors.append(forbidden(f"{at}.rule", cost_error_message(
                    "estimated rule cost", cost, STATIC_ESTIMATED_COST_LIMIT)))
            if total is not None:
                total.observe(f"{at}.rule", cost)
        if compiled.error:
            errors.append(invalid(f"{at}.rule", _go_rule(validation), compiled.error))
        if compiled.message_error:
            errors.append(invalid(f"{at}.messageExpression", _go_rule(validation),
                                  compiled.message_error))
        elif not compiled.error and compiled.message_cost is not None:
            cost = expression_cost(compiled.message_cost.max_cost, cardinality, decl)
            if cost > STATIC_ESTIMATED_COST_LIMIT and not (
                    total is not None and total.suppress_per_expression):
                errors.append(forbidden(f"{at}.messageExpression", cost_error_message(
                    "estimated messageExpression cost", cost, STATIC_ESTIMATED_COST_LIMIT)))
            if total is not None:
                total.observe(f"{at}.messageExpression", cost)
        if compiled.uses_old_self:
            if uncorrelatable:
                errors.append(invalid(
                    f"{at}.rule", compiled.rule, "oldSelf cannot be used on the "
                    f"uncorrelatable portion of the schema within {uncorrelatable}"))
        elif validation.get("optionalOldSelf") is not None:
            errors.append(invalid(f"{at}.optionalOldSelf", validation["optionalOldSelf"],
                                  "may not be set if oldSelf is not used in rule"))
    return errors


class Budget:
    """The runtime cost budget left for one object's validation."""

    __slots__ = ("remaining",)

    def __init__(self, remaining: int) -> None:
        self.remaining = remaining


def _field_error(path: str, value_type: str, detail: str, reason: str) -> FieldError:
    """fieldErrorForReason."""
    if reason == "FieldValueForbidden":
        return forbidden(path, detail)
    if reason == "FieldValueRequired":
        return required(path, detail)
    if reason == "FieldValueDuplicate":
        return duplicate(path, value_type)
    return invalid(path, value_type, detail)


def _resource_self(value: Any) -> Any:
    """A resource root as a rule sees it: metadata only with name and generateName."""
    if not isinstance(value, dict) or "metadata" not in value:
        return value
    meta = value["metadata"]
    out = dict(value)
    out["metadata"] = ({k: meta[k] for k in ("name", "generateName") if k in meta}
                       if isinstance(meta, dict) else meta)
    return out


def spent(cost: int) -> int:
    """What a call costs the budget: cel-go stops one just past the per-call limit, and
    the cost so far is charged before the limit's error is reported."""
    return min(cost, PER_CALL_LIMIT + 1)


def _message(rule: CompiledRule, data: dict[str, Any], budget: Budget) -> tuple[str, str]:
    """evalMessageExpression: the evaluated message, or why the rule's stops all."""
    cost = rule.message_cost.of(data["self"]) if rule.message_cost is not None else 0
    if spent(cost) > budget.remaining:
        return "", ("messageExpression evaluation failed due to running out of cost budget, "
                    "no further validation rules will be run")
    if cost > PER_CALL_LIMIT:
        return "", ("no further validation rules will be run due to call cost exceeds "
                    f"limit for messageExpression: {_go_quote(rule.message_expression)}")
    budget.remaining -= cost
    try:
        result = rule.message_program.eval(data=data)
    except RuntimeError:
        return "", ""
    if result.type() != cel.Type.STRING:
        return "", ""
    text = result.value().strip()
    if not text or len(text) > MAX_EVALUATED_MESSAGE_EXPRESSION_SIZE_BYTES or "\n" in text \
            or "\r" in text:
        return "", ""
    return text, ""


def _go_quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def evaluate_rules(rules: list[CompiledRule], node: Node, value: Any, path: str, old: Any,
                   has_old: bool, is_root: bool, should_ratchet: Callable[[], bool],
                   budget: Budget, errors: list[FieldError], warnings: list[str]) -> bool:
    """validateExpressions: run one node's rules; False when no further rules may run."""
    value_type = node.type
    path = path or "<nil>"
    if budget.remaining <= 0:
        errors.append(invalid(path, value_type, BUDGET_EXHAUSTED))
        return False
    self_value = to_cel(node, _resource_self(value) if is_root else value)
    data: dict[str, Any] = {"self": self_value}
    if has_old:
        data["oldSelf"] = to_cel(node, _resource_self(old) if is_root else old)
    # one activation for all the node's rules: the value converts to CEL once
    activation = environment().Activation(data=data)
    optional_activation = None
    for rule in rules:
        if rule.error:
            errors.append(invalid(path, value_type, f"rule compile error: {rule.error}"))
            continue
        if rule.program is None or (rule.uses_old_self and not has_old and
                                    not rule.optional_old_self):
            continue
        cost = rule.cost.of(self_value) if rule.cost is not None else 0
        if spent(cost) > budget.remaining:
            errors.append(invalid(path, value_type, BUDGET_EXHAUSTED))
            return False
        if cost > PER_CALL_LIMIT:
            errors.append(invalid(path, value_type, (
                "'operation cancelled: actual cost limit exceeded': no further validation "
                f"rules will be run due to call cost exceeds limit for rule: "
                f"{rule.error_string()}")))
            return False
        budget.remaining -= cost
        try:
            if rule.optional_old_self:
                if optional_activation is None:
                    optional_activation = environment().Activation(data={
                        "self": self_value, _OLD: data.get("oldSelf"), _HAS_OLD: has_old})
                result = rule.program.eval(optional_activation)
            else:
                result = rule.program.eval(activation)
            kind = result.type()
            text = str(result.value()) if kind == cel.Type.ERROR else ""
        except RuntimeError as error:
            kind, text = cel.Type.ERROR, str(error)
        if kind == cel.Type.ERROR:
            problem = _status_text(text)
            if problem.startswith("no such overload"):
                errors.append(invalid(path, value_type, (
                    f"'{problem}': call arguments did not match a supported operator, "
                    f"function or macro signature for rule: {rule.error_string()}")))
            else:
                errors.append(invalid(path, value_type,
                                      f"{problem} evaluating rule: {rule.error_string()}"))
            continue
        if kind == cel.Type.BOOL and result.value() is True:
            continue
        at = path if not rule.field_path else rule.field_path if path == "<nil>" else \
            f"{path}.{rule.field_path}"
        detail = ""
        if rule.message_program is not None:
            detail, stop = _message(rule, data, budget)
            if stop:
                error = invalid(at, value_type, stop)
                if not rule.uses_old_self and should_ratchet():
                    warnings.append(str(error))
                else:
                    errors.append(error)
                return False
        error = _field_error(at, value_type, detail or rule.message_or_default(), rule.reason)
        if not rule.uses_old_self and should_ratchet():
            warnings.append(str(error))
        else:
            errors.append(error)
    return True


def _map_list_key(node: Node, item: Any) -> tuple[str, ...] | None:
    if not isinstance(item, dict):
        return None
    return tuple(repr(item.get(k)) for k in node.list_map_keys)


def validate_cel(node: Node, value: Any, path: str, old: Any, has_old: bool,
                 pair: tuple[Any, Any] | None, is_root: bool, budget: Budget,
                 errors: list[FieldError], warnings: list[str]) -> bool:
    """Validator.validate: a node's rules, then its children's; `pair` is the nearest
    correlated (new, old) values, whose equality ratchets errors. False when the budget
    is spent."""
    if value is None or not node.cel_below:
        return True
    if has_old:
        pair = (value, old)
    if node.validations:
        def should_ratchet() -> bool:
            return pair is not None and pair[0] == pair[1]
        if not evaluate_rules(node.cel_rules(is_root), node, value, path, old, has_old,
                              is_root or node.embedded, should_ratchet, budget, errors,
                              warnings):
            return False
    for sub in node.all_of:
        if sub.cel_below and not validate_cel(sub, value, path, old, has_old, pair, is_root,
                                              budget, errors, warnings):
            return False
    if isinstance(value, dict):
        correlatable = has_old and isinstance(old, dict) and node.map_type != "atomic"
        for key, sub in node.cel_properties:
            if key not in value:
                continue
            child_has_old = correlatable and key in old
            if not validate_cel(sub, value[key], f"{path}.{key}" if path else key,
                                old[key] if child_has_old else None, child_has_old, pair,
                                sub.embedded, budget, errors, warnings):
                return False
        additional = node.additional
        if additional is not None and additional.cel_below:
            for key, item in value.items():
                if key in node.properties:
                    continue
                child_has_old = correlatable and key in old
                if not validate_cel(additional, item, f"{path}[{key}]",
                                    old[key] if child_has_old else None, child_has_old, pair,
                                    additional.embedded, budget, errors, warnings):
                    return False
    elif isinstance(value, list) and node.items is not None and node.items.cel_below:
        items = node.items
        olds: dict[tuple[str, ...], Any] = {}
        if has_old and isinstance(old, list) and node.list_type == "map" and \
                node.list_map_keys:
            for item in old:
                key = _map_list_key(node, item)
                if key is not None:
                    olds[key] = item
        for index, item in enumerate(value):
            key = _map_list_key(node, item) if olds else None
            child_has_old = key is not None and key in olds
            if not validate_cel(items, item, f"{path}[{index}]",
                                olds[key] if child_has_old else None, child_has_old, pair,
                                items.embedded, budget, errors, warnings):
                return False
    return True
