"""`crictl images` and `crictl inspecti` (upstream cmd/crictl/image.go: ListImages,
the images table, ImageStatus).

    images    ListImages (an optional REPOSITORY[:TAG] filters), sorted by first tag; a
              row per tag: IMAGE TAG IMAGE ID SIZE, the ids (-q), or json|yaml
    inspecti  ImageStatus (verbose unless -q) of each image, or of every image listed;
              json (the default), yaml or table
"""

from __future__ import annotations

import argparse
import functools
from typing import Any

from minikube_py.cri import CRIError, RuntimeService
from minikube_py.crictl import display
from minikube_py.crictl.crictl_config import rpc_error
from minikube_py.crictl.errors import CrictlError
from minikube_py.gen.cri import api_pb2

NONE = "<none>"


def add_parsers(commands: Any) -> None:
    images = commands.add_parser("images", aliases=["image", "img"], help="List images")
    images.add_argument("reference", nargs="?", default="", metavar="REPOSITORY[:TAG]")
    images.add_argument("-q", "--quiet", action="store_true", help="Only show image IDs")
    images.add_argument("-o", "--output", default="",
                        help="Output format, One of: json|yaml|table")
    images.add_argument("--digests", action="store_true", help="Show digests")
    images.add_argument("--no-trunc", action="store_true",
                        help="Show output without truncating the ID")
    images.add_argument("--pinned", action="store_true",
                        help="Show whether the image is pinned or not")
    images.set_defaults(run=run_images, image_service=True)
    inspecti = commands.add_parser("inspecti",
                                   help="Return the status of one or more images")
    inspecti.add_argument("ids", nargs="*", metavar="IMAGE-ID")
    inspecti.add_argument("-o", "--output", default="",
                          help="Output format, One of: json|yaml|table")
    inspecti.add_argument("-q", "--quiet", action="store_true",
                          help="Do not show verbose information")
    inspecti.add_argument("--name", default="", help="Filter by image name")
    inspecti.set_defaults(run=run_inspecti, image_service=True)


def _compare(a: api_pb2.Image, b: api_pb2.Image) -> int:
    """ListImages' order: by first tag, else first digest, else id."""
    if a.repo_tags and b.repo_tags:
        x, y = a.repo_tags[0], b.repo_tags[0]
    elif a.repo_digests and b.repo_digests:
        x, y = a.repo_digests[0], b.repo_digests[0]
    else:
        x, y = a.id, b.id
    return (x > y) - (x < y)


async def list_images(runtime: RuntimeService, reference: str) -> list[api_pb2.Image]:
    """ListImages: the images the runtime holds, filtered by name, in upstream's order."""
    try:
        answer = await runtime.list_images(api_pb2.ListImagesRequest(
            filter=api_pb2.ImageFilter(image=api_pb2.ImageSpec(image=reference))))
    except CRIError as err:
        raise CrictlError(f"listing images: {rpc_error(err)}") from None
    return sorted(answer.images, key=functools.cmp_to_key(_compare))


def repo_tag_pairs(repo_tags: list[str], image_name: str) -> list[tuple[str, str]]:
    """normalizeRepoTagPair: (repository, tag) per tag; an image pulled by digest only
    shows its name and <none>."""
    if not repo_tags:
        return [(image_name, NONE)]
    pairs = []
    for repo_tag in repo_tags:
        name, colon, tag = repo_tag.rpartition(":")
        if not colon:
            pairs.append(("errorRepoTag", "errorRepoTag"))
            continue
        pairs.append((image_name if name == NONE else name, tag))
    return pairs


def repo_digest(repo_digests: list[str]) -> tuple[str, str]:
    """normalizeRepoDigest: the first digest's repository and digest."""
    if not repo_digests:
        return NONE, NONE
    parts = repo_digests[0].split("@")
    if len(parts) != 2:
        return "errorName", "errorRepoDigest"
    return parts[0], parts[1]


async def run_images(runtime: RuntimeService, args: argparse.Namespace) -> None:
    images = await list_images(runtime, args.reference)
    if args.output in (display.OUTPUT_JSON, display.OUTPUT_YAML):
        display.print_message(api_pb2.ListImagesResponse(images=images), args.output)
        return
    if args.quiet:
        for image in images:
            print(image.id)
        return
    table = display.Table()
    header = ["IMAGE", "TAG", *(["DIGEST"] if args.digests else []), "IMAGE ID", "SIZE",
              *(["PINNED"] if args.pinned else [])]
    table.add_row(header)
    for image in images:
        name, digest = repo_digest(list(image.repo_digests))
        image_id = image.id
        if not args.no_trunc:
            image_id = display.truncated_id(image_id, "sha256:")
            digest = display.truncated_id(digest, "sha256:")
        for repository, tag in repo_tag_pairs(list(image.repo_tags), name):
            table.add_row([repository, tag, *([digest] if args.digests else []), image_id,
                           display.human_size(image.size),
                           *([str(image.pinned).lower()] if args.pinned else [])])
    table.flush()


async def run_inspecti(runtime: RuntimeService, args: argparse.Namespace) -> None:
    output = args.output or display.OUTPUT_JSON
    if output not in (display.OUTPUT_JSON, display.OUTPUT_YAML, display.OUTPUT_TABLE):
        raise CrictlError(f'unsupported format: "{output}"')
    ids = list(args.ids) or [image.id for image in await list_images(runtime, args.name)]
    if not ids:
        raise CrictlError("No IDs provided or nothing found per filter: give an IMAGE-ID "
                          "(crictl images lists them)")
    statuses = []
    for image_id in ids:
        try:
            answer = await runtime.image_status(api_pb2.ImageStatusRequest(
                image=api_pb2.ImageSpec(image=image_id), verbose=not args.quiet))
        except CRIError as err:
            raise CrictlError(f'image status for "{image_id}" request: {rpc_error(err)}'
                              ) from None
        if not answer.HasField("image"):
            raise CrictlError(f'no such image "{image_id}" present (crictl images lists '
                              "them)")
        if output == display.OUTPUT_TABLE:
            print(f"ID: {answer.image.id}")
            for tag in answer.image.repo_tags:
                print(f"Tag: {tag}")
            for digest in answer.image.repo_digests:
                print(f"Digest: {digest}")
            print(f"Size: {display.human_size(answer.image.size)}")
            if not args.quiet:
                print(f"Info: {display.go_map(answer.info)}")
        else:
            statuses.append(display.status_data(display.proto_dict(answer.image),
                                                answer.info))
    display.print_statuses(statuses, output)
