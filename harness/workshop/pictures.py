"""The workshop's figures, drawn with matplotlib: the architecture, freshness, compaction.

`icefloe workshop pictures` writes `architecture.png`, `freshness.png` and `compaction.png`.
The last two are drawn from what `icefloe demo --record DIR` measured on a real run (the rows
visible in Trino while 2,000 were published; the data files, snapshots and rows before and
after each maintenance operation), kept as JSON beside the pictures so they can be redrawn.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["draw_all", "draw_architecture", "draw_compaction", "draw_freshness"]


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    return plt


_BOXES = {
    # name: (x, y, label)
    "publisher": (0.5, 3.0, "publisher\nrows + malformed\n+ ledger"),
    "kafka": (3.0, 3.0, "Kafka topic\n(partitions)"),
    "loader": (5.6, 3.0, "loader (PySpark)\nparse against the\ntable's schema"),
    "dlq": (5.6, 0.9, "dead-letter topic\nreason, path,\nsource offset"),
    "table": (8.3, 3.0, "Iceberg table\nrows + offsets in\none snapshot"),
    "catalog": (8.3, 5.0, "REST catalog\nfences commits"),
    "minio": (8.3, 0.9, "MinIO (S3)\nParquet files"),
    "trino": (11.0, 3.0, "Trino\nSQL, maintenance"),
}
_ARROWS = (
    ("publisher", "kafka", "JSON"),
    ("kafka", "loader", "micro-batch"),
    ("loader", "dlq", "malformed"),
    ("loader", "table", "valid rows"),
    ("table", "catalog", ""),
    ("table", "minio", ""),
    ("trino", "table", "reads"),
)


def draw_architecture(out: Path) -> Path:
    """Boxes and arrows: a message's path from the publisher to Trino."""
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(11, 5))
    width, height = 2.0, 1.2
    for x, y, label in _BOXES.values():
        ax.add_patch(
            FancyBboxPatch(
                (x - width / 2, y - height / 2),
                width,
                height,
                boxstyle="round,pad=0.05",
                facecolor="#e8f1fb",
                edgecolor="#2b6cb0",
            )
        )
        ax.text(x, y, label, ha="center", va="center", fontsize=9)
    for start, end, label in _ARROWS:
        (x0, y0, _), (x1, y1, _) = _BOXES[start], _BOXES[end]
        if abs(x1 - x0) > abs(y1 - y0):  # from the side of one box to the side of the other
            step = width / 2 + 0.05 if x1 > x0 else -(width / 2 + 0.05)
            tail, head = (x0 + step, y0), (x1 - step, y1)
        else:
            step = height / 2 + 0.05 if y1 > y0 else -(height / 2 + 0.05)
            tail, head = (x0, y0 + step), (x1, y1 - step)
        ax.add_patch(FancyArrowPatch(tail, head, arrowstyle="-|>", mutation_scale=14, color="#444"))
        if label:
            middle = ((tail[0] + head[0]) / 2, (tail[1] + head[1]) / 2)
            ax.text(middle[0] + 0.1, middle[1] + 0.12, label, ha="center", fontsize=8)
    ax.set_xlim(-0.8, 12.3)
    ax.set_ylim(0, 6)
    ax.axis("off")
    ax.set_title("icefloe: one message's path, and what checks it")
    return _save(fig, out / "architecture.png")


def draw_freshness(data: dict[str, Any], out: Path) -> Path:
    """Rows published and rows visible in Trino over time, from a recorded demo run."""
    plt = _pyplot()
    published = sorted(data["published"])
    fig, ax = plt.subplots(figsize=(9, 4.5))
    ax.step(published, range(1, len(published) + 1), where="post", label="published (Kafka)")
    seconds = [s for s, _ in data["visible"]]
    visible = [v for _, v in data["visible"]]
    ax.step(seconds, visible, where="post", label="visible in Trino")
    lag = data["visible_after_last_publish_s"]
    ax.annotate(
        f"all visible {lag:.1f} s after the last publish",
        xy=(seconds[-1], visible[-1]),
        xytext=(seconds[-1] * 0.5, visible[-1] * 0.45),
        arrowprops={"arrowstyle": "->"},
    )
    ax.set_xlabel("seconds since the first message")
    ax.set_ylabel("rows")
    load = data.get("load_average")
    ax.set_title(
        f"Freshness in make demo: {data['valid']:,} rows at {data['rate']:.0f} msg/s, "
        f"{data['trigger_interval_s']:g} s micro-batches"
        + (f"\n(2 shared cores, load average {load:g})" if load is not None else "")
    )
    ax.legend(loc="upper left")
    ax.grid(alpha=0.3)
    return _save(fig, out / "freshness.png")


def draw_compaction(data: list[dict[str, Any]], out: Path) -> Path:
    """Data files, snapshots and rows before and after each maintenance operation."""
    plt = _pyplot()
    measures = (("data_files", "data files"), ("snapshots", "snapshots"), ("rows", "rows"))
    fig, axes = plt.subplots(1, len(measures), figsize=(11, 4))
    labels = [step["operation"] for step in data]
    positions = range(len(labels))
    for ax, (key, title) in zip(axes, measures, strict=True):
        before = [step["before"][key] for step in data]
        after = [step["after"][key] for step in data]
        ax.bar([p - 0.2 for p in positions], before, width=0.4, label="before")
        ax.bar([p + 0.2 for p in positions], after, width=0.4, label="after")
        ax.set_xticks(list(positions), labels, rotation=15)
        ax.set_title(title)
        for p, (b, a) in enumerate(zip(before, after, strict=True)):
            ax.text(p - 0.2, b, f"{b:,}", ha="center", va="bottom", fontsize=8)
            ax.text(p + 0.2, a, f"{a:,}", ha="center", va="bottom", fontsize=8)
    axes[0].legend()
    fig.suptitle("Maintenance while the loader runs: optimize, expire_snapshots, retention")
    return _save(fig, out / "compaction.png")


def _save(fig: Any, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=100, metadata={"Software": None})
    _pyplot().close(fig)
    return path


def draw_all(data_dir: Path, out: Path) -> list[Path]:
    """Every figure; the measured ones from ``data_dir`` (freshness.json, maintenance.json)."""
    drawn = [draw_architecture(out)]
    freshness = data_dir / "freshness.json"
    if freshness.exists():
        drawn.append(draw_freshness(json.loads(freshness.read_text()), out))
    maintenance = data_dir / "maintenance.json"
    if maintenance.exists():
        drawn.append(draw_compaction(json.loads(maintenance.read_text()), out))
    return drawn
