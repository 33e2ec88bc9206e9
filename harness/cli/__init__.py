"""The `icefloe` command: `main` builds the parser; each command group has its own module."""
