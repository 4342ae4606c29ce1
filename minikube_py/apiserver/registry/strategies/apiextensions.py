"""apiextensions.k8s.io: the CustomResourceDefinition strategy.

Upstream: k8s.io/apiextensions-apiserver/pkg/registry/customresourcedefinition/strategy.go
(PrepareForCreate, PrepareForUpdate) and pkg/apis/apiextensions/validation/validation.go
(ValidateCustomResourceDefinition and its update rules), with v1's defaults
(pkg/apis/apiextensions/v1/defaults.go). Its status conditions (NamesAccepted,
Established) are not written here but by the API server's naming and establishing
controllers (apiserver/apiextensions/controller.py), as upstream's.
"""

from __future__ import annotations

import copy
from typing import Any

from minikube_py.api import Obj
from minikube_py.api.customresources import is_established
from minikube_py.api.openapi_schema.compiled import compile_pattern
from minikube_py.api.openapi_schema.structural import schema_errors
from minikube_py.api.validation import (
    FieldError,
    duplicate,
    forbidden,
    invalid,
    not_supported,
    required,
    too_many,
    validate_dns1035_label,
    validate_dns1123_subdomain,
)
from minikube_py.apiserver.registry.strategies.admissionregistration import (
    validate_webhook_service,
    validate_webhook_url,
)
from minikube_py.apiserver.registry.strategies.base import (
    KindStrategy,
    bump_generation,
    spec_changed,
)

SCOPES = ["Cluster", "Namespaced"]
CONVERSION_STRATEGIES = ["None", "Webhook"]
# The ConversionReview versions this server sends (acceptedConversionReviewVersions).
ACCEPTED_REVIEW_VERSIONS = ("v1", "v1beta1")
PRINTER_COLUMN_TYPES = ["array", "boolean", "date", "integer", "number", "object", "string"]


def storage_version(crd: Obj) -> str:
    """The name of the version marked storage (validation makes it exactly one)."""
    for version in (crd.get("spec") or {}).get("versions") or []:
        if isinstance(version, dict) and version.get("storage"):
            return str(version.get("name", ""))
    return ""


def _dict(value: Any) -> Obj:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


class CustomResourceDefinitionStrategy(KindStrategy):
    """strategy: a definition is validated whole; storedVersions follow the storage
    version; generation counts spec changes."""

    def prepare_for_create(self, obj: Obj) -> None:
        """PrepareForCreate: a fresh status whose storedVersions is the storage version."""
        obj["metadata"]["generation"] = 1
        stored = storage_version(obj)
        obj["status"] = {"acceptedNames": {"kind": "", "plural": ""},
                         "storedVersions": [stored] if stored else []}

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        """PrepareForUpdate: status kept, generation bumped on a spec change, and a new
        storage version appended to storedVersions."""
        new["status"] = copy.deepcopy(old.get("status") or {})
        new["metadata"]["generation"] = old["metadata"].get("generation", 1)
        if spec_changed(new, old):
            bump_generation(new, old)
        _add_stored_version(new)

    def prepare_for_status_update(self, new: Obj, old: Obj) -> None:
        super().prepare_for_status_update(new, old)
        _add_stored_version(new)

    def default(self, obj: Obj) -> None:
        """SetDefaults: singular and listKind from the kind, conversion None, a webhook
        service's port 443."""
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        names = spec.get("names")
        if isinstance(names, dict) and isinstance(names.get("kind"), str):
            names.setdefault("singular", names["kind"].lower())
            names.setdefault("listKind", names["kind"] + "List")
        conversion = spec.setdefault("conversion", {"strategy": "None"})
        if isinstance(conversion, dict):
            conversion.setdefault("strategy", "None")
            service = _dict(_dict(_dict(conversion.get("webhook")).get("clientConfig"))
                            .get("service"))
            if service:
                service.setdefault("port", 443)

    def validate(self, obj: Obj) -> list[FieldError]:
        return validate_crd(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        problems = validate_crd(new, _unchanged_schemas(new, old))
        old_scope = (old.get("spec") or {}).get("scope")
        new_scope = (new.get("spec") or {}).get("scope")
        if old_scope != new_scope and is_established(old):
            problems.append(invalid("spec.scope", new_scope, "field is immutable"))
        if (old.get("spec") or {}).get("group") != (new.get("spec") or {}).get("group"):
            problems.append(invalid("spec.group", (new.get("spec") or {}).get("group"),
                                    "field is immutable"))
        return problems + _validate_stored_versions(new)

    def validate_status_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return _validate_stored_versions(new)


def _add_stored_version(crd: Obj) -> None:
    stored = storage_version(crd)
    status = crd.setdefault("status", {})
    versions = status.setdefault("storedVersions", [])
    if stored and isinstance(versions, list) and stored not in versions:
        versions.append(stored)


def _validate_stored_versions(crd: Obj) -> list[FieldError]:
    """ValidateCustomResourceDefinitionStoredVersions: each stored version still listed,
    the storage version among them."""
    versions = {v.get("name") for v in _list(_dict(crd.get("spec")).get("versions"))
                if isinstance(v, dict)}
    stored = _list(_dict(crd.get("status")).get("storedVersions"))
    problems: list[FieldError] = []
    if not stored:
        return [invalid("status.storedVersions", stored,
                        "must have at least one stored version")]
    for index, name in enumerate(stored):
        if name not in versions:
            problems.append(invalid(f"status.storedVersions[{index}]", name,
                                    "must appear in spec.versions"))
    storage = storage_version(crd)
    if storage and storage not in stored:
        problems.append(invalid("status.storedVersions", stored,
                                f"must have the storage version {storage}"))
    return problems


def _unchanged_schemas(new: Obj, old: Obj) -> frozenset[str]:
    """getVersionsWithUnchangedSchemas: the versions whose schema an update leaves as it
    was (their rules are not held to the per-expression cost limit again)."""
    def schemas(crd: Obj) -> dict[str, Any]:
        return {v.get("name"): _dict(v.get("schema")).get("openAPIV3Schema")
                for v in _list(_dict(crd.get("spec")).get("versions")) if isinstance(v, dict)}
    before = schemas(old)
    return frozenset(name for name, schema in schemas(new).items()
                     if name in before and before[name] == schema)


def validate_crd(crd: Obj, unchanged: frozenset[str] = frozenset()) -> list[FieldError]:
    """ValidateCustomResourceDefinition: the name, then the spec (`unchanged`: on update,
    the versions whose schema is as it was)."""
    spec = _dict(crd.get("spec"))
    names = _dict(spec.get("names"))
    problems: list[FieldError] = []
    name = crd["metadata"].get("name", "")
    expected = f"{names.get('plural', '')}.{spec.get('group', '')}"
    if name != expected:
        problems.append(invalid("metadata.name", name,
                                'must be spec.names.plural+"."+spec.group'))
    return problems + _validate_spec(spec, unchanged)


def _validate_spec(spec: Obj, unchanged: frozenset[str]) -> list[FieldError]:
    """ValidateCustomResourceDefinitionSpec."""
    problems: list[FieldError] = []
    group = spec.get("group")
    if not group:
        problems.append(required("spec.group", ""))
    else:
        problems += [invalid("spec.group", group, message)
                     for message in validate_dns1123_subdomain(str(group))]
        if "." not in str(group):
            problems.append(invalid("spec.group", group,
                                    "should be a domain with at least one dot"))
    scope = spec.get("scope")
    if not scope:
        problems.append(required("spec.scope", ""))
    elif scope not in SCOPES:
        problems.append(not_supported("spec.scope", scope, SCOPES))
    if spec.get("preserveUnknownFields") is True:
        problems.append(invalid(
            "spec.preserveUnknownFields", True,
            "cannot set to true, set x-kubernetes-preserve-unknown-fields to true in "
            "spec.versions[*].schema instead"))
    problems += _validate_names(_dict(spec.get("names")), "spec.names")
    problems += _validate_versions(_list(spec.get("versions")), unchanged)
    conversion = _dict(spec.get("conversion"))
    strategy = conversion.get("strategy")
    if strategy not in CONVERSION_STRATEGIES:
        problems.append(not_supported("spec.conversion.strategy", strategy,
                                      CONVERSION_STRATEGIES))
    else:
        problems += _validate_conversion(strategy, _dict(conversion.get("webhook")),
                                         conversion.get("webhook") is not None)
    return problems


def _validate_conversion(strategy: str, webhook: Obj, has_webhook: bool
                         ) -> list[FieldError]:
    """ValidateCustomResourceConversion: Webhook needs exactly one of url and service and
    ConversionReview versions this server speaks; None has neither. The paths are the
    internal type's (webhookClientConfig, conversionReviewVersions under conversion)."""
    path = "spec.conversion"
    client = webhook.get("clientConfig")
    versions = webhook.get("conversionReviewVersions")
    if strategy != "Webhook":
        problems = []
        if client is not None:
            problems.append(forbidden(f"{path}.webhookClientConfig",
                                      "should not be set when strategy is not set to Webhook"))
        if versions:
            problems.append(forbidden(f"{path}.conversionReviewVersions",
                                      "should not be set when strategy is not set to Webhook"))
        return problems
    problems = []
    if not has_webhook or client is None:
        problems.append(required(f"{path}.webhookClientConfig",
                                 "required when strategy is set to Webhook"))
    else:
        client = _dict(client)
        url, service = client.get("url"), client.get("service")
        if (url is None) == (service is None):
            problems.append(required(f"{path}.webhookClientConfig",
                                     "exactly one of url or service is required"))
        elif url is not None:
            problems += validate_webhook_url(str(url), f"{path}.webhookClientConfig.url")
        else:
            problems += validate_webhook_service(_dict(service),
                                                 f"{path}.webhookClientConfig.service")
    versions = _list(versions)
    if not versions:
        return [*problems, required(f"{path}.conversionReviewVersions", "")]
    seen: set[str] = set()
    for index, version in enumerate(versions):
        item = f"{path}.conversionReviewVersions[{index}]"
        if version in seen:
            problems.append(invalid(item, version, "duplicate version"))
            continue
        seen.add(str(version))
        problems += [invalid(item, version, message)
                     for message in validate_dns1035_label(str(version))]
    if not seen & set(ACCEPTED_REVIEW_VERSIONS):
        problems.append(invalid(f"{path}.conversionReviewVersions", versions,
                                "must include at least one of v1, v1beta1"))
    return problems


def _validate_names(names: Obj, path: str) -> list[FieldError]:
    """ValidateCustomResourceDefinitionNames: DNS-1035 labels, kind and listKind set and
    different."""
    problems: list[FieldError] = []
    for key in ("plural", "singular"):
        value = names.get(key)
        if key == "plural" and not value:
            problems.append(required(f"{path}.plural", ""))
            continue
        if value:
            problems += [invalid(f"{path}.{key}", value, message)
                         for message in validate_dns1035_label(str(value))]
    for key in ("shortNames", "categories"):
        for index, value in enumerate(_list(names.get(key))):
            problems += [invalid(f"{path}.{key}[{index}]", value, message)
                         for message in validate_dns1035_label(str(value))]
    kind, list_kind = names.get("kind"), names.get("listKind")
    if not kind:
        problems.append(required(f"{path}.kind", ""))
    else:
        problems += [invalid(f"{path}.kind", kind, message)
                     for message in validate_dns1035_label(str(kind).lower())]
    if not list_kind:
        problems.append(required(f"{path}.listKind", ""))
    else:
        problems += [invalid(f"{path}.listKind", list_kind, message)
                     for message in validate_dns1035_label(str(list_kind).lower())]
        if kind and kind == list_kind:
            problems.append(invalid(f"{path}.listKind", list_kind,
                                    "kind and listKind may not be the same"))
    return problems


def _validate_versions(versions: list[Any], unchanged: frozenset[str]) -> list[FieldError]:
    """Each version: a DNS-1035 name, unique; exactly one storage version; a structural
    schema (its rules' per-expression cost not checked again where `unchanged` names it);
    valid subresources and printer columns."""
    problems: list[FieldError] = []
    if not versions:
        return [required("spec.versions", "must have exactly one version marked as "
                                          "storage version")]
    seen: set[str] = set()
    storage = 0
    for index, version in enumerate(versions):
        path = f"spec.versions[{index}]"
        if not isinstance(version, dict):
            problems.append(invalid(path, version, "must be an object"))
            continue
        name = version.get("name")
        if not name:
            problems.append(required(f"{path}.name", ""))
        else:
            problems += [invalid(f"{path}.name", name, message)
                         for message in validate_dns1035_label(str(name))]
            if name in seen:
                problems.append(duplicate(f"{path}.name", name))
            seen.add(str(name))
        if version.get("storage"):
            storage += 1
        schema = _dict(version.get("schema")).get("openAPIV3Schema")
        if not isinstance(schema, dict):
            problems.append(required(f"{path}.schema.openAPIV3Schema", "schemas are required"))
        else:
            shape = _shape_errors(schema, f"{path}.schema.openAPIV3Schema")
            problems += shape or schema_errors(schema, f"{path}.schema.openAPIV3Schema",
                                               name in unchanged)
            problems += _pattern_errors(schema, f"{path}.schema.openAPIV3Schema")
            if not shape:
                problems += _validate_selectable_fields(
                    _list(version.get("selectableFields")), schema, f"{path}.selectableFields")
        problems += _validate_subresources(_dict(version.get("subresources")),
                                           f"{path}.subresources")
        problems += _validate_columns(_list(version.get("additionalPrinterColumns")),
                                      f"{path}.additionalPrinterColumns")
    if storage != 1:
        problems.append(invalid("spec.versions", versions,
                                "must have exactly one version marked as storage version"))
    if not any(isinstance(v, dict) and v.get("served") for v in versions):
        problems.append(invalid("spec.versions", versions,
                                "must have at least one version marked as served"))
    return problems


def _validate_subresources(subresources: Obj, path: str) -> list[FieldError]:
    """ValidateCustomResourceDefinitionSubresources: the scale paths under .spec and
    .status."""
    scale = subresources.get("scale")
    if not isinstance(scale, dict):
        return []
    problems: list[FieldError] = []
    for key, prefix in (("specReplicasPath", ".spec."), ("statusReplicasPath", ".status.")):
        value = scale.get(key)
        if not value:
            problems.append(required(f"{path}.scale.{key}", ""))
        elif not str(value).startswith(prefix):
            problems.append(invalid(f"{path}.scale.{key}", value,
                                    f"should be a json path under {prefix.rstrip('.')}"))
    selector = scale.get("labelSelectorPath")
    if selector and not str(selector).startswith((".spec.", ".status.")):
        problems.append(invalid(f"{path}.scale.labelSelectorPath", selector,
                                "should be a json path under either .spec or .status"))
    return problems


def _validate_columns(columns: list[Any], path: str) -> list[FieldError]:
    """ValidateCustomResourceColumnDefinition: a name, a known type, a JSON path; names
    unique."""
    problems: list[FieldError] = []
    names: set[str] = set()
    for index, column in enumerate(columns):
        item = f"{path}[{index}]"
        column = _dict(column)
        name = column.get("name")
        if not name:
            problems.append(required(f"{item}.name", ""))
        elif name in names:
            problems.append(duplicate(f"{item}.name", name))
        names.add(str(name))
        if column.get("type") not in PRINTER_COLUMN_TYPES:
            problems.append(not_supported(f"{item}.type", column.get("type"),
                                          PRINTER_COLUMN_TYPES))
        if not column.get("jsonPath"):
            problems.append(required(f"{item}.jsonPath", ""))
        if isinstance(column.get("priority"), int) and column["priority"] < 0:
            problems.append(invalid(f"{item}.priority", column["priority"],
                                    "must be greater than or equal to 0"))
    return problems


def _pattern_errors(schema: Any, path: str) -> list[FieldError]:
    """Every `pattern` of the schema must compile with the validator's compiler
    (api/openapi_schema), so that a definition accepted is one the server can serve."""
    if not isinstance(schema, dict):
        return []
    problems: list[FieldError] = []
    pattern = schema.get("pattern")
    if isinstance(pattern, str):
        try:
            # compiled as the validator will compile it (Go's RE2 syntax)
            compile_pattern(pattern)
        except Exception as err:  # the compiler's own error type: re's or RE2's
            problems.append(invalid(f"{path}.pattern", pattern,
                                    f"must be a valid regular expression, but isn't: {err}"))
    for key, value in (schema.get("properties") or {}).items():
        problems += _pattern_errors(value, f"{path}.properties[{key}]")
    for key in ("items", "additionalProperties", "not"):
        problems += _pattern_errors(schema.get(key), f"{path}.{key}")
    for key in ("allOf", "anyOf", "oneOf"):
        for index, value in enumerate(schema.get(key) or []):
            problems += _pattern_errors(value, f"{path}.{key}[{index}]")
    return problems


def _shape_errors(schema: Any, path: str) -> list[FieldError]:
    """The JSON shape of the schema's "either" fields, which decoding leaves free (Go
    decodes them into JSONSchemaPropsOrArray, ...OrBool, ...OrStringArray): items is a
    schema or a list of schemas, additionalProperties and additionalItems a schema or a
    bool, each dependency a schema or a list of names."""
    if not isinstance(schema, dict):
        return [invalid(path, schema, "must be an object")]
    problems: list[FieldError] = []
    items = schema.get("items")
    if items is not None:
        if isinstance(items, list):
            for index, item in enumerate(items):
                problems += _shape_errors(item, f"{path}.items[{index}]")
        else:
            problems += _shape_errors(items, f"{path}.items")
    for key in ("additionalProperties", "additionalItems"):
        value = schema.get(key)
        if value is not None and not isinstance(value, bool):
            problems += _shape_errors(value, f"{path}.{key}")
    for name, value in (schema.get("dependencies") or {}).items():
        if not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            problems += _shape_errors(value, f"{path}.dependencies[{name}]")
    for key in ("properties", "patternProperties", "definitions"):
        for name, value in (schema.get(key) or {}).items():
            problems += _shape_errors(value, f"{path}.{key}[{name}]")
    for key in ("allOf", "anyOf", "oneOf"):
        for index, value in enumerate(schema.get(key) or []):
            problems += _shape_errors(value, f"{path}.{key}[{index}]")
    if schema.get("not") is not None:
        problems += _shape_errors(schema["not"], f"{path}.not")
    return problems


MAX_SELECTABLE_FIELDS = 8
SELECTABLE_TYPES = ("string", "boolean", "integer")


def _validate_selectable_fields(fields: list[Any], schema: Obj, path: str
                                ) -> list[FieldError]:
    """ValidateSelectableFields: each jsonPath names a scalar field of the schema (a
    string, boolean or integer), not in metadata, once; at most 8 of them."""
    problems: list[FieldError] = []
    unique: set[str] = set()
    for index, selectable in enumerate(fields):
        at = f"{path}[{index}].jsonPath"
        json_path = _dict(selectable).get("jsonPath")
        if not json_path:
            problems.append(required(at, ""))
            continue
        steps = str(json_path).lstrip(".").split(".")
        node: Any = schema
        for step in steps:
            node = _dict(_dict(node).get("properties")).get(step)
        if not str(json_path).startswith(".") or node is None or not all(steps):
            problems.append(invalid(at, json_path,
                                    "is an invalid path: does not refer to a valid field"))
            continue
        if steps[0] == "metadata":
            problems.append(invalid(at, json_path, "must not point to fields in metadata"))
        if _dict(node).get("type") not in SELECTABLE_TYPES:
            problems.append(invalid(at, json_path,
                                    "must point to a field of type string, boolean or "
                                    "integer. Enum string fields and strings with formats "
                                    "are allowed."))
        joined = ".".join(steps)
        if joined in unique:
            problems.append(duplicate(at, json_path))
        unique.add(joined)
    if len(unique) > MAX_SELECTABLE_FIELDS:
        problems.append(too_many(path, len(unique), MAX_SELECTABLE_FIELDS))
    return problems
