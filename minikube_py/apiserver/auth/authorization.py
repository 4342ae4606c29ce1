"""Authorization: may this user do this? (upstream k8s.io/apiserver/pkg/authorization and
plugin/pkg/auth/authorizer/rbac).

    the request's attributes: user, verb, API group, resource[/subresource], namespace,
    name; or, for a path that is no resource (/healthz, /api), the path and the HTTP verb
      -> --authorization-mode=AlwaysAllow: yes
      -> RBAC: yes when a rule allows it, found through
           ClusterRoleBindings (anywhere)     -> their ClusterRole's rules
           RoleBindings in the namespace      -> their Role's or ClusterRole's rules
         whose subjects name the user, one of its groups, or its ServiceAccount
      -> no: 403, worded as upstream (`pods is forbidden: User "alice" cannot list
         resource "pods" in API group "" in the namespace "default"`)

A rule allows when its verbs, apiGroups and resources (`pods`, `pods/log`, `*`, `*/scale`)
or nonResourceURLs (`/healthz`, `/apis/*`) match, and its resourceNames, when it has any,
name the object. RBAC only ever grants: there are no deny rules.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

from minikube_py.api import Obj, errors
from minikube_py.apiserver.auth.authentication import UserInfo
from minikube_py.apiserver.endpoints.requestinfo import RequestInfo

SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"


@dataclass(frozen=True)
class Attributes:
    """What is being asked (authorizer.Attributes)."""

    user: UserInfo
    verb: str
    is_resource_request: bool
    api_group: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    path: str = ""

    @classmethod
    def of_request(cls, user: UserInfo, info: RequestInfo, method: str, path: str
                   ) -> Attributes:
        if info.is_resource_request:
            return cls(user, info.verb, True, info.group, info.resource, info.subresource,
                       info.namespace, info.name, path)
        return cls(user, _non_resource_verb(method), False, path=path)


def _non_resource_verb(method: str) -> str:
    """The verb of a request for a path that is no resource: the HTTP method, lower case,
    with HEAD read as get."""
    return {"HEAD": "get"}.get(method, method.lower())


@dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str = ""


ALLOWED = Decision(True)
MAX_REMEMBERED = 10_000  # requests RBAC remembers allowing (forgotten all at once beyond)


class Authorizer(Protocol):
    def authorize(self, attributes: Attributes) -> Decision:
        """Allowed or not, and why."""
        ...

    def rules_for(self, user: UserInfo, namespace: str) -> list[Rule]:
        """Every rule that applies to the user in the namespace (SelfSubjectRulesReview)."""
        ...


class AlwaysAllow:
    def authorize(self, attributes: Attributes) -> Decision:
        return Decision(True)

    def rules_for(self, user: UserInfo, namespace: str) -> list[Rule]:
        everything = frozenset(("*",))
        return [Rule(everything, everything, everything, frozenset(), ()),
                Rule(everything, frozenset(), frozenset(), frozenset(), ("*",))]


@dataclass(frozen=True)
class Rule:
    """One PolicyRule, with its lists as sets."""

    verbs: frozenset[str]
    api_groups: frozenset[str]
    resources: frozenset[str]
    resource_names: frozenset[str]
    non_resource_urls: tuple[str, ...]

    @classmethod
    def of(cls, rule: Obj) -> Rule:
        return cls(frozenset(rule.get("verbs") or ()), frozenset(rule.get("apiGroups") or ()),
                   frozenset(rule.get("resources") or ()),
                   frozenset(rule.get("resourceNames") or ()),
                   tuple(rule.get("nonResourceURLs") or ()))

    def allows(self, attributes: Attributes) -> bool:
        """RuleAllows."""
        if "*" not in self.verbs and attributes.verb not in self.verbs:
            return False
        if not attributes.is_resource_request:
            return any(url == "*" or url == attributes.path
                       or (url.endswith("*") and attributes.path.startswith(url[:-1]))
                       for url in self.non_resource_urls)
        if "*" not in self.api_groups and attributes.api_group not in self.api_groups:
            return False
        resource = attributes.resource
        if attributes.subresource:
            wanted = {f"{resource}/{attributes.subresource}", f"*/{attributes.subresource}"}
        else:
            wanted = {resource}
        if "*" not in self.resources and not wanted & self.resources:
            return False
        return not self.resource_names or attributes.name in self.resource_names


class RBACAuthorizer:
    """RBAC over the API server's watch caches of roles and bindings.

    `objects(kind)` lists the current ClusterRoles, Roles, ClusterRoleBindings or
    RoleBindings; `version()` changes whenever any of them does (the caches count their
    changes), and the index of rules by subject is rebuilt then, not on every request.
    """

    def __init__(self, objects: Callable[[str], Iterable[Obj]],
                 version: Callable[[], tuple[int, ...]]) -> None:
        self.objects = objects
        self.version = version
        self._built: tuple[int, ...] | None = None
        # subject ("User:alice", "Group:dev", "ServiceAccount:ns:name") -> rules, cluster
        # wide; and by (namespace, subject) for RoleBindings
        self._cluster: dict[str, list[Rule]] = {}
        self._namespaced: dict[tuple[str, str], list[Rule]] = {}
        # The requests already allowed by a rule that names no resourceNames: the same
        # user may do the same to every object of that resource there, until the policy
        # changes (then the index is rebuilt and this forgotten). A GET of one object
        # after another is then one dictionary lookup.
        self._allowed_any_name: set[tuple[object, ...]] = set()

    def authorize(self, attributes: Attributes) -> Decision:
        self._refresh()
        key = None
        if attributes.is_resource_request:
            key = (attributes.user.name, attributes.user.groups, attributes.verb,
                   attributes.api_group, attributes.resource, attributes.subresource,
                   attributes.namespace)
            if key in self._allowed_any_name:
                return ALLOWED
        rule = self._allowing_rule(attributes)
        if rule is None:
            return Decision(False)
        if key is not None and not rule.resource_names:
            if len(self._allowed_any_name) >= MAX_REMEMBERED:
                self._allowed_any_name.clear()
            self._allowed_any_name.add(key)
        return ALLOWED

    def _allowing_rule(self, attributes: Attributes) -> Rule | None:
        """The first rule bound to the user (cluster-wide, then in the namespace) that
        allows the request."""
        subjects = _subjects_of(attributes.user)
        for subject in subjects:
            for rule in self._cluster.get(subject, ()):
                if rule.allows(attributes):
                    return rule
        if attributes.namespace:
            for subject in subjects:
                for rule in self._namespaced.get((attributes.namespace, subject), ()):
                    if rule.allows(attributes):
                        return rule
        return None

    def rules_for(self, user: UserInfo, namespace: str) -> list[Rule]:
        """Every rule that applies to the user in the namespace (SelfSubjectRulesReview)."""
        self._refresh()
        subjects = _subjects_of(user)
        return [rule for subject in subjects for rule in (
            *self._cluster.get(subject, ()), *self._namespaced.get((namespace, subject), ()))]

    def _refresh(self) -> None:
        version = self.version()
        if version == self._built:
            return
        cluster_roles = {r["metadata"]["name"]: _rules(r) for r in self.objects("clusterroles")}
        roles = {(r["metadata"].get("namespace", ""), r["metadata"]["name"]): _rules(r)
                 for r in self.objects("roles")}
        cluster: dict[str, list[Rule]] = {}
        for binding in self.objects("clusterrolebindings"):
            ref = binding.get("roleRef") or {}
            rules = (cluster_roles.get(ref.get("name", "")) or []) if (
                ref.get("kind") == "ClusterRole") else []
            for subject in _binding_subjects(binding, ""):
                cluster.setdefault(subject, []).extend(rules)
        namespaced: dict[tuple[str, str], list[Rule]] = {}
        for binding in self.objects("rolebindings"):
            namespace = binding["metadata"].get("namespace", "")
            ref = binding.get("roleRef") or {}
            if ref.get("kind") == "ClusterRole":
                rules = cluster_roles.get(ref.get("name", "")) or []
            else:
                rules = roles.get((namespace, ref.get("name", ""))) or []
            for subject in _binding_subjects(binding, namespace):
                namespaced.setdefault((namespace, subject), []).extend(rules)
        self._cluster, self._namespaced, self._built = cluster, namespaced, version
        self._allowed_any_name = set()


def _rules(role: Obj) -> list[Rule]:
    return [Rule.of(rule) for rule in role.get("rules") or [] if isinstance(rule, dict)]


def _binding_subjects(binding: Obj, namespace: str) -> list[str]:
    """The subjects of a binding as index keys; a ServiceAccount without a namespace in a
    RoleBinding is the binding's namespace's."""
    keys = []
    for subject in binding.get("subjects") or []:
        kind, name = subject.get("kind", ""), subject.get("name", "")
        if kind == "ServiceAccount":
            keys.append(f"User:{SERVICE_ACCOUNT_PREFIX}"
                        f"{subject.get('namespace') or namespace}:{name}")
        elif kind in ("User", "Group"):
            keys.append(f"{kind}:{name}")
    return keys


def _subjects_of(user: UserInfo) -> list[str]:
    return [f"User:{user.name}", *(f"Group:{group}" for group in user.groups)]


def forbidden(attributes: Attributes, reason: str = "") -> errors.APIError:
    """403 with upstream's message (forbiddenMessage in endpoints/handlers/responsewriters)."""
    user = f'User "{attributes.user.name}"'
    if not attributes.is_resource_request:
        message = f'{user} cannot {attributes.verb} path "{attributes.path}"'
        return errors.APIError(403, "Forbidden", "forbidden: " + message +
                               (f": {reason}" if reason else ""), {})
    resource = attributes.resource + (f"/{attributes.subresource}"
                                      if attributes.subresource else "")
    scope = (f'in the namespace "{attributes.namespace}"' if attributes.namespace
             else "at the cluster scope")
    why = (f'{user} cannot {attributes.verb} resource "{resource}" in API group '
           f'"{attributes.api_group}" {scope}' + (f": {reason}" if reason else ""))
    return errors.forbidden(attributes.resource, attributes.api_group, attributes.name, why)
