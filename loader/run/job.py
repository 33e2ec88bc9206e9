"""Job: the loader's streaming query, from start to a clean (or crashed) stop.

Start-up order matters:

1. take the table over (``TableView.take_over``, waiting up to
   ``CATALOG_START_WAIT_S`` for a catalog that does not answer, as for Kafka; a
   table that does not exist stops the start with ``TableNotFound``): refuse to start if another
   loader id's lease is live (``ConcurrentLoader``), else write this process's
   lease and move main in one commit conditioned on main not having moved
   since the lease was read. Of two loaders starting together one commit
   wins; the other reads again and refuses. Moving main fences off any
   earlier process of this loader that is frozen rather than dead;
2. read the table (``TableView.state``);
3. choose where to read from.  The table is the single source of truth: the
   Spark checkpoint is deleted and the Kafka source starts at the committed
   offsets (earliest for partitions the table has never seen).  Only when
   snapshot expiry removed every loader snapshot is the checkpoint kept as the
   fallback.  (With ``exactly_once`` switched off by a test's hooks the query
   resumes from the checkpoint, or from ``kafka.starting_offsets``);
4. with ``kafka.first_slice_records``, commit the first slice of a backlog that
   waits there (``loader.ext.firstslice``: a bounded Kafka read through the same
   sink), and start from the offsets it committed;
5. start the query with ``BatchSink`` as ``foreachBatch``.

The job is where the extensions the configuration asks for are plugged in, each
imported only then: the fast path (``jvm_decode``, ``loader.ext.fastpath``), the
first slice, the class-data archive (``[spark] class_data``), and the test kit's
hooks (an ``ICEFLOE_TEST_*`` variable, ``hooks_from_env``).

While the query runs the main thread renews the lease when no commit has
renewed it for half its TTL (a conditional commit: only while this process
still holds it), refreshes lag and freshness metrics, and watches for
SIGTERM/SIGINT: a stop request lets the batch in progress finish (bounded by
``stop_timeout_s``), then stops the query and releases the lease.  A request that
comes during start-up stops before the query starts.  Spark's JVM ignores SIGINT
but not SIGTERM: a SIGTERM sent to the whole process group makes it quit under
the query; the loader then says so in one line, releases the lease and exits 0
(the batch in progress was not committed, and the next start loads it).  A process
that finds it was fenced (``Fenced``, from a batch or a renewal) stops its
query and steps down without touching the lease.  SIGKILL needs no handling:
every commit is one atomic Iceberg snapshot and restarts re-plan from the
table.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from icefloe.loader.commit.hooks import Hooks
from icefloe.loader.commit.sink import BatchSink
from icefloe.loader.commit.table import TableView, now_ms
from icefloe.loader.config import LoaderConfig
from icefloe.loader.decode.frames import warm_up
from icefloe.loader.errors import EXIT_STALLED, Fenced, LoaderError
from icefloe.loader.io.deadletter import DeadLetterProducer
from icefloe.loader.io.metrics import LoaderMetrics
from icefloe.loader.io.topics import (
    KAFKA_START_WAIT_S,
    KafkaMetadata,
    numbered_offsets,
    starting_offsets_json,
)
from icefloe.loader.run.jvmbridge import accumulator_server, hadoop_configuration, jvm
from icefloe.loader.run.leasekeeper import LeaseKeeper
from icefloe.loader.run.sessionstart import SessionStart
from icefloe.loader.run.spark import quiet_query_failure, under_spark_submit

if TYPE_CHECKING:
    from pyiceberg.schema import Schema
    from pyspark.sql import DataFrame, SparkSession

    from icefloe.loader.commit.offsets import Offsets
    from icefloe.loader.config import DecodeOptions
    from icefloe.loader.ext.classdata import ClassData
    from icefloe.loader.ext.fastpath.onepass import FastPath

__all__ = [
    "TEST_ENV_PREFIX",
    "LoaderJob",
    "default_checkpoint",
    "hooks_from_env",
    "warm_up_decoding",
]

log = logging.getLogger("icefloe.loader")

CATALOG_START_WAIT_S = 60.0
"""How long a starting loader waits for the REST catalog to answer (a restart) before it stops."""

MAINTAIN_EVERY_S = 5.0
"""How often the maintenance loop renews the lease if due and refreshes metrics (at most a
third of the lease, so a short lease never lapses between batches)."""

JVM_EXIT_WAIT_S = 5.0

STALL_GRACE_S = 60.0
"""How far past ``progress_timeout`` a batch may run before the loader exits: the sink's own
bound (``loader.io.retry.Patience``) ends a stalled batch first; this catches the unbounded rest."""
"""How long a loader whose Spark call failed waits to learn whether Spark's JVM has exited."""


class _NoDomainErrorTraces(logging.Filter):
    """Drop py4j's stack trace of a ``foreachBatch`` call that raised a domain error.

    The loader reports such an error itself, in one line; unexpected errors keep their trace.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        return not isinstance(error, LoaderError)


_PY4J_CALLBACKS = "py4j.clientserver"


class _NoPy4JTracesWhenStopping(logging.Filter):
    """Drop py4j's error traces once a stop is requested (a filter on the root handlers).

    A SIGTERM sent to the whole process group stops Spark's JVM as well, and every py4j call in
    flight then fails with a trace of its own. The loader says what happened in one line.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        from_py4j = record.name == "root" or record.name.startswith("py4j")
        return not (from_py4j and record.exc_info and record.levelno >= logging.ERROR)


TEST_ENV_PREFIX = "ICEFLOE_TEST_"
"""The test kit's variables (``loader.testing.faultpoints``): any one set brings its hooks in."""


def hooks_from_env(env: Mapping[str, str] | None = None) -> Hooks:
    """The hooks a loader process runs with: none, unless the test kit set one of its variables.

    Args:
        env: the environment (defaults to ``os.environ``).

    Raises:
        ValueError: a test variable names an unknown point or part of the protocol.
    """
    env = os.environ if env is None else env
    if not any(name.startswith(TEST_ENV_PREFIX) for name in env):
        return Hooks()
    from icefloe.loader.testing.faultpoints import FaultPoints

    return FaultPoints.from_env(env)


def warm_up_decoding(
    spark: SparkSession, schema: Schema, options: DecodeOptions, fast: FastPath | None
) -> None:
    """Start the Python workers before the first batch (``frames.warm_up``) when every record
    will go to them: without the fast path, or with a schema or transforms it cannot decode.
    When the JVM path decodes the schema nothing runs (a warm-up there cost more than it
    saved)."""
    if fast is None or not fast.decodes(schema, options):
        warm_up(spark, schema, options)


def default_checkpoint(config: LoaderConfig) -> str:
    """A local checkpoint directory for ``config`` when none is configured."""
    name = f"{config.loader_id}-{config.table}".replace("/", "_")
    return os.path.join(tempfile.gettempdir(), "icefloe-loader", name)


class LoaderJob:
    """One loader: a Spark streaming query from Kafka into one Iceberg table.

    Args:
        config: the loader configuration.
        spark: an existing session (tests share one); ``None`` creates it.
        stop_timeout_s: how long a stop request waits for the batch in progress.
        hooks: the test kit's hooks; by default ``hooks_from_env()``.

    Attributes:
        sink: the ``foreachBatch`` sink (its ``failure`` and ``commits``).
        metrics: the Prometheus metrics.
        starting_offsets: what the Kafka source was told, for logs and tests.
        instance: this process's token: the lease names it, so a newer process of
            the same loader id fences this one off.
    """

    def __init__(
        self,
        config: LoaderConfig,
        spark: SparkSession | None = None,
        *,
        stop_timeout_s: float = 60.0,
        hooks: Hooks | None = None,
    ) -> None:
        self.config = config
        self._spark = spark
        self.stop_timeout_s = stop_timeout_s
        self.hooks = hooks if hooks is not None else hooks_from_env()
        self.view = TableView(config, hooks=self.hooks)
        self.metrics = LoaderMetrics(str(config.table))
        self.view.patience.on_retry = lambda service: self.metrics.retries.labels(service).inc()
        self.view.on_unknown_outcome = lambda commit, landed: self.metrics.unknown_outcomes.labels(
            commit, str(landed).lower()
        ).inc()
        self.query: Any = None
        self.sink: BatchSink | None = None
        self.starting_offsets: str | None = None
        self._stop = threading.Event()
        self._kafka: KafkaMetadata | None = None
        self._dead_letters: DeadLetterProducer | None = None
        self._renewed_ms = 0
        self.instance = uuid.uuid4().hex[:16]
        self._fenced: Fenced | None = None
        self._jvm_gone = False
        self._stop_began: float | None = None
        # The extensions the configuration asks for, each imported only then.
        self._fast: FastPath | None = None
        if config.jvm_decode:
            from icefloe.loader.ext.fastpath.onepass import FastPath

            self._fast = FastPath()
        self._first_slice: Callable[..., Offsets | None] | None = None
        if config.kafka.first_slice_records:
            from icefloe.loader.ext.firstslice import commit_first_slice

            self._first_slice = commit_first_slice
        self._class_data: ClassData | None = None
        # Under spark-submit or with a session given, the JVM is not this process's to shape.
        if spark is None and not under_spark_submit() and config.spark.class_data:
            from icefloe.loader.ext.classdata import ClassData

            self._class_data = ClassData.plan(config.spark.class_data)

    @property
    def spark(self) -> SparkSession:
        if self._spark is None:
            self._spark = self._session()
        return self._spark

    def _session(self) -> SparkSession:
        from icefloe.loader.run.spark import session

        return session(self.config, class_data=self._class_data)

    @property
    def checkpoint(self) -> str:
        return self.config.checkpoint_location or default_checkpoint(self.config)

    # -- lifecycle ---------------------------------------------------------

    def start(self) -> None:
        """Take the table over, choose starting offsets and start the query.

        Spark's session (unless one was given) starts in a thread beside the take-over
        (``SessionStart``). The lease is renewed from a thread (``LeaseKeeper``) from the
        take-over until the query runs, so a slow start-up does not let it lapse; a start-up
        fenced meanwhile stops without waiting for the JVM.

        Raises:
            ConcurrentLoader: another loader owns the table.
            Fenced: another loader took the table during the start-up.
            TableNotFound: the table does not exist.
            CatalogUnavailable: the catalog did not answer for ``CATALOG_START_WAIT_S``.
            LoaderError: the table or Kafka cannot be read.
        """
        cfg = self.config
        callbacks = logging.getLogger(_PY4J_CALLBACKS)
        if not any(isinstance(f, _NoDomainErrorTraces) for f in callbacks.filters):
            callbacks.addFilter(_NoDomainErrorTraces())
        # Spark's JVM starts while the table is taken over: a loader refused the table (or
        # fenced during its start-up) says so in seconds instead of after the JVM's start.
        starting = None if self._spark is not None else SessionStart(self._session).begin()
        self.view.take_over(
            self.instance, self._ttl_ms, wait_s=CATALOG_START_WAIT_S, stop=self._stop
        )
        self._renewed_ms = now_ms()
        log.info("took over %s as loader %s (process %s)", cfg.table, cfg.loader_id, self.instance)
        self.hooks.reached("take_over", 0)
        with LeaseKeeper(self.view, self.instance, self._ttl_ms, self._renewed_ms) as keeper:
            if starting is not None:  # None when fenced or stopped first (raised or logged next)
                self._spark = starting.wait(lambda: bool(keeper.fenced or self._stop.is_set()))
            self._start_query(keeper)
        self._renewed_ms = max(self._renewed_ms, keeper.renewed_ms)
        if keeper.fenced is not None and self._fenced is None:  # lost as the query started
            log.error("%s", keeper.fenced)
            self._fenced = keeper.fenced  # the maintenance loop stops the query and raises it

    def _start_query(self, keeper: LeaseKeeper) -> None:
        """Warm up, choose starting offsets and start the query, the lease kept by ``keeper``."""
        cfg, fast = self.config, self._fast
        if self._start_cancelled(keeper):
            return
        if fast is not None:
            fast.check_available(self.spark)
        state = self.view.read_state(wait_s=CATALOG_START_WAIT_S, stop=self._stop)

        # Warm up first: the partitions are read last, as close to the query's start as can be,
        # since Spark refuses starting offsets that miss a partition added in between.
        warm_up_decoding(self.spark, state.schema, cfg.decode, fast)
        self._kafka = KafkaMetadata(cfg.kafka)
        if cfg.dead_letter_topic:
            self._dead_letters = DeadLetterProducer(
                cfg.kafka, cfg.dead_letter_topic, cfg.loader_id, table=str(cfg.table)
            )
        self.sink = BatchSink(
            cfg,
            self.view,
            self.metrics,
            self._dead_letters,
            self.instance,
            hooks=self.hooks,
            fast=fast,
        )
        if fast is not None:
            fast.spark, fast.checkpoint = self.spark, self.checkpoint
        self.sink.recover_dead_letters(state)
        self.metrics.serve(cfg.metrics_port)
        options = cfg.kafka.spark_options()
        committed = state.committed
        exactly_once = self.hooks.exactly_once
        if exactly_once and not committed.history_truncated:
            self._delete_checkpoint()
            offsets = committed.offsets if committed.found else None
            if self._first_slice is not None:
                offsets = self._first_slice(
                    self.spark,
                    cfg,
                    self._batch,
                    self.sink,
                    self._kafka,
                    options,
                    committed.offsets,
                    from_table=committed.found,
                    stop=self._stop,
                    fast=fast,
                )
            if offsets is not None:
                partitions = self._kafka.partitions(wait_s=KAFKA_START_WAIT_S)
                starting = starting_offsets_json(partitions, offsets)
                options["startingOffsets"] = json.dumps(starting)
        elif exactly_once:
            log.warning(
                "snapshot expiry removed every loader snapshot of %s: resuming from the "
                "Spark checkpoint %s",
                cfg.table,
                self.checkpoint,
            )
        self.starting_offsets = options["startingOffsets"]
        if fast is not None:
            fast.starting = numbered_offsets(self.starting_offsets)
        log.info("starting %s at %s", cfg.table, self.starting_offsets)
        if self._start_cancelled(keeper):
            return

        source = self.spark.readStream.format("kafka")
        for key, value in options.items():
            source = source.option(key, value)
        self.query = (
            source.load()
            .writeStream.queryName(f"icefloe-{cfg.loader_id}")
            .foreachBatch(self._batch)
            .trigger(processingTime=cfg.spark_trigger)
            .option("checkpointLocation", self.checkpoint)
            .start()
        )
        self.sink.query_id = str(self.query.id)

    def _batch(self, df: DataFrame, batch_id: int) -> None:
        """One micro-batch through the sink (Spark calls this on the driver)."""
        assert self.sink is not None
        try:
            self.sink(df, batch_id)
        except LoaderError:
            # The loader stops on purpose and says why in one line; Spark's own report of the
            # failed query would bury that line under stack traces.
            quiet_query_failure(self.spark)
            raise

    def request_stop(self) -> None:
        """Ask the job to stop after the batch in progress (signal-safe)."""
        self._stop.set()
        for handler in logging.getLogger().handlers:
            if not any(isinstance(f, _NoPy4JTracesWhenStopping) for f in handler.filters):
                handler.addFilter(_NoPy4JTracesWhenStopping())
        # pyspark's accumulator server prints the trace of a JVM that hung up straight to stderr.
        server = accumulator_server(self._spark) if self._spark else None
        if server is not None:
            server.handle_error = lambda *_: None

    def wait(self, timeout_s: float | None = None) -> None:
        """Run the maintenance loop until the query ends, a stop is requested or time is up.

        Args:
            timeout_s: give up waiting after this long (the query keeps running).

        Raises:
            LoaderError: the query failed (the sink's own error when it raised one).
        """
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        last_metrics = 0.0
        while self.query is not None and self.query.isActive:
            if self._stop.is_set() or self._fenced is not None:
                self._stop_query()
                break
            if time.monotonic() - last_metrics >= min(MAINTAIN_EVERY_S, self._ttl_ms / 3000):
                last_metrics = time.monotonic()
                self._maintain()
            self._watch_progress()
            if deadline is not None and time.monotonic() >= deadline:
                return
            try:
                self.query.awaitTermination(0.5)
            except Exception:  # the query failed: report the sink's own error
                break
        self._raise_failure()

    def stop(self) -> None:
        """Stop the query (after the batch in progress), release the lease, close clients."""
        try:
            if self.query is not None and not self._jvm_gone and self.query.isActive:
                self._stop_query()
        finally:
            self.close()

    def close(self) -> None:
        """Release the lease and close clients (idempotent)."""
        self.metrics.stop()
        if self._dead_letters is not None:
            self._dead_letters.close()
            self._dead_letters = None
        if self._kafka is not None:
            self._kafka.close()
            self._kafka = None
        if self._fenced is not None or isinstance(self._sink_failure(), Fenced):
            return  # the lease is another process's: leave it alone
        try:
            self.view.renew(self.instance, 0)
        except Fenced:
            pass
        except Exception as exc:  # the catalog may be down; the lease then just expires
            log.warning("could not release the lease: %s", exc)

    def run(self) -> int:
        """Start, run until stopped or failed, and clean up.

        Returns:
            0 after a requested stop (also when the stop signal reached Spark's JVM first).

        Raises:
            LoaderError: start-up refused, the query failed or Spark's JVM exited unasked.
        """
        installed = self._install_signals()
        try:
            self.start()
            self.wait()
            if self._stop.is_set():
                log.info("stopped loading %s on request", self.config.table)
            return 0
        except Fenced:
            raise
        except Exception as exc:  # py4j, or the query failing under it: is Spark's JVM gone?
            # A stop signal sent to the whole process group reaches Spark's JVM too: its
            # shutdown can fail the query (any error) before this process stops it.
            quitting = self._stop.is_set() or not isinstance(exc, LoaderError)
            if not quitting or not self._jvm_exited():
                raise
            return self._after_jvm_exit(exc)
        finally:
            self.stop()
            if self._class_data is not None:
                self._class_data.finish(self._spark, keep=bool(self.sink and self.sink.commits))
            for sig, previous in installed.items():
                signal.signal(sig, previous)

    # -- internals ---------------------------------------------------------

    @property
    def _ttl_ms(self) -> int:
        return round(self.config.lease_ttl_s * 1000)

    def _sink_failure(self) -> BaseException | None:
        return self.sink.failure if self.sink is not None else None

    def _start_cancelled(self, keeper: LeaseKeeper) -> bool:
        """True when a stop was requested; raises ``Fenced`` if the lease was lost meanwhile."""
        if keeper.fenced is not None:
            self._fenced = keeper.fenced
            raise keeper.fenced
        if self._stop.is_set():
            log.info(
                "stop requested while starting: the query of %s is not started", self.config.table
            )
        return self._stop.is_set()

    def _await_batch(self) -> None:
        """Let the batch in progress finish, for at most ``stop_timeout_s``."""
        deadline = time.monotonic() + self.stop_timeout_s
        while self.sink is not None and self.sink.in_batch and time.monotonic() < deadline:
            time.sleep(0.1)

    def _jvm_exited(self) -> bool:
        """True once the JVM this process launched for Spark has exited.

        False when the JVM is not this process's child (under spark-submit the JVM launches
        Python) or still runs after ``JVM_EXIT_WAIT_S``.
        """
        if self._spark is None:
            return False
        gateway = getattr(self._spark.sparkContext, "_gateway", None)
        proc = getattr(gateway, "proc", None)
        if not isinstance(proc, subprocess.Popen):
            return False
        try:
            proc.wait(timeout=JVM_EXIT_WAIT_S)
        except subprocess.TimeoutExpired:
            return False
        return True

    def _after_jvm_exit(self, exc: Exception) -> int:
        self._jvm_gone = True
        self._await_batch()
        table = self.config.table
        if not self._stop.is_set():
            raise LoaderError(f"Spark's JVM exited under the query of {table}: {exc}") from exc
        log.warning(
            "Spark's JVM quit on the stop signal before the query of %s could stop (was the "
            "signal sent to the whole process group?); the batch in progress, if any, was not "
            "committed and the next start loads it",
            table,
        )
        return 0

    def _stop_query(self) -> None:
        self._await_batch()
        # With a backlog the next batch starts as soon as one ends: the stop may interrupt it.
        self._stop_began = time.monotonic()
        try:
            self.query.stop()
        except Exception as exc:
            # A stop signal sent to the whole process group reaches Spark's JVM too, whose own
            # shutdown hook may stop the SparkContext first: the query is then stopped already.
            if "stopped SparkContext" not in str(exc):
                raise
            log.info("Spark stopped before the query could be stopped; nothing left to stop")

    def _watch_progress(self) -> None:
        """Exit the process when a batch has run far past ``progress_timeout``.

        Every call the sink makes has a timeout and every retry ends at ``progress_timeout``,
        so this fires only when something without a bound holds the batch (inside Spark's
        JVM): the loader says what it waited for and exits non-zero rather than hang. The
        table's offsets make the exit safe: the next start loads the batch.
        """
        sink = self.sink
        if sink is None or sink.batch_started is None:
            return
        running = time.monotonic() - sink.batch_started
        if running < self.config.progress_timeout + STALL_GRACE_S:
            return
        patience = self.view.patience
        fault = patience.last
        detail = (
            f"{patience.where(fault.service)} did not answer ({fault.reason})"
            if fault is not None
            else "no call failed: the batch's Spark work never finished (Kafka or S3 inside "
            f"Spark's JVM; Kafka at {self.config.kafka.bootstrap}, storage at "
            f"{self.config.catalog.s3_endpoint or 'S3'})"
        )
        log.error(
            "%s: batch in progress for %.0f s, past progress_timeout (%g s): %s; exiting so a "
            "supervisor can start the loader again (the table's offsets make that safe)",
            self.config.table,
            running,
            self.config.progress_timeout,
            detail,
        )
        logging.shutdown()
        os._exit(EXIT_STALLED)

    def _maintain(self) -> None:
        renewed = max(self._renewed_ms, self.sink.renewed_ms if self.sink is not None else 0)
        if now_ms() - renewed >= self._ttl_ms // 2:
            try:
                if self.view.renew(self.instance, self._ttl_ms):
                    self._renewed_ms = now_ms()
            except Fenced as exc:
                log.error("%s", exc)
                self._fenced = exc
                return
            except Exception as exc:
                log.warning("lease renewal failed: %s", exc)
        try:
            self._update_lag()
        except Exception as exc:  # metrics must never stop loading
            log.debug("lag metrics failed: %s", exc)

    def _update_lag(self) -> None:
        if self.config.metrics_port == 0:  # nobody can read them: spare the batches the reads
            return
        if self._kafka is None or self.sink is None or self.sink.last_state is None:
            return
        # Read afresh: the state the last batch was planned from predates its own commit, so
        # lag and freshness would stay one batch behind, and never reach 0 on an idle topic.
        state = self.view.state()
        self.metrics.set_lag(lag(self._kafka.high_watermarks(), state.committed.offsets))
        if state.max_timestamp_ms is not None:
            self.metrics.freshness.set(max(0.0, (now_ms() - state.max_timestamp_ms) / 1000))

    def _delete_checkpoint(self) -> None:
        conf = hadoop_configuration(self.spark)
        path = jvm(self.spark).org.apache.hadoop.fs.Path(self.checkpoint)
        fs = path.getFileSystem(conf)
        if fs.exists(path):
            log.info("table offsets rule: deleting Spark checkpoint %s", self.checkpoint)
            fs.delete(path, True)

    def _raise_failure(self) -> None:
        if self._fenced is not None:
            raise self._fenced
        if self._interrupted_by_stop():
            log.info(
                "the stop interrupted the batch in progress: it was not committed, and the "
                "next start loads its records"
            )
            return
        failure = self._sink_failure()
        if isinstance(failure, LoaderError):
            raise failure
        error = self.query.exception() if self.query is not None else None
        if failure is not None:
            raise LoaderError(f"micro-batch failed: {failure}") from failure
        if error is not None:
            raise LoaderError(f"streaming query failed: {error}")

    def _interrupted_by_stop(self) -> bool:
        """Whether the query's failure, if any, came from this process stopping it.

        ``_stop_query`` waits for the batch in progress, but with a backlog the next one starts
        at once, and stopping the query interrupts it (an ``InterruptedException`` in the batch's
        Spark job). Such a batch commits nothing, so its failure is no error of the loader's. A
        batch that failed before the stop began is reported as usual.
        """
        if self._stop_began is None:
            return False
        sink = self.sink
        if sink is not None and sink.failure is not None:
            return sink.failed_at is not None and sink.failed_at >= self._stop_began
        return self.query is not None and self.query.exception() is not None

    def _install_signals(self) -> dict[int, Any]:
        if threading.current_thread() is not threading.main_thread():
            return {}
        installed: dict[int, Any] = {}
        for sig in (signal.SIGTERM, signal.SIGINT):
            installed[sig] = signal.signal(sig, lambda _s, _f: self.request_stop())
        return installed


def lag(
    high_watermarks: Mapping[tuple[str, int], int], committed: Mapping[str, Mapping[int, int]]
) -> dict[tuple[str, int], int]:
    """Consumer lag per partition.

    Args:
        high_watermarks: (topic, partition) -> Kafka high watermark.
        committed: topic -> partition -> next offset from the table.

    Returns:
        (topic, partition) -> high watermark minus committed (the whole
        partition when nothing is committed), never negative.
    """
    return {
        (t, p): max(0, high - committed.get(t, {}).get(p, 0))
        for (t, p), high in high_watermarks.items()
    }
