"""``icefloe conformance``: the same scenarios against several loaders, as one table.

Every scenario that applies to a loader (``harness.loaders.capabilities``) is run against it,
and the hostile-inputs scenario (``scenarios/semantics/hostile_inputs.toml``) against every
loader; ``table`` turns the results into the scenario x loader table (pass, or the anomalies
with their counts, the seed and the file that reproduces them; not applicable, with the
reason), and ``semantics`` reads what each loader did with each malformed message. The command
that runs it all is ``harness.cli.conformance``.
"""
