"""`python -m minikube_py.tracestore --data-dir D [--bind-address A] [--port 4318]
[--max-spans N]`: the trace receiver `mkctl trace` reads (receiver.py)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from minikube_py.client.component import run_component
from minikube_py.client.logs import add_verbosity_flag, setup_logging
from minikube_py.tracestore.receiver import TraceReceiver, load_store

NICENESS = 19


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m minikube_py.tracestore",
                                     description="minikube-py trace receiver (OTLP/HTTP)")
    parser.add_argument("--data-dir", type=Path, required=True,
                        help="where spans are kept (segment files)")
    parser.add_argument("--bind-address", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=4318, help="OTLP/HTTP's port")
    parser.add_argument("--max-spans", type=int, default=200_000,
                        help="spans kept at most; the oldest go first")
    add_verbosity_flag(parser)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    setup_logging(args.v)
    if args.max_spans < 1:
        sys.exit(f"traces: --max-spans must be 1 or more, not {args.max_spans}")
    try:
        store = load_store(args.data_dir, args.max_spans)
    except OSError as error:
        sys.exit(f"traces: cannot keep spans in {args.data_dir}: {error}")

    # Keeping spans is background work: on a busy machine the cluster's own components
    # go first, and the spans wait in the exporters' queues a moment longer.
    os.nice(NICENESS)

    async def serve() -> None:
        try:
            await TraceReceiver(store, args.bind_address, args.port).run()
        except OSError as error:
            sys.exit(f"traces: cannot listen on {args.bind_address}:{args.port}: {error}")

    run_component("traces", serve)


if __name__ == "__main__":
    main()
