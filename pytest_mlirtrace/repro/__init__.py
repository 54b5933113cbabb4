"""Layer `repro`."""
