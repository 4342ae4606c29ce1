"""apiextensions: CustomResourceDefinitions served as the API server serves its own
kinds (upstream's k8s.io/apiextensions-apiserver, run inside this server).

Files, in reading order:
- controller.py: definitions to served resources; the finalizer that deletes instances
  (pkg/apiserver/customresource_handler.go's crdHandler and its storage map,
  pkg/controller/finalizer/crd_finalizer.go);
- naming.py: NamesAccepted and Established (pkg/controller/status/naming_controller.go,
  pkg/controller/establish/establishing_controller.go);
- strategy.py: a custom resource's create/update hooks from its schema
  (pkg/registry/customresource/strategy.go);
- schema_type.py: the schema as the Type server-side apply merges with;
- conversion.py: conversion strategy Webhook, a ConversionReview to the definition's
  webhook (pkg/apiserver/conversion/webhook_converter.go).

The definition itself is an ordinary kind: its row is in api/resources.py, its schema in
api/schema/apiextensions.py and its strategy in registry/strategies/apiextensions.py.
"""
