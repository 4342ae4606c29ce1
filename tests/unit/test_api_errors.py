"""API error Statuses built from field errors."""

from __future__ import annotations

from minikube_py.api import errors
from minikube_py.api.validation import invalid, required


def test_an_invalid_message_names_a_repeated_field_error_once_but_keeps_every_cause() -> None:
    repeated = invalid("spec.scopes", "x", "unsupported scope applied to resource")

    status = errors.invalid("ResourceQuota", "", "q", [repeated, repeated]).status()

    assert status["message"] == ('ResourceQuota "q" is invalid: spec.scopes: Invalid value: '
                                 '"x": unsupported scope applied to resource')
    assert len(status["details"]["causes"]) == 2


def test_an_invalid_message_lists_distinct_field_errors_in_brackets() -> None:
    status = errors.invalid("Pod", "", "web", [required("spec.containers"),
                                               required("spec.containers"),
                                               required("metadata.name")]).status()

    assert status["message"] == ('Pod "web" is invalid: [spec.containers: Required value, '
                                 "metadata.name: Required value]")
