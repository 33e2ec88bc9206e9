"""The test kit's side of the loader: ``faultpoints.py``, the hooks (``loader.commit.hooks``)
that kill or freeze the loader at a point of a batch, or switch a part of the protocol off.
Imported only when an ``ICEFLOE_TEST_*`` variable is set; never in production."""
