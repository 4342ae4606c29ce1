"""`mkctl explain RESOURCE[.FIELD...]`: a resource's fields, from the OpenAPI v3 schema the
server publishes (kubectl's explain with its default output, plaintext).

    mkctl explain widgets.spec      GROUP/KIND/VERSION, FIELD, DESCRIPTION, FIELDS

1. The argument splits at its first dot: the resource (any of its names, through
   discovery) and the field path; or after `plural.group` when it starts so.
2. `GET /openapi/v3` lists a document per group-version; the resource's (or the one
   --api-version names) is fetched by its serverRelativeURL.
3. printers/explain.py renders it as kubectl's plaintext template does.
"""

from __future__ import annotations

from urllib.parse import parse_qsl, urlsplit

from minikube_py.mkctl.command import PROGRAM, Command, Invocation
from minikube_py.mkctl.discovery import APIResource
from minikube_py.mkctl.errors import MkctlError, NoResourceMatch, UnwrappedNoResourceMatch
from minikube_py.mkctl.flags import BOOL, Flag


def run(inv: Invocation) -> None:
    if not inv.args:
        raise MkctlError("You must specify the type of resource to explain. Use "
                         f'"{PROGRAM} api-resources" for a complete list of supported '
                         "resources.")
    if len(inv.args) > 1:
        raise MkctlError("We accept only this format: explain RESOURCE")
    resource, field_path = resource_and_fields(inv, inv.args[0])
    group, version = resource.group, resource.version
    if inv.flags["api-version"]:
        group, _, version = inv.flags["api-version"].rpartition("/")
    output = inv.flags["output"]
    if output == "plaintext-openapiv2":
        raise MkctlError("--output=plaintext-openapiv2 is not built in mkctl: it explains "
                         "from OpenAPI v3 only (the default, --output=plaintext)")
    if output != "plaintext":
        raise MkctlError(f"unrecognized format: {output}")
    document = group_version_document(inv, group, version, resource.name)
    from minikube_py.mkctl.printers.explain import explain, header_and_schema

    header, schema = header_and_schema(document, group, version, resource.name)
    inv.out.write(header)
    inv.out.flush()
    if not schema:
        gvk = f"map[group:{group} kind:{resource.kind} version:{version}]"
        raise MkctlError(f"GVK {gvk} not found in OpenAPI schema")
    inv.out.write(explain(document, schema, field_path, inv.flags["recursive"]))


def resource_and_fields(inv: Invocation, argument: str) -> tuple[APIResource, list[str]]:
    """Step 1 (SplitAndParseResourceRequestWithMatchingPrefix): the resource the first
    part names, and the field path after it; when the argument starts with a matching
    resource's `plural.group` (widgets.fleet.example.com.spec), the path follows that."""
    argument = argument.removesuffix(".")
    first, *rest = argument.split(".")
    try:
        resource = inv.mapper.resource_for(first)
    except NoResourceMatch as error:
        raise UnwrappedNoResourceMatch(error.resource, error.group, error.version) from None
    same_name = [candidate for candidate in inv.mapper.discovery.groups().resources
                 if candidate.name == resource.name and candidate != resource]
    for candidate in (resource, *same_name):
        if argument.startswith(candidate.group_resource):
            suffix = argument[len(candidate.group_resource):]
            return candidate, suffix[1:].split(".") if suffix else []
    return resource, rest


def group_version_document(inv: Invocation, group: str, version: str, resource: str) -> dict:
    """Step 2: the OpenAPI v3 document of one group-version."""
    key = f"apis/{group}/{version}" if group else f"api/{version}"
    entry = (inv.client.get_json("/openapi/v3").get("paths") or {}).get(key)
    if not entry:
        name = f"{group}/{version}" if group else f"/{version}"
        raise MkctlError(f'couldn\'t find resource for "{name}, Resource={resource}"')
    url = urlsplit(entry["serverRelativeURL"])
    return inv.client.get_json(url.path, dict(parse_qsl(url.query)))


COMMAND = Command(
    name="explain",
    summary="Get documentation for a resource",
    description="Describe fields and structure of various resources.\n\n"
                "This command describes the fields associated with each supported API "
                "resource. Fields are identified via a simple JSONPath identifier:\n\n"
                "        <type>.<fieldName>[.<fieldName>]\n\n"
                "Information about each field is retrieved from the server in OpenAPI "
                "format.",
    usage="explain TYPE [--recursive=FALSE|TRUE] [--api-version=api-version-group] "
          "[-o|--output=plaintext|plaintext-openapiv2] [options]",
    run=run,
    flags=[
        Flag("api-version", help="Use given api-version (group/version) of the resource."),
        Flag("output", shorthand="o", default="plaintext",
             help="Format in which to render the schema. Valid values are: (plaintext, "
                  "plaintext-openapiv2)."),
        Flag("recursive", BOOL, help="When true, print the name of all the fields "
                                      "recursively. Otherwise, print the available fields "
                                      "with their description."),
    ],
    examples="""  # Get the documentation of the resource and its fields
  mkctl explain pods

  # Get all the fields in the resource
  mkctl explain pods --recursive

  # Get the explanation for a custom resource's field
  mkctl explain widgets.spec""",
)
