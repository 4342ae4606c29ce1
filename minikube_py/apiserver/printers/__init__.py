"""Server-side printing: the meta.k8s.io/v1 Table that `kubectl get` renders.

kubectl asks for `Accept: application/json;as=Table;v=v1;g=meta.k8s.io` and prints the
columns the server chose. Upstream, each built-in kind has a printer in
`pkg/printers/internalversion/printers.go`: a list of column definitions plus a
function from one object to one row of cells. Columns with priority 1 are the extra
`-o wide` ones; the server always fills them (upstream's TableConvertor prints with
Wide=true) and kubectl hides them unless asked. Kinds without a printer get the
apiserver's default table: Name and Created At.

Objects reach the printers as stored (already defaulted), so a missing field means
the zero value, exactly as it does for upstream's Go structs.

This package: `table` holds the Printer type and builds a Table, `cells` the shared
cell formatting, and one module per group of kinds holds their columns and rows.
This module is the registry (upstream's AddHandlers) and the public interface.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from minikube_py.api.resources import Resource
from minikube_py.apiserver.printers import (
    apps,
    batch,
    config,
    events,
    networking,
    nodes,
    others,
    pods,
    services,
    storage,
)
from minikube_py.apiserver.printers.cells import Obj
from minikube_py.apiserver.printers.table import (
    DEFAULT_PRINTER,
    Column,
    Printer,
    generate_table,
)

PRINTERS: dict[tuple[str, str], Printer] = {
    ("", "pods"): Printer(pods.POD_COLUMNS, pods.print_pod, pods.pod_row_conditions),
    ("", "nodes"): Printer(nodes.NODE_COLUMNS, nodes.print_node),
    ("", "namespaces"): Printer(nodes.NAMESPACE_COLUMNS, nodes.print_namespace),
    ("", "services"): Printer(services.SERVICE_COLUMNS, services.print_service),
    ("", "endpoints"): Printer(services.ENDPOINTS_COLUMNS, services.print_endpoints),
    ("", "configmaps"): Printer(config.CONFIG_MAP_COLUMNS, config.print_config_map),
    ("", "secrets"): Printer(config.SECRET_COLUMNS, config.print_secret),
    ("", "serviceaccounts"): Printer(
        config.SERVICE_ACCOUNT_COLUMNS, config.print_service_account
    ),
    ("", "events"): Printer(events.EVENT_COLUMNS, events.print_event),
    ("", "persistentvolumeclaims"): Printer(
        storage.PERSISTENT_VOLUME_CLAIM_COLUMNS, storage.print_persistent_volume_claim
    ),
    ("", "persistentvolumes"): Printer(
        storage.PERSISTENT_VOLUME_COLUMNS, storage.print_persistent_volume
    ),
    ("", "resourcequotas"): Printer(config.RESOURCE_QUOTA_COLUMNS, config.print_resource_quota),
    ("", "replicationcontrollers"): Printer(apps.REPLICATION_CONTROLLER_COLUMNS,
                                            apps.print_replication_controller),
    ("apps", "deployments"): Printer(apps.DEPLOYMENT_COLUMNS, apps.print_deployment),
    ("apps", "replicasets"): Printer(apps.REPLICA_SET_COLUMNS, apps.print_replica_set),
    ("apps", "statefulsets"): Printer(apps.STATEFUL_SET_COLUMNS, apps.print_stateful_set),
    ("apps", "daemonsets"): Printer(apps.DAEMON_SET_COLUMNS, apps.print_daemon_set),
    ("apps", "controllerrevisions"): Printer(apps.CONTROLLER_REVISION_COLUMNS,
                                            apps.print_controller_revision),
    ("batch", "jobs"): Printer(batch.JOB_COLUMNS, batch.print_job),
    ("batch", "cronjobs"): Printer(batch.CRON_JOB_COLUMNS, batch.print_cron_job),
    ("certificates.k8s.io", "certificatesigningrequests"): Printer(
        others.CERTIFICATE_SIGNING_REQUEST_COLUMNS, others.print_certificate_signing_request
    ),
    ("discovery.k8s.io", "endpointslices"): Printer(
        services.ENDPOINT_SLICE_COLUMNS, services.print_endpoint_slice
    ),
    ("coordination.k8s.io", "leases"): Printer(others.LEASE_COLUMNS, others.print_lease),
    ("events.k8s.io", "events"): Printer(events.EVENT_COLUMNS, events.print_events_v1_event),
    ("scheduling.k8s.io", "priorityclasses"): Printer(
        others.PRIORITY_CLASS_COLUMNS, others.print_priority_class
    ),
    ("policy", "poddisruptionbudgets"): Printer(
        others.POD_DISRUPTION_BUDGET_COLUMNS, others.print_pod_disruption_budget
    ),
    ("networking.k8s.io", "ingresses"): Printer(
        networking.INGRESS_COLUMNS, networking.print_ingress
    ),
    ("networking.k8s.io", "ingressclasses"): Printer(
        networking.INGRESS_CLASS_COLUMNS, networking.print_ingress_class
    ),
    ("networking.k8s.io", "networkpolicies"): Printer(
        networking.NETWORK_POLICY_COLUMNS, networking.print_network_policy
    ),
    ("rbac.authorization.k8s.io", "rolebindings"): Printer(
        others.binding_columns("roleBinding"), others.print_role_binding
    ),
    ("rbac.authorization.k8s.io", "clusterrolebindings"): Printer(
        others.binding_columns("clusterRoleBinding"), others.print_role_binding
    ),
    ("admissionregistration.k8s.io", "mutatingwebhookconfigurations"): Printer(
        others.WEBHOOK_CONFIGURATION_COLUMNS, others.print_webhook_configuration
    ),
    ("admissionregistration.k8s.io", "validatingwebhookconfigurations"): Printer(
        others.WEBHOOK_CONFIGURATION_COLUMNS, others.print_webhook_configuration
    ),
    ("apiregistration.k8s.io", "apiservices"): Printer(
        others.API_SERVICE_COLUMNS, others.print_api_service
    ),
}
# Bindings, LimitRanges, Roles and ClusterRoles have no printer upstream either.


def printer_for(resource: Resource) -> Printer:
    """The resource's printer, or the apiserver's default (Name, Created At)."""
    return PRINTERS.get((resource.group, resource.plural), DEFAULT_PRINTER)


def column_definitions(resource: Resource) -> list[Column]:
    """The Table's columnDefinitions for this resource (fresh dicts, safe to mutate)."""
    return [dict(definition) for definition in printer_for(resource).columns]


def table_row_cells(resource: Resource, obj: Obj, now: datetime) -> list[Any]:
    """One row's cells, one per column definition; `now` (timezone-aware) dates the ages."""
    return printer_for(resource).cells(obj, now)


def to_table(
    resource: Resource,
    objs: list[Obj],
    *,
    now: datetime,
    include_object: str = "Metadata",
    list_metadata: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """ConvertToTable: a meta.k8s.io/v1 Table of `objs` (a list, or one object in a list)."""
    return generate_table(
        printer_for(resource),
        objs,
        now=now,
        include_object=include_object,
        list_metadata=list_metadata,
    )
