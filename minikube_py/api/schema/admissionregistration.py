"""admissionregistration.k8s.io/v1 kinds: ValidatingWebhookConfiguration,
MutatingWebhookConfiguration, ValidatingAdmissionPolicy and its bindings.

Upstream: k8s.io/api/admissionregistration/v1/types.go. Webhooks and their match
conditions are list maps keyed (and strategically merged) by name; everything else is
atomic. A webhook's rule embeds Rule in RuleWithOperations, so its fields sit side by
side in JSON: {"operations": [...], "apiGroups": [...], ...}.
"""

from __future__ import annotations

from minikube_py.api.schema.dsl import INTEGER, STRING, array, atomic, atomic_struct, f, merged, obj
from minikube_py.api.schema.meta import CONDITION, LABEL_SELECTOR, api_object
from minikube_py.api.schema.types import Field, Type

ADMISSIONREGISTRATION = "io.k8s.api.admissionregistration.v1"

SERVICE_REFERENCE = obj(
    f"{ADMISSIONREGISTRATION}.ServiceReference",
    "The in-cluster Service that serves a webhook.",
    name=f(STRING, "Name of the service.", required=True),
    namespace=f(STRING, "Namespace of the service.", required=True),
    path=f(STRING, "URL path sent in every request to the service; starts with '/'."),
    port=f(INTEGER, "Port of the service (1-65535); defaults to 443."),
)

WEBHOOK_CLIENT_CONFIG = obj(
    f"{ADMISSIONREGISTRATION}.WebhookClientConfig",
    "How the API server reaches a webhook over TLS: a URL or a Service, exactly one.",
    caBundle=f(STRING, "PEM CA bundle that signs the webhook's serving certificate "
               "(base64); the system roots when unset."),
    service=f(SERVICE_REFERENCE, "The Service of a webhook running in the cluster."),
    url=f(STRING, "https://host[:port][/path] of a webhook outside the cluster; no user "
          "info, query or fragment."),
)

RULE_WITH_OPERATIONS = obj(
    f"{ADMISSIONREGISTRATION}.RuleWithOperations",
    "Which operations on which resources a webhook is called for.",
    apiGroups=atomic(STRING, "API groups of the resources; \"\" is the core group, '*' all "
                     "(alone)."),
    apiVersions=atomic(STRING, "API versions of the resources; '*' all (alone)."),
    operations=atomic(STRING, "CREATE, UPDATE, DELETE, CONNECT, or '*' alone for all."),
    resources=atomic(STRING, "Resources, e.g. pods, pods/status, */scale; '*' all resources, "
                     "'*/*' all resources and subresources."),
    scope=f(STRING, "Cluster, Namespaced or '*' (the default): the scope of the resources "
            "matched."),
)

MATCH_CONDITION = obj(
    f"{ADMISSIONREGISTRATION}.MatchCondition",
    "A CEL condition a request must meet to be sent to the webhook.",
    expression=f(STRING, "CEL expression evaluating to a bool, over object, oldObject, "
                 "request and authorizer.", required=True),
    name=f(STRING, "Identifier of the condition (a qualified name), unique in the webhook.",
           required=True),
)


def _webhook_fields(kind: str) -> dict[str, Field]:
    """The fields a validating and a mutating webhook share."""
    return dict(
        admissionReviewVersions=atomic(STRING, "AdmissionReview versions the webhook accepts, "
                                       "preferred first; must include v1 or v1beta1.",
                                       required=True),
        clientConfig=f(WEBHOOK_CLIENT_CONFIG, "How to reach the webhook.", required=True),
        failurePolicy=f(STRING, "Ignore or Fail (the default): what an error calling the "
                        "webhook does to the request."),
        matchConditions=merged(MATCH_CONDITION, "Conditions (at most 64) every request sent "
                               "to the webhook must meet.", key="name"),
        matchPolicy=f(STRING, "Exact, or Equivalent (the default): also match a resource "
                      "reached through another group or version."),
        name=f(STRING, f"Name of the {kind} webhook, a fully qualified name such as "
               "imagepolicy.kubernetes.io.", required=True),
        namespaceSelector=f(LABEL_SELECTOR, "Call the webhook only for objects in "
                            "namespaces with these labels; empty (the default) matches all."),
        objectSelector=f(LABEL_SELECTOR, "Call the webhook only for objects with these "
                         "labels; empty (the default) matches all."),
        rules=atomic(RULE_WITH_OPERATIONS, "Operations and resources the webhook is called "
                     "for (any rule matching is enough)."),
        sideEffects=f(STRING, "None or NoneOnDryRun: whether calling the webhook changes "
                      "anything outside the request.", required=True),
        timeoutSeconds=f(INTEGER, "Seconds to wait for the webhook (1-30); defaults to 10."),
    )


VALIDATING_WEBHOOK = obj(
    f"{ADMISSIONREGISTRATION}.ValidatingWebhook",
    "An admission webhook that accepts or rejects requests, and what it is called for.",
    **_webhook_fields("validating"),
)

MUTATING_WEBHOOK = obj(
    f"{ADMISSIONREGISTRATION}.MutatingWebhook",
    "An admission webhook that may change objects, and what it is called for.",
    **_webhook_fields("mutating"),
    reinvocationPolicy=f(STRING, "Never (the default) or IfNeeded: call the webhook again "
                         "when later admission plugins changed the object."),
)


def _configuration(kind: str, webhook: Type, description: str) -> Type:
    return api_object(
        f"{ADMISSIONREGISTRATION}.{kind}",
        description,
        webhooks=merged(webhook, "The webhooks, and the operations and resources each is "
                        "called for.", key="name"),
    )


VALIDATING_WEBHOOK_CONFIGURATION = _configuration(
    "ValidatingWebhookConfiguration", VALIDATING_WEBHOOK,
    "Admission webhooks that accept or reject objects without changing them.",
)

MUTATING_WEBHOOK_CONFIGURATION = _configuration(
    "MutatingWebhookConfiguration", MUTATING_WEBHOOK,
    "Admission webhooks that accept or reject objects and may change them.",
)


NAMED_RULE_WITH_OPERATIONS = obj(
    f"{ADMISSIONREGISTRATION}.NamedRuleWithOperations",
    "Which operations on which resources (optionally which names) a policy applies to.",
    apiGroups=atomic(STRING, "API groups of the resources; \"\" is the core group, '*' all "
                     "(alone)."),
    apiVersions=atomic(STRING, "API versions of the resources; '*' all (alone)."),
    operations=atomic(STRING, "CREATE, UPDATE, DELETE, CONNECT, or '*' alone for all."),
    resourceNames=atomic(STRING, "Names of the objects; empty means all."),
    resources=atomic(STRING, "Resources, e.g. pods, pods/status, */scale; '*' all resources, "
                     "'*/*' all resources and subresources."),
    scope=f(STRING, "Cluster, Namespaced or '*' (the default): the scope of the resources "
            "matched."),
)

MATCH_RESOURCES = obj(
    f"{ADMISSIONREGISTRATION}.MatchResources",
    "Which requests a policy (or binding) applies to; exclusions win over inclusions.",
    excludeResourceRules=atomic(NAMED_RULE_WITH_OPERATIONS, "Operations and resources the "
                                "policy does not apply to."),
    matchPolicy=f(STRING, "Exact, or Equivalent (the default): also match a resource "
                  "reached through another group or version."),
    namespaceSelector=f(LABEL_SELECTOR, "Apply only to objects in namespaces with these "
                        "labels; empty (the default) matches all."),
    objectSelector=f(LABEL_SELECTOR, "Apply only to objects with these labels; empty (the "
                     "default) matches all."),
    resourceRules=atomic(NAMED_RULE_WITH_OPERATIONS, "Operations and resources the policy "
                         "applies to (any rule matching is enough)."),
)

PARAM_KIND = atomic_struct(obj(
    f"{ADMISSIONREGISTRATION}.ParamKind",
    "The kind of the resources that parameterize a policy.",
    apiVersion=f(STRING, "group/version of the parameter resource."),
    kind=f(STRING, "Kind of the parameter resource."),
))

VALIDATION = obj(
    f"{ADMISSIONREGISTRATION}.Validation",
    "One CEL expression a request must pass.",
    expression=f(STRING, "CEL expression evaluating to a bool, over object, oldObject, "
                 "request, params, namespaceObject, variables and authorizer.", required=True),
    message=f(STRING, "Message returned when the expression is false."),
    messageExpression=f(STRING, "CEL expression evaluating to the message returned when "
                        "the expression is false."),
    reason=f(STRING, "Unauthorized, Forbidden, Invalid (the default) or "
             "RequestEntityTooLarge: the reason (and HTTP code) of a refusal."),
)

VARIABLE = obj(
    f"{ADMISSIONREGISTRATION}.Variable",
    "A named CEL expression, available to later expressions as variables.<name>.",
    expression=f(STRING, "CEL expression giving the variable's value.", required=True),
    name=f(STRING, "Name of the variable, a CEL identifier.", required=True),
)

AUDIT_ANNOTATION = obj(
    f"{ADMISSIONREGISTRATION}.AuditAnnotation",
    "An annotation added to the request's audit event.",
    key=f(STRING, "Key of the annotation, prefixed with the policy's name and a slash.",
          required=True),
    valueExpression=f(STRING, "CEL expression giving the annotation's value (a string, "
                      "or null for none).", required=True),
)

TYPE_CHECKING_STATUS = obj(
    f"{ADMISSIONREGISTRATION}.TypeChecking",
    "The results of type checking a policy's expressions.",
    expressionWarnings=atomic(obj(
        f"{ADMISSIONREGISTRATION}.ExpressionWarning",
        "A type checking warning on one expression.",
        fieldRef=f(STRING, "Path of the expression's field.", required=True),
        warning=f(STRING, "What type checking found.", required=True),
    ), "The warnings, one per expression."),
)

VALIDATING_ADMISSION_POLICY = api_object(
    f"{ADMISSIONREGISTRATION}.ValidatingAdmissionPolicy",
    "CEL validations that accept or reject requests without changing them.",
    spec=f(obj(
        f"{ADMISSIONREGISTRATION}.ValidatingAdmissionPolicySpec",
        "What a policy applies to and what it checks.",
        auditAnnotations=atomic(AUDIT_ANNOTATION, "Annotations added to the audit event of "
                                "each request the policy applies to."),
        failurePolicy=f(STRING, "Ignore or Fail (the default): what an error evaluating "
                        "the policy does to the request."),
        matchConditions=merged(MATCH_CONDITION, "Conditions (at most 64) every request "
                               "must meet for the policy to apply.", key="name"),
        matchConstraints=f(MATCH_RESOURCES, "The resources the policy applies to."),
        paramKind=f(PARAM_KIND, "The kind of the resources that parameterize the policy."),
        validations=atomic(VALIDATION, "The expressions a request must pass."),
        variables=atomic(VARIABLE, "Named expressions, evaluated in order."),
    ), "What the policy applies to and what it checks."),
    status=f(obj(
        f"{ADMISSIONREGISTRATION}.ValidatingAdmissionPolicyStatus",
        "What the server found checking the policy.",
        conditions=merged(CONDITION, "The policy's conditions.", key="type"),
        observedGeneration=f(INTEGER, "The generation the status describes."),
        typeChecking=f(TYPE_CHECKING_STATUS, "The results of type checking."),
    ), "What the server found checking the policy."),
)

PARAM_REF = atomic_struct(obj(
    f"{ADMISSIONREGISTRATION}.ParamRef",
    "Which parameter resources a binding passes to its policy.",
    name=f(STRING, "Name of one parameter resource."),
    namespace=f(STRING, "Namespace of the parameter resources."),
    parameterNotFoundAction=f(STRING, "Allow or Deny: what a request gets when no "
                              "parameter resource is found."),
    selector=f(LABEL_SELECTOR, "Labels of the parameter resources."),
))

VALIDATING_ADMISSION_POLICY_BINDING = api_object(
    f"{ADMISSIONREGISTRATION}.ValidatingAdmissionPolicyBinding",
    "Binds a ValidatingAdmissionPolicy to resources and parameters.",
    spec=f(obj(
        f"{ADMISSIONREGISTRATION}.ValidatingAdmissionPolicyBindingSpec",
        "Which policy, for which resources, with which parameters, and what a failed "
        "validation does.",
        matchResources=f(MATCH_RESOURCES, "Further limits the resources the policy applies "
                         "to."),
        paramRef=f(PARAM_REF, "The parameter resources."),
        policyName=f(STRING, "Name of the ValidatingAdmissionPolicy.", required=True),
        validationActions=f(array(STRING), "Deny, Warn and/or Audit: what a failed "
                            "validation does.", list_type="set"),
    ), "Which policy, for which resources, with which parameters."),
)
