"""Stand-ins for the stack's parts in unit tests that start no service."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RestCatalog:
    """The stack's REST catalog as its clients see it (``harness.stack.catalog.Catalog``): its
    address and the loader settings that reach it; no process."""

    uri: str
    kind = "rest"
    endpoint_key = "uri"
    keeps_state_on_kill = True

    def loader_settings(self, address: str | None = None) -> dict[str, str]:
        return {"type": self.kind, self.endpoint_key: address or self.uri}

    def client_environment(self) -> dict[str, str]:
        return {}
