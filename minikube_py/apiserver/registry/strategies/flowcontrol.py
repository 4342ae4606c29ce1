"""Strategies of flowcontrol.apiserver.k8s.io: FlowSchema and PriorityLevelConfiguration,
following upstream pkg/registry/flowcontrol, pkg/apis/flowcontrol/v1/defaults.go and
pkg/apis/flowcontrol/validation.
"""

from __future__ import annotations

from typing import Any

from minikube_py.api import Obj
from minikube_py.api.defaulting import as_dict, as_list, items_of, set_default_if_zero
from minikube_py.api.validation import (
    FieldError,
    duplicate,
    forbidden,
    invalid,
    not_supported,
    required,
    validate_dns1123_label,
    validate_dns1123_subdomain,
)
from minikube_py.apiserver.flowcontrol.bootstrap import EXEMPT, mandatory_spec
from minikube_py.apiserver.flowcontrol.shufflesharding import (
    MAX_HASH_BITS,
    required_entropy_bits,
)
from minikube_py.apiserver.registry.strategies.base import KindStrategy

MAX_MATCHING_PRECEDENCE = 10000
MAX_QUEUES = 10 * 1000 * 1000
DISTINGUISHER_METHODS = ["ByNamespace", "ByUser"]
SUPPORTED_VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "proxy",
                   "update", "watch"]
SUBJECT_KINDS = ["Group", "ServiceAccount", "User"]
ENABLEMENTS = ["Exempt", "Limited"]
LIMIT_RESPONSE_TYPES = ["Queue", "Reject"]
NAMESPACE_INTRO = "each member of this list must be '*' or a DNS-1123 label; "


def _validate_conditions(status: Obj) -> list[FieldError]:
    """Condition types are present and unique."""
    errors: list[FieldError] = []
    seen: set[str] = set()
    for i, condition in items_of(status, "conditions"):
        kind = condition.get("type") or ""
        if kind in seen:
            errors.append(duplicate(f"status.conditions[{i}].type", kind))
        seen.add(kind)
        if not kind:
            errors.append(required(f"status.conditions[{i}].type", "must not be empty"))
    return errors


class _FlowControlStrategy(KindStrategy):
    """Both kinds: status only through /status; a spec change is a new generation."""

    def validate_status_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return _validate_conditions(as_dict(new.get("status")))


class FlowSchemaStrategy(_FlowControlStrategy):
    """FlowSchemas: which requests go to which priority level."""

    def default(self, obj: Obj) -> None:
        """SetDefaults_FlowSchemaSpec: matchingPrecedence 1000."""
        spec = obj.get("spec")
        if isinstance(spec, dict):
            set_default_if_zero(spec, "matchingPrecedence", 1000)

    def validate(self, obj: Obj) -> list[FieldError]:
        """ValidateFlowSchema; a mandatory schema's spec is fixed."""
        name = obj["metadata"].get("name", "")
        spec = as_dict(obj.get("spec"))
        errors = _validate_flow_schema_spec(name, spec)
        fixed = mandatory_spec("flowschemas", name)
        if fixed is not None and spec != fixed:
            errors.append(invalid("spec", spec, f"spec of '{name}' must equal the fixed value"))
        return errors + _validate_conditions(as_dict(obj.get("status")))


def _validate_flow_schema_spec(name: str, spec: Obj) -> list[FieldError]:
    """ValidateFlowSchemaSpec."""
    errors: list[FieldError] = []
    precedence = spec.get("matchingPrecedence", 0)
    if isinstance(precedence, int):
        if precedence <= 0:
            errors.append(invalid("spec.matchingPrecedence", precedence,
                                  "must be a positive value"))
        if precedence > MAX_MATCHING_PRECEDENCE:
            errors.append(invalid("spec.matchingPrecedence", precedence,
                                  f"must not be greater than {MAX_MATCHING_PRECEDENCE}"))
        if precedence == 1 and name != EXEMPT:
            errors.append(invalid("spec.matchingPrecedence", precedence,
                                  "only the schema named 'exempt' may have matchingPrecedence 1"))
    method = spec.get("distinguisherMethod")
    if isinstance(method, dict) and method.get("type") not in DISTINGUISHER_METHODS:
        errors.append(not_supported("spec.distinguisherMethod.type", method.get("type"),
                                    DISTINGUISHER_METHODS))
    level = as_dict(spec.get("priorityLevelConfiguration")).get("name") or ""
    if level:
        errors += [invalid("spec.priorityLevelConfiguration.name", level, problem)
                   for problem in validate_dns1123_subdomain(level)]
    else:
        errors.append(required("spec.priorityLevelConfiguration.name",
                               "must reference a priority level"))
    for i, rule in items_of(spec, "rules"):
        errors += _validate_rule(rule, f"spec.rules[{i}]")
    return errors


def _validate_rule(rule: Obj, path: str) -> list[FieldError]:
    """ValidateFlowSchemaPolicyRulesWithSubjects."""
    errors: list[FieldError] = []
    subjects = as_list(rule.get("subjects"))
    if not subjects:
        errors.append(required(f"{path}.subjects", "subjects must contain at least one value"))
    for i, subject in items_of(rule, "subjects"):
        errors += _validate_subject(subject, f"{path}.subjects[{i}]")
    if not as_list(rule.get("resourceRules")) and not as_list(rule.get("nonResourceRules")):
        errors.append(required(path, "at least one of resourceRules and nonResourceRules "
                                     "has to be non-empty"))
    for i, resource_rule in items_of(rule, "resourceRules"):
        errors += _validate_resource_rule(resource_rule, f"{path}.resourceRules[{i}]")
    for i, non_resource_rule in items_of(rule, "nonResourceRules"):
        errors += _validate_non_resource_rule(non_resource_rule,
                                              f"{path}.nonResourceRules[{i}]")
    return errors


def _validate_subject(subject: Obj, path: str) -> list[FieldError]:
    """ValidateFlowSchemaSubject: the member the kind names, and no other."""
    kind = subject.get("kind")
    if kind not in SUBJECT_KINDS:
        return [not_supported(f"{path}.kind", kind, SUBJECT_KINDS)]
    errors: list[FieldError] = []
    member = {"User": "user", "Group": "group", "ServiceAccount": "serviceAccount"}[kind]
    value = subject.get(member)
    if not isinstance(value, dict):
        errors.append(required(f"{path}.{member}",
                               f"{member} is required when subject kind is '{kind}'"))
    elif not value.get("name"):
        errors.append(required(f"{path}.{member}.name"))
    elif member == "serviceAccount" and value["name"] != "*":
        errors += [invalid(f"{path}.serviceAccount.name", value["name"], problem)
                   for problem in validate_dns1123_subdomain(value["name"])]
    if member == "serviceAccount" and isinstance(value, dict):
        namespace = value.get("namespace") or ""
        if namespace:
            errors += [invalid(f"{path}.serviceAccount.namespace", namespace, problem)
                       for problem in validate_dns1123_label(namespace)]
        else:
            errors.append(required(f"{path}.serviceAccount.namespace",
                                   "must specify namespace for service account"))
    for other, other_kind in (("serviceAccount", "ServiceAccount"), ("user", "User"),
                              ("group", "Group")):
        if other != member and subject.get(other) is not None:
            errors.append(forbidden(f"{path}.{other}", f"{other} is forbidden when subject "
                                                       f"kind is not '{other_kind}'"))
    return errors


def _validate_verbs(verbs: list[Any], path: str) -> list[FieldError]:
    if not verbs:
        return [required(path, "verbs must contain at least one value")]
    if "*" in verbs:
        return ([invalid(path, verbs, "if '*' is present, must not specify other verbs")]
                if len(verbs) > 1 else [])
    if not set(verbs) <= set(SUPPORTED_VERBS):
        return [not_supported(path, verbs, SUPPORTED_VERBS)]
    return []


def _validate_resource_rule(rule: Obj, path: str) -> list[FieldError]:
    """ValidateFlowSchemaResourcePolicyRule."""
    errors = _validate_verbs(as_list(rule.get("verbs")), f"{path}.verbs")
    for field, what in (("apiGroups", "api group"), ("resources", "resource")):
        values = as_list(rule.get(field))
        if not values:
            errors.append(required(f"{path}.{field}",
                                   f"resource rules must supply at least one {what}"))
        elif len(values) > 1 and "*" in values:
            errors.append(invalid(f"{path}.{field}", values,
                                  f"if '*' is present, must not specify other {what}s"))
    namespaces = as_list(rule.get("namespaces"))
    if not namespaces and not rule.get("clusterScope"):
        errors.append(required(f"{path}.namespaces", "resource rules that are not cluster "
                                                     "scoped must supply at least one namespace"))
    elif "*" in namespaces:
        if len(namespaces) > 1:
            errors.append(invalid(f"{path}.namespaces", namespaces,
                                  "if '*' is present, must not specify other namespaces"))
    else:
        for i, namespace in enumerate(namespaces):
            errors += [invalid(f"{path}.namespaces[{i}]", namespace, NAMESPACE_INTRO + problem)
                       for problem in validate_dns1123_label(str(namespace))]
    return errors


def _validate_non_resource_rule(rule: Obj, path: str) -> list[FieldError]:
    """ValidateFlowSchemaNonResourcePolicyRule."""
    errors = _validate_verbs(as_list(rule.get("verbs")), f"{path}.verbs")
    urls = as_list(rule.get("nonResourceURLs"))
    if not urls:
        errors.append(required(f"{path}.nonResourceURLs",
                               "nonResourceURLs must contain at least one value"))
    elif "*" in urls:
        if len(urls) > 1:
            errors.append(invalid(f"{path}.nonResourceURLs", urls, "if '*' is present, must "
                                                                  "not specify other "
                                                                  "non-resource URLs"))
    else:
        for i, url in enumerate(urls):
            problem = _non_resource_url_problem(str(url))
            if problem:
                errors.append(invalid(f"{path}.nonResourceURLs[{i}]", url, problem))
    return errors


def _non_resource_url_problem(path: str) -> str:
    """ValidateNonResourceURLPath: absolute, no spaces or `//`, `*` only as a `/*` suffix."""
    if not path:
        return "must not be empty"
    if path == "/":
        return ""
    if not path.startswith("/"):
        return "must start with slash"
    if " " in path:
        return "must not contain white-space"
    if "//" in path:
        return "must not contain double slash"
    wildcards = path.count("*")
    if wildcards > 1 or (wildcards == 1 and not path.endswith("/*")):
        return "wildcard can only do suffix matching"
    return ""


class PriorityLevelConfigurationStrategy(_FlowControlStrategy):
    """PriorityLevelConfigurations: a level's seats and queues."""

    def default(self, obj: Obj) -> None:
        """SetDefaults of v1: 30 shares, 0% lendable; 64 queues, hand 8, 50 per queue."""
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        exempt = spec.get("exempt")
        if isinstance(exempt, dict):
            exempt.setdefault("nominalConcurrencyShares", 0)
            exempt.setdefault("lendablePercent", 0)
        limited = spec.get("limited")
        if isinstance(limited, dict):
            limited.setdefault("nominalConcurrencyShares", 30)
            limited.setdefault("lendablePercent", 0)
            queuing = as_dict(limited.get("limitResponse")).get("queuing")
            if isinstance(queuing, dict):
                set_default_if_zero(queuing, "handSize", 8)
                set_default_if_zero(queuing, "queues", 64)
                set_default_if_zero(queuing, "queueLengthLimit", 50)

    def validate(self, obj: Obj) -> list[FieldError]:
        """ValidatePriorityLevelConfiguration; catch-all's spec is fixed, exempt's type."""
        name = obj["metadata"].get("name", "")
        spec = as_dict(obj.get("spec"))
        errors = _validate_priority_level_spec(name, spec)
        fixed = mandatory_spec("prioritylevelconfigurations", name)
        if fixed is not None and name != EXEMPT and spec != fixed:
            errors.append(invalid("spec", spec, f"spec of '{name}' must equal the fixed value"))
        return errors + _validate_conditions(as_dict(obj.get("status")))


def _validate_percent(value: Any, path: str) -> list[FieldError]:
    if isinstance(value, int) and not 0 <= value <= 100:
        return [invalid(path, value, "must be between 0 and 100, inclusive")]
    return []


def _validate_priority_level_spec(name: str, spec: Obj) -> list[FieldError]:
    """ValidatePriorityLevelConfigurationSpec."""
    errors: list[FieldError] = []
    kind = spec.get("type")
    if (name == EXEMPT) != (kind == "Exempt"):
        errors.append(invalid("spec.type", kind,
                              "type must be 'Exempt' if and only if name is 'exempt'"))
    if kind == "Exempt":
        if spec.get("limited") is not None:
            errors.append(forbidden("spec.limited", "must be nil if the type is not Limited"))
        exempt = spec.get("exempt")
        if isinstance(exempt, dict):
            shares = exempt.get("nominalConcurrencyShares")
            if isinstance(shares, int) and shares < 0:
                errors.append(invalid("spec.exempt.nominalConcurrencyShares", shares,
                                      "must be a non-negative number"))
            errors += _validate_percent(exempt.get("lendablePercent"),
                                        "spec.exempt.lendablePercent")
    elif kind == "Limited":
        if spec.get("exempt") is not None:
            errors.append(forbidden("spec.exempt", "must be nil if the type is Limited"))
        limited = spec.get("limited")
        if not isinstance(limited, dict):
            errors.append(required("spec.limited", "must not be empty when type is Limited"))
        else:
            errors += _validate_limited(limited)
    else:
        errors.append(not_supported("spec.type", kind, ENABLEMENTS))
    return errors


def _validate_limited(limited: Obj) -> list[FieldError]:
    """ValidateLimitedPriorityLevelConfiguration (v1: zero shares allowed)."""
    errors: list[FieldError] = []
    shares = limited.get("nominalConcurrencyShares")
    if isinstance(shares, int) and shares < 0:
        errors.append(invalid("spec.limited.nominalConcurrencyShares", shares,
                              "must be a non-negative integer"))
    response = as_dict(limited.get("limitResponse"))
    kind = response.get("type")
    queuing = response.get("queuing")
    if kind == "Reject":
        if queuing is not None:
            errors.append(forbidden("spec.limited.limitResponse.queuing",
                                    "must be nil if limited.limitResponse.type is not Limited"))
    elif kind == "Queue":
        if not isinstance(queuing, dict):
            errors.append(required("spec.limited.limitResponse.queuing", "must not be empty "
                                   "if limited.limitResponse.type is Limited"))
        else:
            errors += _validate_queuing(queuing, "spec.limited.limitResponse.queuing")
    else:
        errors.append(not_supported("spec.limited.limitResponse.type", kind,
                                    LIMIT_RESPONSE_TYPES))
    errors += _validate_percent(limited.get("lendablePercent"), "spec.limited.lendablePercent")
    borrowing = limited.get("borrowingLimitPercent")
    if isinstance(borrowing, int) and borrowing < 0:
        errors.append(invalid("spec.limited.borrowingLimitPercent", borrowing,
                              "if specified, must be a non-negative integer"))
    return errors


def _validate_queuing(queuing: Obj, path: str) -> list[FieldError]:
    """ValidatePriorityLevelQueuingConfiguration: the shuffle-sharding parameters."""
    errors: list[FieldError] = []
    limit, queues, hand = (queuing.get(key, 0) for key in (
        "queueLengthLimit", "queues", "handSize"))
    if not all(isinstance(value, int) for value in (limit, queues, hand)):
        return errors
    if limit <= 0:
        errors.append(invalid(f"{path}.queueLengthLimit", limit, "must be positive"))
    if queues <= 0:
        errors.append(invalid(f"{path}.queues", queues, "must be positive"))
    elif queues > MAX_QUEUES:
        errors.append(invalid(f"{path}.queues", queues, f"must not be greater than {MAX_QUEUES}"))
    if hand <= 0:
        errors.append(invalid(f"{path}.handSize", hand, "must be positive"))
    elif hand > queues:
        errors.append(invalid(f"{path}.handSize", hand,
                              f"should not be greater than queues ({queues})"))
    elif required_entropy_bits(queues, hand) > MAX_HASH_BITS:
        errors.append(invalid(f"{path}.handSize", hand,
                              f"required entropy bits of deckSize {queues} and handSize {hand} "
                              f"should not be greater than {MAX_HASH_BITS}"))
    return errors
