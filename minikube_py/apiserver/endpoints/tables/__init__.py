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

from minikube_py.api import Obj
from minikube_py.api.resources import Resource
from minikube_py.apiserver.endpoints.tables import (
    apps_columns,
    autoscaling_columns,
    batch_columns,
    config_columns,
    csi_columns,
    event_columns,
    flowcontrol_columns,
    networking_columns,
    node_columns,
    other_columns,
    pod_columns,
    service_columns,
    storage_columns,
)
from minikube_py.apiserver.endpoints.tables.table import (
    DEFAULT_PRINTER,
    Column,
    Printer,
    generate_table,
)

PRINTERS: dict[tuple[str, str], Printer] = {
    ("", "pods"): Printer(
        pod_columns.POD_COLUMNS, pod_columns.print_pod, pod_columns.pod_row_conditions
    ),
    ("", "nodes"): Printer(node_columns.NODE_COLUMNS, node_columns.print_node),
    ("", "namespaces"): Printer(node_columns.NAMESPACE_COLUMNS, node_columns.print_namespace),
    ("", "services"): Printer(service_columns.SERVICE_COLUMNS, service_columns.print_service),
    ("", "endpoints"): Printer(service_columns.ENDPOINTS_COLUMNS, service_columns.print_endpoints),
    ("", "configmaps"): Printer(config_columns.CONFIG_MAP_COLUMNS, config_columns.print_config_map),
    ("", "secrets"): Printer(config_columns.SECRET_COLUMNS, config_columns.print_secret),
    ("", "serviceaccounts"): Printer(
        config_columns.SERVICE_ACCOUNT_COLUMNS, config_columns.print_service_account
    ),
    ("", "events"): Printer(event_columns.EVENT_COLUMNS, event_columns.print_event),
    ("", "persistentvolumeclaims"): Printer(
        storage_columns.PERSISTENT_VOLUME_CLAIM_COLUMNS,
        storage_columns.print_persistent_volume_claim,
    ),
    ("", "persistentvolumes"): Printer(
        storage_columns.PERSISTENT_VOLUME_COLUMNS, storage_columns.print_persistent_volume
    ),
    ("", "resourcequotas"): Printer(
        config_columns.RESOURCE_QUOTA_COLUMNS, config_columns.print_resource_quota
    ),
    ("", "replicationcontrollers"): Printer(
        apps_columns.REPLICATION_CONTROLLER_COLUMNS, apps_columns.print_replication_controller
    ),
    ("apps", "deployments"): Printer(
        apps_columns.DEPLOYMENT_COLUMNS, apps_columns.print_deployment
    ),
    ("apps", "replicasets"): Printer(
        apps_columns.REPLICA_SET_COLUMNS, apps_columns.print_replica_set
    ),
    ("apps", "statefulsets"): Printer(
        apps_columns.STATEFUL_SET_COLUMNS, apps_columns.print_stateful_set
    ),
    ("apps", "daemonsets"): Printer(apps_columns.DAEMON_SET_COLUMNS, apps_columns.print_daemon_set),
    ("apps", "controllerrevisions"): Printer(
        apps_columns.CONTROLLER_REVISION_COLUMNS, apps_columns.print_controller_revision
    ),
    ("batch", "jobs"): Printer(batch_columns.JOB_COLUMNS, batch_columns.print_job),
    ("batch", "cronjobs"): Printer(batch_columns.CRON_JOB_COLUMNS, batch_columns.print_cron_job),
    ("certificates.k8s.io", "certificatesigningrequests"): Printer(
        other_columns.CERTIFICATE_SIGNING_REQUEST_COLUMNS,
        other_columns.print_certificate_signing_request,
    ),
    ("discovery.k8s.io", "endpointslices"): Printer(
        service_columns.ENDPOINT_SLICE_COLUMNS, service_columns.print_endpoint_slice
    ),
    ("coordination.k8s.io", "leases"): Printer(
        other_columns.LEASE_COLUMNS, other_columns.print_lease
    ),
    ("events.k8s.io", "events"): Printer(
        event_columns.EVENT_COLUMNS, event_columns.print_events_v1_event
    ),
    ("scheduling.k8s.io", "priorityclasses"): Printer(
        other_columns.PRIORITY_CLASS_COLUMNS, other_columns.print_priority_class
    ),
    ("autoscaling", "horizontalpodautoscalers"): Printer(
        autoscaling_columns.HORIZONTAL_POD_AUTOSCALER_COLUMNS,
        autoscaling_columns.print_horizontal_pod_autoscaler,
    ),
    ("flowcontrol.apiserver.k8s.io", "flowschemas"): Printer(
        flowcontrol_columns.FLOW_SCHEMA_COLUMNS, flowcontrol_columns.print_flow_schema
    ),
    ("flowcontrol.apiserver.k8s.io", "prioritylevelconfigurations"): Printer(
        flowcontrol_columns.PRIORITY_LEVEL_CONFIGURATION_COLUMNS,
        flowcontrol_columns.print_priority_level_configuration,
    ),
    ("policy", "poddisruptionbudgets"): Printer(
        other_columns.POD_DISRUPTION_BUDGET_COLUMNS, other_columns.print_pod_disruption_budget
    ),
    ("networking.k8s.io", "ingresses"): Printer(
        networking_columns.INGRESS_COLUMNS, networking_columns.print_ingress
    ),
    ("networking.k8s.io", "ingressclasses"): Printer(
        networking_columns.INGRESS_CLASS_COLUMNS, networking_columns.print_ingress_class
    ),
    ("storage.k8s.io", "storageclasses"): Printer(
        storage_columns.STORAGE_CLASS_COLUMNS, storage_columns.print_storage_class
    ),
    ("storage.k8s.io", "csidrivers"): Printer(
        csi_columns.CSI_DRIVER_COLUMNS, csi_columns.print_csi_driver
    ),
    ("storage.k8s.io", "csinodes"): Printer(
        csi_columns.CSI_NODE_COLUMNS, csi_columns.print_csi_node
    ),
    ("storage.k8s.io", "volumeattachments"): Printer(
        csi_columns.VOLUME_ATTACHMENT_COLUMNS, csi_columns.print_volume_attachment
    ),
    ("networking.k8s.io", "networkpolicies"): Printer(
        networking_columns.NETWORK_POLICY_COLUMNS, networking_columns.print_network_policy
    ),
    ("rbac.authorization.k8s.io", "rolebindings"): Printer(
        other_columns.binding_columns("roleBinding"), other_columns.print_role_binding
    ),
    ("rbac.authorization.k8s.io", "clusterrolebindings"): Printer(
        other_columns.binding_columns("clusterRoleBinding"), other_columns.print_role_binding
    ),
    ("admissionregistration.k8s.io", "mutatingwebhookconfigurations"): Printer(
        other_columns.WEBHOOK_CONFIGURATION_COLUMNS, other_columns.print_webhook_configuration
    ),
    ("admissionregistration.k8s.io", "validatingwebhookconfigurations"): Printer(
        other_columns.WEBHOOK_CONFIGURATION_COLUMNS, other_columns.print_webhook_configuration
    ),
    ("admissionregistration.k8s.io", "validatingadmissionpolicies"): Printer(
        other_columns.VALIDATING_ADMISSION_POLICY_COLUMNS,
        other_columns.print_validating_admission_policy
    ),
    ("admissionregistration.k8s.io", "validatingadmissionpolicybindings"): Printer(
        other_columns.VALIDATING_ADMISSION_POLICY_BINDING_COLUMNS,
        other_columns.print_validating_admission_policy_binding
    ),
    ("apiregistration.k8s.io", "apiservices"): Printer(
        other_columns.API_SERVICE_COLUMNS, other_columns.print_api_service
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
    printer: Printer | None = None,
) -> dict[str, Any]:
    """ConvertToTable: a meta.k8s.io/v1 Table of `objs` (a list, or one object in a list),
    with the resource's own printer unless its strategy brings one (`printer`)."""
    return generate_table(
        printer or printer_for(resource),
        objs,
        now=now,
        include_object=include_object,
        list_metadata=list_metadata,
    )
