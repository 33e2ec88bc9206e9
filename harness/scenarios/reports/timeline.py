"""The picture of a run: a PNG timeline drawn from its history and ledgers (matplotlib).

Top: valid rows published (from the ledgers' Kafka timestamps) and rows visible in Trino (the
id reads replayed), with the table's commits, loader starts and kills along the bottom edge.
Bottom: every fault as a band from its injection to its heal, one row per lane. The first
check that failed (live or final) is a red line with its anomalies, so a failing run's picture
shows where it went wrong. The Markdown report links it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from icefloe.harness.history import History, select
from icefloe.harness.scenarios.checks.facts.commits import loader_commits
from icefloe.harness.scenarios.checks.facts.faults import injections
from icefloe.harness.scenarios.checks.facts.reads import ids_timeline
from icefloe.publisher.ledger import LedgerEntry

__all__ = ["draw"]

_LANES = ("loader", "infra", "maintenance", "schema", "topic", "traffic", "other")
_LANE_OF = {
    "kill_loader": "loader",
    "zombie_loader": "loader",
    "pause_": "infra",
    "kill_": "infra",
    "wire_": "infra",
    "optimize": "maintenance",
    "expire_snapshots": "maintenance",
    "remove_orphan_files": "maintenance",
    "retention_delete": "maintenance",
    "add_column": "schema",
    "drop_column": "schema",
    "widen_column": "schema",
    "rename_column": "schema",
    "add_partitions": "topic",
    "burst": "traffic",
    "malformed_traffic": "traffic",
}


def _lane(name: str) -> str:
    if name in _LANE_OF:
        return _LANE_OF[name]
    for prefix in ("pause_", "kill_", "wire_"):
        if name.startswith(prefix):
            return _LANE_OF[prefix]
    return "other"


def draw(history: History, ledger: Sequence[LedgerEntry], path: Path, title: str = "") -> Path:
    """Draw the run's timeline into ``path`` (PNG); return the path.

    Args:
        history: The run's history.
        ledger: Its ledger entries.
        path: Where the PNG goes.
        title: A heading.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    events = history.events
    if not events:
        raise ValueError("an empty history has no timeline")
    t0 = events[0].time
    fig, (top, bottom) = plt.subplots(
        2, 1, figsize=(14, 7.5), sharex=True, gridspec_kw={"height_ratios": [3, 2]}
    )
    stamps = sorted(
        (e.timestamp or 0) / 1000 - t0
        for e in ledger
        if e.delivered and e.status == "valid" and e.timestamp
    )
    if stamps:
        top.step(stamps, range(1, len(stamps) + 1), where="post", label="valid rows published")
    visible = [(e.time - t0, len(ids)) for e, ids in ids_timeline(history)]
    if visible:
        xs, ys = zip(*visible, strict=True)
        top.step(xs, ys, where="post", label="rows visible in Trino")
    commits = [t - t0 for t in loader_commits(history)]
    starts = [e.time - t0 for e in select(history, "loader", "start", "ok")]
    kills = [e.time - t0 for e in select(history, "loader", "killed", "info")]
    exits = [e.time - t0 for e in select(history, "loader", "exit") if not e.data.get("expected")]
    marks = (
        (commits, "|", "grey", "commit"),
        (starts, "^", "green", "loader started"),
        (kills, "x", "red", "loader killed"),
        (exits, "v", "orange", "loader exited"),
    )
    for xs_, marker, colour, label in marks:
        if xs_:
            top.plot(
                xs_,
                [0] * len(xs_),
                marker,
                color=colour,
                label=f"{label} ({len(xs_)})",
                markersize=9,
                clip_on=False,
                linestyle="none",
            )
    windows = injections(history)
    end = events[-1].time - t0
    colours = plt.get_cmap("tab20")
    kinds = sorted({name for name, _, _ in windows})
    for name, inject, heal in windows:
        lane = _LANES.index(_lane(name))
        width = max(((heal if heal is not None else events[-1].time) - inject), end / 1500)
        bottom.broken_barh(
            [(inject - t0, width)],
            (lane - 0.4, 0.8),
            color=colours(kinds.index(name) % 20),
            alpha=0.8,
        )
    bottom.set_yticks(range(len(_LANES)), _LANES)
    bottom.set_ylim(-0.6, len(_LANES) - 0.4)
    handles = [plt.Rectangle((0, 0), 1, 1, color=colours(i % 20)) for i in range(len(kinds))]
    if kinds:
        bottom.legend(handles, kinds, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=7)
    failures = [e for e in select(history, "check", phase="fail")]
    if failures:
        first = failures[0]
        x = first.time - t0
        for ax in (top, bottom):
            ax.axvline(x, color="red", linewidth=1.5)
        names = ", ".join(sorted(first.data.get("anomalies") or {}) or [first.name])
        top.annotate(
            f"check failed: {names}",
            (x, 0.95),
            xycoords=("data", "axes fraction"),
            color="red",
            ha="left",
            fontsize=9,
        )
    top.set_ylabel("rows")
    if top.get_legend_handles_labels()[0]:
        top.legend(loc="upper left", fontsize=8)
    top.set_title(title)
    bottom.set_xlabel("seconds since the run started")
    bottom.set_xlim(0, max(end, 1))
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path
