"""moto's Glue (PyPI ``moto[server,glue]``): a catalog under test, never the stack's catalog.

moto serves Glue's API well enough for pyiceberg's ``GlueCatalog``, but it does not check
``UpdateTable``'s ``VersionId`` (two commits raced on one version both succeed, the later one
overwriting the other) and it keeps everything in memory (a restart starts empty). ``icefloe
catalogs check`` runs it to show that its checks catch a catalog that breaks its promise; it is
not a backend for the loader (docs/catalogs.md).
"""

from __future__ import annotations

from icefloe.harness.provision import pyvenv, versions
from icefloe.harness.stack.glue import Glue
from icefloe.harness.stack.readiness import HttpOk, Readiness


class Moto(Glue):
    """moto's server on one port of 127.0.0.1, Glue's API signed like ministack's."""

    name = "moto"
    keeps_state_on_kill = False
    """In memory only: any restart, clean or not, starts empty (moto's own documentation)."""

    @property
    def endpoint(self) -> str:
        return f"http://{self.config.host}:{self.config.moto_port}"

    @property
    def ports(self) -> tuple[int, ...]:
        return (self.config.moto_port,)

    def prepare(self) -> None:
        pyvenv.install(self.layout.moto_venv, f"moto[server,glue]=={versions.MOTO}")

    def command(self) -> list[str]:
        return [
            str(self.layout.moto_venv / "bin" / "moto_server"),
            "-H",
            self.config.host,
            "-p",
            str(self.config.moto_port),
        ]

    def environment(self) -> dict[str, str]:
        return {}

    def readiness(self) -> Readiness:
        return HttpOk(f"{self.endpoint}/moto-api/")
