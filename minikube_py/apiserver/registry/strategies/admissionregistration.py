"""Admission webhook configurations: ValidatingWebhookConfiguration and
MutatingWebhookConfiguration (upstream pkg/registry/admissionregistration, the v1
defaults and pkg/apis/admissionregistration/validation).

    default:  each webhook: failurePolicy Fail, matchPolicy Equivalent, namespaceSelector
              and objectSelector {} (match everything), timeoutSeconds 10, and for
              mutating ones reinvocationPolicy Never; each rule: scope "*"; a Service
              reference: port 443
    validate: each webhooks[i]: a fully qualified name, its rules, the enums, sideEffects
              (required), timeoutSeconds, selectors, clientConfig (a URL or a Service,
              exactly one), matchConditions; then admissionReviewVersions, then the
              name's uniqueness in the configuration
    update:   the same rules, except the ones the stored configuration already breaks
              (upstream never makes a stored object impossible to update)

metadata.generation starts at 1 and grows when the webhooks change. The configurations
are stored and served only: no webhook is called.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, ClassVar
from urllib.parse import urlsplit

from minikube_py.api import Obj
from minikube_py.api.defaulting import as_dict, as_list, items_of, set_default, text
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
    validate_label_selector,
    validate_qualified_name,
)
from minikube_py.apiserver.auth.admission.policycel import compile_expression
from minikube_py.apiserver.registry.strategies.base import (
    KindStrategy,
    bump_generation,
    keep_stored_generation,
)
from minikube_py.apiserver.registry.strategies.fields import as_invalid, child, index, semantic

FAILURE_POLICIES = ["Fail", "Ignore"]
MATCH_POLICIES = ["Equivalent", "Exact"]
OPERATIONS = ["*", "CONNECT", "CREATE", "DELETE", "UPDATE"]
REINVOCATION_POLICIES = ["IfNeeded", "Never"]
SCOPES = ["*", "Cluster", "Namespaced"]
# v1 accepts only webhooks without side effects; v1beta1 also took Some and Unknown, which
# configurations stored back then may still carry.
NO_SIDE_EFFECTS = ["None", "NoneOnDryRun"]
SIDE_EFFECTS = ["None", "NoneOnDryRun", "Some", "Unknown"]
# AcceptedAdmissionReviewVersions: the AdmissionReview versions the API server can send.
ADMISSION_REVIEW_VERSIONS = ["v1", "v1beta1"]
MAX_MATCH_CONDITIONS = 64
URL_FORM = "; desired format: https://host[/path]"


class _WebhookConfigurationStrategy(KindStrategy):
    """The hooks both configurations share; `mutating` adds reinvocationPolicy."""

    mutating: ClassVar[bool] = False

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        """A new generation when the webhooks change. Upstream compares the decoded body,
        which its decoder has defaulted, so the body is compared as defaulting will leave it."""
        defaulted = copy.deepcopy(new)
        self.default(defaulted)
        if semantic(defaulted.get("webhooks")) != semantic(old.get("webhooks")):
            bump_generation(new, old)
        else:
            keep_stored_generation(new, old)

    def default(self, obj: Obj) -> None:
        """SetDefaults_ValidatingWebhook / _MutatingWebhook, _Rule and _ServiceReference."""
        for _, webhook in items_of(obj, "webhooks"):
            set_default(webhook, "failurePolicy", "Fail")
            set_default(webhook, "matchPolicy", "Equivalent")
            set_default(webhook, "namespaceSelector", {})
            set_default(webhook, "objectSelector", {})
            set_default(webhook, "timeoutSeconds", 10)
            if self.mutating:
                set_default(webhook, "reinvocationPolicy", "Never")
            for _, rule in items_of(webhook, "rules"):
                set_default(rule, "scope", "*")
            service = as_dict(webhook.get("clientConfig")).get("service")
            if isinstance(service, dict):
                set_default(service, "port", 443)

    def validate(self, obj: Obj) -> list[FieldError]:
        """ValidateValidatingWebhookConfiguration / ValidateMutatingWebhookConfiguration."""
        return self._validate_webhooks(as_list(obj.get("webhooks")), _Rules())

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        """The create rules, relaxed where the stored configuration already breaks them."""
        webhooks = as_list(new.get("webhooks"))
        return self._validate_webhooks(webhooks, _Rules.for_update(webhooks,
                                                                   as_list(old.get("webhooks"))))

    def _validate_webhooks(self, webhooks: list[Any], rules: _Rules) -> list[FieldError]:
        errors: list[FieldError] = []
        names: set[str] = set()
        for i, webhook in enumerate(webhooks):
            if not isinstance(webhook, dict):
                continue
            path = index("webhooks", i)
            errors += self._validate_webhook(webhook, rules, path)
            errors += _validate_review_versions(
                webhook.get("admissionReviewVersions"), rules.recognized_review_version,
                child(path, "admissionReviewVersions"))
            name = text(webhook.get("name"))
            if rules.unique_names and name:
                if name in names:
                    errors.append(duplicate(child(path, "name"), name))
                names.add(name)
        return errors

    def _validate_webhook(self, webhook: Obj, rules: _Rules, path: str) -> list[FieldError]:
        """validateValidatingWebhook / validateMutatingWebhook: one webhook."""
        errors = _fully_qualified_name_errors(text(webhook.get("name")), child(path, "name"))
        for j, rule in items_of(webhook, "rules"):
            errors += _validate_rule(rule, index(child(path, "rules"), j))
        errors += _enum_errors(webhook, "failurePolicy", FAILURE_POLICIES, path)
        errors += _enum_errors(webhook, "matchPolicy", MATCH_POLICIES, path)
        allowed = NO_SIDE_EFFECTS if rules.no_side_effects else SIDE_EFFECTS
        if webhook.get("sideEffects") is None:
            errors.append(required(child(path, "sideEffects"),
                                   f"must specify one of {', '.join(allowed)}"))
        errors += _enum_errors(webhook, "sideEffects", allowed, path)
        timeout = webhook.get("timeoutSeconds")
        if timeout is not None and not (isinstance(timeout, int) and 1 <= timeout <= 30):
            errors.append(invalid(child(path, "timeoutSeconds"), timeout,
                                  "the timeout value must be between 1 and 30 seconds"))
        for selector in ("namespaceSelector", "objectSelector"):
            errors += validate_label_selector(webhook.get(selector), child(path, selector))
        if self.mutating:
            errors += _enum_errors(webhook, "reinvocationPolicy", REINVOCATION_POLICIES, path)
        errors += _validate_client_config(as_dict(webhook.get("clientConfig")),
                                          child(path, "clientConfig"))
        if not rules.ignore_match_conditions:
            errors += _validate_match_conditions(as_list(webhook.get("matchConditions")),
                                                 child(path, "matchConditions"))
        return errors


class ValidatingWebhookConfigurationStrategy(_WebhookConfigurationStrategy):
    """ValidatingWebhookConfigurations: webhooks that accept or reject requests."""


class MutatingWebhookConfigurationStrategy(_WebhookConfigurationStrategy):
    """MutatingWebhookConfigurations: webhooks that may also change the objects."""

    mutating = True


@dataclass(frozen=True)
class _Rules:
    """Upstream's validationOptions: which rules hold. A create gets them all."""

    no_side_effects: bool = True
    recognized_review_version: bool = True
    unique_names: bool = True
    ignore_match_conditions: bool = False

    @classmethod
    def for_update(cls, new: list[Any], old: list[Any]) -> _Rules:
        """ValidateXWebhookConfigurationUpdate: a rule the stored webhooks already break
        is not enforced, and unchanged match conditions are not checked again."""
        stored = [webhook for webhook in old if isinstance(webhook, dict)]
        names = [webhook.get("name") for webhook in stored]
        return cls(
            no_side_effects=all(webhook.get("sideEffects") in NO_SIDE_EFFECTS
                                for webhook in stored),
            recognized_review_version=all(
                not versions or _recognized(versions)
                for versions in (as_list(webhook.get("admissionReviewVersions"))
                                 for webhook in stored)),
            unique_names=len(names) == len(set(map(str, names))),
            ignore_match_conditions=len(new) == len(old) and all(
                as_list(as_dict(after).get("matchConditions"))
                == as_list(as_dict(before).get("matchConditions"))
                for after, before in zip(new, old, strict=True)),
        )


def _enum_errors(obj: Obj, name: str, supported: list[str], path: str) -> list[FieldError]:
    """An optional enum field: NotSupported when set to anything else."""
    value = obj.get(name)
    if value is not None and value not in supported:
        return [not_supported(child(path, name), value, supported)]
    return []


def _fully_qualified_name_errors(name: str, path: str) -> list[FieldError]:
    """IsFullyQualifiedName: a DNS subdomain of at least three labels
    (imagepolicy.kubernetes.io: the webhook, then its organization's domain)."""
    if not name:
        return [required(path)]
    problems = validate_dns1123_subdomain(name)
    if problems:
        return [invalid(path, name, ",".join(problems))]
    if len(name.split(".")) < 3:
        return [invalid(path, name,
                        "should be a domain with at least three segments separated by dots")]
    return []


def _validate_rule(rule: Obj, path: str) -> list[FieldError]:
    """validateRuleWithOperations and validateRule (subresources allowed)."""
    errors: list[FieldError] = []
    operations = as_list(rule.get("operations"))
    errors += _list_errors(operations, child(path, "operations"), "operations")
    for i, operation in enumerate(operations):
        if operation not in OPERATIONS:
            errors.append(not_supported(index(child(path, "operations"), i), operation,
                                        OPERATIONS))
    errors += _list_errors(as_list(rule.get("apiGroups")), child(path, "apiGroups"),
                           "API groups")
    versions = as_list(rule.get("apiVersions"))
    errors += _list_errors(versions, child(path, "apiVersions"), "API versions")
    errors += [required(index(child(path, "apiVersions"), i))
               for i, version in enumerate(versions) if version == ""]
    errors += _validate_resources(as_list(rule.get("resources")), child(path, "resources"))
    errors += _enum_errors(rule, "scope", SCOPES, path)
    return errors


def _list_errors(values: list[Any], path: str, what: str) -> list[FieldError]:
    """A required list in which '*' (all) must stand alone."""
    if not values:
        return [required(path)]
    if len(values) > 1 and "*" in values:
        return [invalid(path, values, f"if '*' is present, must not specify other {what}")]
    return []


def _validate_resources(resources: list[Any], path: str) -> list[FieldError]:
    """validateResources: `pods`, `pods/status`, `pods/*`, `*/scale`, `*` or `*/*`, without
    overlaps between a wildcard and what it already covers."""
    errors: list[FieldError] = [required(path)] if not resources else []
    all_subresources_of: set[str] = set()  # x/*
    subresource_of_all: set[str] = set()  # */x
    every_resource = every_subresource = without_subresource = False
    for i, resource in enumerate(map(text, resources)):
        if not resource:
            errors.append(required(index(path, i)))
            continue
        every_subresource = every_subresource or resource == "*/*"
        every_resource = every_resource or resource == "*"
        name, slash, subresource = resource.partition("/")
        if not slash:
            # As upstream: the last resource without a subresource decides.
            without_subresource = resource != "*"
            continue
        if name in all_subresources_of:
            errors.append(invalid(index(path, i), resource,
                                  f"if '{name}/*' is present, must not specify {resource}"))
        if subresource in subresource_of_all:
            errors.append(invalid(index(path, i), resource,
                                  f"if '*/{subresource}' is present, must not specify "
                                  f"{resource}"))
        if subresource == "*":
            all_subresources_of.add(name)
        if name == "*":
            subresource_of_all.add(subresource)
    if len(resources) > 1 and every_subresource:
        errors.append(invalid(path, resources,
                              "if '*/*' is present, must not specify other resources"))
    if every_resource and without_subresource:
        errors.append(invalid(path, resources, "if '*' is present, must not specify other "
                                               "resources without subresources"))
    return errors


def _validate_client_config(config: Obj, path: str) -> list[FieldError]:
    """Exactly one of url and service, each valid."""
    url, service = config.get("url"), config.get("service")
    if (url is None) == (service is None):
        return [required(path, "exactly one of url or service is required")]
    if url is not None:
        return validate_webhook_url(text(url), child(path, "url"))
    return validate_webhook_service(as_dict(service), child(path, "service"))


_DIGITS = re.compile(r"[0-9]*")


def validate_webhook_url(url: str, path: str) -> list[FieldError]:
    """ValidateWebhookURL: https://host[:port][/path], without user info, query or fragment."""
    try:
        parts = urlsplit(url)
    except ValueError as err:
        return [required(path, f'url must be a valid URL: parse "{url}": {err}{URL_FORM}')]
    userinfo, at, host = parts.netloc.rpartition("@")
    _, colon, port = host.rpartition("]")[2].rpartition(":")  # after an IPv6 literal
    if colon and not _DIGITS.fullmatch(port):
        return [required(path, f'url must be a valid URL: parse "{url}": invalid port '
                               f'":{port}" after host{URL_FORM}')]
    errors: list[FieldError] = []
    if parts.scheme != "https":
        errors.append(invalid(path, parts.scheme,
                              f"'https' is the only allowed URL scheme{URL_FORM}"))
    if not host:
        errors.append(invalid(path, host, f"host must be provided{URL_FORM}"))
    if at:
        errors.append(invalid(path, userinfo, "user information is not permitted in the URL"))
    if parts.fragment:
        errors.append(invalid(path, parts.fragment, "fragments are not permitted in the URL"))
    if parts.query:
        errors.append(invalid(path, parts.query,
                              "query parameters are not permitted in the URL"))
    return errors


def validate_webhook_service(service: Obj, path: str) -> list[FieldError]:
    """ValidateWebhookService: name, namespace, a port, and a path of DNS-subdomain
    segments starting with '/'."""
    errors: list[FieldError] = []
    if not service.get("name"):
        errors.append(required(child(path, "name"), "service name is required"))
    if not service.get("namespace"):
        errors.append(required(child(path, "namespace"), "service namespace is required"))
    port = service.get("port")
    if not (isinstance(port, int) and 1 <= port <= 65535):
        errors.append(invalid(child(path, "port"), port, "port is not valid: must be between "
                                                         "1 and 65535, inclusive"))
    url_path = service.get("path")
    if url_path is None or url_path in ("", "/"):
        return errors
    url_path = text(url_path)
    path = child(path, "path")
    if url_path == "//":
        return [*errors, invalid(path, url_path, "segment[0] may not be empty")]
    if not url_path.startswith("/"):
        errors.append(invalid(path, url_path, "must start with a '/'"))
    for i, segment in enumerate(url_path[1:].removesuffix("/").split("/")):
        if not segment:
            errors.append(invalid(path, url_path, f"segment[{i}] may not be empty"))
            continue
        errors += [invalid(path, url_path, f"segment[{i}]: {problem}")
                   for problem in validate_dns1123_subdomain(segment)]
    return errors


def _validate_match_conditions(conditions: list[Any], path: str) -> list[FieldError]:
    """validateMatchConditions: at most 64, each named (a qualified name, unique) and with
    an expression that compiles to a bool (in the policies' environment, which also
    declares params, namespaceObject and variables: a webhook's condition that names them
    compiles here and fails when it runs)."""
    errors = ([too_many(path, len(conditions), MAX_MATCH_CONDITIONS)]
              if len(conditions) > MAX_MATCH_CONDITIONS else [])
    names: set[str] = set()
    for i, condition in enumerate(conditions):
        condition_path = index(path, i)
        condition = as_dict(condition)
        errors += _expression_errors(condition.get("expression"),
                                     child(condition_path, "expression"), "bool")
        name = text(condition.get("name"))
        if not name:
            errors.append(required(child(condition_path, "name")))
            continue
        errors += as_invalid(child(condition_path, "name"), name, validate_qualified_name(name))
        if name in names:
            errors.append(duplicate(child(condition_path, "name"), name))
        names.add(name)
    return errors


def _validate_review_versions(versions: Any, require_recognized: bool, path: str
                              ) -> list[FieldError]:
    """validateAdmissionReviewVersions: required, no duplicates, DNS-1035 labels, and
    (unless the stored configuration already lacks one) one the server can send."""
    versions = as_list(versions)
    if not versions:
        return [required(path, f"must specify one of {', '.join(ADMISSION_REVIEW_VERSIONS)}")]
    errors: list[FieldError] = []
    seen: set[str] = set()
    for i, version in enumerate(map(text, versions)):
        if version in seen:
            errors.append(invalid(index(path, i), version, "duplicate version"))
            continue
        seen.add(version)
        errors += as_invalid(index(path, i), version, validate_dns1035_label(version))
    if require_recognized and not _recognized(versions):
        errors.append(invalid(path, versions, "must include at least one of "
                                              f"{', '.join(ADMISSION_REVIEW_VERSIONS)}"))
    return errors


def _recognized(versions: Iterable[Any]) -> bool:
    """At least one AdmissionReview version the server can send."""
    return any(version in ADMISSION_REVIEW_VERSIONS for version in versions)


# -- ValidatingAdmissionPolicy and ValidatingAdmissionPolicyBinding ------------------------

VALIDATION_ACTIONS = ["Audit", "Deny", "Warn"]
VALIDATION_REASONS = ["Forbidden", "Invalid", "RequestEntityTooLarge", "Unauthorized"]
PARAMETER_NOT_FOUND_ACTIONS = ["Allow", "Deny"]
_CEL_IDENTIFIER = re.compile(r"^[_a-zA-Z][_a-zA-Z0-9]*$")


def _expression_errors(expression: Any, path: str, want: str) -> list[FieldError]:
    """A required CEL expression that must compile (upstream compiles it at write time)."""
    if not text(expression).strip():
        return [required(path)]
    _, error = compile_expression(text(expression), want)
    return [invalid(path, expression, error)] if error else []


def _default_match_resources(match: Any) -> None:
    """SetDefaults_MatchResources and the rules' scope."""
    if not isinstance(match, dict):
        return
    set_default(match, "matchPolicy", "Equivalent")
    set_default(match, "namespaceSelector", {})
    set_default(match, "objectSelector", {})
    for key in ("resourceRules", "excludeResourceRules"):
        for _, rule in items_of(match, key):
            set_default(rule, "scope", "*")


def _validate_match_resources(match: Obj, path: str, policy: bool) -> list[FieldError]:
    """validateMatchResources: the rules, the selectors, matchPolicy; a policy's
    matchConstraints needs resourceRules."""
    errors = _enum_errors(match, "matchPolicy", MATCH_POLICIES, path)
    for selector in ("namespaceSelector", "objectSelector"):
        errors += validate_label_selector(match.get(selector), child(path, selector))
    rules = as_list(match.get("resourceRules"))
    if policy and not rules:
        errors.append(required(child(path, "resourceRules")))
    for key in ("resourceRules", "excludeResourceRules"):
        for i, rule in items_of(match, key):
            errors += _validate_rule(rule, index(child(path, key), i))
    return errors


class ValidatingAdmissionPolicyStrategy(KindStrategy):
    """ValidatingAdmissionPolicies: CEL validations of the requests their bindings
    select. status.typeChecking is never written (no type checking here)."""

    def default(self, obj: Obj) -> None:
        """SetDefaults_ValidatingAdmissionPolicySpec."""
        spec = as_dict(obj.get("spec"))
        set_default(spec, "failurePolicy", "Fail")
        _default_match_resources(spec.get("matchConstraints"))

    def validate(self, obj: Obj) -> list[FieldError]:
        """validateValidatingAdmissionPolicySpec, with every expression compiled."""
        spec = as_dict(obj.get("spec"))
        errors = _enum_errors(spec, "failurePolicy", FAILURE_POLICIES, "spec")
        param_kind = spec.get("paramKind")
        if isinstance(param_kind, dict):
            if not text(param_kind.get("apiVersion")):
                errors.append(required("spec.paramKind.apiVersion"))
            if not text(param_kind.get("kind")):
                errors.append(required("spec.paramKind.kind"))
        match = spec.get("matchConstraints")
        if not isinstance(match, dict):
            errors.append(required("spec.matchConstraints"))
        else:
            errors += _validate_match_resources(match, "spec.matchConstraints", policy=True)
        errors += _validate_match_conditions(as_list(spec.get("matchConditions")),
                                             "spec.matchConditions")
        for i, variable in items_of(spec, "variables"):
            at = f"spec.variables[{i}]"
            name = text(variable.get("name"))
            if not name:
                errors.append(required(f"{at}.name"))
            elif not _CEL_IDENTIFIER.match(name):
                errors.append(invalid(f"{at}.name", name, "name is not a valid CEL identifier"))
            errors += _expression_errors(variable.get("expression"), f"{at}.expression", "")
        validations = as_list(spec.get("validations"))
        if not validations and not as_list(spec.get("auditAnnotations")):
            errors.append(required("spec.validations",
                                   "validations or auditAnnotations must contain at least "
                                   "one item"))
        for i, validation in items_of(spec, "validations"):
            at = f"spec.validations[{i}]"
            errors += _expression_errors(validation.get("expression"), f"{at}.expression",
                                         "bool")
            message = text(validation.get("message"))
            if "\n" in message:
                errors.append(invalid(f"{at}.message", message,
                                      "message must not contain line breaks"))
            elif message and not message.strip():
                errors.append(invalid(f"{at}.message", message,
                                      "message must be non-empty if specified"))
            if validation.get("messageExpression"):
                errors += _expression_errors(validation.get("messageExpression"),
                                             f"{at}.messageExpression", "string")
            errors += _enum_errors(validation, "reason", VALIDATION_REASONS, at)
        policy_name = text(as_dict(obj.get("metadata")).get("name"))
        for i, annotation in items_of(spec, "auditAnnotations"):
            at = f"spec.auditAnnotations[{i}]"
            key = text(annotation.get("key"))
            if not key:
                errors.append(required(f"{at}.key"))
            else:
                errors += as_invalid(f"{at}.key", key,
                                     validate_qualified_name(f"{policy_name}/{key}"))
            errors += _expression_errors(annotation.get("valueExpression"),
                                         f"{at}.valueExpression", "string")
        return errors


class ValidatingAdmissionPolicyBindingStrategy(KindStrategy):
    """ValidatingAdmissionPolicyBindings: which policy applies to which resources, with
    which parameters, and what a failed validation does."""

    def default(self, obj: Obj) -> None:
        """SetDefaults_ValidatingAdmissionPolicyBindingSpec."""
        _default_match_resources(as_dict(obj.get("spec")).get("matchResources"))

    def validate(self, obj: Obj) -> list[FieldError]:
        """validateValidatingAdmissionPolicyBindingSpec."""
        spec = as_dict(obj.get("spec"))
        errors: list[FieldError] = []
        policy_name = text(spec.get("policyName"))
        if not policy_name:
            errors.append(required("spec.policyName"))
        else:
            errors += as_invalid("spec.policyName", policy_name,
                                 validate_dns1123_subdomain(policy_name))
        param_ref = spec.get("paramRef")
        if isinstance(param_ref, dict):
            errors += _validate_param_ref(param_ref, "spec.paramRef")
        match = spec.get("matchResources")
        if isinstance(match, dict):
            errors += _validate_match_resources(match, "spec.matchResources", policy=False)
        actions = as_list(spec.get("validationActions"))
        if not actions:
            errors.append(required("spec.validationActions"))
        seen: set[str] = set()
        for i, action in enumerate(actions):
            at = f"spec.validationActions[{i}]"
            if isinstance(action, str) and action in seen:
                errors.append(duplicate(at, action))
            elif action not in VALIDATION_ACTIONS:
                errors.append(not_supported(at, action, VALIDATION_ACTIONS))
            seen.add(str(action))
        if {"Deny", "Warn"} <= seen:
            errors.append(invalid("spec.validationActions", actions,
                                  "must not contain both Deny and Warn (repeating the same "
                                  "validation failure information in the API response and "
                                  "headers serves no purpose)"))
        return errors


def _validate_param_ref(ref: Obj, path: str) -> list[FieldError]:
    """validateParamRef: a name or a selector (not both), and parameterNotFoundAction."""
    errors: list[FieldError] = []
    name, selector = text(ref.get("name")), ref.get("selector")
    if name and selector is not None:
        errors.append(forbidden(child(path, "name"),
                                "name and selector are mutually exclusive"))
    if not name and selector is None:
        errors.append(required(path, "one of name or selector must be specified"))
    if name:
        errors += as_invalid(child(path, "name"), name, validate_dns1123_subdomain(name))
    if selector is not None:
        errors += validate_label_selector(selector, child(path, "selector"))
    action = ref.get("parameterNotFoundAction")
    if action is None:
        errors.append(required(child(path, "parameterNotFoundAction")))
    elif action not in PARAMETER_NOT_FOUND_ACTIONS:
        errors.append(not_supported(child(path, "parameterNotFoundAction"), action,
                                    PARAMETER_NOT_FOUND_ACTIONS))
    return errors
