"""The review kinds: questions put to the API server, answered and never stored.
authorization.k8s.io/v1 SelfSubjectAccessReview and SubjectAccessReview ("may I / may
they do this?", what `kubectl auth can-i` asks) and authentication.k8s.io/v1
SelfSubjectReview ("who am I?", `kubectl auth whoami`) and TokenReview ("whom does this
token name?"); and TokenRequest, the body of a ServiceAccount's `token` subresource.

Upstream: k8s.io/api/authorization/v1/types.go, k8s.io/api/authentication/v1/types.go.
"""

from __future__ import annotations

from minikube_py.api.schema.dsl import BOOLEAN, INTEGER, STRING, array, atomic, f, map_of, obj
from minikube_py.api.schema.meta import LABEL_SELECTOR_REQUIREMENT, META, TIME, api_object

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

SUBJECT_ACCESS_REVIEW_SPEC = obj(
    f"{AUTHORIZATION}.SubjectAccessReviewSpec",
    "The action, and the user asking: user or groups are required.",
    extra=f(map_of(array(STRING)), "The user's extra attributes."),
    groups=atomic(STRING, "The user's groups."),
    nonResourceAttributes=f(NON_RESOURCE_ATTRIBUTES, "A path that is no resource."),
    resourceAttributes=f(RESOURCE_ATTRIBUTES, "A resource request."),
    uid=f(STRING, "The user's uid."),
    user=f(STRING, "The user's name."),
)

SUBJECT_ACCESS_REVIEW = api_object(
    f"{AUTHORIZATION}.SubjectAccessReview",
    "May this user do this? (Asked by a component on behalf of a user.)",
    spec=f(SUBJECT_ACCESS_REVIEW_SPEC, "The action and the user.", required=True),
    status=f(ACCESS_REVIEW_STATUS, "The answer, set by the server."),
)

LOCAL_SUBJECT_ACCESS_REVIEW = api_object(
    f"{AUTHORIZATION}.LocalSubjectAccessReview",
    "May this user do this in this namespace? (What `admin` may ask of its namespace.)",
    spec=f(SUBJECT_ACCESS_REVIEW_SPEC, "The action and the user.", required=True),
    status=f(ACCESS_REVIEW_STATUS, "The answer, set by the server."),
)

USER_INFO = obj(
    f"{AUTHENTICATION}.UserInfo",
    "A user as authentication found it.",
    extra=f(map_of(array(STRING)), "Extra attributes of the user."),
    groups=atomic(STRING, "The groups the user is in."),
    uid=f(STRING, "A unique value that identifies the user over time."),
    username=f(STRING, "The user's name."),
)

SELF_SUBJECT_REVIEW = api_object(
    f"{AUTHENTICATION}.SelfSubjectReview",
    "Who am I? The user the request authenticated as.",
    status=f(obj(
        f"{AUTHENTICATION}.SelfSubjectReviewStatus",
        "The answer.",
        userInfo=f(USER_INFO, "The user."),
    ), "The answer, set by the server."),
)

TOKEN_REQUEST = api_object(
    f"{AUTHENTICATION}.TokenRequest",
    "A request for a token of a ServiceAccount (its `token` subresource).",
    spec=f(obj(
        f"{AUTHENTICATION}.TokenRequestSpec",
        "What the token should be good for.",
        attestations=f(map_of(array(STRING)), "Claims the requester asks the API server to "
                       "attest to."),
        audiences=atomic(STRING, "Who may accept the token; the API server's own by default.",
                         required=True),
        boundObjectRef=f(obj(
            f"{AUTHENTICATION}.BoundObjectReference",
            "An object the token lives no longer than.",
            apiVersion=f(STRING, "The object's API version."),
            kind=f(STRING, "Pod, Secret or Node."),
            name=f(STRING, "The object's name."),
            uid=f(STRING, "The object's uid."),
        ), "The object the token is bound to."),
        expirationSeconds=f(INTEGER, "How long the token lasts (at least 600 s)."),
    ), "What is asked.", required=True),
    status=f(obj(
        f"{AUTHENTICATION}.TokenRequestStatus",
        "The token.",
        expirationTimestamp=f(TIME, "When it expires.", required=True),
        token=f(STRING, "The bearer token.", required=True),
    ), "The token, set by the server."),
)

TOKEN_REVIEW = api_object(
    f"{AUTHENTICATION}.TokenReview",
    "Who does this token name? (Asked by components that take tokens, as the kubelet.)",
    spec=f(obj(
        f"{AUTHENTICATION}.TokenReviewSpec",
        "The token, and the audiences the asker accepts.",
        audiences=atomic(STRING, "Audiences the asker accepts; the API server's by default."),
        token=f(STRING, "The bearer token."),
    ), "The token to review.", required=True),
    status=f(obj(
        f"{AUTHENTICATION}.TokenReviewStatus",
        "The answer.",
        audiences=atomic(STRING, "The audiences the token is good for, of those asked."),
        authenticated=f(BOOLEAN, "Whether the token names a user."),
        error=f(STRING, "Why not, when it does not."),
        user=f(USER_INFO, "The user it names."),
    ), "The answer, set by the server."),
)

SELF_SUBJECT_RULES_REVIEW = api_object(
    f"{AUTHORIZATION}.SelfSubjectRulesReview",
    "What may I do in this namespace? (Every rule that applies to the asking user.)",
    spec=f(obj(
        f"{AUTHORIZATION}.SelfSubjectRulesReviewSpec",
        "The namespace asked about.",
        namespace=f(STRING, "The namespace to list the rules of."),
    ), "The namespace asked about.", required=True),
    status=f(obj(
        f"{AUTHORIZATION}.SubjectRulesReviewStatus",
        "The rules; possibly incomplete, depending on the authorizer.",
        evaluationError=f(STRING, "An error while listing, if any."),
        incomplete=f(BOOLEAN, "Whether an authorizer could not list its rules.",
                     required=True),
        nonResourceRules=atomic(obj(
            f"{AUTHORIZATION}.NonResourceRule",
            "Verbs on paths that are no resources.",
            nonResourceURLs=atomic(STRING, "Paths; a trailing * matches below."),
            verbs=atomic(STRING, "Verbs; * means all.", required=True),
        ), "Rules on paths that are no resources.", required=True),
        resourceRules=atomic(obj(
            f"{AUTHORIZATION}.ResourceRule",
            "Verbs on resources.",
            apiGroups=atomic(STRING, "API groups; * means all."),
            resourceNames=atomic(STRING, "Names the rule is limited to, if any."),
            resources=atomic(STRING, "Resources; * means all, */scale any's scale."),
            verbs=atomic(STRING, "Verbs; * means all.", required=True),
        ), "Rules on resources.", required=True),
    ), "The answer, set by the server."),
)
