"""The loader as the harness runs it: its configuration from the stack (``config``), one
supervised process with fault hooks (``process``), loaders left running in the background for
the CLI (``background``), and a local Spark standalone cluster to run it on (``cluster``).

The loader itself (``loader/``) never imports any of this.
"""
