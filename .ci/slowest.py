"""The end of a CI run: each leg's time, then the slowest tests of all legs.

Usage: ``python .ci/slowest.py LEGS_FILE JUNIT_XML...``. The legs file holds one ``name: N s``
line per leg (and the probe); each JUnit XML is one leg's (``reports/ci/<leg>.xml``), whose
test cases carry their time (setup, call and teardown). Prints Markdown tables, the form
docs/ci.md keeps.
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from pathlib import Path

SLOWEST = 25


def main(legs_file: str, *xmls: str) -> int:
    print("\n| leg | time |\n|---|--:|")
    for line in Path(legs_file).read_text(encoding="utf-8").splitlines():
        name, _, value = line.partition(": ")
        print(f"| {name} | {value} |")
    cases: list[tuple[float, str, str]] = []
    for xml in xmls:
        leg = Path(xml).stem
        for case in ET.parse(xml).iter("testcase"):
            name = f"{case.get('classname', '')}::{case.get('name', '')}"
            cases.append((float(case.get("time") or 0.0), leg, name))
    cases.sort(reverse=True)
    total = sum(seconds for seconds, _, _ in cases)
    print(f"\n{len(cases)} tests, {total:.0f} s in all; the {SLOWEST} slowest:\n")
    print("| seconds | leg | test |\n|--:|---|---|")
    for seconds, leg, name in cases[:SLOWEST]:
        print(f"| {seconds:.1f} | {leg} | `{name}` |")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
