"""`minikube-py token create | list | delete`: bootstrap tokens, as `kubeadm token` manages
them (upstream cmd/kubeadm/app/cmd/token.go), with the admin's kubeconfig of this home.

    create [TOKEN] [--ttl D] [--description T] [--usages U] [--groups G]
                    [--print-join-command]
        the Secret kube-system/bootstrap-token-<id> (cluster/bootstraptoken.py); prints
        the token, or the whole `minikube-py join <endpoint> --token <t>
        --discovery-token-ca-cert-hash sha256:<h>` line (the endpoint and the CA's hash
        from the kubeconfig, as kubeadm's GetJoinWorkerCommand takes them)
    list            TOKEN TTL EXPIRES USAGES DESCRIPTION EXTRA GROUPS, one token a line
    delete TOKEN... a token or its id: its Secret goes (the bootstrapsigner then drops
                    its signature from cluster-info)
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path

from minikube_py.api import Obj
from minikube_py.api import bootstraptoken as bt
from minikube_py.api.duration import parse_duration, short_human_duration
from minikube_py.client.errors import ClientError
from minikube_py.client.kubeconfig import KubeconfigError, load_kubeconfig
from minikube_py.client.rest import Client
from minikube_py.cluster import bootstraptoken


def add_token_command(commands: argparse._SubParsersAction[argparse.ArgumentParser],
                      home: Callable[[], Path]) -> None:
    """Add `token create | list | delete` to the minikube-py command line."""
    token = commands.add_parser("token", help="manage bootstrap tokens (what `minikube-py "
                                              "join` authenticates with)")
    token.add_argument("--kubeconfig", type=Path, default=None,
                       help="the admin's kubeconfig (default: <home>/kubeconfig)")
    actions = token.add_subparsers(dest="action", required=True)
    create = actions.add_parser("create", help="create a bootstrap token on the server")
    create.add_argument("token", nargs="?", default=None, metavar="TOKEN",
                        help='the token to write, "[a-z0-9]{6}.[a-z0-9]{16}" (default: a '
                             "random one)")
    create.add_argument("--ttl", default="24h0m0s",
                        help="the duration before the token is automatically deleted (e.g. "
                             "1s, 2m, 3h); '0' means never expires (default 24h0m0s)")
    create.add_argument("--description", default="",
                        help="a human friendly description of how this token is used")
    create.add_argument("--usages", default=",".join(bt.KNOWN_USAGES),
                        help="the ways in which this token can be used: "
                             f"{','.join(bt.KNOWN_USAGES)} (default: both)")
    create.add_argument("--groups", default=bootstraptoken.NODE_TOKEN_GROUP,
                        help="extra groups this token authenticates as, "
                             "system:bootstrappers:* each")
    create.add_argument("--print-join-command", action="store_true",
                        help="instead of printing only the token, print the full "
                             "'minikube-py join' line needed to join the cluster with it")
    create.set_defaults(run=partial(token_create, home=home))
    actions.add_parser("list", help="list bootstrap tokens on the server").set_defaults(
        run=partial(token_list, home=home))
    delete = actions.add_parser("delete", help="delete bootstrap tokens on the server")
    delete.add_argument("tokens", nargs="+", metavar="TOKEN",
                        help='a token "[a-z0-9]{6}.[a-z0-9]{16}" or its id "[a-z0-9]{6}"')
    delete.set_defaults(run=partial(token_delete, home=home))


def fail(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(1)


def _kubeconfig(args: argparse.Namespace, home: Callable[[], Path]) -> Path:
    path = args.kubeconfig or home() / "kubeconfig"
    if not path.exists():
        fail(f"no kubeconfig at {path}: `minikube-py up` first, or name the admin's with "
             "--kubeconfig")
    return path


def parse_ttl(text: str) -> timedelta | None:
    """--ttl as Go's time.ParseDuration reads it; None (never expires) for zero."""
    seconds = parse_duration(text)
    if seconds is None or seconds < 0:
        fail(f'invalid argument "{text}" for "--ttl" flag: time: invalid duration "{text}"')
    assert seconds is not None
    return timedelta(seconds=seconds) if seconds else None


def join_command(kubeconfig: Path, token: str) -> str:
    """GetJoinWorkerCommand: the join line for `token`, the endpoint and the CA's hash
    read from the admin's kubeconfig."""
    config = load_kubeconfig(kubeconfig)
    if not config.server.startswith("https://") or config.ca_file is None:
        fail(f"the kubeconfig {kubeconfig} names no certificate authority: a cluster "
             "started with --no-secure cannot be joined")
    assert config.ca_file is not None
    ca_pem = Path(config.ca_file).read_bytes()
    endpoint = config.server.removeprefix("https://").rstrip("/")
    return (f"minikube-py join {endpoint} --token {token} "
            f"--discovery-token-ca-cert-hash {bootstraptoken.ca_cert_hash(ca_pem)}")


def token_create(args: argparse.Namespace, home: Callable[[], Path]) -> None:
    """RunCreateToken: the token's Secret, then the token (or the join line)."""
    kubeconfig = _kubeconfig(args, home)
    token = args.token or bootstraptoken.generate_token()
    usages = tuple(usage for usage in args.usages.split(",") if usage)
    groups = tuple(group for group in args.groups.split(",") if group)
    try:
        secret = bootstraptoken.token_secret(token, ttl=parse_ttl(args.ttl), usages=usages,
                                             extra_groups=groups,
                                             description=args.description)
    except ValueError as error:
        fail(str(error))
    try:
        asyncio.run(_create(kubeconfig, secret))
    except (ClientError, KubeconfigError, OSError) as error:
        fail(f"failed to create bootstrap token with name {secret['metadata']['name']!r}: "
             f"{error}")
    print(join_command(kubeconfig, token) if args.print_join_command else token)


async def _create(kubeconfig: Path, secret: Obj) -> None:
    async with Client.from_kubeconfig(kubeconfig, user_agent="minikube-py-token") as client:
        await client.resource("secrets").create(secret)


def token_list(args: argparse.Namespace, home: Callable[[], Path]) -> None:
    """RunListTokens: every bootstrap token Secret, one line each."""
    kubeconfig = _kubeconfig(args, home)
    try:
        secrets = asyncio.run(_list(kubeconfig))
    except (ClientError, KubeconfigError, OSError) as error:
        fail(f"failed to list bootstrap tokens: {error}")
    rows = [["TOKEN", "TTL", "EXPIRES", "USAGES", "DESCRIPTION", "EXTRA GROUPS"]]
    now = datetime.now(UTC)
    for secret in secrets:
        row = token_row(secret, now)
        if row is None:
            name = (secret.get("metadata") or {}).get("name", "")
            print(f"bootstrap token Secret {name!r} holds no valid token", file=sys.stderr)
            continue
        rows.append(row)
    print(tabwriter(rows), end="")


async def _list(kubeconfig: Path) -> list[Obj]:
    async with Client.from_kubeconfig(kubeconfig, user_agent="minikube-py-token") as client:
        answer = await client.resource("secrets").list(
            bt.TOKEN_NAMESPACE, field_selector=f"type={bt.SECRET_TYPE}")
    return list(answer.get("items") or [])


def token_row(secret: Obj, now: datetime) -> list[str] | None:
    """humanReadableBootstrapToken: the token, its TTL from now ("<forever>"; "<invalid>"
    once expired), when it expires (RFC 3339, "<never>"), its usages, description and
    extra groups ("<none>" for an empty one). None for a Secret that holds no token."""
    try:
        token = (f"{bt.secret_value(secret, bt.TOKEN_ID_KEY)}."
                 f"{bt.secret_value(secret, bt.TOKEN_SECRET_KEY)}")
        bt.parse_token(token)
        expiration = bt.parse_expiration(bt.secret_value(secret, bt.EXPIRATION_KEY))
    except ValueError:
        return None
    ttl, expires = "<forever>", "<never>"
    if expiration is not None:
        ttl = short_human_duration(expiration - now)
        expires = expiration.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    usages = [key.removeprefix(bt.USAGE_PREFIX) for key in sorted(secret.get("data") or {})
              if key.startswith(bt.USAGE_PREFIX) and bt.secret_value(secret, key) == "true"]
    return [token, ttl, expires, ",".join(usages) or "<none>",
            bt.secret_value(secret, bt.DESCRIPTION_KEY) or "<none>",
            bt.secret_value(secret, bt.EXTRA_GROUPS_KEY) or "<none>"]


def tabwriter(rows: list[list[str]], min_width: int = 10, padding: int = 3) -> str:
    """Go's text/tabwriter as kubeadm sets it up (minwidth 10, padding 3, spaces): each
    column but the last as wide as its widest cell plus the padding, at least min_width."""
    widths = [max(min_width, *(len(row[column]) + padding for row in rows))
              for column in range(len(rows[0]) - 1)]
    return "".join("".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False))
                   + row[-1] + "\n" for row in rows)


def token_delete(args: argparse.Namespace, home: Callable[[], Path]) -> None:
    """RunDeleteTokens: each token's Secret, by its id."""
    kubeconfig = _kubeconfig(args, home)
    for given in args.tokens:
        token_id = given
        if bt.TOKEN_PATTERN.fullmatch(f"{given}.{'0' * 16}") is None:
            try:
                token_id, _ = bt.parse_token(given)
            except ValueError:
                fail(f'given token "{given}" didn\'t match pattern "[a-z0-9]{{6}}" or '
                     f'"[a-z0-9]{{6}}\\.[a-z0-9]{{16}}"')
        try:
            asyncio.run(_delete(kubeconfig, bt.secret_name(token_id)))
        except (ClientError, KubeconfigError, OSError) as error:
            fail(f'failed to delete bootstrap token "{token_id}": {error}')
        print(f'bootstrap token "{token_id}" deleted')


async def _delete(kubeconfig: Path, name: str) -> None:
    async with Client.from_kubeconfig(kubeconfig, user_agent="minikube-py-token") as client:
        await client.resource("secrets").delete(name, bt.TOKEN_NAMESPACE)
