"""Routes -> nginx.conf: the one data plane that serves both Ingress and Gateway API.

The controller turns Ingresses and HTTPRoutes into `Port`s (one per address nginx listens
on), each holding `Candidate`s: a hostname, a `Match` and the `Action` to take. This
module writes them as nginx configuration, with nothing but nginx's core modules:

    every condition a match needs   map $uri / $http_<name> / $arg_<name> /
    (path, method, header, query)     $request_method -> $mpc_N ("1" or "0")
    one server per (port, hostname)   server_name exact, *.wildcard, or the default_server;
                                      on a Gateway's port, only the candidates of the
                                      most specific listener covering it
    the winning candidate             map "$mpc_1$mpc_4..." $mpr_S: regexes over those
                                      bits, in precedence order (nginx takes the first)
    its action                        rewrite to the internal location /_mpr/<action>:
                                      redirect (return 30x), or header filters, URL
                                      rewrite and proxy_pass to a backend, weighted with
                                      split_clients over $request_id; a copy to each
                                      RequestMirror backend (nginx's mirror)
    no candidate                      404; a backend that cannot be resolved: 500

A backend is a Service's ClusterIP and port: the node's service proxy picks the endpoint.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

ROUTE_PREFIX = "/_mpr/"
INVALID_BACKEND_PORT = 8999
"""A local server answering 500: where requests for an unresolved backend go."""
NOT_FOUND = "none"


@dataclass(frozen=True)
class Match:
    """One HTTPRouteMatch (or an Ingress path): every condition must hold."""

    path_type: str = "PathPrefix"  # Exact, PathPrefix, RegularExpression
    path: str = "/"
    method: str | None = None
    headers: tuple[tuple[str, str, str], ...] = ()  # (type, name, value)
    queries: tuple[tuple[str, str, str], ...] = ()  # (type, name, value)


@dataclass(frozen=True)
class Backend:
    """Where a share of the requests goes: ClusterIP:port (a headless Service: its
    endpoints' ip:port, joined by ","), or None to answer 500."""

    address: str | None
    weight: int = 1


@dataclass(frozen=True)
class HeaderFilter:
    """RequestHeaderModifier / ResponseHeaderModifier."""

    set: tuple[tuple[str, str], ...] = ()
    add: tuple[tuple[str, str], ...] = ()
    remove: tuple[str, ...] = ()


@dataclass(frozen=True)
class Redirect:
    """RequestRedirect: each field None keeps the request's."""

    scheme: str | None = None
    hostname: str | None = None
    port: int | None = None
    path: str | None = None  # the whole new path (ReplaceFullPath)
    prefix: tuple[str, str] | None = None  # (matched prefix, replacement)
    status_code: int = 302


@dataclass(frozen=True)
class Rewrite:
    """URLRewrite: the Host header and the path the backend sees."""

    hostname: str | None = None
    path: str | None = None
    prefix: tuple[str, str] | None = None


@dataclass(frozen=True)
class Action:
    """What a rule does with a request it matched."""

    backends: tuple[Backend, ...] = ()
    request_headers: HeaderFilter | None = None
    response_headers: HeaderFilter | None = None
    redirect: Redirect | None = None
    rewrite: Rewrite | None = None
    mirrors: tuple[str, ...] = ()  # RequestMirror: each address gets a copy, unanswered


@dataclass(frozen=True)
class Candidate:
    """A match for requests to `hostname` ("" any, "*.a.b" a wildcard), in precedence
    order within its port (the caller sorts), and the action it leads to; `listener`: the
    hostname of the Gateway listener it came through (None for an Ingress)."""

    hostname: str
    match: Match
    action: Action
    listener: str | None = None


@dataclass(frozen=True)
class Certificate:
    """A TLS pair in the config's folder, for the hostnames it serves ("" any)."""

    hostname: str
    cert_file: str
    key_file: str


@dataclass
class Port:
    """One port nginx listens on (an Ingress's 80 or 443, a Gateway listener's port)."""

    port: int
    candidates: list[Candidate] = field(default_factory=list)
    certificates: list[Certificate] = field(default_factory=list)  # TLS when not empty
    public_port: int = 80  # the port clients use: what a redirect keeps
    listeners: list[str] = field(default_factory=list)
    """A Gateway port's listener hostnames ("" none): a request is routed only by the
    routes of the most specific listener its host matches (listener isolation)."""


def quote(value: str) -> str:
    """A double-quoted nginx string; `$` cannot be escaped in nginx, so it comes from the
    $mpr_dollar variable."""
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("$", "${mpr_dollar}")
    return f'"{escaped}"'


def quote_regex(pattern: str) -> str:
    """A regex map key, "~pattern" (the ~ inside the quotes), `"` escaped; nginx does not
    expand variables in map keys."""
    return '"~' + pattern.replace('"', '\\"') + '"'


def header_variable(name: str) -> str:
    """$http_x_foo for the request header X-Foo."""
    return "$http_" + name.lower().replace("-", "_")


def path_regex(match: Match) -> str:
    """Exact: the path; PathPrefix: the path or it followed by `/` (element-wise);
    RegularExpression: as given."""
    if match.path_type == "RegularExpression":
        return match.path
    path = match.path
    if match.path_type == "Exact":
        return f"^{re.escape(path)}$"
    trimmed = path.rstrip("/")
    if not trimmed:
        return "^/"
    return f"^{re.escape(trimmed)}(/.*)?$"


def value_regex(kind: str, value: str) -> str:
    return value if kind == "RegularExpression" else f"^{re.escape(value)}$"


class Config:
    """The text of one nginx.conf, built from ports (see the module's docstring)."""

    def __init__(self, ports: list[Port]) -> None:
        self.ports = sorted(ports, key=lambda port: port.port)
        self.lines: list[str] = []
        self.conditions: dict[tuple[str, str], int] = {}  # (variable, regex) -> N
        self.actions: dict[Action, int] = {}
        self.upstreams: dict[str, str] = {}  # address -> upstream name
        self.http_lines: list[str] = []
        self.defined: set[str] = set()  # the variables of http_lines

    def define(self, variable: str, line: str) -> str:
        """Add an http-level line that defines `variable`, once."""
        if variable not in self.defined:
            self.defined.add(variable)
            self.http_lines.append(line)
        return variable

    def condition(self, variable: str, regex: str) -> str:
        """The $mpc_N variable that is 1 when `variable` matches `regex`."""
        index = self.conditions.setdefault((variable, regex), len(self.conditions))
        return f"$mpc_{index}"

    def conditions_of(self, match: Match) -> list[str]:
        """Every condition variable the match needs."""
        needed = [self.condition("$uri", path_regex(match))]
        if match.method:
            needed.append(self.condition("$request_method", f"^{re.escape(match.method)}$"))
        for kind, name, value in match.headers:
            needed.append(self.condition(header_variable(name), value_regex(kind, value)))
        for kind, name, value in match.queries:
            needed.append(self.condition("$arg_" + name, value_regex(kind, value)))
        return needed

    def upstream(self, address: str | None) -> str:
        if address is None:
            return "mpr_invalid_backend"
        return self.upstreams.setdefault(address, f"mpu_{len(self.upstreams)}")

    def render(self) -> str:
        servers: list[str] = []
        for index, port in enumerate(self.ports):
            servers.extend(self.port_servers(index, port))
        head = [
            "# written by minikube-py's gateway controller (python -m minikube_py.gateway)",
            "user www-data;",
            "worker_processes 1;",
            "pid /tmp/nginx.pid;",
            "error_log stderr notice;",
            "events { worker_connections 1024; }",
            "http {",
            "  access_log /dev/stdout;",
            "  client_body_temp_path /tmp/client_body;",
            "  proxy_temp_path /tmp/proxy;",
            "  fastcgi_temp_path /tmp/fastcgi;",
            "  uwsgi_temp_path /tmp/uwsgi;",
            "  scgi_temp_path /tmp/scgi;",
            "  server_names_hash_bucket_size 256;",
            "  map_hash_bucket_size 256;",
            "  variables_hash_max_size 4096;",
            "  proxy_http_version 1.1;",
            "  proxy_buffering off;",
            "  geo $mpr_dollar { default \"$\"; }",
            "  upstream mpr_invalid_backend "
            f"{{ server 127.0.0.1:{INVALID_BACKEND_PORT}; }}",
            f"  server {{ listen 127.0.0.1:{INVALID_BACKEND_PORT}; return 500; }}",
        ]
        for address, name in self.upstreams.items():
            members = " ".join(f"server {member};" for member in address.split(","))
            head.append(f"  upstream {name} {{ {members} }}")
        for (variable, regex), index in self.conditions.items():
            head.append(f"  map {variable} $mpc_{index} {{ {quote_regex(regex)} 1; "
                        "default 0; }")
        head.extend(self.http_lines)
        return "\n".join([*head, *servers, "}", ""])

    def port_servers(self, index: int, port: Port) -> list[str]:
        """One server per hostname on the port, each taking the candidates of its own
        hostname first, then those of wildcards covering it, then the catch-all's."""
        hostnames = sorted({candidate.hostname for candidate in port.candidates}
                           | set(port.listeners), key=host_precedence)
        if "" not in hostnames:
            hostnames.append("")
        lines: list[str] = []
        for number, hostname in enumerate(hostnames):
            covering = [candidate for candidate in port.candidates
                        if host_covers(candidate.hostname, hostname)]
            if port.listeners:
                listener = most_specific(port.listeners, hostname)
                covering = [candidate for candidate in covering
                            if candidate.listener == listener]
            covering.sort(key=lambda candidate: host_precedence(candidate.hostname))
            lines.extend(self.server(f"{index}_{number}", port, hostname, covering))
        return lines

    def server(self, name: str, port: Port, hostname: str,
               candidates: list[Candidate]) -> list[str]:
        tls = bool(port.certificates)
        listen = f"    listen {port.port}{' ssl' if tls else ''}"
        lines = ["  server {",
                 f"{listen}{' default_server' if not hostname else ''};",
                 f"    server_name {hostname or '_'};"]
        if tls:
            certificate = certificate_for(port.certificates, hostname)
            lines += [f"    ssl_certificate {certificate.cert_file};",
                      f"    ssl_certificate_key {certificate.key_file};"]
        bits: list[str] = []
        patterns: list[tuple[str, str]] = []
        for candidate in candidates:
            needed = self.conditions_of(candidate.match)
            for variable in needed:
                if variable not in bits:
                    bits.append(variable)
            action = self.actions.setdefault(candidate.action, len(self.actions))
            patterns.append((needed_pattern(needed, bits), f"a{action}"))
        choice = f"$mpr_s{name}"
        entries = " ".join(f"{quote_regex(pattern_for(pattern, len(bits)))} {target};"
                           for pattern, target in patterns)
        self.http_lines.append(f"  map \"{''.join(bits)}\" {choice} {{ {entries} "
                               f"default {NOT_FOUND}; }}")
        lines += [f"    location / {{ rewrite ^ {ROUTE_PREFIX}{choice} last; }}",
                  f"    location = {ROUTE_PREFIX}{NOT_FOUND} {{ internal; return 404; }}"]
        for action in dict.fromkeys(target for _, target in patterns):
            lines += self.action_location(action, self.action_of(int(action[1:])), port)
        lines.append("  }")
        return lines

    def action_of(self, index: int) -> Action:
        return next(action for action, number in self.actions.items() if number == index)

    def action_location(self, name: str, action: Action, port: Port) -> list[str]:
        lines = [f"    location = {ROUTE_PREFIX}{name} {{", "      internal;"]
        if action.redirect is not None:
            lines.append(f"      return {action.redirect.status_code} "
                         f"{self.redirect_target(name, action.redirect, port)};")
            return [*lines, "    }"]
        if action.response_headers is not None:
            lines += response_header_lines(action.response_headers)
        if not action.backends or not any(backend.weight for backend in action.backends):
            return [*lines, "      return 500;", "    }"]
        host = "$http_host"
        uri = "$request_uri"
        if action.rewrite is not None:
            if action.rewrite.hostname:
                host = quote(action.rewrite.hostname)
            if action.rewrite.path is not None or action.rewrite.prefix is not None:
                uri = self.path_rewrite(name, action.rewrite.path, action.rewrite.prefix)
        lines.append(f"      proxy_set_header Host {host};")
        if action.request_headers is not None:
            lines += self.request_header_lines(name, action.request_headers)
        mirrors = []
        for number, address in enumerate(action.mirrors):
            location = f"{ROUTE_PREFIX}{name}_mirror{number}"
            lines.append(f"      mirror {location};")
            mirrors += [f"    location = {location} {{", "      internal;",
                        "      proxy_set_header Host $http_host;",
                        f"      proxy_pass http://{self.upstream(address)}$request_uri;",
                        "    }"]
        lines.append(f"      proxy_pass http://{self.split(name, action.backends)}{uri};")
        return [*lines, "    }", *mirrors]

    def split(self, name: str, backends: tuple[Backend, ...]) -> str:
        """The upstream for one request: the only backend, or split_clients by weight."""
        weighted = [backend for backend in backends if backend.weight > 0]
        if len(weighted) == 1:
            return self.upstream(weighted[0].address)
        total = sum(backend.weight for backend in weighted)
        variable = f"$mpr_split_{name}"
        shares = []
        for backend in weighted[:-1]:
            share = round(100 * backend.weight / total, 2)
            shares.append(f"{share}% {self.upstream(backend.address)};")
        shares.append(f"* {self.upstream(weighted[-1].address)};")
        return self.define(variable, f"  split_clients \"$request_id\" {variable} "
                                     f"{{ {' '.join(shares)} }}")

    def path_rewrite(self, name: str, path: str | None,
                     prefix: tuple[str, str] | None) -> str:
        """The new path and the query, as $mpr_uri_<name> (mapped from $request_uri)."""
        variable = f"$mpr_uri_{name}"
        rest, query = f"mpr_rest_{name}", f"mpr_query_{name}"
        if path is not None:
            entries = f"\"~^[^?]*(?<{query}>\\?.*)?$\" {quote(path)[:-1]}${query}\";"
        else:
            matched, replacement = prefix or ("/", "/")
            matched = matched.rstrip("/")
            replacement = replacement.rstrip("/")
            pattern = f"^{re.escape(matched)}(?<{rest}>/[^?]*)?(?<{query}>\\?.*)?$"
            value = quote(replacement)[:-1] + f"${rest}${query}\""
            entries = f"{quote_regex(pattern)} {value};"
            if not replacement:
                root = f"^{re.escape(matched)}/?(?<{query}>\\?.*)?$"
                entries = f"{quote_regex(root)} \"/${query}\"; {entries}"
        return self.define(variable, f"  map $request_uri {variable} {{ {entries} "
                                     "default $request_uri; }")

    def redirect_target(self, name: str, redirect: Redirect, port: Port) -> str:
        """scheme://host[:port]path?query: what the request had, unless the filter says."""
        default_scheme = "https" if port.certificates else "http"
        scheme = redirect.scheme or default_scheme
        host = quote(redirect.hostname)[1:-1] if redirect.hostname else "$host"
        if redirect.port is not None:
            number = redirect.port
        elif redirect.scheme is not None:
            number = None
        else:
            number = port.public_port
        well_known = {"http": 80, "https": 443}.get(scheme)
        suffix = f":{number}" if number is not None and number != well_known else ""
        if redirect.path is not None or redirect.prefix is not None:
            uri = self.path_rewrite(name, redirect.path, redirect.prefix)
        else:
            uri = "$request_uri"
        return f"\"{scheme}://{host}{suffix}{uri}\""

    def request_header_lines(self, name: str, headers: HeaderFilter) -> list[str]:
        lines = []
        for header, value in headers.set:
            lines.append(f"      proxy_set_header {header} {quote(value)};")
        for number, (header, value) in enumerate(headers.add):
            variable = f"$mpr_add_{name}_{number}"
            original = header_variable(header)
            appended = quote(value)[1:-1]
            self.define(variable, f"  map {original} {variable} {{ \"\" \"{appended}\"; "
                                  f"default \"{original},{appended}\"; }}")
            lines.append(f"      proxy_set_header {header} {variable};")
        for header in headers.remove:
            lines.append(f"      proxy_set_header {header} \"\";")
        return lines


def response_header_lines(headers: HeaderFilter) -> list[str]:
    """Set: hide the backend's and add ours; add: another line; remove: hide."""
    lines = []
    for header, value in headers.set:
        lines += [f"      proxy_hide_header {header};",
                  f"      add_header {header} {quote(value)} always;"]
    for header, value in headers.add:
        lines.append(f"      add_header {header} {quote(value)} always;")
    for header in headers.remove:
        lines.append(f"      proxy_hide_header {header};")
    return lines


def needed_pattern(needed: list[str], bits: list[str]) -> str:
    """Which bit positions must be 1, as a string of indexes (filled in once all bits of
    the server are known)."""
    return ",".join(str(bits.index(variable)) for variable in needed)


def pattern_for(positions: str, width: int) -> str:
    """^.1..1 for the positions that must be 1 among `width` bits."""
    required = {int(position) for position in positions.split(",")}
    return "^" + "".join("1" if bit in required else "." for bit in range(width)) + "$"


def host_precedence(hostname: str) -> tuple[int, int]:
    """Exact names first, then wildcards (longer first), the catch-all last."""
    if not hostname:
        return (2, 0)
    if hostname.startswith("*."):
        return (1, -len(hostname))
    return (0, -len(hostname))


def host_covers(pattern: str, hostname: str) -> bool:
    """Whether a candidate for `pattern` also serves requests to the server `hostname`."""
    if not pattern:
        return True
    if pattern == hostname:
        return True
    if pattern.startswith("*.") and hostname:
        suffix = pattern[1:]
        bare = hostname[2:] if hostname.startswith("*.") else hostname
        return (f".{bare}").endswith(suffix) and len(bare) > len(suffix) - 1
    return False


def most_specific(listeners: list[str], hostname: str) -> str | None:
    """The listener hostname that takes requests to `hostname`: its own, else the longest
    wildcard covering it, else the listener without one (None: no listener does)."""
    covering = [listener for listener in listeners if host_covers(listener, hostname)]
    return min(covering, key=host_precedence) if covering else None


def certificate_for(certificates: list[Certificate], hostname: str) -> Certificate:
    """The pair for a server: its hostname's, a wildcard's covering it, else the first."""
    for certificate in sorted(certificates, key=lambda c: host_precedence(c.hostname)):
        if host_covers(certificate.hostname, hostname):
            return certificate
    return certificates[0]


def render(ports: list[Port]) -> str:
    """The nginx.conf that serves these ports."""
    return Config(ports).render()
