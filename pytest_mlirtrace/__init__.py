"""mlirtrace: trace, tune and reproduce fused-op compiles (MIGraphX / rocMLIR style) on OpenCL."""
__version__ = "0.1.0"
