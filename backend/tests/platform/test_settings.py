"""Settings: production is the default and refuses placeholder secrets and a missing secret key; database URLs get
the async drivers."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from ferry_control.core.config import Settings
from ferry_control.core.secrets import SecretBox, generate_key
from ferry_control.core.settings_groups import ProcessSettings


def test_development_accepts_the_default_pepper() -> None:
    assert Settings(environment="development").security.token_pepper.get_secret_value()


@pytest.mark.parametrize("environment", ["test", "production"])
def test_placeholder_pepper_is_refused_outside_development(environment: str) -> None:
    with pytest.raises(ValidationError, match="FERRY_TOKEN_PEPPER"):
        Settings(environment=environment)
    with pytest.raises(ValidationError, match="FERRY_TOKEN_PEPPER"):
        Settings(environment=environment, token_pepper="changethis")


def test_a_short_node_token_is_refused() -> None:
    with pytest.raises(ValidationError, match="at least 16"):
        Settings(node_token="short")


def test_database_urls_get_async_drivers() -> None:
    assert Settings(database_url="postgresql://u@h/db").database.url == "postgresql+psycopg://u@h/db"
    assert Settings(database_url="sqlite:////tmp/x.db").database.url == "sqlite+aiosqlite:////tmp/x.db"


def test_unset_database_url_means_an_embedded_sqlite_file(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.delenv("FERRY_DATABASE_URL", raising=False)
    settings = Settings()
    assert settings.database.is_sqlite and settings.database.url.endswith("control.sqlite3")


def test_the_default_environment_is_production(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FERRY_ENVIRONMENT", raising=False)
    with pytest.raises(ValidationError, match="FERRY_TOKEN_PEPPER"):
        Settings()
    assert ProcessSettings.model_fields["environment"].default == "production"


def test_production_refuses_to_start_without_a_secret_key() -> None:
    with pytest.raises(ValidationError, match="FERRY_SECRET_KEYS"):
        Settings(environment="production", token_pepper="p" * 24)
    key = generate_key()
    assert Settings(environment="production", token_pepper="p" * 24, secret_keys=key).security.secret_keys is not None


def test_a_generated_key_file_is_for_development_only_and_only_when_asked(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="FERRY_DEV_SECRET_KEY_FILE"):
        Settings(
            environment="production", token_pepper="p" * 24, secret_keys=generate_key(),
            dev_secret_key_file=tmp_path / "k",
        )  # fmt: skip
    assert SecretBox.from_settings(Settings(environment="development")) is None
    box = SecretBox.from_settings(Settings(environment="development", dev_secret_key_file=tmp_path / "k"))
    assert box is not None and (tmp_path / "k").stat().st_mode & 0o777 == 0o600
    again = SecretBox.from_settings(Settings(environment="development", dev_secret_key_file=tmp_path / "k"))
    assert again is not None and again.decrypt(box.encrypt({"a": "b"})) == {"a": "b"}


def test_webhook_allow_list_entries_are_host_names_or_networks() -> None:
    assert Settings(webhook_allowed_hosts=["Hooks.Internal", "10.0.0.0/8", "::1/128"]).webhooks.allowed_hosts == [
        "hooks.internal", "10.0.0.0/8", "::1/128"
    ]  # fmt: skip
    with pytest.raises(ValidationError, match="webhook_allowed_hosts"):
        Settings(webhook_allowed_hosts=["10.0.0.0/99"])
