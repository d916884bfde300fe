"""ferryctl's commands are loaded when asked for (`ferry_control.ctl.main.COMMANDS`): every name there resolves to
the click command of that name, the help lists every one of them, and a command run alone loads no other's code."""

from __future__ import annotations

import subprocess
import sys

import click
from click.testing import CliRunner

from ferry_control.ctl.main import COMMANDS, cli


def test_every_listed_command_loads_under_its_name_and_the_help_lists_them_all() -> None:
    context = click.Context(cli)
    for name in COMMANDS:
        command = cli.get_command(context, name)
        assert isinstance(command, click.Command) and command.name == name, (name, command)
    assert cli.list_commands(context) == sorted(COMMANDS)
    shown = CliRunner().invoke(cli, ["--help"])
    assert shown.exit_code == 0, shown.output
    section = shown.output.split("Commands:\n", 1)[1].split("\n\n", 1)[0]  # up to the epilog (the exit codes)
    listed = {line.split()[0] for line in section.splitlines() if line.startswith("  ") and line.strip()}
    assert listed == set(COMMANDS), listed
    assert cli.get_command(context, "no-such-command") is None


def test_status_alone_loads_none_of_the_operation_commands() -> None:
    """A fresh interpreter resolves `status` only: the modules of the commands that follow operations stay out."""
    probe = (
        "import sys, click; from ferry_control.ctl.main import cli; cli.get_command(click.Context(cli), 'status'); "
        "print(sorted(m for m in sys.modules if m.startswith('ferry_control.ctl.')))"
    )
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert "ferry_control.ctl.commands.status" in loaded
    for other in ("moves", "drills", "operations", "rebuild", "progress"):
        assert other not in loaded, (other, loaded)
