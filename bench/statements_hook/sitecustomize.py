"""Loaded by every pagemill process `bench.control_statements` starts (first on PYTHONPATH): one line per SQL
statement (and per commit) into `$PAGEMILL_BENCH_STATEMENTS/<pid>.tsv`, naming the step of a page's way whose
function is on the stack (the innermost one), so the bench can count statements per document by step.

Not part of pagemill: a measurement hook for the bench alone, never on PYTHONPATH otherwise.
"""

from __future__ import annotations

import os
import sys
from typing import Any

FOLDER = os.environ.get("PAGEMILL_BENCH_STATEMENTS")

# (step, function name, a piece of its file's path): the innermost frame that matches names the step.
STEPS = [
    ("gateway: API key", "_checked_key", "gateway/deps.py"),
    ("gateway: API key", "get_current_tenant", "gateway/deps.py"),
    ("gateway: upload", "submit", "gateway/documents/intake.py"),
    ("gateway: upload", "create_document", "gateway/documents/router.py"),
    ("gateway: status poll", "get_document", "gateway/documents/router.py"),
    ("gateway: status poll", "read_snapshot", "gateway/documents/feeds.py"),
    ("gateway: status poll", "_load_visible", "gateway/documents/router.py"),
    ("gateway: status poll", "_load_visible_ended", "gateway/documents/router.py"),
    ("gateway: status poll", "_read_visible", "gateway/documents/router.py"),
    ("gateway: status poll", "_read_with_pages", "gateway/documents/router.py"),
    ("worker: split", "split_document", "worker/split.py"),
    ("worker: claim", "_claim", "worker/tasks.py"),
    ("worker: cancel check", "document_open", "worker/page_ends.py"),
    ("worker: finish (rows, counters, progress)", "record", "worker/page_ends.py"),
    ("worker: lease heartbeat", "", "worker/heartbeat.py"),
    ("worker: page cache", "", "worker/page_cache.py"),
    ("results: assembly", "assemble_document", "results/assemble.py"),
    ("reconciler", "", "services/reconciler/"),
]
_fd: dict[int, int] = {}


def _step() -> str:
    frame = sys._getframe(2)
    while frame is not None:
        code = frame.f_code
        for step, function, path in STEPS:
            if (not function or code.co_name == function) and path in code.co_filename:
                return step
        frame = frame.f_back  # type: ignore[assignment]
    return "other"


def _write(line: str) -> None:
    pid = os.getpid()
    if pid not in _fd:  # a forked pool process writes its own file
        _fd[pid] = os.open(os.path.join(FOLDER or ".", f"{pid}.tsv"), os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    os.write(_fd[pid], line.encode())


def _statement(_conn: Any, _cursor: Any, statement: str, _params: Any, _context: Any, executemany: bool) -> None:
    verb = statement.lstrip().split(None, 1)[0].upper() if statement.strip() else "?"
    shaped = verb in ("WITH", "UPDATE", "INSERT", "DELETE", "SELECT")
    target = " ".join(statement.split()[:12])[:90] if shaped else verb
    _write(f"{_step()}\t{verb}{' (many)' if executemany else ''}\t{target}\n")


def _in_transaction(conn: Any) -> bool:
    """Whether the connection runs a transaction (an autocommit session's commit sends nothing)."""
    dbapi = conn.connection.dbapi_connection
    if conn.dialect.name == "postgresql":
        return not dbapi.autocommit
    return bool(dbapi.in_transaction)


def _begin(conn: Any) -> None:
    # psycopg sends BEGIN as a round trip of its own; SQLite's BEGIN IMMEDIATE is a statement, counted above
    if conn.dialect.name == "postgresql" and _in_transaction(conn):
        _write(f"{_step()}\tBEGIN\tBEGIN\n")


def _commit(conn: Any) -> None:
    if _in_transaction(conn):
        _write(f"{_step()}\tCOMMIT\tCOMMIT\n")


if FOLDER:
    import sqlalchemy as sa

    sa.event.listen(sa.engine.Engine, "before_cursor_execute", _statement)
    sa.event.listen(sa.engine.Engine, "begin", _begin)
    sa.event.listen(sa.engine.Engine, "commit", _commit)
