"""`mkctl config`: read and switch kubeconfig settings (kubectl config).

    mkctl config view [--raw] [--minify] [--flatten] [-o json]
    mkctl config current-context
    mkctl config get-contexts [NAME...] [-o name] [--no-headers]
    mkctl config use-context NAME

They read the same files as every other command (kubeconfig.py), without resolving the
paths inside them, and without any request to a server. `view` shows the merged
configuration with secrets replaced (token: REDACTED, *-data: DATA+OMITTED) unless
--raw. `use-context` rewrites one file in kubectl's form: the file that already sets
that context as current, else the first that sets a current context, else the first.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Iterator
from contextlib import contextmanager

from minikube_py.mkctl.command import PROGRAM, Command, Invocation
from minikube_py.mkctl.errors import Aggregate, MkctlError
from minikube_py.mkctl.flags import BOOL, Flag
from minikube_py.mkctl.kubeconfig import (
    Config,
    KubeconfigError,
    LoadingRules,
    load_file,
    to_v1,
    write_file,
)
from minikube_py.mkctl.printers.tabwriter import TabWriter

REDACTED = "REDACTED"
# ShortenConfig's trick: bytes whose base64 reads "DATA+OMITTED".
DATA_OMITTED = base64.b64decode("DATA+OMITTED")


def _rules(inv: Invocation) -> LoadingRules:
    """The config commands' PathOptions: the same files, their paths left as written."""
    return inv.loading_rules(resolve_paths=False)


def starting_config(inv: Invocation) -> Config:
    """GetStartingConfig: the merged files; nothing at all when the explicit file is
    missing."""
    rules = _rules(inv)
    if rules.explicit_path and not os.path.exists(rules.explicit_path):
        return Config()
    return rules.load()


# -- view ----------------------------------------------------------------------------------

def _redacted(config: Config) -> Config:
    """RedactSecrets, then ShortenConfig: what `config view` shows without --raw."""
    users = {}
    for name, user in config.users.items():
        user = dict(user)
        for key in ("token", "password"):
            if user.get(key):
                user[key] = REDACTED
        for key in ("client-certificate-data", "client-key-data"):
            if user.get(key):
                user[key] = DATA_OMITTED
        users[name] = user
    clusters = {name: ({**cluster, "certificate-authority-data": DATA_OMITTED}
                       if cluster.get("certificate-authority-data") else cluster)
                for name, cluster in config.clusters.items()}
    return config.replace(users=users, clusters=clusters)


def _minified(config: Config, context: str) -> Config:
    """MinifyConfig: only the current context, its cluster and its user."""
    current = context or config.current_context
    if not current:
        raise MkctlError("current-context must exist in order to minify")
    if current not in config.contexts:
        raise MkctlError(f"cannot locate context {current}")
    chosen = config.contexts[current]
    clusters, users = {}, {}
    if chosen.get("cluster"):
        if chosen["cluster"] not in config.clusters:
            raise MkctlError(f"cannot locate cluster {chosen['cluster']}")
        clusters[chosen["cluster"]] = config.clusters[chosen["cluster"]]
    if chosen.get("user"):
        if chosen["user"] not in config.users:
            raise MkctlError(f"cannot locate user {chosen['user']}")
        users[chosen["user"]] = config.users[chosen["user"]]
    return config.replace(current_context=current, contexts={current: chosen},
                          clusters=clusters, users=users)


def _flattened(config: Config) -> Config:
    """FlattenConfig: the files a cluster or user names, embedded as data."""
    def embed(entry: dict, path_key: str, data_key: str, origin: str) -> dict:
        path = entry.get(path_key)
        if not path:
            return entry
        if entry.get(data_key):
            raise MkctlError("cannot have values for both path and contents")
        base = os.path.dirname(os.path.abspath(origin)) if origin else os.getcwd()
        full = path if os.path.isabs(path) else os.path.join(base, path)
        try:
            with open(full, "rb") as handle:
                data = handle.read()
        except OSError as error:
            raise MkctlError(f"open {full}: {(error.strerror or 'error').lower()}") from None
        flat = {key: value for key, value in entry.items() if key != path_key}
        flat[data_key] = data
        return flat

    clusters = {name: embed(cluster, "certificate-authority", "certificate-authority-data",
                            config.origins.get(("clusters", name), ""))
                for name, cluster in config.clusters.items()}
    users = {}
    for name, user in config.users.items():
        origin = config.origins.get(("users", name), "")
        user = embed(user, "client-certificate", "client-certificate-data", origin)
        users[name] = embed(user, "client-key", "client-key-data", origin)
    return config.replace(clusters=clusters, users=users)


def view(inv: Invocation) -> None:
    flags = inv.flags
    if inv.args:
        raise inv.usage_error(f"unexpected arguments: [{' '.join(inv.args)}]")
    rules = _rules(inv)
    merge_files = flags["merge"] or "merge" not in flags.changed
    if not merge_files and not rules.explicit_path:
        raise MkctlError("if merge==false a precise file must be specified")
    output = flags["output"] or "yaml"
    from minikube_py.mkctl.printers import generic_printer

    printer = generic_printer(output, flags["template"], no_headers=False, out=inv.out)
    if merge_files:
        config = starting_config(inv)
    else:
        try:
            config = load_file(rules.explicit_path)
        except OSError as error:
            raise MkctlError(f"open {rules.explicit_path}: "
                             f"{(error.strerror or 'error').lower()}") from None
    if flags["minify"]:
        config = _minified(config, flags["context"])
    if flags["flatten"]:
        config = _flattened(config)
    elif not flags["raw"]:
        config = _redacted(config)
    document = to_v1(config)
    if output.startswith("json") and not output.startswith("jsonpath"):
        from minikube_py.mkctl.printers.gojson import dumps

        inv.out.write(dumps(document, sort_keys=False) + "\n")
        return
    printer.print_obj(document)
    printer.flush()


# -- contexts -----------------------------------------------------------------------------

def current_context(inv: Invocation) -> None:
    config = starting_config(inv)
    if not config.current_context:
        raise MkctlError("current-context is not set")
    inv.out.write(config.current_context + "\n")


def get_contexts(inv: Invocation) -> None:
    output = inv.flags["output"]
    if output not in ("", "name"):
        raise MkctlError(f"--output {output} is not available in {PROGRAM} config "
                         "get-contexts; resetting to default output format")
    config = starting_config(inv)
    errors: list[Exception] = []
    names = sorted(config.contexts) if not inv.args else []
    for name in inv.args:
        if name in config.contexts:
            names.append(name)
        else:
            errors.append(MkctlError(f"context {name} not found"))
    names.sort()
    writer = TabWriter(inv.out)
    if output == "name":
        for name in names:
            writer.write_row([name])
    else:
        if not inv.flags["no-headers"]:
            writer.write_row(["CURRENT", "NAME", "CLUSTER", "AUTHINFO", "NAMESPACE"])
        for name in names:
            context = config.contexts[name]
            writer.write_row(["*" if name == config.current_context else " ", name,
                              context.get("cluster", ""), context.get("user", ""),
                              context.get("namespace", "")])
    writer.flush()
    if errors:
        raise Aggregate(errors)


@contextmanager
def _locked(paths: list[str]) -> Iterator[None]:
    """ModifyConfig's lock files (`<kubeconfig>.lock`), taken in sorted order."""
    taken: list[str] = []
    try:
        for path in sorted(paths):
            lock = path + ".lock"
            directory = os.path.dirname(lock)
            if directory:
                os.makedirs(directory, mode=0o755, exist_ok=True)
            try:
                os.close(os.open(lock, os.O_CREAT | os.O_EXCL, 0))
            except OSError as error:
                raise MkctlError(f"open {lock}: {(error.strerror or 'error').lower()}"
                                 ) from None
            taken.append(lock)
        yield
    finally:
        for lock in taken:
            try:
                os.unlink(lock)
            except OSError:
                pass


def _file_config(path: str) -> Config:
    try:
        return load_file(path)
    except FileNotFoundError:
        return Config()
    except OSError as error:
        raise MkctlError(f"open {path}: {(error.strerror or 'error').lower()}") from None
    except KubeconfigError as error:
        raise MkctlError(f'error loading config file "{path}": {error}') from None


def write_current_context(rules: LoadingRules, new: str) -> None:
    """writeCurrentContext: a new current context goes to the explicit file, else to the
    first file that exists; clearing it clears the first file that sets it."""
    if rules.explicit_path:
        path = rules.explicit_path
    elif new:
        path = rules.default_filename()
    else:
        path = next((path for path in rules.files() if path and os.path.exists(path)
                     and _file_config(path).current_context), "")
        if not path:
            raise MkctlError("no config found to write context")
    write_file(_file_config(path).replace(current_context=new), path)


def use_context(inv: Invocation) -> None:
    if len(inv.args) != 1:
        inv.out.write(USE_CONTEXT.help(inv.path))
        raise MkctlError(f"Unexpected args: [{' '.join(inv.args)}]")
    name = inv.args[0]
    rules = _rules(inv)
    with _locked([path for path in rules.files() if path]):
        config = starting_config(inv)
        if not name:
            raise MkctlError("empty context names are not allowed")
        if name not in config.contexts:
            raise MkctlError(f'no context exists with the name: "{name}"')
        if config.current_context != name:
            write_current_context(rules, name)
    inv.out.write(f'Switched to context "{name}".\n')


USE_CONTEXT = Command(
    name="use-context", summary="Set the current-context in a kubeconfig file",
    usage="use-context CONTEXT_NAME [options]", run=use_context, aliases=("use",),
    examples=f"""  # Use the context for the minikube cluster
  {PROGRAM} config use-context minikube""")

COMMAND = Command(
    name="config",
    summary="Modify kubeconfig files",
    subcommands=[
        Command(name="current-context", summary="Display the current-context",
                usage="current-context [flags] [options]", run=current_context,
                examples=f"""  # Display the current-context
  {PROGRAM} config current-context"""),
        Command(name="get-contexts", summary="Describe one or many contexts",
                description="Display one or many contexts from the kubeconfig file.",
                usage="get-contexts [(-o|--output=)name)] [options]", run=get_contexts,
                examples=f"""  # List all the contexts in your kubeconfig file
  {PROGRAM} config get-contexts

  # Describe one context in your kubeconfig file
  {PROGRAM} config get-contexts my-context""",
                flags=[Flag("no-headers", BOOL, help="When using the default or custom-column "
                            "output format, don't print headers (default print headers)."),
                       Flag("output", shorthand="o", help="Output format. One of: (name).")]),
        USE_CONTEXT,
        Command(name="view", summary="Display merged kubeconfig settings or a specified "
                                     "kubeconfig file", usage="view [flags] [options]",
                run=view,
                flags=[Flag("flatten", BOOL, help="Flatten the resulting kubeconfig file into "
                            "self-contained output (useful for creating portable kubeconfig "
                            "files)"),
                       Flag("merge", BOOL, default=True,
                            help="Merge the full hierarchy of kubeconfig files"),
                       Flag("minify", BOOL, help="Remove all information not used by "
                            "current-context from the output"),
                       Flag("output", shorthand="o", help="Output format. One of: (json, "
                            "yaml, name, jsonpath, jsonpath-as-json, jsonpath-file)."),
                       Flag("raw", BOOL, help="Display raw byte data and sensitive data"),
                       Flag("template", help="Template string to use when -o=jsonpath.")]),
    ],
    examples=f"""  # Show merged kubeconfig settings
  {PROGRAM} config view

  # Switch to the context "minikube-py"
  {PROGRAM} config use-context minikube-py""",
)
