"""Catalog faults on the wire: HTTP answers lost, replaced, refused, delayed or held.

The loader commits each batch with one HTTP request to the catalog (a POST of the table's path
to the REST catalog, an ``UpdateTable`` to Glue). What the harness
needs to provoke is the case a TCP fault cannot: the commit applied, and the loader told
something else (nothing, a 5xx, a 504 now and the commit later). ``catalog_http`` arms a
rule on the run's catalog proxy (``harness.stack.catalogproxy.CatalogProxy``, the
``catalog_proxy`` attribute of the run, which the loader under test must use as its
catalog URL; :func:`attach_catalog_proxy` starts one; a run without one skips the fault) and
disarms it when healed, which also releases a black hole's held requests.

Each request the rule fires on is recorded by the proxy as a ``catalog_proxy.fired`` event
in the run's history, with whether the catalog applied it and its real status; the heal
records the counts (fired, applied, not applied, unknown, still in flight).
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from icefloe.harness.scenarios.faults import FaultSkipped, fault_kind
from icefloe.harness.stack.catalogproxy import (
    COMMIT_PATH,
    GLUE_COMMIT_OPERATION,
    GLUE_LOAD_OPERATION,
    LOAD_PATH,
    TRANSACTION_PATH,
    CatalogProxy,
    Firing,
    Rule,
)

__all__ = ["TARGETS", "CatalogHttp", "CatalogHttpParams", "attach_catalog_proxy", "catalog_proxy"]

Target = Literal["commit", "transaction", "load", "any"]
TARGETS: dict[str, dict[str, tuple[str, str, str]]] = {
    "rest": {
        "commit": ("POST", COMMIT_PATH, ".*"),
        "transaction": ("POST", TRANSACTION_PATH, ".*"),
        "load": ("GET", LOAD_PATH, ".*"),
        "any": (".*", ".*", ".*"),
    },
    "glue": {  # Glue has no multi-table commit
        "commit": ("POST", "/", GLUE_COMMIT_OPERATION),
        "load": ("POST", "/", GLUE_LOAD_OPERATION),
        "any": (".*", ".*", ".*"),
    },
}
"""Which requests a target names on each kind of catalog: (method, path, operation) regular
expressions."""


@dataclass(frozen=True)
class CatalogHttpParams(Firing):
    """Parameters of ``catalog_http``: a :class:`~harness.stack.catalogproxy.Firing` (its mode,
    how often, what it answers; the run's seed decides ``probability``) on the requests ``on``
    names.

    Attributes:
        on: Which requests: ``commit`` (a table's commit), ``transaction`` (a multi-table
            commit), ``load`` (a table load), ``any``.
        wait_s: Inject waits up to this long for ``times`` firings (0: returns at once).
    """

    on: Target = "commit"
    wait_s: float = 0.0

    def __post_init__(self) -> None:
        self.rule()  # the same checks as the proxy's

    def rule(self, name: str = "", catalog: str = "rest") -> Rule:
        """The proxy rule these parameters make.

        Args:
            name: The rule's name (empty: the proxy names it).
            catalog: The kind of catalog behind the proxy (``TARGETS``' keys).

        Returns:
            The rule.

        Raises:
            ValueError: A value the proxy refuses.
            FaultSkipped: That kind of catalog has no such request.
        """
        targets = TARGETS[catalog]
        if self.on not in targets:
            raise FaultSkipped(f"a {catalog} catalog has no {self.on!r} request")
        method, path, operation = targets[self.on]
        firing = {f.name: getattr(self, f.name) for f in dataclasses.fields(Firing)}
        return Rule(**firing, method=method, path=path, operation=operation, name=name)


def catalog_proxy(run: Any) -> CatalogProxy:
    """The run's catalog proxy, recording into the run's history.

    Args:
        run: A ``harness.scenarios.engine.Run`` (or anything with ``catalog_proxy`` and
            ``history``).

    Returns:
        The proxy.

    Raises:
        FaultSkipped: The run has no catalog proxy in front of its loader.
    """
    proxy = getattr(run, "catalog_proxy", None)
    if proxy is None:
        raise FaultSkipped("the run's loader does not reach the catalog through a proxy")
    if proxy.history is None:
        proxy.history = run.history
    return proxy  # type: ignore[no-any-return]


def attach_catalog_proxy(run: Any, port: int = 0, upstream: str | None = None) -> CatalogProxy:
    """Start a catalog proxy in front of the run's catalog and make it the run's.

    The loader under test must then be given ``proxy.url`` as its catalog's address (``[catalog]
    uri``, or ``glue_endpoint`` on Glue: the catalog service's ``endpoint_key``); the
    caller stops the proxy when the run ends (``proxy.stop()``).

    Args:
        run: A ``harness.scenarios.engine.Run`` (its stack, history and seed are used).
        port: Port to listen on (0: any free one).
        upstream: What it forwards to (default: the run's catalog; Toxiproxy's catalog proxy
            when both fault points are in the loader's way).

    Returns:
        The started proxy, also set as ``run.catalog_proxy``.

    Raises:
        OSError: The port cannot be bound.
    """
    proxy = CatalogProxy(
        upstream or run.stack.catalog_uri,
        port=port,
        history=run.history,
        seed=getattr(run, "seed", 0),
        catalog=getattr(getattr(run.stack, "catalog", None), "kind", "rest"),
    )
    run.catalog_proxy = proxy.start()
    return proxy


_RULES = iter(range(1, 1 << 62))


@fault_kind("catalog_http", "infra", CatalogHttpParams)
class CatalogHttp:
    """An HTTP fault on catalog requests (lost answer, 5xx, refusal, delay, black hole, late)."""

    kind = "catalog_http"
    lane = "infra"

    def __init__(self, params: CatalogHttpParams, rng: random.Random) -> None:
        self.params = params
        self.rng = rng
        self.name = f"catalog_{params.mode}"
        self._rule: str | None = None
        self._proxy: CatalogProxy | None = None

    def inject(self, run: Any) -> Mapping[str, Any]:
        proxy = catalog_proxy(run)
        rule = proxy.add(self.params.rule(f"{self.name}-{next(_RULES)}", proxy.catalog))
        self._proxy, self._rule = proxy, rule.name
        facts: dict[str, Any] = {"rule": rule.name, "method": rule.method, "path": rule.path}
        if rule.operation != ".*":
            facts["operation"] = rule.operation
        if self.params.wait_s > 0:
            wanted = self.params.times or 1
            fired = proxy.wait_fired(wanted, self.params.wait_s, rule.name)
            facts["fired"] = len(fired)
        return facts

    def heal(self, run: Any) -> Mapping[str, Any]:
        proxy, rule = self._proxy, self._rule
        if proxy is None or rule is None:
            return {"note": "never armed"}
        started = proxy.firings(rule)
        proxy.remove(rule)
        # A black hole's held requests are released by the removal, and recorded a moment later.
        settle_s = 2.0 if self.params.mode == "black_hole" else 0.0
        fired = proxy.wait_fired(started, settle_s, rule)
        self._rule = None
        return {
            "rule": rule,
            "fired": started,
            "applied": sum(1 for f in fired if f.applied is True),
            "not_applied": sum(1 for f in fired if f.applied is False),
            "unknown": sum(1 for f in fired if f.applied is None),
            "in_flight": max(0, started - len(fired)),
        }
