"""The memory engine: the entry and backend contract, the registry, backends and retrieval."""

from axon.memory.backend import Capabilities, MemoryBackend
from axon.memory.entry import MemoryEntry, NewEntry
from axon.memory.registry import registry

__all__ = ["Capabilities", "MemoryBackend", "MemoryEntry", "NewEntry", "registry"]
