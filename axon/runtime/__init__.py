"""The runtime: executor, tracer, model clients and the seed-compatible memory module."""
