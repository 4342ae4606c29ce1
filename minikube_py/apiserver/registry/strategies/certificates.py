"""CertificateSigningRequests (upstream pkg/registry/certificates/certificates/strategy.go
and pkg/apis/certificates/validation).

    create     spec.username, uid, groups and extra are the requesting user's, whatever
               the client sent; status starts empty (a request is never pre-approved)
    update     spec and status stay as stored: only metadata changes
    /approval  only the conditions change (who may approve: admission's
               CertificateApproval)
    /status    spec stays, and so do the Approved and Denied conditions: the signer sets
               the certificate and Failed, never the approval (who may sign: admission's
               CertificateSigning)
    both subresources fill in a condition's missing lastUpdateTime (now) and
               lastTransitionTime (the stored condition's of the same type and status,
               else now)
    validate   the request is a CERTIFICATE REQUEST PEM block whose signature checks;
               signerName of the form example.com/signer-name; usages known and unique;
               expirationSeconds >= 600; condition types unique, Approved, Denied and
               Failed only ever True, Approved and Denied not both; status.certificate
               CERTIFICATE PEM blocks
    on update  also: Approved, Denied and Failed are never removed; Approved and Denied
               are added only through /approval; the certificate is set only through
               /status, and only once

A rule the stored request already breaks is not enforced on its updates (upstream's
getValidationOptions), so that a request stored by an older server can still be
approved, denied or deleted. CSRs have no metadata.generation, and any name will do
that can be a segment of a URL.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from minikube_py.api import Obj, meta
from minikube_py.api.certificates import (
    certificate_error,
    check_signature,
    decode_base64,
    parse_csr,
)
from minikube_py.api.defaulting import as_dict, as_list, defaulted_dict, text
from minikube_py.api.managedfields.fieldpath import FieldSet, field_element
from minikube_py.api.validation import (
    FieldError,
    duplicate,
    forbidden,
    go_bytes,
    invalid,
    not_supported,
    required,
    too_long,
    validate_dns1123_label,
    validate_dns1123_subdomain,
    validate_object_meta,
    validate_object_meta_update,
)
from minikube_py.apiserver.auth.admission import request_user
from minikube_py.apiserver.registry.strategies.base import NoGenerationStrategy
from minikube_py.apiserver.registry.strategies.fields import child, index, path_segment_name

APPROVED, DENIED, FAILED = "Approved", "Denied", "Failed"
LEGACY_UNKNOWN_SIGNER = "kubernetes.io/legacy-unknown"
MIN_EXPIRATION_SECONDS = 600
# The key usages a request may ask for (allValidUsages).
USAGES = frozenset((
    "signing", "digital signature", "content commitment", "key encipherment",
    "key agreement", "data encipherment", "cert sign", "crl sign", "encipher only",
    "decipher only", "any", "server auth", "client auth", "code signing",
    "email protection", "s/mime", "ipsec end system", "ipsec tunnel", "ipsec user",
    "timestamping", "ocsp signing", "microsoft sgc", "netscape sgc",
))
# Condition types that are only ever True when present.
TRUE_ONLY_CONDITIONS = (APPROVED, DENIED, FAILED)
DNS1123_SUBDOMAIN_MAX = 253
DNS1123_LABEL_MAX = 63
# ValidateSignerName: a domain, "/", and a path that fits "<namespace>.<name>".
MAX_SIGNER_NAME = DNS1123_SUBDOMAIN_MAX + 1 + DNS1123_SUBDOMAIN_MAX + DNS1123_LABEL_MAX + 1


class CertificateSigningRequestStrategy(NoGenerationStrategy):
    """csrStrategy, csrStatusStrategy and csrApprovalStrategy."""

    # ValidateCertificateRequestName ("We don't care what you call your certificate
    # requests"): only what every name must be, a segment of the object's URL.
    name_validator = staticmethod(path_segment_name)

    def prepare_for_create(self, obj: Obj) -> None:
        """The requester is whoever sends the request; status starts empty."""
        super().prepare_for_create(obj)
        spec = defaulted_dict(obj, "spec")
        for field in ("username", "uid", "groups", "extra"):
            spec.pop(field, None)
        user = request_user.get()
        spec["username"] = user.name
        if user.uid:
            spec["uid"] = user.uid
        if user.groups:
            spec["groups"] = list(user.groups)
        if user.extra:
            spec["extra"] = {key: list(values) for key, values in user.extra.items()}

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        """A request is immutable but for its metadata: spec and status stay as stored."""
        super().prepare_for_update(new, old)
        _keep(new, old, "spec")

    def prepare_for_status_update(self, new: Obj, old: Obj) -> None:
        """/status: the stored spec and Approved/Denied conditions; the rest of status
        (certificate, Failed and other conditions) and metadata are the write's."""
        _keep(new, old, "spec")
        for condition_type in (APPROVED, DENIED):
            _preserve_condition_instances(new, old, condition_type)
        _populate_condition_timestamps(new, old)

    def prepare_for_subresource_update(self, subresource: str, new: Obj, old: Obj) -> None:
        """/approval: of status only the conditions are the write's; spec and the
        certificate stay as stored."""
        _populate_condition_timestamps(new, old)
        conditions = as_dict(new.get("status")).get("conditions")
        _keep(new, old, "spec")
        _keep(new, old, "status")
        if conditions is not None:
            defaulted_dict(new, "status")["conditions"] = conditions
        elif "status" in new:
            new["status"].pop("conditions", None)

    def reset_fields(self) -> dict[str, FieldSet]:
        """GetResetFields: what each write leaves as stored, so server-side apply never
        records it as owned there: spec and status on the main resource, spec and
        status.conditions on /status, spec and status.certificate on /approval."""
        spec, status = field_element("spec"), field_element("status")
        return {
            "": FieldSet.of((spec,), (status,)),
            "status": FieldSet.of((spec,), (status, field_element("conditions"))),
            "approval": FieldSet.of((spec,), (status, field_element("certificate"))),
        }

    def validate(self, obj: Obj) -> list[FieldError]:
        """ValidateCertificateSigningRequestCreate."""
        return _validate_csr(obj, _Options.of(obj, None))

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        """ValidateCertificateSigningRequestUpdate."""
        return _validate_update(new, old, _Options.of(new, old))

    def validate_status_update(self, new: Obj, old: Obj) -> list[FieldError]:
        """ValidateCertificateSigningRequestStatusUpdate: the certificate may be set.
        /status writes metadata here, so it is validated here too."""
        options = _Options.of(new, old)
        options.allow_setting_certificate = True
        problems = validate_object_meta(new.get("metadata"), namespaced=False,
                                        name_validator=self.name_validator)
        problems += validate_object_meta_update(new["metadata"], old["metadata"])
        return problems + _validate_update(new, old, options)

    def validate_subresource_update(self, subresource: str, new: Obj, old: Obj
                                    ) -> list[FieldError]:
        """ValidateCertificateSigningRequestApprovalUpdate: Approved and Denied may be
        added."""
        options = _Options.of(new, old)
        options.allow_setting_approval_conditions = True
        return _validate_update(new, old, options)

    def field_set(self, obj: Obj) -> dict[str, str]:
        """List and watch may select on spec.signerName."""
        fields = super().field_set(obj)
        fields["spec.signerName"] = text(as_dict(obj.get("spec")).get("signerName"))
        return fields


# --- preparing ---------------------------------------------------------------------------


def _keep(new: Obj, old: Obj, field: str) -> None:
    """`field` as stored (absent when the stored object has none)."""
    if field in old:
        new[field] = copy.deepcopy(old[field])
    else:
        new.pop(field, None)


def _conditions(obj: Obj) -> list[Any]:
    return as_list(as_dict(obj.get("status")).get("conditions"))


def _indices(conditions: list[Any], condition_type: str) -> list[int]:
    return [i for i, condition in enumerate(conditions)
            if as_dict(condition).get("type") == condition_type]


def _preserve_condition_instances(new: Obj, old: Obj, condition_type: str) -> None:
    """preserveConditionInstances: the stored conditions of this type replace the
    write's, one for one; when the write added or removed one, validation refuses it."""
    new_conditions, old_conditions = _conditions(new), _conditions(old)
    new_indices = _indices(new_conditions, condition_type)
    old_indices = _indices(old_conditions, condition_type)
    if len(new_indices) != len(old_indices):
        return
    for new_index, old_index in zip(new_indices, old_indices, strict=True):
        new_conditions[new_index] = copy.deepcopy(old_conditions[old_index])


def _populate_condition_timestamps(new: Obj, old: Obj) -> None:
    """populateConditionTimestamps: lastUpdateTime now when unset; lastTransitionTime
    from the stored condition of the same type and status when unset, else now."""
    now = meta.now_rfc3339()
    old_conditions = [c for c in _conditions(old) if isinstance(c, dict)]
    for condition in _conditions(new):
        if not isinstance(condition, dict):
            continue
        if not condition.get("lastUpdateTime"):
            condition["lastUpdateTime"] = now
        if not condition.get("lastTransitionTime"):
            condition["lastTransitionTime"] = next(
                (stored["lastTransitionTime"] for stored in old_conditions
                 if (stored.get("type"), stored.get("status"))
                 == (condition.get("type"), condition.get("status"))
                 and stored.get("lastTransitionTime")), now)


# --- validating --------------------------------------------------------------------------


@dataclass
class _Options:
    """certificateValidationOptions: what a write may do that a create may not (the
    subresources turn on the first two), and what is tolerated because the stored
    request already does it."""

    allow_setting_approval_conditions: bool = False
    allow_setting_certificate: bool = False
    allow_both_approved_and_denied: bool = False
    allow_legacy_signer_name: bool = False
    allow_duplicate_condition_types: bool = False
    allow_empty_condition_type: bool = False
    allow_arbitrary_certificate: bool = False
    allow_unknown_usages: bool = False
    allow_duplicate_usages: bool = False

    @classmethod
    def of(cls, new: Obj, old: Obj | None) -> _Options:
        """getValidationOptions: `old` is None on create."""
        if old is None:
            return cls()
        types = [as_dict(c).get("type") for c in _conditions(old)]
        usages = as_list(as_dict(old.get("spec")).get("usages"))
        old_certificate = _certificate(old)
        return cls(
            allow_both_approved_and_denied=APPROVED in types and DENIED in types,
            allow_legacy_signer_name=(as_dict(old.get("spec")).get("signerName")
                                      == LEGACY_UNKNOWN_SIGNER),
            allow_duplicate_condition_types=len(set(types)) < len(types),
            allow_empty_condition_type=any(not t for t in types),
            allow_arbitrary_certificate=(_certificate(new) == old_certificate
                                         or certificate_error(old_certificate) is not None),
            allow_unknown_usages=any(usage not in USAGES for usage in usages),
            allow_duplicate_usages=len(set(map(str, usages))) < len(usages),
        )


def _bytes(value: Any) -> bytes | None:
    """A []byte field: None when unset; its raw text when it is not base64 (the
    validation of that field says so)."""
    if value is None:
        return None
    try:
        return decode_base64(text(value))
    except ValueError:
        return text(value).encode()


def _certificate(obj: Obj) -> bytes:
    """status.certificate (empty when unset: Go compares a nil and an empty []byte
    equal)."""
    return _bytes(as_dict(obj.get("status")).get("certificate")) or b""


def _validate_csr(obj: Obj, options: _Options) -> list[FieldError]:
    """validateCertificateSigningRequest: the request, its usages, signer and duration,
    the conditions and the certificate."""
    spec = as_dict(obj.get("spec"))
    status = as_dict(obj.get("status"))
    problems = _base64_errors(spec, "request", "spec.request") + _base64_errors(
        status, "certificate", "status.certificate")
    if problems:  # upstream's decoder refuses the body before any validation
        return problems
    request = _bytes(spec.get("request"))
    try:
        check_signature(parse_csr(request or b""))
    except ValueError as err:
        problems.append(invalid("spec.request", go_bytes(request), str(err)))
    problems += _validate_usages(as_list(spec.get("usages")), options)
    signer = text(spec.get("signerName"))
    if not options.allow_legacy_signer_name and signer == LEGACY_UNKNOWN_SIGNER:
        problems.append(invalid("spec.signerName", signer,
                                "the legacy signerName is not allowed via this API version"))
    else:
        problems += validate_signer_name("spec.signerName", signer)
    expiration = spec.get("expirationSeconds")
    if expiration is not None and expiration < MIN_EXPIRATION_SECONDS:
        problems.append(invalid("spec.expirationSeconds", expiration,
                                "may not specify a duration less than 600 seconds (10 "
                                "minutes)"))
    problems += _validate_conditions(_conditions(obj), options)
    if not options.allow_arbitrary_certificate:
        why = certificate_error(_certificate(obj))
        if why is not None:
            problems.append(invalid("status.certificate", "<certificate data>", why))
    return problems


def _base64_errors(fields: Obj, name: str, path: str) -> list[FieldError]:
    """A []byte field that is not base64. Upstream's JSON decoder refuses such a body
    with 400 BadRequest; here the field is reported as invalid (422)."""
    value = fields.get(name)
    if value is None:
        return []
    try:
        decode_base64(text(value))
    except ValueError as err:
        return [invalid(path, text(value), str(err))]
    return []


def _validate_usages(usages: list[Any], options: _Options) -> list[FieldError]:
    problems = [] if usages else [required("spec.usages")]
    if not options.allow_unknown_usages:
        problems += [not_supported(index("spec.usages", i), usage, sorted(USAGES))
                     for i, usage in enumerate(usages) if usage not in USAGES]
    if not options.allow_duplicate_usages:
        seen: set[str] = set()
        for i, usage in enumerate(usages):
            if str(usage) in seen:
                problems.append(duplicate(index("spec.usages", i), usage))
            seen.add(str(usage))
    return problems


def validate_signer_name(path: str, signer: str) -> list[FieldError]:
    """ValidateSignerName: `<domain>/<path>`, the domain of DNS labels with at least one
    dot, the path of DNS subdomains separated by dots, 571 bytes at most."""
    if not signer:
        return [required(path)]
    segments = signer.split("/")
    if len(segments) != 2:
        return [invalid(path, signer, "must be a fully qualified domain and path of the "
                                      "form 'example.com/signer-name'")]
    domain, signer_path = segments
    problems = []
    if len(domain.encode()) > DNS1123_SUBDOMAIN_MAX:
        problems.append(too_long(path, DNS1123_SUBDOMAIN_MAX))
    labels = domain.split(".")
    for label in labels:  # the first bad label only: the others would say the same
        label_errors = validate_dns1123_label(label)
        if label_errors:
            problems += [invalid(path, domain, f'validating label "{label}": {message}')
                         for message in label_errors]
            break
    if len(labels) < 2:
        problems.append(invalid(path, domain, "should be a domain with at least two "
                                              "segments separated by dots"))
    for label in signer_path.split("."):
        label_errors = validate_dns1123_subdomain(label)
        if label_errors:
            problems += [invalid(path, signer_path, f'validating label "{label}": {message}')
                         for message in label_errors]
            break
    if len(signer.encode()) > MAX_SIGNER_NAME:
        problems.append(too_long(path, MAX_SIGNER_NAME))
    return problems


def _validate_conditions(conditions: list[Any], options: _Options) -> list[FieldError]:
    """validateConditions: a type and a status each; Approved, Denied and Failed only
    True; Approved and Denied not both; each type once."""
    problems: list[FieldError] = []
    seen: set[str] = set()
    approved = denied = False
    for i, condition in enumerate(conditions):
        condition = as_dict(condition)
        path = index("status.conditions", i)
        condition_type = text(condition.get("type"))
        if not options.allow_empty_condition_type and not condition_type:
            problems.append(required(child(path, "type")))
        allowed = ["True"] if condition_type in TRUE_ONLY_CONDITIONS else [
            "False", "True", "Unknown"]
        status = text(condition.get("status"))
        if not status:
            problems.append(required(child(path, "status")))
        elif status not in allowed:
            problems.append(not_supported(child(path, "status"), status, allowed))
        if not options.allow_both_approved_and_denied:
            if condition_type == APPROVED:
                approved = True
            elif condition_type == DENIED:
                denied = True
            if condition_type in (APPROVED, DENIED) and approved and denied:
                problems.append(invalid(child(path, "type"), condition_type,
                                        "Approved and Denied conditions are mutually "
                                        "exclusive"))
        if not options.allow_duplicate_condition_types:
            if condition_type in seen:
                problems.append(duplicate(child(path, "type"), condition_type))
            seen.add(condition_type)
    return problems


def _validate_update(new: Obj, old: Obj, options: _Options) -> list[FieldError]:
    """validateCertificateSigningRequestUpdate: the request as a whole, then what an
    update may not do to its conditions and certificate.

    /status keeps the stored Approved and Denied conditions when their number is
    unchanged, and the main resource keeps all of status: a write that changes one is
    always one that adds or removes it.
    """
    problems = _validate_csr(new, options)
    new_types = [as_dict(c).get("type") for c in _conditions(new)]
    old_types = [as_dict(c).get("type") for c in _conditions(old)]
    for condition_type in (APPROVED, DENIED, FAILED):
        if new_types.count(condition_type) < old_types.count(condition_type):
            problems.append(forbidden("status.conditions", "updates may not remove a "
                                      f'condition of type "{condition_type}"'))
    if not options.allow_setting_approval_conditions:
        for condition_type in (APPROVED, DENIED):
            if new_types.count(condition_type) > old_types.count(condition_type):
                problems.append(forbidden("status.conditions", "updates may not add a "
                                          f'condition of type "{condition_type}"'))
    new_certificate, old_certificate = _certificate(new), _certificate(old)
    if new_certificate != old_certificate:
        if not options.allow_setting_certificate:
            problems.append(forbidden("status.certificate",
                                      "updates may not set certificate content"))
        elif old_certificate:
            problems.append(forbidden("status.certificate",
                                      "updates may not modify existing certificate content"))
    return problems
