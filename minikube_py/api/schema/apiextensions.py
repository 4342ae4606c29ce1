"""apiextensions.k8s.io/v1 CustomResourceDefinition.

Upstream: k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1/types.go and
types_jsonschema.go. A version's openAPIV3Schema is a JSONSchemaProps, a recursive type:
decoding checks its JSON types (a `properties` that is a list is a 400, as Go's decoder
says), api/openapi_schema/structural.py judges the rest. Its few "either" fields
(items: a schema or a list, additionalProperties: a schema or a bool, default: any JSON)
are free JSON here; the definition's strategy checks their shape.
"""

from __future__ import annotations

from minikube_py.api.schema.dsl import (
    ANY,
    BOOLEAN,
    INTEGER,
    NUMBER,
    STRING,
    array,
    atomic,
    f,
    map_of,
    merged,
    obj,
)
from minikube_py.api.schema.meta import TIME, api_object
from minikube_py.api.schema.types import Type

APIEXTENSIONS = "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1"

JSON_SCHEMA_PROPS = obj(
    f"{APIEXTENSIONS}.JSONSchemaProps",
    "A JSON-Schema following Specification Draft 4 (http://json-schema.org/).",
)
JSON_SCHEMA_PROPS.fields.update({
    "$ref": f(STRING, "Not supported (refused by validation)."),
    "$schema": f(STRING, "Not supported (refused by validation)."),
    "additionalItems": f(ANY, "Not supported: a schema or a bool."),
    "additionalProperties": f(ANY, "A schema for the values of a map, or a bool."),
    "allOf": atomic(JSON_SCHEMA_PROPS, "Every one of these schemas must match."),
    "anyOf": atomic(JSON_SCHEMA_PROPS, "At least one of these schemas must match."),
    "default": f(ANY, "The value an omitted field defaults to."),
    "definitions": f(map_of(JSON_SCHEMA_PROPS), "Not supported."),
    "dependencies": f(map_of(ANY), "Not supported: schemas or lists of names."),
    "description": f(STRING, "What the field means."),
    "enum": atomic(ANY, "The values allowed."),
    "example": f(ANY, "An example value."),
    "exclusiveMaximum": f(BOOLEAN, "Whether maximum itself is excluded."),
    "exclusiveMinimum": f(BOOLEAN, "Whether minimum itself is excluded."),
    "externalDocs": f(obj(
        f"{APIEXTENSIONS}.ExternalDocumentation",
        "Documentation elsewhere.",
        description=f(STRING, "What it documents."),
        url=f(STRING, "Where it is."),
    ), "Documentation elsewhere."),
    "format": f(STRING, "The string format (date-time, int32...)."),
    "id": f(STRING, "Not supported."),
    "items": f(ANY, "The schema of a list's items (or a list of schemas)."),
    "maxItems": f(INTEGER, "At most this many items."),
    "maxLength": f(INTEGER, "At most this many characters."),
    "maxProperties": f(INTEGER, "At most this many properties."),
    "maximum": f(NUMBER, "The largest value allowed."),
    "minItems": f(INTEGER, "At least this many items."),
    "minLength": f(INTEGER, "At least this many characters."),
    "minProperties": f(INTEGER, "At least this many properties."),
    "minimum": f(NUMBER, "The smallest value allowed."),
    "multipleOf": f(NUMBER, "Values must be a multiple of this."),
    "not": f(JSON_SCHEMA_PROPS, "This schema must not match."),
    "nullable": f(BOOLEAN, "Whether null is allowed."),
    "oneOf": atomic(JSON_SCHEMA_PROPS, "Exactly one of these schemas must match."),
    "pattern": f(STRING, "A regular expression (RE2) strings must match."),
    "patternProperties": f(map_of(JSON_SCHEMA_PROPS), "Not supported."),
    "properties": f(map_of(JSON_SCHEMA_PROPS), "The schema of each field of an object."),
    "required": atomic(STRING, "The fields an object must have."),
    "title": f(STRING, "A title."),
    "type": f(STRING, "object, array, string, integer, number or boolean."),
    "uniqueItems": f(BOOLEAN, "Whether a list's items must differ."),
    "x-kubernetes-embedded-resource": f(BOOLEAN, "The value is a whole object "
                                                 "(apiVersion, kind, metadata)."),
    "x-kubernetes-int-or-string": f(BOOLEAN, "The value is an integer or a string."),
    "x-kubernetes-list-map-keys": atomic(STRING, "The keys of a map-type list."),
    "x-kubernetes-list-type": f(STRING, "atomic, set or map."),
    "x-kubernetes-map-type": f(STRING, "granular or atomic."),
    "x-kubernetes-preserve-unknown-fields": f(BOOLEAN, "Keep fields the schema does not "
                                                       "name."),
    "x-kubernetes-validations": f(array(obj(
        f"{APIEXTENSIONS}.ValidationRule",
        "A CEL validation rule.",
        fieldPath=f(STRING, "Where a failure is reported."),
        message=f(STRING, "The message of a failure."),
        messageExpression=f(STRING, "A CEL expression giving the message."),
        optionalOldSelf=f(BOOLEAN, "Whether a transition rule also runs on create."),
        reason=f(STRING, "The reason of a failure."),
        rule=f(STRING, "The CEL expression.", required=True),
    )), "CEL rules the value must pass.", list_type="map", map_keys=("rule",)),
})

CONDITION = obj(
    f"{APIEXTENSIONS}.CustomResourceDefinitionCondition",
    "One aspect of a definition's state.",
    lastTransitionTime=f(TIME, "When status last changed."),
    message=f(STRING, "Human-readable details of the transition."),
    observedGeneration=f(INTEGER, "metadata.generation the condition was set for."),
    reason=f(STRING, "CamelCase reason for the last transition."),
    status=f(STRING, "True, False or Unknown.", required=True),
    type=f(STRING, "Established, NamesAccepted or Terminating.", required=True),
)

NAMES = obj(
    f"{APIEXTENSIONS}.CustomResourceDefinitionNames",
    "The names that serve a custom resource.",
    categories=atomic(STRING, "Grouped resources this one belongs to (e.g. 'all')."),
    kind=f(STRING, "The serialized kind of the resource, CamelCase.", required=True),
    listKind=f(STRING, "The serialized kind of the list (default <kind>List)."),
    plural=f(STRING, "The plural name served at /apis/<group>/<version>/<plural>.",
             required=True),
    shortNames=atomic(STRING, "Short names kubectl accepts for the resource."),
    singular=f(STRING, "The singular name (default: the kind, lowercased)."),
)

SERVICE_REFERENCE = obj(
    f"{APIEXTENSIONS}.ServiceReference",
    "A Service that serves a conversion webhook.",
    name=f(STRING, "Name of the service.", required=True),
    namespace=f(STRING, "Namespace of the service.", required=True),
    path=f(STRING, "URL path the webhook is called at."),
    port=f(INTEGER, "Port of the service (default 443)."),
)

CONVERSION = obj(
    f"{APIEXTENSIONS}.CustomResourceConversion",
    "How objects are converted between versions.",
    strategy=f(STRING, "None or Webhook.", required=True),
    webhook=f(obj(
        f"{APIEXTENSIONS}.WebhookConversion",
        "The webhook that converts objects.",
        clientConfig=f(obj(
            f"{APIEXTENSIONS}.WebhookClientConfig",
            "How the webhook is reached.",
            caBundle=f(STRING, "PEM CA bundle that signed the webhook's certificate."),
            service=f(SERVICE_REFERENCE, "A service that serves the webhook."),
            url=f(STRING, "A URL that serves the webhook."),
        ), "How the webhook is reached."),
        conversionReviewVersions=atomic(STRING, "ConversionReview versions it accepts.",
                                        required=True),
    ), "The webhook, for the Webhook strategy."),
)

PRINTER_COLUMN = obj(
    f"{APIEXTENSIONS}.CustomResourceColumnDefinition",
    "A column kubectl get shows for the resource.",
    description=f(STRING, "What the column shows."),
    format=f(STRING, "The column's OpenAPI format."),
    jsonPath=f(STRING, "The JSON path, inside each object, of the column's value.",
               required=True),
    name=f(STRING, "The column's header.", required=True),
    priority=f(INTEGER, "0 for the default view; more for wide output."),
    type=f(STRING, "The column's OpenAPI type.", required=True),
)

VERSION = obj(
    f"{APIEXTENSIONS}.CustomResourceDefinitionVersion",
    "One version of the custom resource.",
    additionalPrinterColumns=atomic(PRINTER_COLUMN, "Extra columns of kubectl get."),
    deprecated=f(BOOLEAN, "Whether this version is deprecated."),
    deprecationWarning=f(STRING, "The warning returned to clients of a deprecated version."),
    name=f(STRING, "The version name, e.g. v1 (served at /apis/<group>/<version>).",
           required=True),
    schema=f(obj(
        f"{APIEXTENSIONS}.CustomResourceValidation",
        "The schema the version's objects are validated, pruned and defaulted with.",
        openAPIV3Schema=f(JSON_SCHEMA_PROPS, "The OpenAPI v3 schema (structural)."),
    ), "The version's schema."),
    selectableFields=atomic(obj(
        f"{APIEXTENSIONS}.SelectableField",
        "A field a field selector may name.",
        jsonPath=f(STRING, "The JSON path of the field.", required=True),
    ), "Fields field selectors may name."),
    served=f(BOOLEAN, "Whether the version is served by the REST API.", required=True),
    storage=f(BOOLEAN, "Whether objects are stored in this version (exactly one is).",
              required=True),
    subresources=f(obj(
        f"{APIEXTENSIONS}.CustomResourceSubresources",
        "The subresources the version serves.",
        scale=f(obj(
            f"{APIEXTENSIONS}.CustomResourceSubresourceScale",
            "Where the /scale subresource reads and writes replicas.",
            labelSelectorPath=f(STRING, "JSON path of the selector (status.selector...)."),
            specReplicasPath=f(STRING, "JSON path of the desired replicas.", required=True),
            statusReplicasPath=f(STRING, "JSON path of the observed replicas.",
                                 required=True),
        ), "The /scale subresource."),
        # an empty object upstream (CustomResourceSubresourceStatus has no fields and no
        # definition of its own in the OpenAPI)
        status=f(Type(kind="object"), "The /status subresource: status is written only "
                                      "through it."),
    ), "The version's subresources."),
)

CUSTOM_RESOURCE_DEFINITION = api_object(
    f"{APIEXTENSIONS}.CustomResourceDefinition",
    "A resource the API server serves from a definition: <plural>.<group>.",
    spec=f(obj(
        f"{APIEXTENSIONS}.CustomResourceDefinitionSpec",
        "The resource's group, names, scope and versions.",
        conversion=f(CONVERSION, "How objects are converted between versions."),
        group=f(STRING, "The API group, e.g. stable.example.com.", required=True),
        names=f(NAMES, "The resource's names.", required=True),
        preserveUnknownFields=f(BOOLEAN, "Must be false in apiextensions.k8s.io/v1."),
        scope=f(STRING, "Cluster or Namespaced.", required=True),
        versions=atomic(VERSION, "The versions served, exactly one of them stored.",
                        required=True),
    ), "What the definition defines.", required=True),
    status=f(obj(
        f"{APIEXTENSIONS}.CustomResourceDefinitionStatus",
        "Whether the definition is served, and with which names.",
        acceptedNames=f(NAMES, "The names actually served (they may lag spec.names)."),
        conditions=merged(CONDITION, "Established, NamesAccepted, Terminating...",
                          key="type"),
        observedGeneration=f(INTEGER, "The metadata.generation this status was written for."),
        storedVersions=atomic(STRING, "Every version objects were ever stored in."),
    ), "The definition's state."),
)
