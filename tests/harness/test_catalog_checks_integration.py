"""The catalog table on real catalogs: the REST server keeps every promise, ministack loses its
state on a kill -9 (as its documentation says), moto breaks every promise, and a catalog proxy
that acknowledges commits it drops is caught on both APIs."""

from __future__ import annotations

from typing import Any

import pytest

from icefloe.harness.catalogs import check

pytestmark = pytest.mark.integration


def verdicts(run: check.CatalogRun) -> dict[str, str]:
    return {c.check: c.verdict for c in run.checks}


def test_each_catalog_is_judged_by_what_it_kept(stack: Any) -> None:
    rest = check.run(stack, "rest")
    assert set(verdicts(rest).values()) == {"valid"}, rest.to_json()

    glue = check.run(stack, "glue")
    judged = verdicts(glue)
    assert judged.pop("kept_across_kill9") == "invalid", glue.to_json()
    assert set(judged.values()) == {"valid"}, glue.to_json()
    assert "as documented" in glue.checks[-1].summary

    moto = check.run(stack, "moto")
    judged = verdicts(moto)
    assert judged == dict.fromkeys(judged, "invalid"), moto.to_json()
    assert moto.checks[0].anomalies["acknowledged_lost"].count > 0
    assert moto.checks[1].anomalies["two_winners"].count > 0


@pytest.mark.parametrize("kind", ["rest", "glue"])
def test_a_proxy_that_acknowledges_commits_it_drops_is_caught(stack: Any, kind: str) -> None:
    broken = check.run(stack, kind, broken="ack_unapplied")
    assert broken.fired > 0
    kept = broken.checks[0]
    assert kept.check == "acknowledged_kept" and kept.verdict == "invalid", broken.to_json()
    assert kept.anomalies["acknowledged_lost"].count > 0


@pytest.mark.slow  # downloads Nessie's server (about 245 MB) on its first run
def test_nessie_099_lets_a_stale_first_commit_overwrite_an_acknowledged_one(stack: Any) -> None:
    nessie = check.run(stack, "nessie")
    judged = verdicts(nessie)
    assert judged["stale_writer_refused"] == "invalid", nessie.to_json()
    (accepted,) = nessie.checks[2].anomalies["stale_accepted"].examples
    assert "the table's first commit" in accepted
    assert judged["acknowledged_kept"] == "invalid"
    assert judged["kept_across_kill9"] == "valid"
