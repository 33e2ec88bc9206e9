"""Put the stack back to where the workshop's module 1 starts.

Stops and forgets the background loaders that load the workshop's table, drops the table,
deletes its topics and the publisher's ledgers of its topic. The stack keeps running; other
topics and tables are left alone.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from icefloe.harness import verify
from icefloe.harness.loaders.background import loaders_dir, names, open_loader
from icefloe.harness.workshop import DEAD_LETTER_TOPIC, TABLE, TOPIC
from icefloe.publisher import topics
from icefloe.publisher.producer import DEFAULT_LEDGER_DIR


def reset(stack: Any, ledger_dir: Path = DEFAULT_LEDGER_DIR) -> list[str]:
    """Undo every module's exercises; returns what was done, one line each."""
    done = []
    for name in names(stack):
        loader = open_loader(stack, name)
        if str(loader.settings.table) != TABLE:
            continue
        if loader.is_running():
            loader.stop()
            done.append(f"stopped loader {name}")
        shutil.rmtree(loaders_dir(stack) / name, ignore_errors=True)
    stack.query(f"DROP TABLE IF EXISTS {TABLE}")
    done.append(f"dropped table {TABLE} (if it existed)")
    for topic in (TOPIC, DEAD_LETTER_TOPIC):
        if topics.delete_topic(stack.bootstrap_servers, topic):
            done.append(f"deleted topic {topic}")
    for ledger in verify.ledger_files(TOPIC, ledger_dir):
        ledger.unlink()
        done.append(f"removed ledger {ledger}")
    return done
