"""A Glue-compatible catalog: ministack's Glue (PyPI ``ministack``), a local AWS emulator.

Optional, like Toxiproxy: started by who asks for a Glue catalog, never by ``up``. It serves
Glue's API on one port of 127.0.0.1; the tables' data and metadata files stay in MinIO, Glue
keeps only each table's pointer to its metadata file and its ``VersionId``. It checks
``UpdateTable``'s ``VersionId`` (a commit that raced another is refused), and keeps its state
in the run directory only when it stops cleanly: a kill -9 brings it back as it was at its last
clean stop (docs/catalogs.md).

It accepts any request signature; its clients sign with the stack's generated S3 keys
(``client_environment``), given in their environment where the AWS default chain of every
client (boto3, the Java SDK) reads them, never on a command line.
"""

from __future__ import annotations

from harness.provision import pyvenv, versions
from harness.stack.credentials import S3Credentials
from harness.stack.readiness import HttpOk, Readiness
from harness.stack.service import LocalService


def client_environment(credentials: S3Credentials) -> dict[str, str]:
    """The environment with which a client of the Glue service signs its requests.

    Returns:
        ``AWS_ACCESS_KEY_ID`` and ``AWS_SECRET_ACCESS_KEY``.  CONTAINS SECRETS: never log it.
    """
    return {
        "AWS_ACCESS_KEY_ID": credentials.access_key,
        "AWS_SECRET_ACCESS_KEY": credentials.secret_key.reveal(),
    }


class Glue(LocalService):
    """ministack serving Glue only, its state saved under the run directory."""

    name = "glue"

    @property
    def endpoint(self) -> str:
        return f"http://{self.config.host}:{self.config.glue_port}"

    @property
    def ports(self) -> tuple[int, ...]:
        return (self.config.glue_port,)

    def prepare(self) -> None:
        pyvenv.install(self.layout.ministack_venv, f"ministack=={versions.MINISTACK}")
        (self.state_dir / "state").mkdir(parents=True, exist_ok=True)

    def command(self) -> list[str]:
        return [str(self.layout.ministack_venv / "bin" / "ministack")]

    def environment(self) -> dict[str, str]:
        return {
            "BIND_HOST": self.config.host,
            "GATEWAY_PORT": str(self.config.glue_port),
            "SERVICES": "glue",
            "PERSIST_STATE": "1",
            "STATE_DIR": str(self.state_dir / "state"),
        }

    def readiness(self) -> Readiness:
        return HttpOk(f"{self.endpoint}/_ministack/health")
