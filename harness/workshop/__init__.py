"""The workshop (docs/workshop/): checks that a module's exercises were done, and a reset.

Every module's exercises work on one topic, its dead-letter topic and one table, named here
once; `checks` holds one check per module, run on the live stack by `icefloe workshop check N`;
`reset` puts the stack back to where module 1 starts; `pictures` draws the workshop's figures.
"""

TABLE = "lake.workshop.events"
TOPIC = "workshop.events"
DEAD_LETTER_TOPIC = "workshop.events.dlq"
LOADER = "loader"
"""The background loader's name (`icefloe loader start`, no --name)."""
SUCCESSOR = "second"
"""The name of the loader that takes the table over in module 5."""
MODULES = 7
