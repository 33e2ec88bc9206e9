"""Scenarios: experiments described as data (scenarios/*.toml), run on the stack and judged.

`model` reads a scenario file, `runner` plays it (with `faults`) while recording a `history`,
`checkers` judge the history afterwards, `report` writes what was found. The commands
`icefloe scenario` and `icefloe soak` are `harness.cli.scenario`.
"""
