"""`icefloe images build | list`: build the container images from the provisioning cache, or list
them with their fingerprints (the images themselves: `harness/containers/images.py`)."""

from __future__ import annotations

import argparse
from typing import Any

from icefloe.harness.console import print_table
from icefloe.harness.stack import config as stack_config


def add_parser(sub: Any) -> None:
    parser = sub.add_parser("images", help="container images built from the provisioning cache")
    parser.set_defaults(func=run)
    verbs = parser.add_subparsers(dest="images_command", required=True)
    build = verbs.add_parser("build", help="build the base and service images (idempotent)")
    build.add_argument(
        "--no-provision", action="store_true", help="do not run `icefloe provision` first"
    )
    verbs.add_parser("list", help="the images and their fingerprints")


def run(args: argparse.Namespace) -> int:
    from icefloe.harness.containers.engine import Engine
    from icefloe.harness.containers.images import (
        FINGERPRINT_LABEL,
        LOCAL_IMAGES,
        OPTIONAL_IMAGES,
        ImageBuilder,
    )
    from icefloe.harness.provision.layout import Layout
    from icefloe.harness.provision.steps import provision

    config = stack_config.load(args.stack_config)
    layout = Layout(config.cache_dir)
    engine = Engine(config.run_dir)
    builder = ImageBuilder(engine, layout)
    if args.images_command == "build":
        if not args.no_provision:
            provision(layout)
        builder.build_all()
        return 0
    rows = [
        (service, tag, (builder.image_id(tag) or "-")[:12], builder.label(tag, FINGERPRINT_LABEL))
        for service, tag in {**LOCAL_IMAGES, **OPTIONAL_IMAGES}.items()
    ]
    print_table(("service", "image", "id", "fingerprint"), rows)
    return 0
