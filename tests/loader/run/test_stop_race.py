"""A stop that interrupts the batch after the one it waited for is no failure (fakes, no Spark).

With a backlog the next batch starts as soon as one ends, so ``query.stop()`` may interrupt
it; that batch commits nothing and the next start loads it. A batch that failed before the
stop began is still reported.
"""

from __future__ import annotations

import logging
import time
from types import SimpleNamespace
from typing import Any

import pytest

from icefloe.loader.config import CatalogConfig, KafkaConfig, LoaderConfig, TableId
from icefloe.loader.errors import LoaderError
from icefloe.loader.run.job import LoaderJob


class Query:
    """A streaming query as the job sees it once it stops: inactive, maybe with an error."""

    def __init__(self, exception: Exception | None = None) -> None:
        self.isActive = True
        self._exception = exception
        self.stopped = False

    def stop(self) -> None:
        self.stopped, self.isActive = True, False

    def exception(self) -> Exception | None:
        return self._exception


def job(query: Query, failure: BaseException | None = None, failed_at: float = 0.0) -> Any:
    config = LoaderConfig(
        table=TableId.parse("lake.s.t"),
        kafka=KafkaConfig(bootstrap="127.0.0.1:1", topics=("t",)),
        catalog=CatalogConfig(uri="http://127.0.0.1:1"),
        metrics_port=0,
    )
    loader = LoaderJob(config, spark=SimpleNamespace(), stop_timeout_s=1)
    loader.query = query
    loader.sink = SimpleNamespace(failure=failure, failed_at=failed_at, in_batch=False)  # type: ignore[assignment]
    return loader


def test_a_batch_interrupted_by_the_stop_is_not_a_failure(caplog: pytest.LogCaptureFixture) -> None:
    interrupted = RuntimeError(
        "An error occurred while calling o643.collectToPython: InterruptedException"
    )
    caplog.set_level(logging.INFO, logger="icefloe.loader")
    loader = job(Query())
    loader._stop_query()
    loader.sink.failure, loader.sink.failed_at = interrupted, time.monotonic()  # during the stop
    loader._raise_failure()
    assert loader.query.stopped
    assert "the stop interrupted the batch in progress" in caplog.text


def test_a_query_error_after_the_stop_is_not_a_failure() -> None:
    loader = job(Query(exception=RuntimeError("interrupted")))
    loader._stop_query()
    loader._raise_failure()


def test_a_batch_that_failed_before_the_stop_is_reported() -> None:
    loader = job(Query(), failure=RuntimeError("disk full"), failed_at=time.monotonic())
    time.sleep(0.01)
    loader._stop_query()
    with pytest.raises(LoaderError, match="micro-batch failed: disk full"):
        loader._raise_failure()


def test_without_a_stop_a_failed_query_is_reported() -> None:
    loader = job(Query(exception=RuntimeError("boom")))
    loader.query.isActive = False
    with pytest.raises(LoaderError, match="streaming query failed: boom"):
        loader._raise_failure()


def quit_under(loader: Any, error: Exception, *, stop: bool, jvm_gone: bool) -> Any:
    """The job's run with a start that succeeds and a wait that fails with ``error``."""

    def wait() -> None:
        if stop:
            loader._stop.set()  # as the stop signal's handler does first
        raise error

    loader.start = lambda: None
    loader.wait = wait
    loader.stop = lambda: None  # the clean-up after the run is not what is tested here
    loader._jvm_exited = lambda: jvm_gone
    loader.query.isActive = False
    return loader.run


def test_a_group_stop_that_fails_the_query_as_the_jvm_quits_ends_in_exit_0(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # The JVM's shutdown hook fails the query (here with a null session) before the loader's
    # own stop reaches it: still the stop that was asked for.
    error = LoaderError('streaming query failed: Cannot invoke "SparkSession.sparkContext()"')
    caplog.set_level(logging.INFO, logger="icefloe.loader")
    run = quit_under(job(Query()), error, stop=True, jvm_gone=True)
    assert run() == 0
    assert "JVM quit on the stop signal" in caplog.text


@pytest.mark.parametrize(("stop", "jvm_gone"), [(False, True), (True, False)])
def test_a_failed_query_without_both_a_stop_and_a_gone_jvm_is_reported(
    stop: bool, jvm_gone: bool
) -> None:
    error = LoaderError("streaming query failed: boom")
    run = quit_under(job(Query()), error, stop=stop, jvm_gone=jvm_gone)
    with pytest.raises(LoaderError, match="boom"):
        run()
