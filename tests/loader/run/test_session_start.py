"""Spark's session starts beside the take-over (fakes, no Spark, no services).

A loader refused the table, or fenced while its JVM starts, must not wait for that JVM:
``LoaderJob.start`` raises as soon as the take-over or the lease keeper says so.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from icefloe.loader.config import CatalogConfig, KafkaConfig, LoaderConfig, TableId
from icefloe.loader.errors import ConcurrentLoader, Fenced
from icefloe.loader.run.job import LoaderJob
from icefloe.loader.run.sessionstart import SessionStart

SLOW_JVM_S = 30.0


def test_the_session_is_handed_over_once_created() -> None:
    assert SessionStart(lambda: "session").begin().wait(lambda: False) == "session"


def test_a_wait_gives_up_as_soon_as_asked() -> None:
    release = threading.Event()
    starting = SessionStart(lambda: release.wait(SLOW_JVM_S)).begin()
    began = time.monotonic()
    assert starting.wait(lambda: time.monotonic() - began > 0.3) is None
    assert time.monotonic() - began < 5
    release.set()


def test_an_error_creating_the_session_reaches_the_waiter() -> None:
    def fail() -> None:
        raise RuntimeError("JAVA_HOME is not set")

    with pytest.raises(RuntimeError, match="JAVA_HOME"):
        SessionStart(fail).begin().wait(lambda: False)


class View:
    """The table as the start-up sees it: a take-over that is refused or a lease then taken."""

    def __init__(self, refuse: bool) -> None:
        self.refuse = refuse

    def take_over(self, instance: str, ttl_ms: int, **_: Any) -> None:
        if self.refuse:
            raise ConcurrentLoader("lake.s.t", "other", 0)

    def renew(self, instance: str, ttl_ms: int) -> bool:
        raise Fenced("lake.s.t", "me", None)


def starting_job(view: View) -> tuple[LoaderJob, threading.Event]:
    config = LoaderConfig(
        table=TableId.parse("lake.s.t"),
        kafka=KafkaConfig(bootstrap="127.0.0.1:1", topics=("t",)),
        catalog=CatalogConfig(uri="http://127.0.0.1:1"),
        metrics_port=0,
        lease_ttl=0.6,
        trigger_interval=0.1,
    )
    loader = LoaderJob(config)
    loader.view = view  # type: ignore[assignment]
    jvm_asked = threading.Event()

    def slow_session() -> Any:
        jvm_asked.set()
        time.sleep(SLOW_JVM_S)  # a JVM's start on a busy machine

    loader._session = slow_session  # type: ignore[method-assign]
    return loader, jvm_asked


@pytest.mark.parametrize(
    ("refuse", "error"), [(True, ConcurrentLoader), (False, Fenced)], ids=["refused", "fenced"]
)
def test_a_loader_that_may_not_load_stops_without_waiting_for_the_jvm(
    refuse: bool, error: type[Exception]
) -> None:
    loader, jvm_asked = starting_job(View(refuse))
    began = time.monotonic()
    with pytest.raises(error):
        loader.start()
    assert time.monotonic() - began < 10  # not the JVM's SLOW_JVM_S
    assert jvm_asked.wait(5)  # the JVM's start had begun beside the take-over
