"""Scenarios: experiments described as data (scenarios/*.toml), run on the stack and judged.

`model` reads a scenario file, `runner` plays it (with `faults` and `steps`) while recording a
`history`, `checks` judge the history afterwards, `reports` writes what was found;
`generative` draws fault schedules with Hypothesis and soaks. The commands `icefloe scenario`
and `icefloe soak` are `harness.cli.scenario`.
"""
