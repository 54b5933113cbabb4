"""Front end ``plugin``: the pytest plugin (``plugin.py``, entry point ``pytest11: mlirtrace``) and the
``mlirtrace`` fixture's facade (``facade.py``, imported on the fixture's first use only)."""
