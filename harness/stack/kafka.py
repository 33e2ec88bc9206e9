"""Kafka: a single-node KRaft broker (broker and controller in one process), log dir persisted.

Besides its PLAINTEXT listener the broker has a PROXIED one, which Toxiproxy forwards to and
which advertises Toxiproxy's Kafka port: a client bootstrapped through the proxy is told to
reach the broker through the proxy too, instead of bypassing it (`harness.stack.toxiproxy`).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from icefloe.harness.stack import keys
from icefloe.harness.stack.readiness import Probe, Readiness
from icefloe.harness.stack.service import LocalService, console_log4j2, write_properties

_LOG4J2 = console_log4j2(
    {
        "kafka": ("kafka", "warn"),
        "controller": ("org.apache.kafka.controller", "warn"),
        "server": ("kafka.server.KafkaRaftServer", "info"),
    }
)


JVM_FLAGS = ("-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20")


class Kafka(LocalService):
    """Single-node KRaft Kafka started from the jars provisioning resolved."""

    name = "kafka"

    @property
    def bootstrap_servers(self) -> str:
        return f"{self.config.host}:{self.config.kafka_port}"

    @property
    def ports(self) -> tuple[int, ...]:
        c = self.config
        return (c.kafka_port, c.kafka_controller_port, c.kafka_proxied_port)

    @property
    def _properties(self) -> Path:
        return self.state_dir / "server.properties"

    def _classpath(self) -> str:
        return str(self.layout.kafka_lib / "*")

    def properties(self) -> dict[str, object]:
        """server.properties of this broker (the container stack derives its settings from it)."""
        c = self.config
        controller = f"{c.host}:{c.kafka_controller_port}"
        plain = f"PLAINTEXT://{self.bootstrap_servers}"
        proxied = f"PROXIED://{c.host}:{c.kafka_proxied_port}"
        return {
            keys.KAFKA_PROCESS_ROLES: "broker,controller",
            keys.KAFKA_NODE_ID: 1,
            keys.KAFKA_QUORUM_BOOTSTRAP: controller,
            keys.KAFKA_LISTENERS: f"{plain},{proxied},CONTROLLER://{controller}",
            # Metadata asked on the PROXIED listener names Toxiproxy's port, not the broker's.
            keys.KAFKA_ADVERTISED_LISTENERS: (
                f"{plain},PROXIED://{c.host}:{c.toxiproxy_kafka_port}"
            ),
            keys.KAFKA_CONTROLLER_LISTENER_NAMES: "CONTROLLER",
            keys.KAFKA_LISTENER_PROTOCOL_MAP: (
                "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,PROXIED:PLAINTEXT"
            ),
            keys.KAFKA_INTER_BROKER_LISTENER: "PLAINTEXT",
            keys.KAFKA_LOG_DIRS: self.state_dir / "data",
            keys.KAFKA_OFFSETS_RF: 1,
            keys.KAFKA_TXN_RF: 1,
            keys.KAFKA_TXN_MIN_ISR: 1,
            keys.KAFKA_SHARE_RF: 1,
            keys.KAFKA_SHARE_MIN_ISR: 1,
            keys.KAFKA_DEFAULT_PARTITIONS: 1,
            keys.KAFKA_GROUP_INITIAL_DELAY: 0,
            keys.KAFKA_AUTO_CREATE_TOPICS: "false",
        }

    def prepare(self) -> None:
        write_properties(self._properties, self.properties())
        (self.state_dir / "log4j2.properties").write_text(_LOG4J2)
        if not (self.state_dir / "data" / "meta.properties").exists():
            self._format_storage()

    def _tool(self, *args: str) -> str:
        cmd = [str(self.java("kafka")), *self._jvm_flags(), "-cp", self._classpath()]
        cmd += ["kafka.tools.StorageTool", *args]
        return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip()

    def _format_storage(self) -> None:
        cluster_id = self._tool("random-uuid").splitlines()[-1]
        self._tool("format", "--standalone", "-t", cluster_id, "-c", str(self._properties))

    def _jvm_flags(self) -> list[str]:
        return [
            f"-Dlog4j2.configurationFile={self.state_dir / 'log4j2.properties'}",
            "-Djava.awt.headless=true",
        ]

    def command(self) -> list[str]:
        heap = self.config.kafka_heap
        return [
            str(self.java("kafka")),
            f"-Xmx{heap}",
            f"-Xms{heap}",
            *JVM_FLAGS,
            *self._jvm_flags(),
            "-cp",
            self._classpath(),
            "kafka.Kafka",
            str(self._properties),
        ]

    def readiness(self) -> Readiness:
        def metadata() -> bool:
            from confluent_kafka.admin import AdminClient

            admin = AdminClient({"bootstrap.servers": self.bootstrap_servers, "log_level": 0})
            return bool(admin.list_topics(timeout=2).brokers)

        return Probe(f"Kafka metadata from {self.bootstrap_servers}", metadata)
