"""Secrets at rest: a cluster's credentials are stored as one Fernet token (AES-128-CBC + HMAC-SHA256, with its
time of encryption) of their JSON, under keys from the settings. `SecretBox` does exactly that: encrypt, decrypt,
rotate. Several keys form a MultiFernet: the first encrypts, every one decrypts, and `rotate` re-encrypts a token
under the first key — so a new key is put first, everything is rotated, and then the old key is removed."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

from cryptography.fernet import Fernet, InvalidToken, MultiFernet

from ferry_control.core.config import Settings

log = logging.getLogger(__name__)


class SecretsUnavailable(Exception):
    """No key is configured, or no configured key opens a stored token."""


class SecretBox:
    def __init__(self, keys: list[str]):
        if not keys:
            raise SecretsUnavailable("no secret key configured")
        try:
            self._fernet = MultiFernet([Fernet(k.encode()) for k in keys])
        except ValueError as e:
            raise SecretsUnavailable(f"a secret key is not a Fernet key (url-safe base64 of 32 bytes): {e}") from e

    @classmethod
    def from_settings(cls, settings: Settings) -> SecretBox | None:
        """The configured keys; else, outside production, the development key file (created when missing);
        else None (storing a secret is then refused)."""
        if settings.security.secret_keys is not None:
            return cls(split_keys(settings.security.secret_keys.get_secret_value()))
        if settings.security.dev_secret_key_file is not None and settings.process.environment != "production":
            return cls([_dev_key(settings.security.dev_secret_key_file)])
        return None

    def encrypt(self, values: dict[str, Any]) -> str:
        return self._fernet.encrypt(json.dumps(values, sort_keys=True).encode()).decode()

    def decrypt(self, token: str) -> dict[str, Any]:
        try:
            plain = self._fernet.decrypt(token.encode())
        except InvalidToken as e:
            raise SecretsUnavailable("no configured secret key opens a stored secret (was a key removed?)") from e
        values = json.loads(plain)
        if not isinstance(values, dict):
            raise SecretsUnavailable("a stored secret is not an object")
        return values

    def rotate(self, token: str) -> str:
        """The same secret encrypted under the first key."""
        try:
            return self._fernet.rotate(token.encode()).decode()
        except InvalidToken as e:
            raise SecretsUnavailable("no configured secret key opens a stored secret (was a key removed?)") from e


def split_keys(text: str) -> list[str]:
    return [k.strip() for k in text.split(",") if k.strip()]


def generate_key() -> str:
    return Fernet.generate_key().decode()


def _dev_key(path: Path) -> str:
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:  # another process made it just now
            pass
        else:
            with os.fdopen(fd, "w") as f:
                f.write(generate_key() + "\n")
            log.warning("generated a development secret key in %s (not for production)", path)
    return path.read_text().strip()
