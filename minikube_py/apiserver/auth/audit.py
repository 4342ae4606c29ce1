"""The audit log: one JSON line per request and stage, as upstream writes it
(k8s.io/apiserver/pkg/audit; --audit-policy-file, --audit-log-path).

    a request, once authenticated and authorized
      -> the policy's first rule that matches it gives the level:
           None             nothing is written
           Metadata         who, what, when, the answer's code
           Request          ... and the request's object
           RequestResponse  ... and the response's object
      -> an audit.k8s.io/v1 Event per stage, each a line of --audit-log-path:
           RequestReceived   as soon as the request is in
           ResponseStarted   a long-running request (a watch, a log, an exec) has begun
                             answering
           ResponseComplete  the answer is out
         (a rule's omitStages, or the policy's, leave stages out)

A rule matches when each of its lists that is set names the request: users, userGroups,
verbs, namespaces, resources (group and resource names, `pods/log` for a subresource,
resourceNames) or nonResourceURLs (a trailing `*` matches any path below).
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import orjson
import yaml

from minikube_py.api import Obj
from minikube_py.apiserver.auth.authentication import UserInfo
from minikube_py.apiserver.endpoints.requestinfo import RequestInfo

LEVELS = ("None", "Metadata", "Request", "RequestResponse")
STAGES = ("RequestReceived", "ResponseStarted", "ResponseComplete", "Panic")


@dataclass(frozen=True)
class Rule:
    level: str
    users: frozenset[str] = frozenset()
    user_groups: frozenset[str] = frozenset()
    verbs: frozenset[str] = frozenset()
    namespaces: frozenset[str] = frozenset()
    resources: tuple[tuple[str, frozenset[str], frozenset[str]], ...] = ()
    non_resource_urls: tuple[str, ...] = ()
    omit_stages: frozenset[str] = frozenset()

    def matches(self, user: UserInfo, info: RequestInfo, path: str) -> bool:
        if self.users and user.name not in self.users:
            return False
        if self.user_groups and not self.user_groups & set(user.groups):
            return False
        if self.verbs and info.verb not in self.verbs:
            return False
        if not info.is_resource_request:
            if self.namespaces or self.resources:
                return False
            return not self.non_resource_urls or any(
                url == path or (url.endswith("*") and path.startswith(url[:-1]))
                for url in self.non_resource_urls)
        if self.non_resource_urls:
            return False
        if self.namespaces and info.namespace not in self.namespaces:
            return False
        if self.resources:
            wanted = f"{info.resource}/{info.subresource}" if info.subresource else (
                info.resource)
            return any(info.group == group and (not names or wanted in names
                                                 or f"*/{info.subresource}" in names)
                       and (not resource_names or info.name in resource_names)
                       for group, names, resource_names in self.resources)
        return True


@dataclass
class Policy:
    rules: list[Rule]
    omit_stages: frozenset[str] = frozenset()

    def level(self, user: UserInfo, info: RequestInfo, path: str) -> tuple[str, frozenset[str]]:
        """The level of the first matching rule (None when none matches) and the stages
        it leaves out."""
        for rule in self.rules:
            if rule.matches(user, info, path):
                return rule.level, self.omit_stages | rule.omit_stages
        return "None", self.omit_stages


def load_policy(path: Path) -> Policy:
    """An audit.k8s.io/v1 Policy; ValueError saying what is wrong."""
    try:
        document = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as err:
        raise ValueError(f"cannot read the audit policy {path}: {err}") from None
    if not isinstance(document, dict) or document.get("kind") != "Policy":
        raise ValueError(f"{path}: not an audit Policy")
    rules = []
    for i, rule in enumerate(document.get("rules") or []):
        level = rule.get("level")
        if level not in LEVELS:
            raise ValueError(f"{path}: rules[{i}].level: Unsupported value: {level!r}: "
                             f"supported values: {', '.join(LEVELS)}")
        rules.append(Rule(
            level, frozenset(rule.get("users") or ()), frozenset(rule.get("userGroups") or ()),
            frozenset(rule.get("verbs") or ()), frozenset(rule.get("namespaces") or ()),
            tuple((str(r.get("group", "")), frozenset(r.get("resources") or ()),
                   frozenset(r.get("resourceNames") or ()))
                  for r in rule.get("resources") or []),
            tuple(rule.get("nonResourceURLs") or ()),
            _stages(rule.get("omitStages"), f"{path}: rules[{i}].omitStages")))
    return Policy(rules, _stages(document.get("omitStages"), f"{path}: omitStages"))


def _stages(stages: Any, where: str) -> frozenset[str]:
    for stage in stages or ():
        if stage not in STAGES:
            raise ValueError(f"{where}: Unsupported value: {stage!r}")
    return frozenset(stages or ())


@dataclass
class AuditEvent:
    """One request's audit record, written once per stage it reaches."""

    level: str
    omit: frozenset[str]
    base: Obj
    request_object: Any = None
    stages: list[str] = field(default_factory=list)


class AuditLog:
    """Writes the events of --audit-log-path (JSON lines, flushed per line)."""

    def __init__(self, policy: Policy, sink: IO[bytes]) -> None:
        self.policy = policy
        self.sink = sink

    def begin(self, audit_id: str, user: UserInfo, info: RequestInfo, method: str,
              uri: str, path: str, source_ip: str, user_agent: str) -> AuditEvent | None:
        """The RequestReceived stage; None when the policy says not to audit."""
        level, omit = self.policy.level(user, info, path)
        if level == "None":
            return None
        base: Obj = {
            "kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": level,
            "auditID": audit_id, "stage": "", "requestURI": uri,
            "verb": info.verb if info.is_resource_request else method.lower(),
            "user": _user(user), "sourceIPs": [source_ip] if source_ip else [],
            "userAgent": user_agent,
        }
        if info.is_resource_request:
            ref = {"resource": info.resource, "namespace": info.namespace,
                   "name": info.name, "apiGroup": info.group, "apiVersion": info.version,
                   "subresource": info.subresource}
            base["objectRef"] = {k: v for k, v in ref.items() if v}
        base["requestReceivedTimestamp"] = _now()
        event = AuditEvent(level, omit, base)
        self._write(event, "RequestReceived")
        return event

    def started(self, event: AuditEvent) -> None:
        self._write(event, "ResponseStarted")

    def complete(self, event: AuditEvent, code: int, request_object: Any = None,
                 response_object: Any = None, decision: str = "allow",
                 annotations: dict[str, str] | None = None) -> None:
        """ResponseComplete: the answer's code, the authorization decision and the
        annotations admission added."""
        extra: Obj = {"responseStatus": {"metadata": {}, "code": code},
                      "annotations": {"authorization.k8s.io/decision": decision,
                                      **(annotations or {})}}
        if event.level in ("Request", "RequestResponse") and request_object is not None:
            extra["requestObject"] = request_object
        if event.level == "RequestResponse" and response_object is not None:
            extra["responseObject"] = response_object
        self._write(event, "ResponseComplete", extra)

    def _write(self, event: AuditEvent, stage: str, extra: Obj | None = None) -> None:
        if stage in event.omit:
            return
        line = {**event.base, "stage": stage, **(extra or {}), "stageTimestamp": _now()}
        self.sink.write(orjson.dumps(line) + b"\n")
        self.sink.flush()


def _user(user: UserInfo) -> Obj:
    out: Obj = {"username": user.name}
    if user.uid:
        out["uid"] = user.uid
    if user.groups:
        out["groups"] = list(user.groups)
    return out


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
