"""pytest plugin ``mlirtrace`` (being written)."""
