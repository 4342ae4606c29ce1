"""MutatingAdmissionWebhook and ValidatingAdmissionWebhook: admission by your own server.

Upstream's k8s.io/apiserver/pkg/admission/plugin/webhook. Every write passes the
webhooks that MutatingWebhookConfigurations and ValidatingWebhookConfigurations
register (read from the watch cache, so a new configuration applies within moments):

    for each webhook, configurations by name, webhooks in their order:
        does it match?  rules (operation, group, version, resource[/subresource], scope),
                        namespaceSelector (the namespace's labels), objectSelector
        POST an AdmissionReview (admission.k8s.io/v1) to its clientConfig:
            url, or service namespace/name:port + path (https://name.namespace.svc),
            TLS checked against caBundle, ?timeout=<timeoutSeconds>s
        the answer:
            allowed: false        -> refused: 'admission webhook "x" denied the request: ...'
            a JSONPatch (mutating) -> applied to the object
            no answer in time, or a bad one -> failurePolicy: Fail refuses (500),
                                               Ignore goes on as if it had allowed

Mutating webhooks are called one after another, each seeing what the ones before
changed; one whose reinvocationPolicy is IfNeeded is called once more when a later
webhook changed the object. Validating webhooks are called all at once.

The webhook configurations themselves are never sent to webhooks, so that a broken
webhook can always be removed.

Not evaluated here: matchConditions (CEL expressions); a webhook that has them is
called as if they all held.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import copy
import logging
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson

from minikube_py.api import Obj, errors
from minikube_py.api.meta import new_uid
from minikube_py.api.patch import PatchError, apply_json_patch
from minikube_py.api.selectors import SelectorError, label_selector_from_dict
from minikube_py.apiserver.auth.admission import CREATE, DELETE, UPDATE, Attributes, Plugin
from minikube_py.tracing.context import without_trace_context

log = logging.getLogger(__name__)

NamespaceLookup = Callable[[str], Awaitable[Obj | None]]
# A Service's port reached from the API server: (namespace, name, port) -> "host:port".
ServiceResolver = Callable[[str, str, int], Awaitable[str]]

ADMISSION_REGISTRATION = "admissionregistration.k8s.io"
OPTIONS_KIND = {CREATE: "CreateOptions", UPDATE: "UpdateOptions", DELETE: "DeleteOptions"}
DEFAULT_TIMEOUT_SECONDS = 10


class WebhookCallError(Exception):
    """The webhook could not be asked, or answered nonsense (ErrCallingWebhook)."""


@dataclass
class Webhook:
    """One webhook of a configuration, with the configuration's name for ordering."""

    configuration: str
    spec: Obj

    @property
    def name(self) -> str:
        return str(self.spec.get("name", ""))

    @property
    def failure_policy(self) -> str:
        return self.spec.get("failurePolicy") or "Fail"

    @property
    def timeout(self) -> int:
        return int(self.spec.get("timeoutSeconds") or DEFAULT_TIMEOUT_SECONDS)


# -- matching ------------------------------------------------------------------------------


def rule_matches(rule: Obj, attributes: Attributes) -> bool:
    """One RuleWithOperations against the request (upstream's rules.Matcher)."""
    group, version = attributes.resource.group, attributes.resource.version
    operations = rule.get("operations") or []
    if "*" not in operations and attributes.operation not in operations:
        return False
    if not _listed(rule.get("apiGroups"), group) or not _listed(rule.get("apiVersions"),
                                                                 version):
        return False
    scope = rule.get("scope") or "*"
    namespaced = attributes.resource.namespaced
    if (scope == "Cluster" and namespaced) or (scope == "Namespaced" and not namespaced):
        return False
    return any(_resource_matches(pattern, attributes.resource.plural, attributes.subresource)
               for pattern in rule.get("resources") or [])


def _listed(values: list[str] | None, value: str) -> bool:
    return bool(values) and ("*" in values or value in values)


def _resource_matches(pattern: str, plural: str, subresource: str) -> bool:
    """`pods`, `pods/status`, `pods/*`, `*`, `*/status`, `*/*`."""
    wanted_resource, _, wanted_sub = pattern.partition("/")
    if wanted_resource not in ("*", plural):
        return False
    if "/" not in pattern:
        return not subresource
    return wanted_sub == "*" or wanted_sub == subresource


def _selector_matches(selector: Any, labels: dict[str, str]) -> bool:
    if not isinstance(selector, dict) or not selector:
        return True
    try:
        return label_selector_from_dict(selector).matches(labels)
    except SelectorError:
        return False


def _labels(obj: Obj | None) -> dict[str, str]:
    return ((obj or {}).get("metadata") or {}).get("labels") or {}


class Dispatcher:
    """Finds the webhooks a request matches and calls them."""

    def __init__(self, configurations: Callable[[], list[Obj]], namespace: NamespaceLookup,
                 resolve_service: ServiceResolver) -> None:
        self.configurations = configurations
        self.namespace = namespace
        self.resolve_service = resolve_service

    def webhooks(self) -> list[Webhook]:
        """Every webhook, by configuration name, then in the configuration's order."""
        found = []
        for configuration in sorted(self.configurations(),
                                    key=lambda c: c["metadata"]["name"]):
            for spec in configuration.get("webhooks") or []:
                found.append(Webhook(configuration["metadata"]["name"], spec))
        return found

    async def matching(self, attributes: Attributes) -> list[Webhook]:
        if attributes.resource.group == ADMISSION_REGISTRATION:
            return []  # IsExemptAdmissionConfigurationResource
        candidates = [hook for hook in self.webhooks()
                      if any(rule_matches(rule, attributes)
                             for rule in hook.spec.get("rules") or [])]
        if not candidates:
            return []
        namespace_labels = await self._namespace_labels(attributes)
        return [hook for hook in candidates
                if _selector_matches(hook.spec.get("namespaceSelector"), namespace_labels)
                and (_selector_matches(hook.spec.get("objectSelector"),
                                       _labels(attributes.obj))
                     or _selector_matches(hook.spec.get("objectSelector"),
                                          _labels(attributes.old)))]

    async def _namespace_labels(self, attributes: Attributes) -> dict[str, str]:
        """The labels namespaceSelector is held to: the namespace's, or a Namespace's own;
        cluster-scoped objects match every selector (upstream: empty labels that match
        only an empty selector would make such webhooks useless)."""
        if attributes.is_resource("", "namespaces"):
            return _labels(attributes.obj or attributes.old)
        if not attributes.resource.namespaced:
            return {}
        found = await self.namespace(attributes.namespace)
        return _labels(found)

    # -- calling --------------------------------------------------------------------------

    def review(self, attributes: Attributes) -> Obj:
        """The AdmissionReview sent to a webhook (admission.k8s.io/v1)."""
        group, version, kind = attributes.kind
        resource = attributes.resource
        request: Obj = {
            "uid": new_uid(),
            "kind": {"group": group, "version": version, "kind": kind},
            "resource": {"group": resource.group, "version": resource.version,
                         "resource": resource.plural},
            "requestKind": {"group": group, "version": version, "kind": kind},
            "requestResource": {"group": resource.group, "version": resource.version,
                                "resource": resource.plural},
            "name": attributes.name,
            "operation": attributes.operation,
            "userInfo": _user_info(attributes),
            # upstream writes no trace context: webhooks never see it
            "object": (without_trace_context(attributes.obj)
                       if attributes.obj is not None else None),
            "oldObject": (without_trace_context(attributes.old)
                          if attributes.old is not None else None),
            "dryRun": attributes.dry_run,
            "options": {"apiVersion": "meta.k8s.io/v1",
                        "kind": OPTIONS_KIND.get(attributes.operation, "CreateOptions"),
                        **attributes.options},
        }
        if attributes.subresource:
            request["subResource"] = attributes.subresource
            request["requestSubResource"] = attributes.subresource
        if attributes.resource.namespaced:
            request["namespace"] = attributes.namespace
        return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                "request": request}

    async def call(self, hook: Webhook, review: Obj) -> Obj:
        """POST the review; the webhook's response, or WebhookCallError."""
        answered = await post_review(hook.spec.get("clientConfig") or {}, review,
                                     hook.timeout, self.resolve_service)
        response = answered.get("response") if isinstance(answered, dict) else None
        if (not isinstance(answered, dict)
                or answered.get("apiVersion") != "admission.k8s.io/v1"
                or answered.get("kind") != "AdmissionReview"
                or not isinstance(response, dict)):
            raise WebhookCallError(
                "received invalid webhook response: expected an AdmissionReview of "
                "admission.k8s.io/v1 with a response")
        if response.get("uid") != review["request"]["uid"]:
            raise WebhookCallError(
                f'expected response.uid="{review["request"]["uid"]}", '
                f'got "{response.get("uid")}"')
        return response


async def post_review(client: Obj, review: Obj, timeout: int,
                      resolve_service: ServiceResolver) -> Any:
    """POST a review to a webhook's clientConfig over TLS checked against its caBundle;
    the decoded answer, or WebhookCallError (upstream's webhook.ClientManager's client,
    which admission and conversion webhooks share)."""
    url, server_name = await webhook_location(client, resolve_service)
    url = f"{url}?timeout={timeout}s"
    context = _ssl_context(client)
    try:
        async with asyncio.timeout(timeout), aiohttp.ClientSession() as session:
            async with session.post(
                    url, data=orjson.dumps(review), ssl=context,
                    server_hostname=server_name,
                    headers={"Content-Type": "application/json",
                             "Accept": "application/json"}) as answer:
                body = await answer.read()
                status = answer.status
    except TimeoutError:
        raise WebhookCallError(
            f'failed to call webhook: Post "{url}": context deadline exceeded') from None
    except (aiohttp.ClientError, OSError, ssl.SSLError) as err:
        raise WebhookCallError(f'failed to call webhook: Post "{url}": {err}') from None
    if status != 200:
        raise WebhookCallError(
            f"failed to call webhook: the server responded with the status code "
            f"{status} but did not return more information")
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as err:
        raise WebhookCallError(f"received invalid webhook response: {err}") from None


async def webhook_location(client: Obj, resolve_service: ServiceResolver
                           ) -> tuple[str, str | None]:
    """The URL to POST to, and the TLS server name when it is not the URL's host."""
    if client.get("url"):
        return str(client["url"]), None
    service = client.get("service") or {}
    namespace, name = service.get("namespace", ""), service.get("name", "")
    port = int(service.get("port") or 443)
    path = service.get("path") or ""
    shown = f"https://{name}.{namespace}.svc:{port}{path}"
    try:
        address = await resolve_service(namespace, name, port)
    except errors.APIError as err:
        raise WebhookCallError(f'failed to call webhook: Post "{shown}": {err}') from None
    return f"https://{address}{path}", f"{name}.{namespace}.svc"


def _user_info(attributes: Attributes) -> Obj:
    user = attributes.user
    info: Obj = {"username": user.name, "groups": list(user.groups)}
    if user.uid:
        info["uid"] = user.uid
    if user.extra:
        info["extra"] = {key: list(values) for key, values in user.extra.items()}
    return info


def _ssl_context(client: Obj) -> ssl.SSLContext:
    """Trust the configuration's caBundle (PEM, base64 in JSON), or the system's roots."""
    bundle = client.get("caBundle")
    if not bundle:
        return ssl.create_default_context()
    try:
        pem = base64.b64decode(bundle).decode()
        return ssl.create_default_context(cadata=pem)
    except (binascii.Error, UnicodeDecodeError, ssl.SSLError) as err:
        raise WebhookCallError(f"failed to call webhook: bad caBundle: {err}") from None


def _denied(hook: Webhook, response: Obj) -> errors.APIError:
    """ToStatusErr: the webhook's Status, with at least 400 and its name in the message."""
    status = response.get("status") if isinstance(response.get("status"), dict) else {}
    code = status.get("code") if isinstance(status.get("code"), int) else 0
    code = code if code >= 400 else 403
    denied_by = f'admission webhook "{hook.name}" denied the request'
    if status.get("message"):
        message = f"{denied_by}: {status['message']}"
    elif status.get("reason"):
        message = f"{denied_by}: {status['reason']}"
    else:
        message = f"{denied_by} without explanation"
    reason = status.get("reason") or ""
    return errors.APIError(code, reason, message, status.get("details") or {})


def _call_failed(hook: Webhook, err: WebhookCallError) -> errors.APIError:
    """Failure policy Fail: an InternalError naming the webhook."""
    message = f'failed calling webhook "{hook.name}": {err}'
    return errors.APIError(500, "InternalError", f"Internal error occurred: {message}",
                           {"causes": [{"message": message}]})


# -- the two plugins -----------------------------------------------------------------------


class _WebhookPlugin(Plugin):
    operations = frozenset((CREATE, UPDATE, DELETE))

    def __init__(self, dispatcher: Dispatcher) -> None:
        self.dispatcher = dispatcher

    async def _ask(self, hook: Webhook, attributes: Attributes) -> Obj | None:
        """The webhook's response; None when it failed and its policy is Ignore."""
        try:
            response = await self.dispatcher.call(hook, self.dispatcher.review(attributes))
        except WebhookCallError as err:
            if hook.failure_policy == "Ignore":
                log.warning(orjson.dumps({"msg": "failed calling webhook, failing open",
                                          "webhook": hook.name, "error": str(err)}).decode())
                return None
            raise _call_failed(hook, err) from None
        if not response.get("allowed"):
            raise _denied(hook, response)
        return response


class MutatingAdmissionWebhook(_WebhookPlugin):
    name = "MutatingAdmissionWebhook"
    mutating = True

    async def admit(self, attributes: Attributes) -> bool:
        """Call each matching webhook in turn; apply the JSON patches they return."""
        hooks = await self.dispatcher.matching(attributes)
        if not hooks:
            return False
        changed_after: dict[int, bool] = {}
        changed = False
        for position, hook in enumerate(hooks):
            patched = await self._call_and_patch(hook, attributes)
            if patched:
                changed = True
                for earlier in changed_after:
                    changed_after[earlier] = True
            changed_after[position] = False
        for position, hook in enumerate(hooks):  # reinvocation, once
            if (changed_after.get(position)
                    and hook.spec.get("reinvocationPolicy") == "IfNeeded"):
                changed = await self._call_and_patch(hook, attributes) or changed
        return changed

    async def _call_and_patch(self, hook: Webhook, attributes: Attributes) -> bool:
        response = await self._ask(hook, attributes)
        if response is None or not response.get("patch") or attributes.obj is None:
            return False
        if response.get("patchType") != "JSONPatch":
            raise _call_failed(hook, WebhookCallError(
                f"expected patchType JSONPatch, got {response.get('patchType')!r}"))
        try:
            patch = orjson.loads(base64.b64decode(response["patch"]))
            patched = apply_json_patch(copy.deepcopy(attributes.obj), patch)
        except (binascii.Error, orjson.JSONDecodeError, PatchError, TypeError) as err:
            raise _call_failed(hook, WebhookCallError(
                f"received invalid webhook response: the patch cannot be applied: {err}"
            )) from None
        if patched == attributes.obj:
            return False
        attributes.obj.clear()
        attributes.obj.update(patched)
        return True


class ValidatingAdmissionWebhook(_WebhookPlugin):
    name = "ValidatingAdmissionWebhook"
    validating = True

    async def validate(self, attributes: Attributes) -> None:
        """Call every matching webhook at once; the first refusal (in order) wins."""
        hooks = await self.dispatcher.matching(attributes)
        if not hooks:
            return
        outcomes = await asyncio.gather(*(self._ask(hook, attributes) for hook in hooks),
                                        return_exceptions=True)
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome
