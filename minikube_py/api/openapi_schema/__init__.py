"""Structural OpenAPI v3 schemas of CustomResourceDefinitions, as apiextensions-apiserver
checks, validates, defaults and prunes them. A pure library: the API server compiles each
CRD version's schema once and runs the compiled tree per request.

Files, and the upstream files they mirror (staging/src/k8s.io/apiextensions-apiserver):
- structural.py: whether a schema is structural and uses only supported fields
  (pkg/apiserver/schema/validation.go, pkg/apis/apiextensions/validation/validation.go's
  ValidateCustomResourceDefinitionOpenAPISchema);
- compiled.py: the schema compiled once into a tree of nodes (pkg/apiserver/schema/
  structural.go and convert.go: the Structural type and NewStructural);
- formats.py: the string formats the validator checks (kube-openapi pkg/validation/strfmt,
  as pkg/apiserver/validation/formats.go enables them);
- validation.py: an object against a compiled schema, errors as ValidateCustomResource
  reports them (pkg/apiserver/validation/validation.go, kube-openapi pkg/validation/validate,
  pkg/apiserver/schema/listtype/validation.go, pkg/apiserver/schema/objectmeta/validation.go);
- defaulting.py: `default` values applied (pkg/apiserver/schema/defaulting/algorithm.go);
- pruning.py: unknown fields dropped and reported (pkg/apiserver/schema/pruning/algorithm.go);
- cel.py: x-kubernetes-validations compiled once per node and run with oldSelf, ratcheting
  and the cost budget (pkg/apiserver/schema/cel/validation.go and compilation.go);
- cel_library.py: the Kubernetes CEL functions (k8s.io/apiserver/pkg/cel/library);
- cel_format.py: its format library, format.named() and Format.validate() (library/format.go).
"""
