"""The project's runtime dependencies, as pip installed them here: the distributions that
minikube-py requires (pyproject.toml's `dependencies`, not the `test` extra), and theirs,
and the files each one installed.

    minikube-py's Requires-Dist  --markers true for the image's Python-->  aiohttp, grpcio, ...
        each one's Requires-Dist, the same way, until nothing new   -->  the closure
    each distribution's RECORD  -->  its files in site-packages (not its scripts, nor the
                                      .pyc files pip compiled for this interpreter)

pip evaluated the same environment markers (PEP 508) when it installed them: a requirement
such as `async-timeout; python_version < "3.11"` or `bcrypt; extra == "ssh"` is left out
for the image's Python 3.11 on Linux, as pip left it out here. The wheels are cp311
manylinux builds, which run on Debian's python3.11 as they run on this one.
"""

from __future__ import annotations

import platform
import re
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from importlib import metadata

PROJECT = "minikube-py"
# The environment markers see: the image's Python (Debian 12's 3.11) on this machine.
IMAGE_ENVIRONMENT = {
    "python_version": "3.11", "python_full_version": "3.11.2",
    "implementation_name": "cpython", "implementation_version": "3.11.2",
    "platform_python_implementation": "CPython", "sys_platform": "linux",
    "platform_system": "Linux", "os_name": "posix", "platform_machine": platform.machine(),
    "platform_release": platform.release(), "platform_version": platform.version(),
}
REQUIREMENT = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[([^\]]*)\])?[^;]*(?:;(.*))?$")
MARKER_TOKEN = re.compile(r"""\s*(?:('[^']*'|"[^"]*")|(===|==|!=|<=|>=|~=|<|>|\(|\))"""
                          r"""|([A-Za-z_][A-Za-z0-9_.]*))""")
VERSION = re.compile(r"\d+(\.\d+)*")


class DependencyError(Exception):
    """A distribution the project requires is not installed here."""


def normalize(name: str) -> str:
    """A distribution's name as PEP 503 compares them: PyYAML, pyyaml and py_yaml are one."""
    return re.sub(r"[-_.]+", "-", name).lower()


def runtime_distributions(project: str = PROJECT,
                          environment: dict[str, str] | None = None
                          ) -> list[metadata.Distribution]:
    """Every distribution the project needs at run time (not the project itself), by name."""
    from importlib import metadata  # a quarter of a second to import: only when building

    env = IMAGE_ENVIRONMENT if environment is None else environment
    installed: dict[str, metadata.Distribution] = {}
    for distribution in metadata.distributions():  # the first one on sys.path wins
        installed.setdefault(normalize(distribution.name), distribution)
    found: dict[str, metadata.Distribution] = {}
    extras_done: dict[str, set[str]] = {}
    wanted: list[tuple[str, set[str]]] = [(project, set())]
    while wanted:
        name, extras = wanted.pop()
        key = normalize(name)
        done = extras_done.setdefault(key, set())
        if key in found and extras <= done:
            continue
        if key not in installed:
            raise DependencyError(f"{name}, which {project} needs, is not installed here "
                                  "(make deps installs the dependencies)")
        distribution = found[key] = installed[key]
        done |= extras
        for requirement in distribution.requires or []:
            needed = requirement_needed(requirement, extras, env)
            if needed is not None:
                wanted.append(needed)
    del found[normalize(project)]
    return [found[key] for key in sorted(found)]


def requirement_needed(requirement: str, extras: set[str], environment: dict[str, str]
                       ) -> tuple[str, set[str]] | None:
    """The distribution and extras a Requires-Dist line asks for, when its marker holds for
    the environment with none or one of the `extras` asked of its dependent."""
    match = REQUIREMENT.match(requirement)
    if match is None:
        raise DependencyError(f"cannot read the requirement {requirement!r}")
    name, wanted_extras, marker = match.groups()
    if marker and not any(marker_holds(marker, {**environment, "extra": extra})
                          for extra in ("", *sorted(extras))):
        return None
    return name, {normalize(e.strip()) for e in (wanted_extras or "").split(",") if e.strip()}


def marker_holds(marker: str, environment: dict[str, str]) -> bool:
    """Evaluate a PEP 508 environment marker: `python_version < "3.13" and extra == "x"`."""
    tokens = _tokens(marker)
    position = 0

    def take() -> str:
        nonlocal position
        if position >= len(tokens):
            raise DependencyError(f"the marker {marker!r} ends too soon")
        position += 1
        return tokens[position - 1]

    def peek() -> str:
        return tokens[position] if position < len(tokens) else ""

    def disjunction() -> bool:
        holds = conjunction()
        while peek() == "or":
            take()
            holds = conjunction() or holds
        return holds

    def conjunction() -> bool:
        holds = comparison()
        while peek() == "and":
            take()
            holds = comparison() and holds
        return holds

    def comparison() -> bool:
        if peek() == "(":
            take()
            holds = disjunction()
            if take() != ")":
                raise DependencyError(f"unbalanced parentheses in the marker {marker!r}")
            return holds
        left = take()
        operator = take()
        if operator == "not":
            operator = "not " + take()
        right = take()
        return _compare(_value(left, environment, right), operator,
                        _value(right, environment, left))

    holds = disjunction()
    if position != len(tokens):
        raise DependencyError(f"cannot read the marker {marker!r}")
    return holds


def _tokens(marker: str) -> list[str]:
    tokens, position = [], 0
    while marker[position:].strip():
        match = MARKER_TOKEN.match(marker, position)
        if match is None:
            raise DependencyError(f"cannot read the marker {marker!r}")
        tokens.append(match.group(match.lastindex or 0))
        position = match.end()
    return tokens


def _value(token: str, environment: dict[str, str], other: str) -> str:
    """A quoted string's text or a variable's value; extra names compare normalized."""
    if token[0] in "'\"":
        text = token[1:-1]
        return normalize(text) if other == "extra" else text
    if token not in environment:
        raise DependencyError(f"unknown marker variable {token!r}")
    return normalize(environment[token]) if token == "extra" else environment[token]


def _compare(left: str, operator: str, right: str) -> bool:
    """Versions compare as versions (3.9 < 3.11), anything else as text."""
    if operator in ("in", "not in"):
        return (left in right) == (operator == "in")
    if VERSION.fullmatch(left) and VERSION.fullmatch(right) and operator != "===":
        width = max(left.count("."), right.count(".")) + 1
        a, b = (tuple(int(p) for p in v.split(".")) + (0,) * width for v in (left, right))
        a, b = a[:width], b[:width]
        if operator == "~=":
            prefix = right.count(".")
            return a >= b and a[:prefix] == b[:prefix]
        return {"==": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b,
                ">=": a >= b}[operator]
    if operator in ("==", "==="):
        return left == right
    if operator == "!=":
        return left != right
    raise DependencyError(f"cannot compare {left!r} {operator} {right!r}")


def installed_files(distribution: metadata.Distribution) -> list[tuple[str, Path]]:
    """(path relative to site-packages, file here) of what pip installed for it: its
    packages and its .dist-info, not the scripts it put in bin/ nor its .pyc files."""
    files = []
    for entry in distribution.files or []:
        relative = entry.as_posix()
        if relative.startswith("../") or "__pycache__/" in relative or relative.endswith(".pyc"):
            continue
        files.append((relative, Path(str(distribution.locate_file(entry)))))
    return files


def project_metadata_file(project: str = PROJECT) -> Path:
    """The project's installed METADATA file (its Requires-Dist lines): when it changes,
    so may the closure."""
    from importlib import metadata

    # Every distribution of that name on sys.path: run from the checkout, the editable
    # install's minikube_py.egg-info (no RECORD) comes before the venv's .dist-info.
    found = list(metadata.distributions(name=project))
    if not found:
        raise DependencyError(f"{project} is not installed here (make deps installs it)")
    for distribution in found:
        for relative, path in installed_files(distribution):
            if relative.endswith(".dist-info/METADATA"):
                return path
    raise DependencyError(f"{project} has no METADATA in its RECORD")
