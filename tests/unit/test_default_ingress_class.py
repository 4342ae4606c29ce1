"""DefaultIngressClass's choice among the classes annotated as the default."""

from __future__ import annotations

from typing import Any

from minikube_py.apiserver.auth.admission.defaultingressclass import (
    IS_DEFAULT_CLASS,
    default_class,
)


def ingress_class(name: str, created: str, default: str | None = "true") -> dict[str, Any]:
    annotations = {IS_DEFAULT_CLASS: default} if default is not None else {}
    return {"metadata": {"name": name, "creationTimestamp": created,
                         "annotations": annotations}}


def test_no_class_is_the_default_unless_annotated_true() -> None:
    assert default_class([ingress_class("a", "2026-01-01T00:00:00Z", None),
                          ingress_class("b", "2026-01-01T00:00:00Z", "false")]) is None


def test_the_newest_default_wins_and_a_tie_goes_to_the_first_name() -> None:
    classes = [ingress_class("old", "2026-01-01T00:00:00Z"),
               ingress_class("zeta", "2026-01-02T00:00:00Z"),
               ingress_class("alpha", "2026-01-02T00:00:00Z")]

    assert default_class(classes)["metadata"]["name"] == "alpha"
    assert default_class(classes[:2])["metadata"]["name"] == "zeta"
