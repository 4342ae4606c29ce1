"""certificates.k8s.io/v1 kinds: CertificateSigningRequest.

Upstream: k8s.io/api/certificates/v1/types.go. The request and the issued certificate
are `[]byte` (base64 strings in JSON); the conditions are a list map keyed by type (no
strategic merge key: a patch replaces the list); usages and groups are atomic.
"""

from __future__ import annotations

from minikube_py.api.schema.dsl import INTEGER, STRING, array, atomic, f, map_of, obj
from minikube_py.api.schema.meta import TIME, api_object

CERTIFICATES = "io.k8s.api.certificates.v1"

CERTIFICATE_SIGNING_REQUEST_SPEC = obj(
    f"{CERTIFICATES}.CertificateSigningRequestSpec",
    "The certificate request: what is asked of which signer, and who asked.",
    expirationSeconds=f(INTEGER, "Requested validity of the issued certificate, in seconds "
                        "(at least 600); the signer may issue a different one."),
    extra=f(map_of(array(STRING)), "Extra attributes of the user who created the request; "
            "set by the API server."),
    groups=atomic(STRING, "Groups of the user who created the request; set by the API "
                  "server."),
    request=f(STRING, "An x509 certificate signing request in a \"CERTIFICATE REQUEST\" "
              "PEM block (base64 in JSON).", required=True),
    signerName=f(STRING, "The signer asked to issue the certificate, a qualified name such "
                 "as kubernetes.io/kube-apiserver-client.", required=True),
    uid=f(STRING, "UID of the user who created the request; set by the API server."),
    usages=atomic(STRING, "Key usages requested in the certificate, such as \"digital "
                  "signature\" and \"client auth\"."),
    username=f(STRING, "Name of the user who created the request; set by the API server."),
)

CERTIFICATE_SIGNING_REQUEST_CONDITION = obj(
    f"{CERTIFICATES}.CertificateSigningRequestCondition",
    "A condition of a certificate signing request: Approved, Denied or Failed.",
    lastTransitionTime=f(TIME, "When the condition last changed status; the server sets it "
                         "when unset."),
    lastUpdateTime=f(TIME, "When the condition was last updated."),
    message=f(STRING, "Human-readable details about the request state."),
    reason=f(STRING, "A brief reason for the request state."),
    status=f(STRING, "True, False or Unknown; Approved, Denied and Failed are only True.",
             required=True),
    type=f(STRING, "Approved and Denied (set through /approval, mutually exclusive) or "
           "Failed (set through /status by the signer); never removed once added.",
           required=True),
)

CERTIFICATE_SIGNING_REQUEST_STATUS = obj(
    f"{CERTIFICATES}.CertificateSigningRequestStatus",
    "Whether the request is approved or denied, and the certificate the signer issued.",
    certificate=f(STRING, "The issued certificate: CERTIFICATE PEM blocks (base64 in JSON), "
                  "set through /status and immutable once set."),
    conditions=f(array(CERTIFICATE_SIGNING_REQUEST_CONDITION), "Approved, Denied and Failed "
                 "conditions, one of each type at most.", list_type="map",
                 map_keys=("type",)),
)

CERTIFICATE_SIGNING_REQUEST = api_object(
    f"{CERTIFICATES}.CertificateSigningRequest",
    "A request for an x509 certificate from a signer, approved or denied, then issued "
    "asynchronously.",
    spec=f(CERTIFICATE_SIGNING_REQUEST_SPEC, "The certificate request; immutable after "
           "creation.", required=True),
    status=f(CERTIFICATE_SIGNING_REQUEST_STATUS, "Approval and the issued certificate, or "
             "the signer's failure."),
)
