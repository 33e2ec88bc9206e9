"""The loader's log keeps py4j's retry notice out, and nothing else."""

from __future__ import annotations

import logging

from icefloe.loader.cli import Py4JRetryNotice


def _record(name: str, level: int, message: str) -> logging.LogRecord:
    return logging.LogRecord(name, level, __file__, 1, message, None, None)


SENT_AGAIN = "Exception while sending command."


def test_only_py4js_info_notice_of_a_resent_command_is_dropped() -> None:
    notice = Py4JRetryNotice()
    assert not notice.filter(_record("root", logging.INFO, SENT_AGAIN))
    # py4j giving up is an error, and stays.
    assert notice.filter(_record("root", logging.ERROR, SENT_AGAIN))
    assert notice.filter(_record("root", logging.INFO, "something else"))
    assert notice.filter(_record("icefloe.loader", logging.INFO, SENT_AGAIN))
