"""Which backend failures count as transient: a restarting database or an S3 API answering 5xx, never a bug."""

from __future__ import annotations

import sqlite3

import psycopg
import psycopg.errors
import sqlalchemy.exc
from botocore.exceptions import ClientError

from services.core.retry import is_retryable


def s3_error(status: int, code: str) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": "m"}, "ResponseMetadata": {"HTTPStatusCode": status}},
                       "PutObject")


def wrapped(original: Exception) -> sqlalchemy.exc.DBAPIError:
    """As SQLAlchemy wraps a DBAPI error: the wrapper's class follows the driver's (OperationalError, ...)."""
    base = sqlite3.Error if isinstance(original, sqlite3.Error) else psycopg.Error
    error = sqlalchemy.exc.DBAPIError.instance("SELECT 1", {}, original, base)
    assert isinstance(error, sqlalchemy.exc.DBAPIError)
    return error


def server_error(sqlstate: str) -> sqlalchemy.exc.DBAPIError:
    """The error psycopg raises for a server's ErrorResponse with this SQLSTATE, wrapped by SQLAlchemy."""
    return wrapped(psycopg.errors.lookup(sqlstate)("message"))


def test_an_s3_api_answering_5xx_is_transient_and_a_4xx_is_not() -> None:
    assert is_retryable(s3_error(503, "SlowDown")) and is_retryable(s3_error(500, "InternalError"))
    assert not is_retryable(s3_error(403, "AccessDenied")) and not is_retryable(s3_error(404, "NoSuchKey"))


def test_a_database_starting_up_or_cut_off_is_transient_and_a_bad_statement_is_not() -> None:
    for state in ("57P03", "57P01", "08006", "53300"):
        assert is_retryable(server_error(state)), state
        assert is_retryable(psycopg.errors.lookup(state)("message")), state  # unwrapped, as the driver raises it
    assert not is_retryable(server_error("42601"))  # syntax error
    assert not is_retryable(server_error("23505"))  # unique violation


def test_operational_errors_the_server_sent_are_not_all_transient() -> None:
    # psycopg files these under OperationalError; they are a bug, a misconfiguration or a full disk, not a blip.
    for state in ("40P01", "57014", "28P01", "53100"):
        error = server_error(state)
        assert isinstance(error, sqlalchemy.exc.OperationalError) and not is_retryable(error), state


def test_a_connection_refused_or_cut_before_the_server_answered_is_transient() -> None:
    assert is_retryable(wrapped(psycopg.OperationalError("connection failed: Connection refused")))
    assert is_retryable(wrapped(psycopg.InterfaceError("the connection is closed")))
    assert is_retryable(psycopg.OperationalError("consuming input failed: server closed the connection"))
    invalidated = wrapped(psycopg.DatabaseError("SSL SYSCALL error: EOF detected"))
    invalidated.connection_invalidated = True  # SQLAlchemy's disconnect detection said so
    assert is_retryable(invalidated)
    assert not is_retryable(wrapped(psycopg.DatabaseError("something else")))


def test_a_locked_sqlite_database_is_transient() -> None:
    assert is_retryable(wrapped(sqlite3.OperationalError("database is locked")))
    assert not is_retryable(wrapped(sqlite3.IntegrityError("UNIQUE constraint failed: documents.id")))
