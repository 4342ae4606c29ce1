"""The smaller groups: coordination leases, scheduling priority classes, policy, rbac,
admission webhook configurations and policies, certificate signing requests."""

from __future__ import annotations

from datetime import datetime, timedelta

from minikube_py.api import Obj
from minikube_py.api.duration import human_duration
from minikube_py.api.selectors import SelectorError, label_selector_to_string
from minikube_py.apiserver.endpoints.tables.cells import NONE, age, name_of
from minikube_py.apiserver.endpoints.tables.table import AGE, NAME, Cells, Column, column

LEASE_COLUMNS = (
    NAME,
    column("Holder", "string", "holderIdentity contains the identity of the holder of a "
                               "current lease."),
    AGE,
)


def print_lease(lease: Obj, now: datetime) -> Cells:
    """printLease: who holds the lease."""
    return [name_of(lease), (lease.get("spec") or {}).get("holderIdentity") or "", age(lease, now)]


PRIORITY_CLASS_COLUMNS = (
    NAME,
    column("Value", "integer", "value represents the integer value of this priority class."),
    column("Global-Default", "boolean", "globalDefault specifies whether this PriorityClass "
                                        "should be considered as the default priority for "
                                        "pods that do not have any priority class."),
    AGE,
    column("PreemptionPolicy", "string", "preemptionPolicy is the Policy for preempting pods "
                                         "with lower priority."),
)


def print_priority_class(priority_class: Obj, now: datetime) -> Cells:
    """printPriorityClass: value, global default, preemption policy."""
    return [
        name_of(priority_class),
        priority_class.get("value", 0),
        bool(priority_class.get("globalDefault", False)),
        age(priority_class, now),
        priority_class.get("preemptionPolicy") or "",
    ]


API_SERVICE_COLUMNS = (
    NAME,
    column("Service", "string", "The reference to the service that hosts this API endpoint."),
    column("Available", "string", "Whether this service is available."),
    AGE,
)


def print_api_service(api_service: Obj, now: datetime) -> Cells:
    """The aggregator's table: the Service (or Local), and Available with its reason."""
    spec, status = api_service.get("spec") or {}, api_service.get("status") or {}
    service = spec.get("service")
    where = f"{service.get('namespace', '')}/{service.get('name', '')}" if service else "Local"
    available = "Unknown"
    for condition in status.get("conditions") or ():
        if condition.get("type") == "Available":
            available = condition.get("status", "")
            if available != "True" and condition.get("reason"):
                available = f"{available} ({condition['reason']})"
            break
    return [name_of(api_service), where, available, age(api_service, now)]


POD_DISRUPTION_BUDGET_COLUMNS = (
    NAME,
    column("Min Available", "string", "The minimum number of pods that must be available."),
    column("Max Unavailable", "string", "The maximum number of pods that may be unavailable."),
    column("Allowed Disruptions", "integer", "Calculated number of pods that may be disrupted "
                                             "at this time."),
    AGE,
)


def print_pod_disruption_budget(budget: Obj, now: datetime) -> Cells:
    """printPodDisruptionBudget: minAvailable / maxUnavailable ("N/A" when unset)."""
    spec = budget.get("spec") or {}
    min_available, max_unavailable = spec.get("minAvailable"), spec.get("maxUnavailable")
    return [
        name_of(budget),
        "N/A" if min_available is None else str(min_available),
        "N/A" if max_unavailable is None else str(max_unavailable),
        (budget.get("status") or {}).get("disruptionsAllowed", 0),
        age(budget, now),
    ]


def binding_columns(kind: str) -> tuple[Column, ...]:
    """RoleBinding and ClusterRoleBinding columns; only the subject descriptions differ."""
    return (
        NAME,
        column("Role", "string", "RoleRef can reference a Role in the current namespace or a "
                                 "ClusterRole in the global namespace."),
        AGE,
        column("Users", "string", f"Users in the {kind}", priority=1),
        column("Groups", "string", f"Groups in the {kind}", priority=1),
        column("ServiceAccounts", "string", f"ServiceAccounts in the {kind}", priority=1),
    )


def print_role_binding(binding: Obj, now: datetime) -> Cells:
    """printRoleBinding: "Kind/name" of the role; wide: the subjects by kind."""
    role_ref = binding.get("roleRef") or {}
    users, groups, service_accounts = [], [], []
    for subject in binding.get("subjects") or []:
        kind, name = subject.get("kind"), subject.get("name", "")
        if kind == "ServiceAccount":
            service_accounts.append(f"{subject.get('namespace', '')}/{name}")
        elif kind == "User":
            users.append(name)
        elif kind == "Group":
            groups.append(name)
    return [
        name_of(binding),
        f"{role_ref.get('kind', '')}/{role_ref.get('name', '')}",
        age(binding, now),
        ", ".join(users),
        ", ".join(groups),
        ", ".join(service_accounts),
    ]


WEBHOOK_CONFIGURATION_COLUMNS = (
    NAME,
    column("Webhooks", "integer", "Webhooks indicates the number of webhooks registered in "
                                  "this configuration"),
    AGE,
)


def print_webhook_configuration(configuration: Obj, now: datetime) -> Cells:
    """printMutatingWebhook / printValidatingWebhook: how many webhooks it registers."""
    return [name_of(configuration), len(configuration.get("webhooks") or ()),
            age(configuration, now)]


VALIDATING_ADMISSION_POLICY_COLUMNS = (
    NAME,
    column("Validations", "integer", "Validations indicates the number of validation rules "
                                     "defined in this configuration"),
    column("ParamKind", "string", "ParamKind specifies the kind of resources used to "
                                  "parameterize this policy"),
    AGE,
)


def print_validating_admission_policy(policy: Obj, now: datetime) -> Cells:
    """printValidatingAdmissionPolicy: how many validations, and the params' kind."""
    spec = policy.get("spec") or {}
    param_kind = spec.get("paramKind")
    kind = (f"{param_kind.get('apiVersion', '')}/{param_kind.get('kind', '')}"
            if isinstance(param_kind, dict) else "<unset>")
    return [name_of(policy), len(spec.get("validations") or ()), kind, age(policy, now)]


VALIDATING_ADMISSION_POLICY_BINDING_COLUMNS = (
    NAME,
    column("PolicyName", "string", "PolicyName indicates the policy definition which the "
                                   "policy binding binded to"),
    column("ParamRef", "string", "ParamRef indicates the param resource which sets the "
                                 "configration param"),
    AGE,
)


def print_validating_admission_policy_binding(binding: Obj, now: datetime) -> Cells:
    """printValidatingAdmissionPolicyBinding: the policy, and which params (namespace/name,
    */name when no namespace is given, or the selector)."""
    spec = binding.get("spec") or {}
    ref, param = spec.get("paramRef"), "<unset>"
    if isinstance(ref, dict):
        if ref.get("name"):
            param = f"{ref.get('namespace') or '*'}/{ref['name']}"
        elif isinstance(ref.get("selector"), dict):
            try:
                param = label_selector_to_string(ref["selector"])
            except SelectorError:
                param = "<unset>"
    return [name_of(binding), spec.get("policyName", ""), param, age(binding, now)]


CERTIFICATE_SIGNING_REQUEST_COLUMNS = (
    NAME,
    AGE,
    column("SignerName", "string", "signerName indicates the requested signer, and is a "
                                   "qualified name."),
    # upstream describes the requestor with the doc of spec.request
    column("Requestor", "string", "request contains an x509 certificate signing request "
                                  "encoded in a \"CERTIFICATE REQUEST\" PEM block."),
    column("RequestedDuration", "string", "expirationSeconds is the requested duration of "
                                          "validity of the issued certificate."),
    column("Condition", "string", "conditions applied to the request. Known conditions are "
                                  "\"Approved\", \"Denied\", and \"Failed\"."),
)


def print_certificate_signing_request(csr: Obj, now: datetime) -> Cells:
    """printCertificateSigningRequest: signer, requesting user, requested duration and
    the condition (Pending, Approved, Denied, then ",Failed" and ",Issued")."""
    spec = csr.get("spec") or {}
    expiration = spec.get("expirationSeconds")
    requested = NONE if expiration is None else human_duration(timedelta(seconds=expiration))
    return [name_of(csr), age(csr, now), spec.get("signerName") or NONE,
            spec.get("username", ""), requested, csr_condition(csr)]


def csr_condition(csr: Obj) -> str:
    """extractCSRStatus: Denied outranks Approved, which outranks Pending."""
    status = csr.get("status") or {}
    types = {condition.get("type") for condition in status.get("conditions") or ()}
    shown = "Denied" if "Denied" in types else "Approved" if "Approved" in types else "Pending"
    if "Failed" in types:
        shown += ",Failed"
    if status.get("certificate"):
        shown += ",Issued"
    return shown
