"""Passwords of connection strings -> `***` in any text AXON prints or saves.

A PostgreSQL DSN can hold a password in two forms: a URI
(`postgresql://user:secret@host/db`) and libpq's key=value pairs
(`host=h password=secret`). `redact_secrets(text)` blanks both wherever they
appear in `text`: a diagnostic echoing a `location:` line, the REPL's
`.memories` table, its history file, a trace file. Nothing here imports the
rest of AXON, so every layer can use the one function.
"""

from __future__ import annotations

import re

REDACTED = "***"

# scheme://user:password@host -- the password runs from the ':' after the user to the
# last '@' of the token (a password may itself hold '@' or ':').
_URI_PASSWORD = re.compile(
    r"(?P<head>\b[A-Za-z][A-Za-z0-9+.-]*://[^\s:/@\"'`]*:)(?P<secret>[^\s\"'`]*)(?=@[^\s@\"'`]*)"
)
# password=secret, password = 'a secret' (libpq's quoting: \' and \\ inside quotes).
_KV_PASSWORD = re.compile(
    r"(?P<head>\bpassword\s*=\s*)(?P<secret>'(?:[^'\\]|\\.)*'?|[^\s\"'`]+)", re.IGNORECASE
)


def redact_secrets(text: str) -> str:
    """`text` with every connection-string password replaced by `***` (else unchanged)."""
    if "://" not in text and "assword" not in text.lower():
        return text
    text = _URI_PASSWORD.sub(lambda m: m.group("head") + REDACTED, text)
    return _KV_PASSWORD.sub(lambda m: m.group("head") + REDACTED, text)
