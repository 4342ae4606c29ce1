"""The review kinds: questions put to the API server, answered and never stored.
authorization.k8s.io/v1 SelfSubjectAccessReview and SubjectAccessReview ("may I / may
they do this?", what `kubectl auth can-i` asks) and authentication.k8s.io/v1
SelfSubjectReview ("who am I?", `kubectl auth whoami`).

Upstream: k8s.io/api/authorization/v1/types.go, k8s.io/api/authentication/v1/types.go.
"""

from __future__ import annotations

from minikube_py.api.schema.dsl import BOOLEAN, STRING, array, atomic, f, map_of, obj
from minikube_py.api.schema.meta import LABEL_SELECTOR_REQUIREMENT, META, api_object

AUTHORIZATION = "io.k8s.api.authorization.v1"
AUTHENTICATION = "io.k8s.api.authentication.v1"

FIELD_SELECTOR_REQUIREMENT = obj(
    f"{META}.FieldSelectorRequirement",
    "A field, an operator, and the values it is compared with.",
    key=f(STRING, "The field the selector applies to.", required=True),
    operator=f(STRING, "In, NotIn, Exists or DoesNotExist.", required=True),
    values=atomic(STRING, "The values, for In and NotIn."),
)

RESOURCE_ATTRIBUTES = obj(
    f"{AUTHORIZATION}.ResourceAttributes",
    "A request for a resource, as the authorizer sees it.",
    fieldSelector=f(obj(
        f"{AUTHORIZATION}.FieldSelectorAttributes",
        "The field selector of a list or watch.",
        rawSelector=f(STRING, "The selector as written in the query."),
        requirements=atomic(FIELD_SELECTOR_REQUIREMENT, "The parsed requirements."),
    ), "The field selector of a list or watch."),
    group=f(STRING, "The API group; \"*\" means all."),
    labelSelector=f(obj(
        f"{AUTHORIZATION}.LabelSelectorAttributes",
        "The label selector of a list or watch.",
        rawSelector=f(STRING, "The selector as written in the query."),
        requirements=atomic(LABEL_SELECTOR_REQUIREMENT, "The parsed requirements."),
    ), "The label selector of a list or watch."),
    name=f(STRING, "The object's name; empty for a list or a create."),
    namespace=f(STRING, "The namespace; empty for cluster-scoped resources or all."),
    resource=f(STRING, "The resource (plural); \"*\" means all."),
    subresource=f(STRING, "The subresource, if any."),
    verb=f(STRING, "get, list, watch, create, update, patch, delete... \"*\" means all."),
    version=f(STRING, "The API version; \"*\" means all."),
)

NON_RESOURCE_ATTRIBUTES = obj(
    f"{AUTHORIZATION}.NonResourceAttributes",
    "A request for a path that is no resource (/healthz, /api).",
    path=f(STRING, "The URL path."),
    verb=f(STRING, "The HTTP verb, lower case."),
)

ACCESS_REVIEW_STATUS = obj(
    f"{AUTHORIZATION}.SubjectAccessReviewStatus",
    "The answer.",
    allowed=f(BOOLEAN, "Whether the action is allowed.", required=True),
    denied=f(BOOLEAN, "Whether an authorizer denied it outright (RBAC never does)."),
    evaluationError=f(STRING, "An error while deciding, if any."),
    reason=f(STRING, "Why, when an authorizer said."),
)

SELF_SUBJECT_ACCESS_REVIEW = api_object(
    f"{AUTHORIZATION}.SelfSubjectAccessReview",
    "May I do this? Asked by the user the request authenticates as.",
    spec=f(obj(
        f"{AUTHORIZATION}.SelfSubjectAccessReviewSpec",
        "The action; exactly one of the two attributes.",
        nonResourceAttributes=f(NON_RESOURCE_ATTRIBUTES, "A path that is no resource."),
        resourceAttributes=f(RESOURCE_ATTRIBUTES, "A resource request."),
    ), "The action asked about.", required=True),
    status=f(ACCESS_REVIEW_STATUS, "The answer, set by the server."),
)

SUBJECT_ACCESS_REVIEW = api_object(
    f"{AUTHORIZATION}.SubjectAccessReview",
    "May this user do this? (Asked by a component on behalf of a user.)",
    spec=f(obj(
        f"{AUTHORIZATION}.SubjectAccessReviewSpec",
        "The action, and the user asking: user or groups are required.",
        extra=f(map_of(array(STRING)), "The user's extra attributes."),
        groups=atomic(STRING, "The user's groups."),
        nonResourceAttributes=f(NON_RESOURCE_ATTRIBUTES, "A path that is no resource."),
        resourceAttributes=f(RESOURCE_ATTRIBUTES, "A resource request."),
        uid=f(STRING, "The user's uid."),
        user=f(STRING, "The user's name."),
    ), "The action and the user.", required=True),
    status=f(ACCESS_REVIEW_STATUS, "The answer, set by the server."),
)

SELF_SUBJECT_REVIEW = api_object(
    f"{AUTHENTICATION}.SelfSubjectReview",
    "Who am I? The user the request authenticated as.",
    status=f(obj(
        f"{AUTHENTICATION}.SelfSubjectReviewStatus",
        "The answer.",
        userInfo=f(obj(
            f"{AUTHENTICATION}.UserInfo",
            "A user as authentication found it.",
            extra=f(map_of(array(STRING)), "Extra attributes of the user."),
            groups=atomic(STRING, "The groups the user is in."),
            uid=f(STRING, "A unique value that identifies the user over time."),
            username=f(STRING, "The user's name."),
        ), "The user."),
    ), "The answer, set by the server."),
)
