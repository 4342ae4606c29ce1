"""Who asks, may they, and what they may change (upstream k8s.io/apiserver/pkg/
authentication, authorization, admission and audit, plus plugin/pkg/auth).

    authentication.py          client certificates, static tokens, anonymous
                               (apiserver/pkg/authentication)
    bootstraptoken.py          bootstrap tokens (plugin/pkg/auth/authenticator/token/bootstrap)
    serviceaccount_tokens.py   ServiceAccount JWTs, signed and checked, and TokenRequest
                               (pkg/serviceaccount/jwt.go, .../serviceaccount/storage/token.go)
    impersonation.py           `kubectl --as` (endpoints/filters/impersonation.go)
    authorization.py           AlwaysAllow and RBAC (plugin/pkg/auth/authorizer/rbac)
    nodeauthorizer.py          what a kubelet may do (plugin/pkg/auth/authorizer/node)
    bootstrappolicy/           the roles and bindings every cluster starts with
                               (plugin/pkg/auth/authorizer/rbac/bootstrappolicy)
    admission/                 the mutating and validating plugins every write passes
                               (apiserver/pkg/admission, plugin/pkg/admission)
    audit.py                   the audit log (apiserver/pkg/audit)
"""
