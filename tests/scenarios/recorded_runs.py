"""Recorded runs of the scenarios' breaks, kept as test data (``recorded/``).

Each folder ``recorded/<scenario>--<break>/`` holds what a live run of the break wrote and the
checks read: ``scenario.json`` (the scenario as run, its profile, seed and break), its history
and its ledgers, gzipped, and ``recorded.json`` (which break, with which ``[vars]``, on which
day). :func:`unpack` lays one out as the run's folder again, where ``runner.saved_run`` and
``runner.judge`` read it as they read any run's (``icefloe scenario check``).
"""

from __future__ import annotations

import datetime as dt
import gzip
import json
import shutil
from pathlib import Path
from typing import Any

RECORDED = Path(__file__).parent / "recorded"


def folder(name: str, brk: str) -> Path:
    """Where the recording of ``name``'s break ``brk`` is kept."""
    return RECORDED / f"{name}--{brk}"


def save(run_dir: Path, name: str, brk: str, variables: dict[str, Any]) -> Path:
    """Keep the run in ``run_dir`` as the recording of ``name``'s break ``brk``."""
    target = folder(name, brk)
    if target.exists():
        shutil.rmtree(target)
    (target / "ledgers").mkdir(parents=True)
    shutil.copyfile(run_dir / "scenario.json", target / "scenario.json")
    sources = [run_dir / "history.jsonl", *sorted((run_dir / "ledgers").glob("*.jsonl"))]
    for source in sources:
        relative = source.relative_to(run_dir)
        # mtime=0: the same run packs to the same bytes
        with gzip.GzipFile(target / f"{relative}.gz", "wb", mtime=0) as out:
            out.write(source.read_bytes())
    about = {
        "scenario": name,
        "break": brk,
        "vars": variables,
        "recorded_on": dt.date.today().isoformat(),
    }
    (target / "recorded.json").write_text(json.dumps(about, indent=1) + "\n", encoding="utf-8")
    return target


def unpack(name: str, brk: str, into: Path) -> Path:
    """The recording of ``name``'s break ``brk`` as a run's folder under ``into``."""
    source = folder(name, brk)
    run_dir = into / source.name
    (run_dir / "ledgers").mkdir(parents=True)
    shutil.copyfile(source / "scenario.json", run_dir / "scenario.json")
    for packed in [source / "history.jsonl.gz", *sorted((source / "ledgers").glob("*.gz"))]:
        relative = packed.relative_to(source).with_suffix("")
        (run_dir / relative).write_bytes(gzip.decompress(packed.read_bytes()))
    return run_dir


def about(name: str, brk: str) -> dict[str, Any]:
    """What ``recorded.json`` says of the recording."""
    return dict(json.loads((folder(name, brk) / "recorded.json").read_text(encoding="utf-8")))
