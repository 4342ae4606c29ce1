"""Conversion strategy Webhook: a definition's own server converts its custom resources
between versions (upstream's pkg/apiserver/conversion/webhook_converter.go).

    objects not yet in the desired version -> one ConversionReview (request.uid,
        request.desiredAPIVersion, request.objects), POSTed over TLS checked against
        spec.conversion.webhook.clientConfig.caBundle (url, or service namespace/name:
        port + path)
    the answer, checked as upstream checks it:
        apiVersion/kind ConversionReview, response present, response.uid the request's,
        response.result.status Success (else its message), as many convertedObjects as
        sent, each of the desired groupVersion and the same kind, name, namespace and uid
    metadata of each converted object: the original's, with only labels and annotations
        taken from the webhook's answer (validated)

Any failure is an InternalError naming the definition's kind and the reason.
"""

from __future__ import annotations

import copy
from typing import Any

from minikube_py.api import Obj, errors
from minikube_py.api.meta import new_uid
from minikube_py.api.validation import validate_annotations, validate_labels
from minikube_py.apiserver.auth.admission.webhook import (
    ServiceResolver,
    WebhookCallError,
    post_review,
)
from minikube_py.apiserver.registry.strategies.apiextensions import ACCEPTED_REVIEW_VERSIONS
from minikube_py.tracing.context import ANNOTATION as TRACE_ANNOTATION
from minikube_py.tracing.context import without_trace_context

# Upstream's conversion client has no per-webhook timeout: its REST client's 30 seconds.
TIMEOUT_SECONDS = 30


class ConversionError(Exception):
    """The webhook could not convert; the message is upstream's."""


class WebhookConverter:
    """Converts the custom resources of one definition by calling its webhook."""

    def __init__(self, crd: Obj, resolve_service: ServiceResolver) -> None:
        spec = crd["spec"]
        webhook = (spec.get("conversion") or {}).get("webhook") or {}
        self.client: Obj = webhook.get("clientConfig") or {}
        versions = webhook.get("conversionReviewVersions") or []
        # the first version of ConversionReview the webhook accepts that this server speaks
        self.review_version = next((v for v in versions if v in ACCEPTED_REVIEW_VERSIONS),
                                   "v1")
        self.group = spec["group"]
        self.kind = spec["names"]["kind"]
        self.resolve_service = resolve_service

    async def convert(self, objs: list[Obj], api_version: str, *, is_list: bool = False
                      ) -> list[Obj]:
        """The objects in `api_version`; only those in another version are sent."""
        pending = [i for i, obj in enumerate(objs) if obj.get("apiVersion") != api_version]
        if not pending:
            return objs
        try:
            return await self._convert(objs, pending, api_version, is_list)
        except ConversionError as err:
            message = f"Internal error occurred: {err}"
            raise errors.APIError(500, "InternalError", message,
                                  {"causes": [{"message": str(err)}]}) from None

    async def _convert(self, objs: list[Obj], pending: list[int], api_version: str,
                       is_list: bool) -> list[Obj]:
        # upstream names the input's kind: the list's when it converts a list
        source = objs[pending[0]].get("apiVersion", "")
        shown = f"{source}, Kind={self.kind}List" if is_list else f"{source}, Kind={self.kind}"
        uid = new_uid()
        review = {"apiVersion": f"apiextensions.k8s.io/{self.review_version}",
                  "kind": "ConversionReview",
                  "request": {"uid": uid, "desiredAPIVersion": api_version,
                              # as admission webhooks, never the trace context
                              "objects": [without_trace_context(objs[i])
                                          for i in pending]}}
        try:
            answered = await post_review(self.client, review, TIMEOUT_SECONDS,
                                         self.resolve_service)
        except WebhookCallError as err:
            raise ConversionError(f"conversion webhook for {shown} failed: {err}") from None
        try:
            converted = self._converted_objects(uid, answered)
        except ConversionError as err:
            raise ConversionError(f"conversion webhook for {shown} failed: {err}") from None
        if len(converted) != len(pending):
            raise ConversionError(f"conversion webhook for {shown} returned "
                                  f"{len(converted)} objects, expected {len(pending)}")
        result = list(objs)
        for index, (position, answer) in enumerate(zip(pending, converted, strict=True)):
            result[position] = _checked(objs[position], answer, api_version, shown, is_list,
                                        index)
        return result

    def _converted_objects(self, uid: str, answered: Any) -> list[Any]:
        """getConvertedObjectsFromResponse: the response, checked; its convertedObjects."""
        if not isinstance(answered, dict):
            raise ConversionError("unrecognized response type")
        response = answered.get("response")
        if self.review_version == "v1":
            got = f"{answered.get('apiVersion', '')}, Kind={answered.get('kind', '')}"
            if got != "apiextensions.k8s.io/v1, Kind=ConversionReview":
                raise ConversionError("expected webhook response of apiextensions.k8s.io/v1, "
                                      f"Kind=ConversionReview, got {got}")
        if not isinstance(response, dict):
            raise ConversionError("no response provided")
        if self.review_version == "v1" and response.get("uid") != uid:
            raise ConversionError(
                f'expected response.uid="{uid}", got "{response.get("uid") or ""}"')
        result = response.get("result") if isinstance(response.get("result"), dict) else {}
        if result.get("status") != "Success":
            if result.get("message"):
                raise ConversionError(str(result["message"]))
            raise ConversionError(
                f"response.result.status was '{result.get('status') or ''}', not 'Success'")
        converted = response.get("convertedObjects")
        return converted if isinstance(converted, list) else []


def _checked(original: Obj, converted: Any, api_version: str, shown: str, is_list: bool,
             index: int) -> Obj:
    """One converted object, held to upstream's checks, with the original's metadata
    (except labels and annotations). Upstream counts a list's objects from 1 here."""
    prefix = f"conversion webhook for {shown} returned invalid"
    at = (f"{prefix} converted object at index {index + 1}" if is_list
          else f"{prefix} object at index 0")
    same = at if is_list else f"{prefix} object"
    if not isinstance(converted, dict):
        raise ConversionError(f"{at}: cannot unmarshal into an object")
    if converted.get("apiVersion") != api_version:
        raise ConversionError(f"{at}: invalid groupVersion (expected {api_version}, "
                              f"received {converted.get('apiVersion', '')})")
    if converted.get("kind") != original.get("kind"):
        raise ConversionError(f"{at}: invalid kind (expected {original.get('kind')}, "
                              f"received {converted.get('kind', '')})")
    before = original.get("metadata") or {}
    after = converted.get("metadata") if isinstance(converted.get("metadata"), dict) else {}
    for key in ("name", "namespace", "uid"):
        if (before.get(key) or "") != (after.get(key) or ""):
            raise ConversionError(f"{same}: must have the same {key}: "
                                  f"{before.get(key) or ''} != {after.get(key) or ''}")
    invalid = (f"{prefix} metadata in object at index {index + 1}" if is_list
               else f"{prefix} metadata")
    return {**converted,
            "metadata": _restored_metadata(before, converted.get("metadata"), invalid)}


def _restored_metadata(original: Obj, answered: Any, invalid: str) -> Obj:
    """restoreObjectMeta: the original metadata, with labels and annotations from the
    answer (each map of strings, and valid where it changed)."""
    if answered is None:
        raise ConversionError(f"{invalid}: missing metadata in converted object")
    if not isinstance(answered, dict):
        raise ConversionError(f"{invalid}: invalid metadata of type "
                              f"{type(answered).__name__} in converted object")
    metadata = copy.deepcopy(original)
    for key in ("labels", "annotations"):
        # the trace context was never sent: the original's stays
        kept = {name: item for name, item in (original.get(key) or {}).items()
                if name == TRACE_ANNOTATION}
        value = answered.get(key)
        if value is None:
            metadata.pop(key, None)
            if kept:
                metadata[key] = kept
            continue
        if not isinstance(value, dict):
            raise ConversionError(f"{invalid}: invalid metadata.{key} of type "
                                  f"{type(value).__name__} in converted object")
        for name, item in value.items():
            if not isinstance(item, str):
                raise ConversionError(f"{invalid}: metadata.{key}[{name}] must be a string, "
                                      f"but is {type(item).__name__} in converted object")
        value = {**value, **kept}
        if value != (original.get(key) or {}):
            problems = (validate_labels(value, "metadata.labels") if key == "labels"
                        else validate_annotations(value, "metadata.annotation"))
            if problems:
                raise ConversionError(f"{invalid}: " + _aggregate(problems))
        metadata[key] = value
    return metadata


def _aggregate(problems: list[Any]) -> str:
    """field.ErrorList.ToAggregate's text: one error as itself, several in brackets."""
    texts = [str(problem) for problem in problems]
    return texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"
