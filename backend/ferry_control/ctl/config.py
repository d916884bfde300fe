"""Where the API is and which token to use. Each setting comes from the first of: the command-line flag, the
environment (`FERRY_URL`, `FERRY_TOKEN`), the config file (`--config`, else `$FERRY_CONFIG`, else
`~/.config/ferry/ferryctl.toml` when it exists), the default.

The config file is TOML with top-level keys:

    url = "https://ferry.example:8000"
    token = "ferry_…"              # or token_file = "/run/secrets/ferry-token"
    timeout_s = 10
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ferry_control.ctl.errors import CtlError, ExitCode

DEFAULT_URL = "http://127.0.0.1:8000"
#: Bound on each HTTP request (connect, read), in seconds.
DEFAULT_TIMEOUT_S = 10.0
CONFIG_KEYS = {"url", "token", "token_file", "timeout_s"}


def default_config_path(env: Mapping[str, str]) -> Path:
    base = env.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "ferry" / "ferryctl.toml"


@dataclass(frozen=True)
class Config:
    url: str
    token: str | None
    timeout_s: float


def read_file(path: Path) -> dict[str, Any]:
    try:
        data = tomllib.loads(path.read_text())
    except OSError as e:
        raise CtlError(f"cannot read the config file {path}: {e.strerror}", ExitCode.usage) from None
    except tomllib.TOMLDecodeError as e:
        raise CtlError(f"the config file {path} is not valid TOML: {e}", ExitCode.usage) from None
    unknown = set(data) - CONFIG_KEYS
    if unknown:
        raise CtlError(
            f"the config file {path} has unknown keys: {', '.join(sorted(unknown))} "
            f"(known: {', '.join(sorted(CONFIG_KEYS))})",
            ExitCode.usage,
        )
    return data


def _token_from_file(path: str) -> str:
    try:
        return Path(path).expanduser().read_text().strip()
    except OSError as e:
        raise CtlError(f"cannot read the token file {path}: {e.strerror}", ExitCode.usage) from None


def load(
    url: str | None = None,
    token: str | None = None,
    config_path: str | None = None,
    timeout_s: float | None = None,
    environ: Mapping[str, str] | None = None,
) -> Config:
    """The settings from flags (arguments given here), then the environment, then the file."""
    env = os.environ if environ is None else environ
    explicit = config_path or env.get("FERRY_CONFIG")
    path = Path(explicit).expanduser() if explicit else default_config_path(env)
    file: dict[str, Any] = read_file(path) if explicit or path.is_file() else {}
    file_token = file.get("token")
    if file_token is None and file.get("token_file"):
        file_token = _token_from_file(str(file["token_file"]))
    resolved_url = url or env.get("FERRY_URL") or file.get("url") or DEFAULT_URL
    if not resolved_url.startswith(("http://", "https://")):
        raise CtlError(f"the API URL must start with http:// or https://, not {resolved_url!r}", ExitCode.usage)
    try:
        resolved_timeout = float(timeout_s or file.get("timeout_s") or DEFAULT_TIMEOUT_S)
    except (TypeError, ValueError):
        raise CtlError(f"timeout_s in {path} is not a number", ExitCode.usage) from None
    return Config(
        url=resolved_url.rstrip("/"),
        token=token or env.get("FERRY_TOKEN") or file_token or None,
        timeout_s=resolved_timeout,
    )
