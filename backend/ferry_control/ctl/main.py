"""The root command: global options, the command groups, and the error boundary — every failure ends as its
message on stderr (with `--output json`, also as `{"error": {…}}` or the failed operation on stdout) and its exit
code, never as a stack trace."""

from __future__ import annotations

import importlib
import os
import sys
import traceback
from typing import Any

import click
import httpx

from ferry_control.ctl.context import OUTPUT_FORMATS, App
from ferry_control.ctl.errors import EXIT_CODES_HELP, CtlError, ExitCode

#: Each command by its name: `module:attribute`, imported when the command runs (or `--help` lists them), so that a
#: run loads its own command's code only — the operation models a switchover follows cost a `status` half its start.
COMMANDS = {
    "ack-failover": "ferry_control.ctl.commands.moves:ack_failover",
    "clusters": "ferry_control.ctl.commands.clusters:clusters",
    "discover": "ferry_control.ctl.commands.discover:discover",
    "drills": "ferry_control.ctl.commands.drills:drills",
    "failover": "ferry_control.ctl.commands.moves:failover",
    "haproxy-config": "ferry_control.ctl.commands.proxies:haproxy_config",
    "operations": "ferry_control.ctl.commands.operations:operations",
    "parallel-apply": "ferry_control.ctl.commands.parallel:parallel_apply",
    "proxies": "ferry_control.ctl.commands.proxies:proxies",
    "rebuild": "ferry_control.ctl.commands.rebuild:rebuild",
    "rejoin": "ferry_control.ctl.commands.rejoin:rejoin",
    "servers": "ferry_control.ctl.commands.servers:servers",
    "skip": "ferry_control.ctl.commands.skip:skip",
    "status": "ferry_control.ctl.commands.status:status",
    "switchover": "ferry_control.ctl.commands.moves:switchover",
    "tokens": "ferry_control.ctl.commands.tokens:tokens",
}


class FerryGroup(click.Group):
    """Turns a `CtlError` raised anywhere below into its message and exit code; loads each command when it is
    asked for (`COMMANDS`)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            module, attribute = COMMANDS[cmd_name].split(":")
            command = getattr(importlib.import_module(module), attribute)
            assert isinstance(command, click.Command) and command.name == cmd_name, (cmd_name, command)
            self.add_command(command)
        return super().get_command(ctx, cmd_name)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except CtlError as e:
            report(ctx.find_object(App), e)
            ctx.exit(int(e.exit_code))
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise
        except httpx.HTTPError as e:
            report(ctx.find_object(App), CtlError(f"HTTP error: {e}", ExitCode.unreachable))
            ctx.exit(int(ExitCode.unreachable))
        except Exception as e:  # noqa: BLE001 — the boundary: a message, not a traceback (FERRYCTL_DEBUG=1 shows it)
            if os.environ.get("FERRYCTL_DEBUG"):
                traceback.print_exc()
            report(ctx.find_object(App), CtlError(f"unexpected error: {type(e).__name__}: {e}", ExitCode.error))
            ctx.exit(int(ExitCode.error))
        finally:
            app = ctx.find_object(App)
            if app is not None:
                app.close()


def report(app: App | None, error: CtlError) -> None:
    if app is None:
        print(f"error: {error.message}", file=sys.stderr)
        return
    if app.output_format == "json":
        app.out.document(error.document if error.document is not None else error.as_json(), lambda _: None)
    app.out.error(error.message)


@click.group(
    cls=FerryGroup,
    epilog=EXIT_CODES_HELP,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110},
)
@click.option("--url", metavar="URL", help="The control plane, e.g. http://127.0.0.1:8000 (env FERRY_URL).")
@click.option("--token", metavar="TOKEN", help="An API token (env FERRY_TOKEN).")
@click.option(
    "--config",
    "config_path",
    metavar="FILE",
    help="TOML with url, token (or token_file), timeout_s (env FERRY_CONFIG; default ~/.config/ferry/ferryctl.toml).",
)
@click.option(
    "--request-timeout",
    "timeout_s",
    type=click.FloatRange(min=0, min_open=True),
    help="Bound on each HTTP request, in seconds (config timeout_s; default 10).",
)
@click.option("-o", "--output", type=click.Choice(OUTPUT_FORMATS), default="text", show_default=True)
@click.version_option("0.1.0", prog_name="ferryctl")
@click.pass_context
def cli(
    ctx: click.Context, url: str | None, token: str | None, config_path: str | None, timeout_s: float | None,
    output: str,
) -> None:  # fmt: skip
    """Ferry's command line: clusters, status, switchover, failover, skip, drills and operations over the REST API.

    Flags win over FERRY_URL / FERRY_TOKEN, which win over the config file. Clusters, servers, schedules and
    tokens are named by name or id. Every command takes --output json (also after the command's name).
    """
    ctx.obj = App(url, token, config_path, timeout_s, output)


def main() -> None:
    cli.main(prog_name="ferryctl")


if __name__ == "__main__":
    main()
