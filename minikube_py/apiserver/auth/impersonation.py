"""Impersonation: act as another user (`kubectl --as alice --as-group dev`), if allowed
(upstream k8s.io/apiserver/pkg/endpoints/filters/impersonation.go).

    Impersonate-User: alice            the user to act as
    Impersonate-Group: dev             its groups (repeatable)
    Impersonate-Uid: 1001              its uid
      -> the requesting user must be allowed the verb `impersonate` on each:
           users/alice, groups/dev (core group), serviceaccounts/<ns>/<name> when the
           user is system:serviceaccount:<ns>:<name>, uids/1001 (authentication.k8s.io)
      -> then the request goes on as that user (in system:authenticated, and a
         ServiceAccount in its groups too), and is authorized as them
"""

from __future__ import annotations

from aiohttp import web

from minikube_py.api import errors
from minikube_py.apiserver.auth.authentication import AUTHENTICATED, UserInfo
from minikube_py.apiserver.auth.authorization import (
    SERVICE_ACCOUNT_PREFIX,
    Attributes,
    Authorizer,
    forbidden,
)

ANONYMOUS = "system:anonymous"


def impersonated(request: web.BaseRequest, user: UserInfo, authorizer: Authorizer
                 ) -> UserInfo:
    """The user the request acts as: `user` itself without impersonation headers."""
    name = request.headers.get("Impersonate-User", "")
    groups = request.headers.getall("Impersonate-Group", [])
    uid = request.headers.get("Impersonate-Uid", "")
    if not name:
        if groups or uid:
            raise errors.bad_request("requested impersonation of groups or a uid without "
                                     "impersonating a user")
        return user
    wanted: list[Attributes] = []
    if name.startswith(SERVICE_ACCOUNT_PREFIX) and name.count(":") == 3:
        namespace, account = name.removeprefix(SERVICE_ACCOUNT_PREFIX).split(":")
        wanted.append(Attributes(user, "impersonate", True, "", "serviceaccounts", "",
                                 namespace, account))
    else:
        wanted.append(Attributes(user, "impersonate", True, "", "users", "", "", name))
    wanted += [Attributes(user, "impersonate", True, "", "groups", "", "", group)
               for group in groups]
    if uid:
        wanted.append(Attributes(user, "impersonate", True, "authentication.k8s.io", "uids",
                                 "", "", uid))
    for attributes in wanted:
        decision = authorizer.authorize(attributes)
        if not decision.allowed:
            raise forbidden(attributes, decision.reason)
    all_groups = list(groups)
    if name.startswith(SERVICE_ACCOUNT_PREFIX) and name.count(":") == 3:
        namespace = name.split(":")[2]
        all_groups += ["system:serviceaccounts", f"system:serviceaccounts:{namespace}"]
    if name != ANONYMOUS and AUTHENTICATED not in all_groups:
        all_groups.append(AUTHENTICATED)
    return UserInfo(name, uid, tuple(dict.fromkeys(all_groups)))
