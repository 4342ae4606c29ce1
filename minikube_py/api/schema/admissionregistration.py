"""admissionregistration.k8s.io/v1 kinds: ValidatingWebhookConfiguration and
MutatingWebhookConfiguration.

Upstream: k8s.io/api/admissionregistration/v1/types.go. Webhooks and their match
conditions are list maps keyed (and strategically merged) by name; everything else is
atomic. A webhook's rule embeds Rule in RuleWithOperations, so its fields sit side by
side in JSON: {"operations": [...], "apiGroups": [...], ...}.
"""

from __future__ import annotations

from minikube_py.api.schema.dsl import INTEGER, STRING, atomic, f, merged, obj
from minikube_py.api.schema.meta import LABEL_SELECTOR, api_object
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
