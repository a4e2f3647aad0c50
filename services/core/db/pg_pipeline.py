"""One network round trip per statement with pg8000 instead of three.

pg8000 (chosen for its BSD licence) runs each parameterised statement as PARSE → wait → DESCRIBE → wait →
BIND/EXECUTE → wait. The extended query protocol allows sending PARSE, BIND, DESCRIBE (of the portal),
EXECUTE and SYNC at once and reading every answer after: on the page hot path that cuts the database's share
of a page by about two thirds. Errors still surface the same way (the server skips to SYNC and pg8000 raises
the ErrorResponse), and COPY streams keep pg8000's own path. If pg8000's internals ever change shape, the
patch is not applied and the driver's behaviour is left as it is.
"""

from __future__ import annotations

from typing import Any

_REQUIRED = ("send_PARSE", "send_BIND", "send_EXECUTE", "_send_message", "handle_messages", "py_types", "_sock")
_installed = False


def install() -> bool:
    """Patches `pg8000.core.CoreConnection.execute_unnamed` once per process. Returns whether it is active."""
    global _installed
    if _installed:
        return True
    try:
        from pg8000 import core
    except ImportError:
        return False
    names = ("Context", "DESCRIBE", "PORTAL", "NULL_BYTE", "SYNC_MSG", "_write", "_flush", "make_params")
    if not all(hasattr(core, name) for name in names):
        return False
    original = core.CoreConnection.execute_unnamed

    def execute_unnamed(self: Any, statement: str, vals: Any = (), oids: Any = (), stream: Any = None) -> Any:
        if stream is not None or not all(hasattr(self, name) for name in _REQUIRED):
            return original(self, statement, vals=vals, oids=oids, stream=stream)
        params = core.make_params(self.py_types, vals)  # before anything is written: a bad value sends nothing
        context = core.Context(statement)
        self.send_PARSE(core.NULL_BYTE, statement, oids)
        self.send_BIND(core.NULL_BYTE, params)
        self._send_message(core.DESCRIBE, core.PORTAL + core.NULL_BYTE)
        self.send_EXECUTE()
        core._write(self._sock, core.SYNC_MSG)
        core._flush(self._sock)
        self.handle_messages(context)
        return context

    core.CoreConnection.execute_unnamed = execute_unnamed
    _installed = True
    return True
