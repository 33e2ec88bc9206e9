"""The harness: everything around the loader that makes it testable and demonstrable.

    provision/   fetch and build what the stack runs (versions, downloads, Ivy, JDKs, Go)
    stack/       the local lakehouse: one module per service, processes, readiness, config
    scenarios/   scenarios as data interpreted: runner, faults, history, checkers, reports
    cli/         the `icefloe` command, one module per command group
    loader_config.py   a loader configuration for the local stack (endpoints, jars, Java)
    loader_process.py  the loader as a supervised subprocess
    pytest_plugin.py   the stack and per-test names as pytest fixtures

Arrows point one way: the harness imports the loader and the publisher, never the reverse.
"""
