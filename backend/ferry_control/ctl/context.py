"""What every command gets: `App` (the settings from the root command, the client and the output, made when first
used), the `@pass_app` decorator, and `@output_option` (so `--output json` works after any command too)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from ferry_control.ctl import config
from ferry_control.ctl.client import Client
from ferry_control.ctl.output import Output

F = TypeVar("F", bound=Callable[..., Any])
OUTPUT_FORMATS = ("text", "json")


class App:
    def __init__(
        self, url: str | None, token: str | None, config_path: str | None, timeout_s: float | None, output: str
    ) -> None:
        self._settings = (url, token, config_path, timeout_s)
        self.output_format = output
        self._client: Client | None = None
        self._out: Output | None = None

    @property
    def out(self) -> Output:
        if self._out is None or self._out.json != (self.output_format == "json"):
            self._out = Output(self.output_format)
        return self._out

    @property
    def client(self) -> Client:
        if self._client is None:
            url, token, config_path, timeout_s = self._settings
            self._client = Client(config.load(url, token, config_path, timeout_s))
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()


pass_app = click.make_pass_decorator(App)


def _set_output(ctx: click.Context, _: click.Parameter, value: str | None) -> None:
    if value is not None:
        app = ctx.find_object(App)
        assert app is not None, "the command group creates the App first"
        app.output_format = value


def output_option(f: F) -> F:
    """`-o/--output text|json` on a subcommand (it overrides the root command's)."""
    return click.option(
        "-o",
        "--output",
        type=click.Choice(OUTPUT_FORMATS),
        default=None,
        expose_value=False,
        is_eager=True,
        callback=_set_output,
        help="text for people (default), json for scripts: one JSON document on stdout.",
    )(f)


def wait_options(f: F) -> F:
    f = click.option(
        "--timeout",
        "wait_timeout_s",
        type=click.FloatRange(min=0, min_open=True),
        default=None,
        help="With --wait: give up waiting after this many seconds (exit 8; the operation goes on).",
    )(f)
    return click.option("--wait", is_flag=True, help="Follow the steps live until the operation ends.")(f)
