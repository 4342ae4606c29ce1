"""Classification: which FlowSchema a request matches and which flow it belongs to
(upstream's util/flowcontrol/rule.go and apf_controller.go's match).

    schemas sorted by matchingPrecedence, then name
    the first whose rules match, and whose priority level exists, wins:
        a rule matches when one of its subjects is the user (User, Group, ServiceAccount)
        and, for a resource request, one of its resourceRules (verb, API group,
        resource[/subresource], namespace or clusterScope), for any other request one of
        its nonResourceRules (verb, URL, a trailing `*` matching a prefix)
    the flow: the schema's name plus its distinguisher (ByUser: the user's name,
    ByNamespace: the request's namespace), hashed for shuffle sharding
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from minikube_py.api import Obj
from minikube_py.apiserver.auth.authentication import UserInfo

SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"


@dataclass(frozen=True)
class RequestDigest:
    """What classification reads of a request (upstream's RequestDigest): its user, and
    the RequestInfo fields rules look at."""

    user: UserInfo
    verb: str
    is_resource_request: bool
    api_group: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    path: str = ""


def matches_flow_schema(digest: RequestDigest, flow_schema: Obj) -> bool:
    """matchesFlowSchema: any of its rules matches."""
    return any(matches_policy_rule(digest, rule)
               for rule in (flow_schema.get("spec") or {}).get("rules") or [])


def matches_policy_rule(digest: RequestDigest, rule: Obj) -> bool:
    """matchesPolicyRule: a subject is the user, and a rule of the request's kind matches."""
    if not any(matches_subject(digest.user, subject) for subject in rule.get("subjects") or []):
        return False
    if digest.is_resource_request:
        return any(matches_resource_rule(digest, resource_rule)
                   for resource_rule in rule.get("resourceRules") or [])
    return any(matches_non_resource_rule(digest, non_resource_rule)
               for non_resource_rule in rule.get("nonResourceRules") or [])


def matches_subject(user: UserInfo, subject: Obj) -> bool:
    """matchesSubject: by user name, by group, or by ServiceAccount (`*`: every name)."""
    kind = subject.get("kind")
    if kind == "User":
        name = (subject.get("user") or {}).get("name")
        return name is not None and name in ("*", user.name)
    if kind == "Group":
        name = (subject.get("group") or {}).get("name")
        return name is not None and (name == "*" or name in user.groups)
    if kind == "ServiceAccount":
        account = subject.get("serviceAccount")
        if not isinstance(account, dict):
            return False
        namespace, name = account.get("namespace", ""), account.get("name", "")
        if name == "*":
            return user.name.startswith(f"{SERVICE_ACCOUNT_PREFIX}{namespace}:")
        return user.name == f"{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}"
    return False


def _contains(value: str, values: list[str], wildcard: str = "*") -> bool:
    """containsString: `value` listed, or the list is the wildcard alone."""
    return values == [wildcard] or value in values


def matches_resource_rule(digest: RequestDigest, rule: Obj) -> bool:
    """matchesResourcePolicyRule: verb, resource[/subresource], API group, then scope."""
    resource = (f"{digest.resource}/{digest.subresource}" if digest.subresource
                else digest.resource)
    if not (_contains(digest.verb, rule.get("verbs") or [])
            and _contains(resource, rule.get("resources") or [])
            and _contains(digest.api_group, rule.get("apiGroups") or [])):
        return False
    if not digest.namespace:
        return bool(rule.get("clusterScope"))
    return _contains(digest.namespace, rule.get("namespaces") or [])


def matches_non_resource_rule(digest: RequestDigest, rule: Obj) -> bool:
    """matchesNonResourcePolicyRule: the verb, and the path exactly or under a prefix."""
    if not _contains(digest.verb, rule.get("verbs") or []):
        return False
    for url in rule.get("nonResourceURLs") or []:
        if url in ("*", digest.path):
            return True
        prefix = url.removesuffix("*")
        if not prefix.endswith("/"):
            prefix += "/"
        if digest.path.startswith(prefix):
            return True
    return False


def flow_distinguisher(digest: RequestDigest, flow_schema: Obj) -> str:
    """computeFlowDistinguisher: ByUser the user's name, ByNamespace the namespace."""
    method = ((flow_schema.get("spec") or {}).get("distinguisherMethod") or {}).get("type")
    if method == "ByUser":
        return digest.user.name
    if method == "ByNamespace":
        return digest.namespace
    return ""


def hash_flow_id(flow_schema_name: str, distinguisher: str) -> int:
    """hashFlowID: the first 8 bytes of SHA-256(schema, 0, distinguisher), little-endian."""
    digest = hashlib.sha256(flow_schema_name.encode() + b"\x00" + distinguisher.encode())
    return int.from_bytes(digest.digest()[:8], "little")


def sort_flow_schemas(flow_schemas: list[Obj]) -> list[Obj]:
    """The order classification tries schemas in: matchingPrecedence, then name."""
    return sorted(flow_schemas, key=lambda fs: (
        (fs.get("spec") or {}).get("matchingPrecedence", 0), fs["metadata"]["name"]))
