"""schemathesis against a real gateway process, from the OpenAPI document it serves: every built-in check
(no 5xx, status codes, content types, bodies and headers as documented, auth enforced, 405 with `Allow`,
invalid input refused), with bounded examples per operation so it stays within about two minutes."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.config import SchemathesisConfig

from services.core.db.session import migrate
from tests.harness import Platform

pytestmark = [pytest.mark.slow, pytest.mark.fuzz]

MAX_EXAMPLES = 20
# Every built-in check runs, negative cases with unknown query parameters and form fields too (the gateway
# refuses them: 422 validation_error). One setting says what a schema cannot: a request can be schema-valid yet
# refused with a typed 4xx the schema documents: a file that is no document (415/422), `to` before `from`, a
# tenant name already taken.
CONFIG = {
    "checks": {"positive_data_acceptance": {
        "expected-statuses": ["2xx", "3xx", "401", "403", "404", "409", "413", "415", "422", "429"]}},
}


@pytest.fixture(scope="module")
def fuzz_gateway(tmp_path_factory: pytest.TempPathFactory, redis_server: str) -> Iterator[Platform]:
    workdir = tmp_path_factory.mktemp("fuzz")
    database = f"sqlite:///{workdir / 'pagemill.db'}"
    migrate(database)
    platform = Platform(workdir=workdir / "platform", database_url=database, redis_base_url=redis_server,
                        engine="fake", extra_env={"PAGEMILL_LIMITS__MAX_FILE_BYTES": "2000000",
                                                  "PAGEMILL_LIMITS__REQUESTS_PER_MINUTE": "100000"})
    platform.start(worker=False)
    yield platform
    platform.stop()


def fuzz(operation: Any, mode: GenerationMode, headers: dict[str, str]) -> Callable[[], None]:
    """One operation's Hypothesis test: generated cases sent to the gateway, every built-in check applied."""

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(max_examples=MAX_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None,
              derandomize=True,  # the same cases on every run: a failure in CI is one anyone can replay
              phases=[Phase.explicit, Phase.generate])  # no shrinking: the time stays bounded
    def run(case: Any) -> None:
        case.call_and_validate(headers=headers, timeout=30)

    return run  # type: ignore[no-any-return]


SYNCHRONOUS_PATHS = frozenset({"/general/v0/general"})


def test_the_api_does_what_its_schema_says(fuzz_gateway: Platform) -> None:
    # schemathesis's pytest loaders (`from_fixture`) do not run on pytest 9 (`Function._nodeid` is gone), so the
    # operations' Hypothesis strategies are driven here directly; `call_and_validate` runs every built-in check.
    schema = schemathesis.openapi.from_url(f"{fuzz_gateway.url}/openapi.json",
                                           config=SchemathesisConfig.from_dict(CONFIG))
    # The Unstructured drop-in answers only once the document is parsed, and this gateway runs no worker: its
    # refusals are tested with the real client (tests/clients/test_unstructured_compat.py).
    operations = [operation for operation in (result.ok() for result in schema.get_all_operations())
                  if operation.path not in SYNCHRONOUS_PATHS]
    assert len(operations) > 20
    failures: list[str] = []
    for operation in operations:
        key = fuzz_gateway.admin_key if operation.path.startswith("/v1/admin") else fuzz_gateway.api_key
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            try:
                fuzz(operation, mode, {"Authorization": f"Bearer {key}"})()
            except Unsatisfiable:  # nothing to make invalid (no parameters): no negative cases
                continue
            except (Exception, BaseExceptionGroup) as exc:  # noqa: BLE001 - report every operation's failures
                failures.append(f"{mode.value} {operation.label}: {exc}"[:3000])
    assert not failures, "\n\n".join(failures)


def test_the_gateway_logged_no_unexpected_error(fuzz_gateway: Platform) -> None:
    log = Path(fuzz_gateway.workdir / "logs" / "gateway.log").read_text(errors="replace")
    assert "request.error" not in log, log[-3000:]
