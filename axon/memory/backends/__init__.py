"""The memory backends; each is registered by name in `axon.memory.registry`."""
