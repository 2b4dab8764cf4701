"""``npc-memory --version`` exists and each subcommand's help shows its defaults."""

from __future__ import annotations

from importlib.metadata import version

import pytest
from npc_memory.cli import build_parser


def test_version_prints_the_installed_version(capsys: pytest.CaptureFixture[str]) -> None:
    """--version prints the distribution's version and exits 0."""
    with pytest.raises(SystemExit) as done:
        build_parser().parse_args(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.strip() == f"npc-memory {version('npc-memory')}"


@pytest.mark.parametrize(("command", "shown"), [
    ("reembed", "rows per embed call (default: 64)"),
    ("retokenize", "rows per transaction (default: 500)"),
    ("serve", "(default: INFO)"),
])
def test_subcommand_help_shows_defaults(command: str, shown: str, capsys: pytest.CaptureFixture[str]) -> None:
    """A flag with a default says it in the subcommand's --help (found before only in the source)."""
    with pytest.raises(SystemExit):
        build_parser().parse_args([command, "--help"])
    assert shown in " ".join(capsys.readouterr().out.split())
