"""Which backend failures count as transient: a restarting database or an S3 API answering 5xx, never a bug."""

from __future__ import annotations

import sqlalchemy.exc
from botocore.exceptions import ClientError

from services.core.retry import is_retryable


def s3_error(status: int, code: str) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": "m"}, "ResponseMetadata": {"HTTPStatusCode": status}},
                       "PutObject")


def pg8000_error(sqlstate: str) -> sqlalchemy.exc.DBAPIError:
    """As SQLAlchemy wraps pg8000's ProgrammingError, whose first argument holds the server's error fields."""
    original = Exception({"S": "FATAL", "C": sqlstate, "M": "message"})
    return sqlalchemy.exc.ProgrammingError("SELECT 1", {}, original)


def test_an_s3_api_answering_5xx_is_transient_and_a_4xx_is_not() -> None:
    assert is_retryable(s3_error(503, "SlowDown")) and is_retryable(s3_error(500, "InternalError"))
    assert not is_retryable(s3_error(403, "AccessDenied")) and not is_retryable(s3_error(404, "NoSuchKey"))


def test_a_database_starting_up_or_cut_off_is_transient_and_a_bad_statement_is_not() -> None:
    for state in ("57P03", "57P01", "08006", "53300"):
        assert is_retryable(pg8000_error(state)), state
    assert not is_retryable(pg8000_error("42601"))  # syntax error
    assert not is_retryable(pg8000_error("23505"))  # unique violation
