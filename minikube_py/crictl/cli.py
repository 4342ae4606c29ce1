"""crictl's entry point (upstream cmd/crictl/main.go): the global flags, the commands,
and one line on stderr when a command fails.

    crictl [-r ENDPOINT] [-i IMAGE-ENDPOINT] [-c CONFIG] [-t TIMEOUT] COMMAND [FLAGS] [ARGS]

Each command connects to the runtime (crictl_config.py: which endpoint, then Version must
answer), runs, and closes the connection.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys

from minikube_py.crictl import container, execute, image, info, logs, sandbox
from minikube_py.crictl.crictl_config import (
    DEFAULT_CONFIG_PATH,
    DEFAULT_MAX_RETRIES,
    CrictlConfig,
    connect,
    image_service,
    parse_go_duration,
    resolve,
)
from minikube_py.crictl.errors import CrictlError, elapsed


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="crictl", description="client for CRI")
    parser.add_argument("-c", "--config", dest="config_path", default=None,
                        help="Location of the client config file (env CRI_CONFIG_FILE; "
                             f"default {DEFAULT_CONFIG_PATH})")
    parser.add_argument("-r", "--runtime-endpoint", dest="runtime_endpoint", default=None,
                        help="Endpoint of CRI container runtime service "
                             "(env CONTAINER_RUNTIME_ENDPOINT)")
    parser.add_argument("-i", "--image-endpoint", dest="image_endpoint", default=None,
                        help="Endpoint of CRI image manager service (default: uses "
                             "'runtime-endpoint' setting; env IMAGE_SERVICE_ENDPOINT)")
    parser.add_argument("-t", "--timeout", dest="global_timeout", default=None,
                        help="Timeout of connecting to the server in seconds (e.g. 2s, "
                             "20s.). 0 or less is set to default")
    parser.add_argument("-D", "--debug", dest="debug", action="store_true", default=None,
                        help="Enable debug mode")
    parser.add_argument("--max-retries", dest="max_retries", type=int, default=None,
                        help="Max retries for connecting to an explicitly set endpoint "
                             f"with exponential backoff (default {DEFAULT_MAX_RETRIES}; 0 to "
                             "disable, negative for infinite)")
    parser.set_defaults(run=None, image_service=False)
    commands = parser.add_subparsers(title="commands", metavar="COMMAND")
    for module in (container, execute, image, info, logs, sandbox):
        module.add_parsers(commands)
    return parser


def config_of(args: argparse.Namespace) -> CrictlConfig:
    """The flags, each flag's environment variable counting as the flag."""
    env = os.environ
    config_path = args.config_path or env.get("CRI_CONFIG_FILE") or None
    timeout = args.global_timeout
    try:
        seconds = parse_go_duration(timeout) if timeout is not None else None
    except ValueError as err:
        raise CrictlError(f'invalid value "{timeout}" for flag -timeout: {err}') from None
    return resolve(
        config_path=config_path or DEFAULT_CONFIG_PATH,
        config_is_set=config_path is not None,
        runtime_endpoint=args.runtime_endpoint or env.get("CONTAINER_RUNTIME_ENDPOINT"),
        image_endpoint=args.image_endpoint or env.get("IMAGE_SERVICE_ENDPOINT"),
        timeout=seconds, debug=args.debug, max_retries=args.max_retries)


async def run(args: argparse.Namespace) -> None:
    """Resolve the endpoint, connect, run the command, close."""
    config = config_of(args)
    if config.debug:
        logging.basicConfig(level=logging.DEBUG, stream=sys.stderr)
    runtime = await connect(image_service(config) if args.image_service else config)
    try:
        await args.run(runtime, args)
    finally:
        await runtime.close()


def main(argv: list[str] | None = None) -> None:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.run is None:
        parser.print_help()
        return
    try:
        asyncio.run(run(args))
    except CrictlError as err:
        sys.stdout.flush()
        print(f"ERRO[{elapsed():04d}] {err}", file=sys.stderr)
        sys.exit(err.code)
    except KeyboardInterrupt:
        sys.exit(130)
    except BrokenPipeError:  # `crictl ps | head`: a Go program dies of SIGPIPE, silently
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(141)
