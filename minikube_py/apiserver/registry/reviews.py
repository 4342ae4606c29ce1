"""Reviews: questions the API server answers with its own authenticator and authorizer,
never storing anything (upstream pkg/registry/authorization/*review and
pkg/registry/authentication/selfsubjectreview).

    POST selfsubjectaccessreviews   "may I?"        -> status.allowed for the request's user
    POST subjectaccessreviews       "may they?"     -> status.allowed for spec.user/groups
    POST namespaces/{ns}/localsubjectaccessreviews      the same, in that namespace only
    POST selfsubjectreviews         "who am I?"     -> status.userInfo
    POST tokenreviews               "whose token?"  -> status.authenticated, .user
    POST selfsubjectrulesreviews    "what may I?"   -> status.resourceRules, ...

`kubectl auth can-i` and `kubectl auth whoami` are these two requests.
"""

from __future__ import annotations

from aiohttp import web

from minikube_py.api import Obj, errors
from minikube_py.api.resources import Resource
from minikube_py.api.validation import FieldError, invalid, required
from minikube_py.apiserver.auth.authentication import Authenticator, UserInfo
from minikube_py.apiserver.auth.authorization import Attributes, Authorizer
from minikube_py.apiserver.endpoints import negotiation
from minikube_py.apiserver.endpoints.request_params import field_validation, read_object
from minikube_py.apiserver.endpoints.responses import json_response

REVIEWS = ("selfsubjectaccessreviews", "subjectaccessreviews", "localsubjectaccessreviews",
           "selfsubjectreviews", "tokenreviews", "selfsubjectrulesreviews")


async def serve_review(request: web.Request, resource: Resource, user: UserInfo,
                       authorizer: Authorizer, authenticator: Authenticator,
                       namespace: str = "") -> web.Response:
    """Create a review: read it, answer it in its status, return it (201)."""
    if negotiation.negotiate(request.headers.get("Accept", "")).form != "object":
        # a review has no object metadata and no table: only the kind itself is served
        raise errors.not_acceptable([negotiation.JSON, negotiation.YAML])
    review = await read_object(request, resource, resource.kind, resource.api_version)
    # decoded into the review's type, as upstream: unknown fields are dropped (or, with
    # fieldValidation=Strict, refused), so the answer echoes only what the type holds
    field_validation(request, resource, review)
    review.setdefault("metadata", {})["creationTimestamp"] = None
    if resource.plural == "selfsubjectreviews":
        review["status"] = {"userInfo": _user_info(user)}
        return json_response(review, 201)
    if resource.plural == "tokenreviews":
        spec = review.get("spec") if isinstance(review.get("spec"), dict) else {}
        if not spec.get("token"):
            raise errors.invalid(resource.kind, resource.group, "", [
                required("spec.token", "token must not be empty")])
        try:
            named = authenticator.authenticate_token(str(spec["token"]))
        except ValueError as err:
            review["status"] = {"authenticated": False, "user": {}, "error": str(err)}
        else:
            review["status"] = {"authenticated": True, "user": _user_info(named),
                                "audiences": list(spec.get("audiences") or [])}
        return json_response(review, 201)
    if resource.plural == "selfsubjectrulesreviews":
        spec = review.get("spec") if isinstance(review.get("spec"), dict) else {}
        namespace = str(spec.get("namespace") or "")
        rules = authorizer.rules_for(user, namespace)
        review["status"] = {
            "resourceRules": [
                {"verbs": sorted(r.verbs), "apiGroups": sorted(r.api_groups),
                 "resources": sorted(r.resources),
                 **({"resourceNames": sorted(r.resource_names)} if r.resource_names else {})}
                for r in rules if not r.non_resource_urls],
            "nonResourceRules": [{"verbs": sorted(r.verbs),
                                  "nonResourceURLs": list(r.non_resource_urls)}
                                 for r in rules if r.non_resource_urls],
            "incomplete": False}
        return json_response(review, 201)
    spec = review.get("spec") if isinstance(review.get("spec"), dict) else {}
    local = resource.plural == "localsubjectaccessreviews"
    problems = _validate_spec(spec, subject=resource.plural != "selfsubjectaccessreviews")
    attributes = spec.get("resourceAttributes")
    if local and isinstance(attributes, dict):
        # upstream's LocalSubjectAccessReview: the request's namespace, and only it
        if not attributes.get("namespace"):
            attributes["namespace"] = namespace
        elif attributes["namespace"] != namespace:
            problems.append(invalid("spec.resourceAttributes.namespace",
                                    attributes["namespace"],
                                    f"must match metadata.namespace ({namespace})"))
    if local and spec.get("nonResourceAttributes") is not None:
        problems.append(invalid("spec.nonResourceAttributes", spec["nonResourceAttributes"],
                                "disallowed on this kind of request"))
    if problems:
        raise errors.invalid(resource.kind, resource.group, "", problems)
    if resource.plural != "selfsubjectaccessreviews":
        groups = spec.get("groups") if isinstance(spec.get("groups"), list) else []
        user = UserInfo(str(spec.get("user") or ""), str(spec.get("uid") or ""),
                        tuple(str(group) for group in groups))
    decision = authorizer.authorize(_attributes(user, spec))
    review["status"] = {"allowed": decision.allowed,
                        **({"reason": decision.reason} if decision.reason else {})}
    return json_response(review, 201)


def _user_info(user: UserInfo) -> Obj:
    return {"username": user.name, **({"uid": user.uid} if user.uid else {}),
            "groups": list(user.groups),
            **({"extra": {k: list(v) for k, v in user.extra.items()}} if user.extra else {})}


def _validate_spec(spec: Obj, *, subject: bool) -> list[FieldError]:
    """ValidateSelfSubjectAccessReviewSpec / ValidateSubjectAccessReviewSpec."""
    problems = []
    resource, non_resource = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
    if resource is not None and non_resource is not None:
        problems.append(invalid("spec.nonResourceAttributes", non_resource,
                                "cannot be specified in combination with resourceAttributes"))
    if resource is None and non_resource is None:
        problems.append(invalid("spec.resourceAttributes", non_resource,
                                "exactly one of nonResourceAttributes or resourceAttributes "
                                "must be specified"))
    if subject and not spec.get("user") and not spec.get("groups"):
        problems.append(invalid("spec.user", spec.get("user", ""),
                                "at least one of user or group must be specified"))
    return problems


def _attributes(user: UserInfo, spec: Obj) -> Attributes:
    resource = spec.get("resourceAttributes")
    if isinstance(resource, dict):
        return Attributes(user, str(resource.get("verb") or ""), True,
                          str(resource.get("group") or ""), str(resource.get("resource") or ""),
                          str(resource.get("subresource") or ""),
                          str(resource.get("namespace") or ""), str(resource.get("name") or ""))
    path = spec.get("nonResourceAttributes")
    path = path if isinstance(path, dict) else {}
    return Attributes(user, str(path.get("verb") or ""), False, path=str(path.get("path") or ""))
