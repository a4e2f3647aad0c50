"""`pagemill admin ...` refuses what the admin API refuses, with its message and exit status 1 (not a traceback):
a name with a control character, a limit past its bound."""

from __future__ import annotations

from click.testing import CliRunner

from services.cli import main
from tests.api.conftest import Api
from tests.api.test_admin_cli import admin_cli, run

__all__ = ["admin_cli"]  # the fixture, shared with test_admin_cli


def test_admin_commands_refuse_a_name_with_a_control_character(api: Api, admin_cli: CliRunner) -> None:
    result = admin_cli.invoke(main, ["admin", "tenant", "create", "nul\x00co"])
    assert result.exit_code == 1 and "validation_error: name: control characters" in result.output, result.output
    assert "nul" not in run(admin_cli, "tenant", "list").stdout
    run(admin_cli, "tenant", "create", "named-co")
    result = admin_cli.invoke(main, ["admin", "key", "create", "named-co", "--name", "esc\x1b[2J"])
    assert result.exit_code == 1 and "control characters" in result.output, result.output
    result = admin_cli.invoke(main, ["admin", "tenant", "set-limits", "named-co", "--retention-days", "1e300"])
    assert result.exit_code == 1 and "retention_days must be at most" in result.output, result.output
