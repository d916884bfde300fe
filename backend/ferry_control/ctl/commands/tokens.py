"""`ferryctl tokens list|create|revoke` (admin)."""

from __future__ import annotations

from typing import Any

import click

from ferry_control.ctl.context import App, output_option, pass_app
from ferry_control.ctl.errors import CtlError, ExitCode

TOKEN_COLUMNS = ("id", "name", "role", "display_prefix", "created_at", "last_used_at", "expires_at", "revoked_at")


@click.group("tokens")
def tokens() -> None:
    """API tokens (admin): list, create, revoke."""


@tokens.command("list")
@click.option("--state", type=click.Choice(["active", "expired", "revoked", "all"]), default="active",
              show_default=True, help="Which tokens.")  # fmt: skip
@click.option("--search", metavar="TEXT", help="Only tokens whose name or first characters contain TEXT.")
@click.option("--limit", type=click.IntRange(1, 500), default=100, show_default=True, help="At most this many.")
@click.option("--before-id", type=click.IntRange(min=1), help="Page back: tokens with a smaller id.")
@output_option
@pass_app
def list_tokens(app: App, state: str, search: str | None, limit: int, before_id: int | None) -> None:
    """API tokens, newest first (never the secret itself) (JSON: the API's token objects)."""
    rows = app.client.get("/tokens", state=state, q=search, limit=limit, before_id=before_id)
    app.out.document(rows, lambda rows: app.out.records(None, TOKEN_COLUMNS, rows))


@tokens.command("create")
@click.argument("name")
@click.option("--role", type=click.Choice(["viewer", "operator", "admin"]), required=True)
@click.option("--expires-at", metavar="TIME", help="ISO 8601 time with a zone, e.g. 2027-01-01T00:00:00Z.")
@output_option
@pass_app
def create_token(app: App, name: str, role: str, expires_at: str | None) -> None:
    """Create a token; the token is printed once (JSON: the API's answer, with `token`).

    \b
    ferryctl tokens create ci --role operator --expires-at 2027-01-01T00:00:00Z
    """
    body: dict[str, Any] = {"name": name, "role": role}
    if expires_at is not None:
        body["expires_at"] = expires_at
    created = app.client.post("/tokens", body)

    def render(t: dict[str, Any]) -> None:
        app.out.line(f"token {t['name']} ({t['role']}, id {t['id']}) created; it is shown only now:")
        print(t["token"])

    app.out.document(created, render)


@tokens.command("revoke")
@click.argument("token")
@output_option
@pass_app
def revoke_token(app: App, token: str) -> None:
    """Revoke TOKEN (its name or id) (JSON: the revoked token)."""
    rows = app.client.get("/tokens", state="all", q=token, limit=500)
    match = next((t for t in rows if t["name"] == token), None)
    if match is None and not token.isdigit():
        raise CtlError(f"no token named {token!r}", ExitCode.not_found)
    revoked = app.client.post(f"/tokens/{match['id'] if match else int(token)}/revoke")
    app.out.document(revoked, lambda t: app.out.line(f"token {t['name']} revoked"))
