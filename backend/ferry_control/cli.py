"""Command line of the control plane.

python -m ferry_control.cli migrate                                  upgrade the database to the newest schema
python -m ferry_control.cli create-token --name admin --role admin   create an API token and print it (once)
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from ferry_control.core.config import get_settings
from ferry_control.core.db import create_engine, create_sessionmaker, session_scope
from ferry_control.core.migrate import upgrade
from ferry_control.core.security import Role
from ferry_control.services.tokens import TokenService


async def _create_token(name: str, role: Role) -> str:
    settings = get_settings()
    engine = create_engine(settings)
    try:
        async with session_scope(create_sessionmaker(engine)) as session:
            _, token = await TokenService(session, settings).create(name, role)
        return token
    finally:
        await engine.dispose()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ferry_control.cli", description="Ferry control plane")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("migrate", help="upgrade the database (DATABASE_URL, else the SQLite default) to head")
    create = commands.add_parser("create-token", help="create an API token and print it; it is not shown again")
    create.add_argument("--name", required=True)
    create.add_argument("--role", required=True, choices=[r.value for r in Role])
    args = parser.parse_args(argv)

    if args.command == "migrate":
        upgrade(get_settings().database_url)
        return 0
    from ferry_control.core.errors import AppError

    try:
        token = asyncio.run(_create_token(args.name, Role(args.role)))
    except AppError as e:
        print(f"error: {e.message}", file=sys.stderr)
        return 1
    print(token)
    return 0


if __name__ == "__main__":
    sys.exit(main())
