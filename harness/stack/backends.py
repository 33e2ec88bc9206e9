"""Which backend runs the stack: local processes (the default) or containers.

The choice comes from `--backend`, else $ICEFLOE_BACKEND, else the run directory (the backend
that last brought the stack up there), else `local`. Both backends are `harness.stack.Stack`s:
the same services, endpoints, clients and fault hooks.
"""

from __future__ import annotations

import os
from typing import Any

from icefloe.harness.stack.config import StackConfig

BACKENDS = ("local", "containers")
ENV_BACKEND = "ICEFLOE_BACKEND"
_BACKEND_FILE = "backend"  # in the run directory, written when a container stack comes up


def choose(config: StackConfig, backend: str | None = None) -> str:
    """The backend to use for `config`'s run directory."""
    chosen = backend or os.environ.get(ENV_BACKEND)
    if not chosen:
        marker = config.run_dir / _BACKEND_FILE
        chosen = marker.read_text().strip() if marker.exists() else "local"
    if chosen not in BACKENDS:
        raise ValueError(f"unknown backend {chosen!r}; one of {BACKENDS}")
    return chosen


def make_stack(config: StackConfig, backend: str | None = None) -> Any:
    """The stack of `config` on the chosen backend."""
    if choose(config, backend) == "containers":
        from icefloe.harness.containers.backend import ContainerStack

        return ContainerStack(config)
    from icefloe.harness.stack.lakehouse import Stack

    return Stack(config)


def prepare(stack: Any) -> None:
    """Everything the stack needs before `up`: provisioning, and the images for containers."""
    from icefloe.harness.provision.layout import Layout
    from icefloe.harness.provision.steps import provision

    layout = Layout(stack.config.cache_dir)
    provision(layout)
    if getattr(stack, "backend", "local") == "containers":
        from icefloe.harness.containers.images import ImageBuilder, fetch_glue_wheels
        from icefloe.harness.stack.glue import Glue

        if stack.config.catalog == Glue.kind:
            fetch_glue_wheels(layout)  # the Glue image is built once its wheels are there
        stack.engine.ensure_running()
        ImageBuilder(stack.engine, layout).build_all()
