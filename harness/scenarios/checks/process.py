"""Checks of the loader's process: it never stopped by itself, it halted where it should, every
exit had a cause the run knows of, one process at a time committed.

``loader_exits_explained`` explains every ``loader``/``exit`` event of the history by one of
the causes the run recorded:

- ``harness``: the harness killed or stopped it, or its exit code is one the harness expected
  (a self-kill at an armed fault point, a zombie's step-down): the exit event says
  ``expected``;
- ``fault_point``: the loader's trace says a kill fired in that process
  (``loader``/``fault_landed``, action ``kill``, same pid);
- ``zombie``: it exited with the code its observer says means "not the owner"
  (``harness.observer``; icefloe's 3) while a zombie fault was active: two loaders were on
  the table;
- ``service``: a fault on a service (the ``infra`` lane: kill or pause of a service, a wire
  fault, a catalog HTTP fault) was active within ``grace_s`` before the exit, or within
  ``stall_window_s`` for an exit with the code meaning "stalled" (icefloe's 4, no progress
  for ``progress_timeout``).

Any other exit is ``unexplained_exit``, with its log tail (the exit event's ``message``) kept
in the anomaly. A run without any loader start compared nothing: ``unknown``. A supervised
loader that crashes on its own is started again and loads on, so no row count shows the crash:
this check does.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from icefloe.harness.history import Event, History, select
from icefloe.harness.observer import ICEFLOE, observer_of
from icefloe.harness.scenarios.checks.facts.commits import main_commits
from icefloe.harness.scenarios.checks.facts.faults import FaultWindow, fault_windows
from icefloe.harness.scenarios.checks.facts.ledger import (
    describe,
    malformed_entries,
    valid_entries,
)
from icefloe.harness.scenarios.checks.facts.reads import Observed
from icefloe.harness.scenarios.checks.verdict import (
    NOT_APPLICABLE,
    UNKNOWN,
    CheckResult,
    Found,
    Param,
    checker,
)
from icefloe.publisher.ledger import LedgerEntry

__all__ = [
    "DEFAULT_GRACE_S",
    "DEFAULT_STALL_WINDOW_S",
    "check_halted",
    "check_loader_exits_explained",
    "check_loader_steady",
    "check_one_owner",
    "explain",
]


@checker("loader_steady")
def check_loader_steady(
    history: History, ledger: Sequence[LedgerEntry], observed: Observed, params: Mapping[str, Any]
) -> CheckResult:
    """The loader never failed on its own: no exit it was not asked for (kills and stops by the
    harness do not count), and no failure it recovered from inside its process (a line of its
    log its kind declares a restart: ``Observer.restart_pattern``).

    Returns:
        ``invalid`` with ``loader_error`` for each unplanned exit and each restart inside the
        process; ``unknown`` when the loader never started.
    """
    found = Found()
    for e in select(history, "loader", "exit"):
        if not e.data.get("expected"):
            found.add(
                "loader_error",
                f"exit code {e.data.get('code')}: {e.data.get('message', '')[-300:]}",
            )
    for e in select(history, "loader", "restarted"):
        found.add("loader_error", f"restarted inside its process: {e.data.get('line', '')}")
    starts = len(select(history, "loader", "start", "ok"))
    if not starts and not found.anomalies:
        return CheckResult("loader_steady", UNKNOWN, "the loader never started", {}, {"starts": 0})
    return found.result("loader_steady", "the loader never stopped by itself", {"starts": starts})


@checker("halted")
def check_halted(
    history: History, ledger: Sequence[LedgerEntry], observed: Observed, params: Mapping[str, Any]
) -> CheckResult:
    """Without a dead-letter topic the loader stops at the first malformed message, naming it.

    Reads the first unplanned loader exit in the history (``loader``/``exit`` with
    ``expected`` false) and its ``message`` (the log tail); the message it names is read with
    the loader's own ``halt_pattern`` (``harness.observer``). A loader that declares none
    cannot show which message it stopped at: an exit for any reason would look the same, so
    without an anomaly its verdict is ``unknown``.

    Returns:
        ``invalid`` with ``not_halted`` (no exit, or a valid row past the first malformed
        message was loaded before the exit) or ``wrong_value`` (the exit names another
        message, or none); ``unknown`` when no malformed message was sent, or the loader
        stopped but declares no ``halt_pattern`` to say where.
    """
    malformed = sorted(malformed_entries(ledger), key=lambda e: (e.partition, e.offset or 0))
    if not malformed:
        return CheckResult("halted", UNKNOWN, "no malformed message was sent")
    observer = observer_of(history)
    first_by_partition: dict[int, LedgerEntry] = {}
    for e in malformed:
        first_by_partition.setdefault(e.partition, e)
    exits = [e for e in select(history, "loader", "exit") if not e.data.get("expected")]
    found = Found()
    if not exits:
        found.add("not_halted", "the loader never stopped")
        return found.result("halted", "", {})
    text = str(exits[0].data.get("message", ""))
    named = observer.halted_at(text)
    firsts = {(e.topic, e.partition, e.offset) for e in first_by_partition.values()}
    if observer.halt_pattern is None:
        pass  # naming not declared: judged on stopping alone (stats)
    elif not named:
        found.add("wrong_value", "the loader's exit names no topic/partition/offset")
    elif not any(n in firsts for n in named):
        found.add("wrong_value", f"the loader named {named[0]}, first malformed: {sorted(firsts)}")
    past = observed.reads.get("visible_at_halt", ())
    limits = {p: e.offset or 0 for p, e in first_by_partition.items()}
    by_id = {e.event_id: e for e in valid_entries(ledger)}
    for eid in past:
        loaded = by_id.get(eid)
        if loaded is not None and (loaded.offset or 0) > limits.get(loaded.partition, 2**63):
            found.add(
                "not_halted", f"{describe(loaded)} loaded past the first malformed message", eid
            )
    stats = {
        "exit_code": exits[0].data.get("code"),
        "naming_compared": observer.halt_pattern is not None,
    }
    if observer.halt_pattern is None and not found.anomalies:
        return CheckResult(
            "halted", UNKNOWN,
            f"the loader exited (code {stats['exit_code']}) but declares no halt_pattern:"
            " whether it stopped at the first malformed message is not known", {}, stats,
        )  # fmt: skip
    return found.result(
        "halted",
        f"halted at {named[0][0]}/{named[0][1]}@{named[0][2]}" if named else "halted",
        stats,
    )


DEFAULT_GRACE_S = 60.0
"""How long after a service fault ended an exit may still be its doing."""


DEFAULT_STALL_WINDOW_S = 360.0
"""For an exit as stalled: the loader's ``progress_timeout`` (300 s) and a minute's margin."""


SERVICE_LANES = ("infra",)


_TAIL_CHARS = 1500


def explain(
    exit_event: Event,
    windows: Sequence[FaultWindow],
    killed_pids: set[Any],
    *,
    grace_s: float = DEFAULT_GRACE_S,
    stall_window_s: float = DEFAULT_STALL_WINDOW_S,
    service_faults_explain: bool = True,
    exit_codes: Mapping[str, int] | None = None,
) -> str | None:
    """The cause of one loader exit, or None when the run knows of none.

    Args:
        exit_event: A ``loader``/``exit`` event.
        windows: The run's fault windows (``facts.faults.fault_windows``).
        killed_pids: Pids in which the loader's trace says a kill fired.
        grace_s: How long after a service fault an exit may still be its doing.
        stall_window_s: The same for an exit as stalled (code 4).
        service_faults_explain: ``False`` for a run whose loader must ride out its service
            faults (short faults on the wire): an exit during one is then unexplained.
        exit_codes: What the loader's exit codes mean (its observer's ``exit_codes``:
            ``not_owner``, ``stalled``; icefloe's loader's by default).

    Returns:
        ``harness``, ``fault_point``, ``zombie`` or ``service``; None: unexplained.
    """
    data = exit_event.data
    if data.get("expected"):
        return "harness"
    if data.get("pid") in killed_pids:
        return "fault_point"
    codes = ICEFLOE.exit_codes if exit_codes is None else exit_codes
    code, when = data.get("code"), exit_event.time
    if (
        code is not None
        and code == codes.get("not_owner")
        and any(w.kind == "zombie_loader" and w.near(when, grace_s) for w in windows)
    ):
        return "zombie"
    stalled = code is not None and code == codes.get("stalled")
    before = stall_window_s if stalled else grace_s
    if service_faults_explain and any(
        w.lane in SERVICE_LANES and w.near(when, before) for w in windows
    ):
        return "service"
    return None


@checker(
    "loader_exits_explained",
    Param(
        "grace_s", float, "how long after a service fault an exit may be its doing", DEFAULT_GRACE_S
    ),
    Param(
        "stall_window_s", float, "the same for an exit as stalled (code 4)", DEFAULT_STALL_WINDOW_S
    ),
    Param(
        "service_faults_explain", bool, "false: the loader must ride out its service faults", True
    ),
)
def check_loader_exits_explained(
    history: History, ledger: Sequence[LedgerEntry], observed: Observed, params: Mapping[str, Any]
) -> CheckResult:
    """Every loader exit had a cause the run recorded (see the module docstring).

    Returns:
        ``invalid`` with ``unexplained_exit`` (its pid, code, time and log tail) for each exit
        no fault caused; ``unknown`` when no loader was ever started.
    """
    starts = select(history, "loader", "start", "invoke")
    if not starts:
        return CheckResult("loader_exits_explained", UNKNOWN, "no loader was started")
    windows = fault_windows(history)
    killed = {
        e.data.get("pid")
        for e in select(history, "loader", "fault_landed")
        if e.data.get("action") == "kill"
    }
    grace = float(params["grace_s"])
    stall = float(params["stall_window_s"])
    found = Found()
    causes: Counter[str] = Counter()
    for e in select(history, "loader", "exit"):
        cause = explain(
            e,
            windows,
            killed,
            grace_s=grace,
            stall_window_s=stall,
            service_faults_explain=bool(params["service_faults_explain"]),
            exit_codes=observer_of(history.events).exit_codes,
        )
        if cause is not None:
            causes[cause] += 1
            continue
        tail = str(e.data.get("message") or "")[-_TAIL_CHARS:]
        found.add(
            "unexplained_exit",
            f"pid {e.data.get('pid')} exit code {e.data.get('code')} at event {e.index}, "
            f"no fault active; its log ends:\n{tail}",
        )
    exits = sum(causes.values()) + sum(a.count for a in found.anomalies.values())
    stats = {"starts": len(starts), "exits": exits, **{f"by_{k}": n for k, n in causes.items()}}
    explained = ", ".join(f"{n} {k}" for k, n in sorted(causes.items())) or "none"
    return found.result(
        "loader_exits_explained",
        f"{len(starts)} loader starts, {exits} exits, each caused ({explained})",
        stats,
    )


@checker("one_owner")
def check_one_owner(
    history: History, ledger: Sequence[LedgerEntry], observed: Observed, params: Mapping[str, Any]
) -> CheckResult:
    """One loader process at a time commits to the table.

    A loader process (the token its observer's ``process_key`` names) holds the table from
    its take-over (the empty snapshot carrying the ``claim_key``) until another process's
    take-over. Walking main's commits in order:

    - a batch committed by a process whose hold ended (another took the table over since) is
      ``two_writers``: two loaders' commits interleaved outside a take-over (a thawed zombie
      writing what it planned before its successor took over);
    - a take-over by a process whose hold had ended, or a thawed zombie the harness found
      holding the table again (``loader``/``holds_table``), is ``taken_back``.

    A process whose batch comes with no take-over read before it (its claim expired before a
    commit read saw it) is taken to hold the table from that batch on (``claims_unseen``).

    Returns:
        ``invalid`` with ``two_writers`` or ``taken_back``; ``unknown`` when no loader commit
        with a process token was read (nothing was compared); ``not_applicable`` for a loader
        whose commits name no process.
    """
    observer = observer_of(history.events)
    if observer.process_key is None:
        return CheckResult(
            "one_owner", NOT_APPLICABLE,
            f"{observer.kind} names no process in its commits: its take-overs cannot be read",
        )  # fmt: skip
    found = Found()
    for e in select(history, "loader", "holds_table"):
        found.add("taken_back", f"pid {e.data.get('pid')} held the table again after its thaw")
    commits = [c for c in main_commits(history.events, observer) if c["mine"] and c["process"]]
    if not commits:
        if found.anomalies:
            return found.result("one_owner", "", {})
        return CheckResult("one_owner", UNKNOWN, "no loader commit naming its process was read")
    holder: Mapping[str, Any] | None = None
    ended: set[str] = set()
    claims = batches = unseen = 0

    def who(c: Mapping[str, Any]) -> str:
        return f"{c['loader']} (process {str(c['process'])[:8]})"

    for c in commits:
        process = str(c["process"])
        if c.get("claim"):
            claims += 1
            if process in ended:
                found.add("taken_back", f"snapshot {c['snapshot']}: {who(c)} took the table back")
        else:
            batches += 1
            if holder is not None and process == holder["process"]:
                continue
            if process in ended:
                assert holder is not None
                found.add(
                    "two_writers",
                    f"snapshot {c['snapshot']} by {who(c)}, committed after {who(holder)} "
                    "took the table over",
                )
                continue
            unseen += 1
        # from here on c's process holds the table
        if holder is not None and holder["process"] != process:
            ended.add(str(holder["process"]))
        holder = c
    writers = len({str(c["process"]) for c in commits})
    stats = {"commits": len(commits), "take_overs": claims, "batches": batches,
             "processes": writers, "claims_unseen": unseen}  # fmt: skip
    return found.result(
        "one_owner",
        f"{len(commits)} commits of {writers} loader processes, {claims} take-overs, "
        "each process wrote only while it held the table",
        stats,
    )
