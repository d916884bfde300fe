"""The root command: global options, the command groups, and the error boundary — every failure ends as its
message on stderr (with `--output json`, also as `{"error": {…}}` or the failed operation on stdout) and its exit
code, never as a stack trace."""

from __future__ import annotations

import os
import sys
import traceback
from typing import Any

import click
import httpx

from ferry_control.ctl.commands.clusters import clusters
from ferry_control.ctl.commands.discover import discover
from ferry_control.ctl.commands.drills import drills
from ferry_control.ctl.commands.moves import ack_failover, failover, switchover
from ferry_control.ctl.commands.operations import operations
from ferry_control.ctl.commands.parallel import parallel_apply
from ferry_control.ctl.commands.proxies import haproxy_config, proxies
from ferry_control.ctl.commands.rebuild import rebuild
from ferry_control.ctl.commands.rejoin import rejoin
from ferry_control.ctl.commands.servers import servers
from ferry_control.ctl.commands.skip import skip
from ferry_control.ctl.commands.status import status
from ferry_control.ctl.commands.tokens import tokens
from ferry_control.ctl.context import OUTPUT_FORMATS, App
from ferry_control.ctl.errors import EXIT_CODES_HELP, CtlError, ExitCode


class FerryGroup(click.Group):
    """Turns a `CtlError` raised anywhere below into its message and exit code."""

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


for command in (
    clusters,
    servers,
    discover,
    status,
    switchover,
    failover,
    ack_failover,
    skip,
    rejoin,
    rebuild,
    parallel_apply,
    drills,
    operations,
    tokens,
    haproxy_config,
    proxies,
):
    cli.add_command(command)


def main() -> None:
    cli.main(prog_name="ferryctl")


if __name__ == "__main__":
    main()
