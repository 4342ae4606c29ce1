"""Schemas of the built-in API types and what reads them.

- `schema_for(group, version, kind)`: the Type of a kind (registry.py; the types
  themselves are written in meta.py, pod.py, core.py, apps.py, batch.py, others.py and
  rbac.py with the helpers of dsl.py),
- `unknown_fields` / `duplicate_fields`: strict decoding for fieldValidation (strict.py),
- `openapi_v3_document` / `openapi_v2_definitions`: /openapi/v3 and /openapi/v2
  (openapi.py).
"""

from minikube_py.api.schema.openapi import openapi_v2_definitions, openapi_v3_document
from minikube_py.api.schema.registry import schema_for
from minikube_py.api.schema.strict import duplicate_fields, unknown_fields

__all__ = [
    "duplicate_fields",
    "openapi_v2_definitions",
    "openapi_v3_document",
    "schema_for",
    "unknown_fields",
]
