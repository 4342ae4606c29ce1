"""ValidatingAdmissionPolicy: CEL validations of requests, declared as objects.

Upstream's k8s.io/apiserver/pkg/admission/plugin/policy/validating. Every write is
checked against each ValidatingAdmissionPolicyBinding (read from the watch cache):

    the binding's policy matches the request?  matchConstraints: resourceRules,
        excludeResourceRules, namespaceSelector, objectSelector; then the binding's
        matchResources, if any
    matchConditions all true?                 (an error: failurePolicy)
    params: with a paramKind, the binding's paramRef names one object (name) or some
        (selector), in paramRef.namespace or else the request's namespace; the policy
        runs once for each (none found: parameterNotFoundAction Deny refuses, Allow
        admits)
    variables, in order, then each validation with object, oldObject, request,
    params, namespaceObject, variables and authorizer (policycel.py)
    a validation false:  Deny  -> 422 Invalid (or the validation's reason):
                                  'ValidatingAdmissionPolicy 'p' with binding 'b' denied
                                  request: <message>'
                         Warn  -> a Warning header on the response
                         Audit -> the audit event's annotation
                                  validation.policy.admission.k8s.io/validation_failure
    auditAnnotations: each value under `<policy>/<key>` in the audit event
    an expression error: failurePolicy Fail denies, Ignore goes on
    cost: each expression is charged, before it runs, upstream's estimate of its cost
        with the values' own sizes (cel_cost.py): over 1,000,000 it is an error
        ('operation cancelled: actual cost limit exceeded'); the policy's expressions
        for one params object share 10,000,000, and when that runs out no further one
        runs (an error, as failurePolicy says)

matchPolicy Equivalent (the default) also matches a rule naming another version of the
request's resource; the object is not converted to that version for the expressions,
which see it as sent. Not built here: status.typeChecking. Variables are evaluated
eagerly, not on first use.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from typing import Any

import orjson

from minikube_py.api import Obj
from minikube_py.api.openapi_schema.cel import (
    BUDGET_EXHAUSTED,
    PER_CALL_LIMIT,
    RUNTIME_CEL_COST_BUDGET,
    Budget,
    spent,
)
from minikube_py.api.selectors import SelectorError, label_selector_from_dict
from minikube_py.apiserver.auth.admission import (
    CONNECT,
    CREATE,
    DELETE,
    UPDATE,
    Attributes,
    Plugin,
    admission_audit_annotations,
    admission_warnings,
)
from minikube_py.apiserver.auth.admission.policycel import (
    authorizer_value,
    call_cost,
    compile_expression,
    current_authorizer,
    evaluate,
    request_resource,
)
from minikube_py.apiserver.auth.admission.webhook import (
    ADMISSION_REGISTRATION,
    NamespaceLookup,
    _labels,
    _selector_matches,
    rule_matches,
)
from minikube_py.apiserver.auth.authorization import Authorizer

# IsExemptAdmissionConfigurationResource: never checked, so a bad policy can be removed.
EXEMPT = frozenset(("validatingwebhookconfigurations", "mutatingwebhookconfigurations",
                    "validatingadmissionpolicies", "validatingadmissionpolicybindings"))
# The audit annotation of the Audit action: a JSON list of the failed validations.
VALIDATION_FAILURE = "validation.policy.admission.k8s.io/validation_failure"
REASON_CODES = {"Forbidden": 403, "Unauthorized": 401, "RequestEntityTooLarge": 413,
                "Invalid": 422}


class _PolicyError(Exception):
    """An expression failed to evaluate, or the policy cannot run (its params)."""


class _OutOfBudget(_PolicyError):
    """The cost budget ran out: no further expression runs."""


def _named_rule_matches(rule: Obj, attributes: Attributes) -> bool:
    names = rule.get("resourceNames") or []
    return rule_matches(rule, attributes) and (not names or attributes.name in names)


def _rules_match(rules: list[Obj], attributes: Attributes, equivalents: list[Any]) -> bool:
    """Any rule matches the request, or, with matchPolicy Equivalent, the same request
    to an equivalent resource (another version of it, or one stored alongside it)."""
    if any(_named_rule_matches(rule, attributes) for rule in rules):
        return True
    return any(_named_rule_matches(rule, dataclasses.replace(attributes, resource=other))
               for other in equivalents for rule in rules)


class ValidatingAdmissionPolicy(Plugin):
    name = "ValidatingAdmissionPolicy"
    validating = True
    operations = frozenset((CREATE, UPDATE, DELETE, CONNECT))

    def __init__(self, policies: Callable[[], list[Obj]], bindings: Callable[[], list[Obj]],
                 namespace: NamespaceLookup, stores: Callable[[], Iterable[Any]],
                 authorizer: Authorizer) -> None:
        self.policies = policies
        self.bindings = bindings
        self.namespace = namespace
        self.stores = stores
        self.authorizer = authorizer

    async def validate(self, attributes: Attributes) -> None:
        """Check the request against every binding whose policy matches it."""
        if (attributes.resource.group == ADMISSION_REGISTRATION
                and attributes.resource.plural in EXEMPT):
            return
        bindings = sorted(self.bindings(), key=lambda b: b["metadata"]["name"])
        if not bindings:
            return
        policies = {p["metadata"]["name"]: p for p in self.policies()}
        namespace_object: Obj | None = None
        if attributes.namespace:
            namespace_object = await self.namespace(attributes.namespace)
        token = current_authorizer.set(self.authorizer)
        try:
            for binding in bindings:
                spec = binding.get("spec") or {}
                policy = policies.get(spec.get("policyName") or "")
                if policy is None:
                    continue
                await self._check(policy, binding, attributes, namespace_object)
        finally:
            current_authorizer.reset(token)

    def _matches(self, match: Obj, attributes: Attributes, namespace_object: Obj | None,
                 policy: bool) -> bool:
        """matching.Matcher.Matches: selectors, exclusions, then rules."""
        if attributes.resource.namespaced:
            if not _selector_matches(match.get("namespaceSelector"), _labels(namespace_object)):
                return False
        elif attributes.is_resource("", "namespaces"):
            if not _selector_matches(match.get("namespaceSelector"),
                                     _labels(attributes.obj or attributes.old)):
                return False
        selector = match.get("objectSelector")
        if not (_selector_matches(selector, _labels(attributes.obj))
                or (attributes.old is not None
                    and _selector_matches(selector, _labels(attributes.old)))):
            return False
        equivalents = (self._equivalents(attributes)
                       if match.get("matchPolicy", "Equivalent") == "Equivalent" else [])
        if _rules_match(match.get("excludeResourceRules") or [], attributes, equivalents):
            return False
        rules = match.get("resourceRules") or []
        if not rules:
            return not policy
        return _rules_match(rules, attributes, equivalents)

    def _equivalents(self, attributes: Attributes) -> list[Any]:
        """The other resources the request's resource is (upstream's
        EquivalentResourceMapper): the same objects in etcd, under another version."""
        own = attributes.resource
        return [store.resource for store in self.stores()
                if store.resource != own and store.resource.etcd_prefix == own.etcd_prefix]

    async def _check(self, policy: Obj, binding: Obj, attributes: Attributes,
                     namespace_object: Obj | None) -> None:
        spec, binding_spec = policy.get("spec") or {}, binding.get("spec") or {}
        if not self._matches(spec.get("matchConstraints") or {}, attributes, namespace_object,
                             policy=True):
            return
        match_resources = binding_spec.get("matchResources")
        if isinstance(match_resources, dict) and not self._matches(
                match_resources, attributes, namespace_object, policy=False):
            return
        actions = binding_spec.get("validationActions") or []
        fail = (spec.get("failurePolicy") or "Fail") == "Fail"
        try:
            params = self._params(spec.get("paramKind"), binding_spec.get("paramRef"),
                                  attributes)
        except _PolicyError as error:
            if fail:
                self._act(policy, binding, ["Deny"], str(error), "", attributes)
            return
        for param in params:
            data = _activation(attributes, namespace_object)
            data["params"] = param
            self._run_validations(policy, binding, actions, fail, data, attributes,
                                  Budget(RUNTIME_CEL_COST_BUDGET))

    def _params(self, param_kind: Any, param_ref: Any, attributes: Attributes
                      ) -> list[Obj | None]:
        """CollectParams: the objects the policy runs with ([None] without a paramKind)."""
        if not isinstance(param_kind, dict):
            return [None]
        kind = f"{param_kind.get('kind')}.{param_kind.get('apiVersion')}"
        if not isinstance(param_ref, dict):
            raise _PolicyError(f"paramKind kind `{kind}` is configured but paramRef is unset")
        store = next((store for store in self.stores()
                      if store.resource.api_version == param_kind.get("apiVersion")
                      and store.resource.kind == param_kind.get("kind")), None)
        if store is None:
            raise _PolicyError(f"paramKind kind `{kind}` not known")
        namespace = ""
        if store.resource.namespaced:
            namespace = param_ref.get("namespace") or attributes.namespace
            if not namespace:
                raise _PolicyError("cannot use namespaced paramRef in policy binding that "
                                   "matches cluster-scoped resources")
        name = param_ref.get("name")
        if name:
            found = store.cache.get(store.key(namespace, name))
            params = [found] if found is not None else []
        else:
            try:
                selector = label_selector_from_dict(param_ref.get("selector") or {})
            except SelectorError as error:
                raise _PolicyError(str(error)) from None
            params = [obj for obj in store.cache.list(f"{namespace}/" if namespace else "")
                      if selector.matches(_labels(obj))]
        if not params:
            if param_ref.get("parameterNotFoundAction") == "Deny":
                raise _PolicyError("no params found for policy binding with `Deny` "
                                   "parameterNotFoundAction")
            return []
        return params

    def _run_validations(self, policy: Obj, binding: Obj, actions: list[str], fail: bool,
                         data: dict[str, Any], attributes: Attributes,
                         budget: Budget) -> None:
        """matchConditions, variables, then the validations, for one params object, within
        one cost budget."""
        spec = policy.get("spec") or {}
        try:
            for condition in spec.get("matchConditions") or []:
                if _run(condition.get("expression") or "", data, "bool", budget) is not True:
                    return
            variables: dict[str, Any] = {}
            data["variables"] = variables
            for variable in spec.get("variables") or []:
                variables[variable.get("name") or ""] = _run(variable.get("expression") or "",
                                                              data, "", budget)
        except _PolicyError as error:
            if fail:
                self._act(policy, binding, actions, str(error), "", attributes)
            return
        for i, validation in enumerate(spec.get("validations") or []):
            expression = validation.get("expression") or ""
            try:
                passed = _run(expression, data, "bool", budget)
            except _PolicyError as error:
                if fail:
                    self._act(policy, binding, actions, str(error), "", attributes, i)
                if isinstance(error, _OutOfBudget):
                    return
                continue
            if passed is True:
                continue
            self._act(policy, binding, actions, _message(validation, data, budget),
                      validation.get("reason") or "Invalid", attributes, i)
        self._annotate(policy, binding, spec.get("auditAnnotations") or [], fail, data,
                       attributes, budget)

    def _annotate(self, policy: Obj, binding: Obj, annotations: list[Obj], fail: bool,
                  data: dict[str, Any], attributes: Attributes, budget: Budget) -> None:
        """auditAnnotations: each string value under `<policy>/<key>`; null adds none."""
        recorded = admission_audit_annotations.get()
        for annotation in annotations:
            try:
                value = _run(annotation.get("valueExpression") or "", data, "string", budget)
            except _PolicyError as error:
                if fail:
                    self._act(policy, binding, ["Deny"], str(error), "", attributes)
                if isinstance(error, _OutOfBudget):
                    return
                continue
            if isinstance(value, str) and recorded is not None:
                recorded[f"{policy['metadata']['name']}/{annotation.get('key')}"] = value

    def _act(self, policy: Obj, binding: Obj, actions: list[str], message: str, reason: str,
             attributes: Attributes, expression_index: int = 0) -> None:
        """Audit records the failure for the audit log; Warn adds a warning to the
        response; Deny raises."""
        policy_name, binding_name = policy["metadata"]["name"], binding["metadata"]["name"]
        recorded = admission_audit_annotations.get()
        if "Audit" in actions and recorded is not None:
            failures = orjson.loads(recorded.get(VALIDATION_FAILURE, "[]"))
            failures.append({"message": message, "policy": policy_name,
                             "binding": binding_name, "expressionIndex": expression_index,
                             "validationActions": actions})
            recorded[VALIDATION_FAILURE] = orjson.dumps(failures).decode()
        if "Warn" in actions:
            warnings = admission_warnings.get()
            if warnings is not None:
                warnings.append(f"Validation failed for ValidatingAdmissionPolicy "
                                f"'{policy_name}' with binding '{binding_name}': {message}")
        if "Deny" in actions:
            text = (f"ValidatingAdmissionPolicy '{policy_name}' with binding '{binding_name}' "
                    f"denied request: {message}")
            error = attributes.forbidden(text)
            reason = reason or "Invalid"
            error.reason = reason
            error.code = REASON_CODES.get(reason, 400)
            error.details = {**(error.details or {}), "causes": [{"message": text}]}
            raise error


def _activation(attributes: Attributes, namespace_object: Obj | None) -> dict[str, Any]:
    """object, oldObject, request and namespaceObject as expressions see them."""
    group, version, kind = attributes.kind
    resource = attributes.resource
    user = attributes.user
    request = {
        "kind": {"group": group, "version": version, "kind": kind},
        "resource": {"group": resource.group, "version": resource.version,
                     "resource": resource.plural},
        "subResource": attributes.subresource,
        "name": attributes.name,
        "namespace": attributes.namespace,
        "operation": attributes.operation,
        "userInfo": {"username": user.name, "uid": user.uid, "groups": list(user.groups)},
        "dryRun": attributes.dry_run,
    }
    return {"object": attributes.obj, "oldObject": attributes.old, "request": request,
            "params": None, "namespaceObject": namespace_object,
            "authorizer": authorizer_value(user),
            "authorizer.requestResource": request_resource(
                user, resource.group, resource.plural, attributes.subresource,
                attributes.namespace, attributes.name)}


def _run(expression: str, data: dict[str, Any], want: str, budget: Budget) -> Any:
    """One expression's value, its cost charged to `budget`; _PolicyError says why it has
    none."""
    program, error = compile_expression(expression, want)
    if program is not None:
        cost = call_cost(expression, want, data)
        if spent(cost) > budget.remaining:
            raise _OutOfBudget(BUDGET_EXHAUSTED)
        budget.remaining -= spent(cost)
        if cost > PER_CALL_LIMIT:
            error = "operation cancelled: actual cost limit exceeded"
        else:
            value, error = evaluate(program, data)
            if not error:
                return value
    raise _PolicyError(f"expression '{expression}' resulted in error: {error}")


def _message(validation: Obj, data: dict[str, Any], budget: Budget) -> str:
    """messageExpression's value, else message, else `failed expression: <expression>`."""
    if validation.get("messageExpression"):
        try:
            text = _run(validation["messageExpression"], data, "string", budget)
        except _PolicyError:
            text = ""
        if isinstance(text, str) and text.strip() and "\n" not in text:
            return text.strip()
    message = (validation.get("message") or "").strip()
    return message or f"failed expression: {(validation.get('expression') or '').strip()}"
