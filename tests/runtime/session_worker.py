"""A child process holding one AXON `Session`: AXON source lines in, JSON lines out.

Usage: `python session_worker.py MEMORY_DIR`. Each stdin line is one input for
`Session.execute` (`\\n` in it stands for a newline); the worker prints one JSON
line per input: `{"ok": true, "records": [...]}` or `{"ok": false, "error": ...}`.
The line `.close` closes the session and exits; end of input exits without
closing (a test kills the process to play a crash).
"""

from __future__ import annotations

import json
import sys

import axon


def main() -> None:
    session = axon.Session(memory_dir=sys.argv[1])
    for line in sys.stdin:
        text = line.rstrip("\n")
        if text == ".close":
            session.close()
            print(json.dumps({"ok": True, "closed": True}), flush=True)
            return
        try:
            records = session.execute(text.replace("\\n", "\n"))
            print(json.dumps({"ok": True, "records": records}, default=str), flush=True)
        except axon.AxonError as exc:
            print(json.dumps({"ok": False, "error": str(exc)}), flush=True)


if __name__ == "__main__":
    main()
