"""Owned lifetimes: who wrote a session or ephemeral entry, and where it is stored.

A `session` or `ephemeral` memory's entries belong to the live session that wrote
them (docs/language.md). They are stored under an *owned scope*, a physical scope
that starts with the reserved `OWNED_MARKER` and names the owner, the lifetime and
the memory:

    ~axon|<host>|<pid>|<start>|<nonce>|<lifetime>|<memory>

Every backend already isolates scopes, so nothing else is needed for privacy: no
other session (its owner differs) and no persistent memory of the same name (its
scope is the bare name) ever reads, counts or clears these entries. The runtime
maps the memory name to the owned scope for every operation and maps the scope
in returned metadata back to the memory name.

An `Owner` identifies one live session: host name, process id, the process's
start time (from `/proc` where available, so a reused pid is not mistaken for the
writer) and a random nonce (so two sessions of one process differ). Liveness
(`Owner.alive`):

- this process: alive while the session has not released its identity;
- another process on this host: alive when the pid exists and, where `/proc`
  gives start times, it started when the owner did;
- another host: unknown, reported alive, so entries of sessions that died on
  another machine are never swept from here (they stay invisible to everyone,
  and a session on that host sweeps them).

The sweep of dead owners' scopes lives in the runtime; backends only list scopes
by prefix (`MemoryBackend.scopes`). Nothing here imports the runtime.
"""

from __future__ import annotations

import os
import secrets
import socket
import threading

import attrs

OWNED_MARKER = "~axon|"
"""The reserved start of every owned scope; no user scope or memory name may start so."""

OWNED_LIFETIMES = ("session", "ephemeral")

_SEP = "|"
_live_lock = threading.Lock()
_live_nonces: set[str] = set()


def _escape(text: str) -> str:
    return text.replace("%", "%25").replace(_SEP, "%7C")


def _unescape(text: str) -> str:
    return text.replace("%7C", _SEP).replace("%25", "%")


def _boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
            return f.read().strip().replace("-", "")[:12]
    except OSError:
        return ""


def process_start(pid: int) -> str:
    """A token for when process `pid` started ("" where `/proc` cannot tell).

    The boot id and the start time in clock ticks since boot (field 22 of
    `/proc/PID/stat`): equal tokens mean the same process, not a reused pid.
    """
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as f:
            stat = f.read()
    except OSError:
        return ""
    # The command name (field 2) may hold spaces and parentheses: split after its ')'.
    fields = stat[stat.rfind(")") + 2 :].split()
    if len(fields) < 20:
        return ""
    return f"{_boot_id()}-{fields[19]}"


def pid_alive(pid: int) -> bool:
    """Whether a process `pid` exists on this host (one we may not signal counts too)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False
    return True


@attrs.frozen
class Owner:
    """The identity of one live session; see the module docstring for liveness."""

    host: str
    pid: int
    start: str
    nonce: str

    @classmethod
    def current(cls) -> Owner:
        """A fresh identity for a session of this process, registered as live."""
        pid = os.getpid()
        owner = cls(socket.gethostname(), pid, process_start(pid), secrets.token_hex(6))
        with _live_lock:
            _live_nonces.add(owner.nonce)
        return owner

    def release(self) -> None:
        """The session ended: from now on its leftovers are a dead owner's."""
        with _live_lock:
            _live_nonces.discard(self.nonce)

    @property
    def prefix(self) -> str:
        """The start of every owned scope of this owner."""
        fields = (_escape(self.host), str(self.pid), _escape(self.start), _escape(self.nonce))
        return OWNED_MARKER + _SEP.join(fields) + _SEP

    def scope(self, lifetime: str, memory: str) -> str:
        """The physical scope of `memory`'s entries with `lifetime`, owned by this owner."""
        if lifetime not in OWNED_LIFETIMES:
            raise ValueError(f"lifetime {lifetime!r} is not owned")
        return f"{self.prefix}{lifetime}{_SEP}{memory}"

    def alive(self) -> bool:
        """False only when this owner is known to be dead (see the module docstring)."""
        if self.host != socket.gethostname():
            return True
        if self.pid == os.getpid() and self.start == process_start(self.pid):
            with _live_lock:
                return self.nonce in _live_nonces
        if not pid_alive(self.pid):
            return False
        if self.start:
            now = process_start(self.pid)
            return not now or now == self.start
        return True


@attrs.frozen
class OwnedScope:
    """A parsed owned scope: whose, which lifetime, which memory."""

    owner: Owner
    lifetime: str
    memory: str


def parse_owned(scope: str | None) -> OwnedScope | None:
    """The parts of an owned scope, or None for any other scope (also a malformed one)."""
    if scope is None or not scope.startswith(OWNED_MARKER):
        return None
    parts = scope[len(OWNED_MARKER) :].split(_SEP, 5)
    if len(parts) != 6 or parts[4] not in OWNED_LIFETIMES:
        return None
    host, pid, start, nonce, lifetime, memory = parts
    try:
        pid_number = int(pid)
    except ValueError:
        return None
    owner = Owner(_unescape(host), pid_number, _unescape(start), _unescape(nonce))
    return OwnedScope(owner, lifetime, memory)


def is_reserved(name: str) -> bool:
    """Whether `name` may not be used as a memory name or user scope."""
    return name.startswith(OWNED_MARKER)
