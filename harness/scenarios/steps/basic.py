"""Steps that drive the loader, publish, wait, run SQL and read.

Each is a function ``(run, params)`` over the run's public API, with its parameters as a
frozen dataclass (see ``harness.scenarios.steps``).
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from icefloe.harness.history import select
from icefloe.harness.scenarios.loaders import LoaderOptions
from icefloe.harness.scenarios.params import ParamError, parse_params
from icefloe.harness.scenarios.steps import ParseContext, step
from icefloe.harness.scenarios.traffic import Workload
from icefloe.harness.waiting import poll


@dataclass(frozen=True)
class StartLoader:
    """``wait``: wait until its streaming query runs; ``only_if_stopped``: leave a running
    loader alone."""

    wait: bool = True
    only_if_stopped: bool = False


@step("start_loader", StartLoader)
def start_loader(run: Any, p: StartLoader) -> None:
    """Start the loader."""
    if p.only_if_stopped and run.loaders.is_running():
        return
    run.start_loader(wait=p.wait)


@dataclass(frozen=True)
class NoParams:
    """No parameters."""


@step("stop_loader", NoParams)
def stop_loader(run: Any, p: NoParams) -> None:
    """Stop the loader gracefully."""
    run.stop_loader()


@dataclass(frozen=True)
class RestartLoader:
    """``kill``: kill -9 instead of a graceful stop; ``fresh_checkpoint``: delete its Spark
    checkpoint before starting again."""

    kill: bool = False
    fresh_checkpoint: bool = False


@step("restart_loader", RestartLoader)
def restart_loader(run: Any, p: RestartLoader) -> None:
    """Stop (or kill) the loader and start it again."""
    run.restart_loader(kill=p.kill, fresh_checkpoint=p.fresh_checkpoint)


@dataclass(frozen=True)
class ConfigureLoader:
    """Loader options for its next start: any ``[loader]`` key (the test kit's, or a loader
    setting by its dotted key), as written, checked when the file is read."""

    changes: Mapping[str, Any]


def _parse_configure(raw: Mapping[str, Any], where: str, ctx: ParseContext) -> ConfigureLoader:
    LoaderOptions.read(ctx.loader, where).updated(raw, where)
    return ConfigureLoader(dict(raw))


@step("configure_loader", ConfigureLoader, parse=_parse_configure)
def configure_loader(run: Any, p: ConfigureLoader) -> None:
    """Change loader settings for its next start (e.g. add a dead-letter topic)."""
    run.loaders.configure(p.changes)


@dataclass(frozen=True)
class Publish:
    """``phase``: its name; ``background``: do not wait for it; ``workload``: the scenario's
    ``[workload]`` with the step's own fields on top."""

    phase: str | None
    background: bool
    workload: Workload


def _parse_publish(raw: Mapping[str, Any], where: str, ctx: ParseContext) -> Publish:
    fields = dict(raw)
    phase = fields.pop("phase", None)
    background = fields.pop("background", False)
    if not isinstance(background, bool) or not (phase is None or isinstance(phase, str)):
        raise ParamError(f"{where}: phase must be text and background true or false")
    return Publish(phase, background, parse_params(Workload, {**ctx.workload, **fields}, where))


@step("publish", Publish, parse=_parse_publish)
def publish(run: Any, p: Publish) -> None:
    """Publish a phase of messages (in the background when asked)."""
    name = p.phase or run.traffic.next_name("phase")
    run.publish(name, p.workload, background=p.background)


@dataclass(frozen=True)
class EndPublish:
    """``phase``: only this one (default: every background phase); ``after_s``: keep it
    publishing this much longer first (the tail in which a loader the faults restarted loads
    new messages)."""

    phase: str | None = None
    after_s: float = 10.0


@step("end_publish", EndPublish)
def end_publish(run: Any, p: EndPublish) -> None:
    """End background publishes early, once what they had to outlast is over: a phase whose
    ``count`` is the most it sends stops ``after_s`` from now (what it sent is in its ledger,
    and the checks judge that). A phase already done is left as it is."""
    time.sleep(p.after_s)
    ended = run.traffic.end(p.phase)
    run.history.record("info", "info", "end_publish", phases=ended, after_s=p.after_s)


@dataclass(frozen=True)
class AwaitPublish:
    """``phase``: only this one (default: every background phase)."""

    phase: str | None = None


@step("await_publish", AwaitPublish)
def await_publish(run: Any, p: AwaitPublish) -> None:
    """Wait for background publishes to finish."""
    run.traffic.wait(p.phase)


@dataclass(frozen=True)
class AwaitLoaded:
    """``timeout_s``: give up after; ``settle_s``: then wait this long (default: the loader's
    settle, two triggers for icefloe, on the run's last wait only); ``skip_if_failed``: not at
    all once the live monitor has found a broken rule; ``drain``: rows still missing get the
    run's drain (default: on the run's last wait only); ``drain_s``: the drain's bound
    (default: the loader kind's own)."""

    timeout_s: float = 180.0
    settle_s: float | None = None
    skip_if_failed: bool = False
    drain: bool | None = None
    drain_s: float | None = None


@step("await_loaded", AwaitLoaded)
def await_loaded(run: Any, p: AwaitLoaded) -> None:
    """Wait until every valid delivered message (retention aside) is visible in Trino."""
    monitor = run.tasks.get("monitor")
    if p.skip_if_failed and monitor is not None and monitor.failure:
        run.traffic.wait()
        return
    run.await_loaded(p.timeout_s, p.settle_s, drain=bool(p.drain), drain_s=p.drain_s)


@dataclass(frozen=True)
class Trickle:
    """``action``: start or stop; ``rate``: messages per second; ``chunk_s``: each publish
    phase lasts this long (a live check judges a phase's ids once it is complete)."""

    action: Literal["start", "stop"] = "start"
    rate: float = 5.0
    chunk_s: float = 20.0


class _Trickler:
    """Publishes the run's workload at a low rate, phase after phase, until stopped."""

    def __init__(self, run: Any, rate: float, chunk_s: float) -> None:
        self._done = threading.Event()
        workload = dataclasses.replace(run.workload, count=None, rate=rate, duration_s=chunk_s)
        self._thread = threading.Thread(
            target=self._publish, args=(run, workload), name="trickle", daemon=True
        )
        self._thread.start()

    def _publish(self, run: Any, workload: Workload) -> None:
        while not self._done.is_set():
            run.publish(run.traffic.next_name("trickle"), workload)

    def stop(self) -> None:
        self._done.set()
        self._thread.join(timeout=300)


@step("trickle", Trickle)
def trickle(run: Any, p: Trickle) -> None:
    """A steady low rate in the background, so the loader always has something to load."""
    if p.action == "start":
        run.tasks["trickle"] = _Trickler(run, p.rate, p.chunk_s)
        return
    trickler = run.tasks.pop("trickle", None)
    if trickler is not None:
        trickler.stop()


@dataclass(frozen=True)
class AwaitLoaderExit:
    """``timeout_s``: give up after."""

    timeout_s: float = 120.0


@step("await_loader_exit", AwaitLoaderExit)
def await_loader_exit(run: Any, p: AwaitLoaderExit) -> None:
    """Wait for the loader to exit by itself, then read what is visible (``visible_at_halt``)."""
    exited = poll(
        lambda: [e for e in select(run.history, "loader", "exit") if not e.data.get("expected")],
        timeout_s=p.timeout_s,
        every_s=0.5,
    )
    if not exited:
        run.history.record("loader", "fail", "await_exit", note="still running")
    run.read("visible_at_halt")


@dataclass(frozen=True)
class Sleep:
    """``seconds``: how long."""

    seconds: float = 1.0


@step("sleep", Sleep)
def sleep(run: Any, p: Sleep) -> None:
    """Do nothing for a while."""
    time.sleep(p.seconds)


@dataclass(frozen=True)
class Sql:
    """``statement`` (``{table}`` is the run's table), ``name`` for the history, ``attempts``."""

    statement: str
    name: str = "sql"
    attempts: int = 1


@step("sql", Sql)
def sql(run: Any, p: Sql) -> None:
    """Run one statement on Trino."""
    run.sql(p.name, p.statement, attempts=p.attempts)


@dataclass(frozen=True)
class ReadVisible:
    """``name``: what the read is called in the history."""

    name: str = "visible"


@step("read_visible", ReadVisible)
def read_visible(run: Any, p: ReadVisible) -> None:
    """Record the ids visible now under a name."""
    run.read(p.name)


@dataclass(frozen=True)
class Probe:
    """``action``: start or stop polling; ``interval_s``: between polls."""

    action: Literal["start", "stop"] = "start"
    interval_s: float = 0.5


class _Poller:
    """Reads the visible ids every ``interval_s`` (first sightings give freshness)."""

    def __init__(self, run: Any, interval_s: float) -> None:
        self._done = threading.Event()
        self._thread = threading.Thread(
            target=self._poll, args=(run, interval_s), name="probe", daemon=True
        )
        self._thread.start()

    def _poll(self, run: Any, interval_s: float) -> None:
        while not self._done.wait(interval_s):
            try:
                run.visible_ids()
            except Exception:
                continue  # recorded by the client

    def stop(self) -> None:
        self._done.set()
        self._thread.join(timeout=30)


@step("probe", Probe)
def probe(run: Any, p: Probe) -> None:
    """Poll Trino for the visible ids in the background (freshness)."""
    if p.action == "start":
        run.tasks["probe"] = _Poller(run, p.interval_s)
        return
    poller = run.tasks.pop("probe", None)
    if poller is not None:
        poller.stop()
