"""The harness: everything around the loader that makes it testable and demonstrable.

    provision/   fetch and build what the stack runs (versions, downloads, Ivy, JDKs, Go)
    stack/       the local lakehouse: one module per service, processes, readiness, config
    scenarios/   scenarios as data interpreted: runner, faults, history, checkers, reports
    loaders/     the loader as the harness runs it: its configuration for the local stack
                 (endpoints, jars, Java), a supervised subprocess, background loaders, a
                 local Spark standalone cluster
    cli/         the `icefloe` command, one module per command group
    bench/, demo/, workshop/, containers/   the benchmark, the demo, the workshop, the
                 container backend
    pytest_plugin.py   the stack and per-test names as pytest fixtures

Arrows point one way: the harness imports the loader and the publisher, never the reverse.
"""
