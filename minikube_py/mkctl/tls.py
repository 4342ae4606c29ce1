"""TLS for the API server connection, as client-go's transport configures it.

The trust: the kubeconfig's CA alone when it names one (the system's CAs are not loaded
then), the system's CAs when it names none, nothing with insecure-skip-tls-verify. The
identity: the client certificate and key, from files or from the kubeconfig's data (held
in a memory file for OpenSSL, which reads only paths; nothing is written to disk).
"""

from __future__ import annotations

import os
import socket
import ssl
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from minikube_py.mkctl.errors import MkctlError
from minikube_py.mkctl.kubeconfig import RestConfig

# x509 verification failures OpenSSL reports, in Go's words.
_UNKNOWN_AUTHORITY = {2, 18, 19, 20, 21}
_HOSTNAME_MISMATCH = 62
_EXPIRED = {9, 10}


class TLSConfigError(MkctlError):
    """A client certificate client-go loads only when it connects: reported as a failure
    to connect."""


def context_for(config: RestConfig) -> ssl.SSLContext:
    """transport.TLSConfigFor: the SSLContext for one server and user."""
    if config.insecure and (config.ca_data or config.ca_file):
        raise MkctlError("specifying a root certificates file with the insecure flag is not "
                         "allowed")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    if config.insecure:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    elif config.ca_data:
        context.load_verify_locations(cadata=config.ca_data.decode("ascii", "replace"))
    elif config.ca_file:
        context.load_verify_locations(cafile=config.ca_file)
    else:
        context.load_default_certs()
    if config.cert_file or config.cert_data:
        with _as_path(config.cert_data, config.cert_file) as cert, \
                _as_path(config.key_data, config.key_file) as key:
            try:
                context.load_cert_chain(cert, key)
            except ssl.SSLError as error:
                if "KEY_VALUES_MISMATCH" in str(error):
                    raise TLSConfigError("tls: private key does not match public key"
                                         ) from None
                raise MkctlError("tls: failed to find any PEM data in certificate input"
                                 ) from None
    return context


@contextmanager
def _as_path(data: bytes, path: str) -> Iterator[str]:
    """A path OpenSSL can read the PEM from: the file itself, or a memory file."""
    if not data:
        yield path
    elif hasattr(os, "memfd_create"):
        descriptor = os.memfd_create("mkctl-tls")
        try:
            os.write(descriptor, data)
            yield f"/proc/self/fd/{descriptor}"
        finally:
            os.close(descriptor)
    else:
        import tempfile

        with tempfile.NamedTemporaryFile(prefix="mkctl-") as temporary:
            temporary.write(data)
            temporary.flush()
            yield temporary.name


def describe_tls_error(error: Exception, host: str, peer_names: Callable[[], list[tuple[str, str]]]
                       ) -> str:
    """The handshake failure as Go's crypto/tls words it. `peer_names` fetches the
    certificate's subjectAltNames, which Go lists when the name does not match."""
    if isinstance(error, ssl.SSLCertVerificationError):
        prefix = "tls: failed to verify certificate: x509: "
        if error.verify_code in _UNKNOWN_AUTHORITY:
            return prefix + "certificate signed by unknown authority"
        if error.verify_code == _HOSTNAME_MISMATCH:
            return prefix + _hostname_error(host, peer_names())
        if error.verify_code in _EXPIRED:
            return prefix + "certificate has expired or is not yet valid"
        return prefix + str(error.verify_message)
    reason = getattr(error, "reason", None) or str(error)
    if "CERTIFICATE_VERIFY_FAILED" in reason:
        return "tls: failed to verify certificate: x509: " + reason.lower()
    alert = reason.split("ALERT_", 1)[-1] if "ALERT_" in reason else ""
    if alert:
        return "remote error: tls: " + alert.replace("_", " ").lower()
    return "tls: " + reason.replace("_", " ").lower()


def _hostname_error(host: str, names: list[tuple[str, str]]) -> str:
    """x509.HostnameError: the names (or IPs, for an IP) the certificate is valid for."""
    import ipaddress

    try:
        ipaddress.ip_address(host.strip("[]"))
        is_ip = True
    except ValueError:
        is_ip = False
    if is_ip:
        valid = [value for kind, value in names if kind == "IP Address"]
        if not valid:
            return (f"cannot validate certificate for {host} because it doesn't contain any "
                    "IP SANs")
    else:
        valid = [value for kind, value in names if kind == "DNS"]
    if not valid:
        return f"certificate is not valid for any names, but wanted to match {host}"
    return f"certificate is valid for {', '.join(valid)}, not {host}"


def peer_names(config: RestConfig, sock: socket.socket) -> list[tuple[str, str]]:
    """The subjectAltNames of the certificate a server presents on `sock` (a new,
    connected socket), checked against the CA but not against a name."""
    context = context_for(config)
    context.check_hostname = False
    try:
        with context.wrap_socket(sock) as tls:
            return list((tls.getpeercert() or {}).get("subjectAltName", ()))
    except (OSError, ssl.SSLError):
        return []
