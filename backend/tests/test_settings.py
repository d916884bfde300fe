"""Settings: placeholder secrets are refused outside development; database URLs get the async drivers."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from ferry_control.core.config import Settings


def test_development_accepts_the_default_pepper() -> None:
    assert Settings(environment="development").token_pepper.get_secret_value()


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
    assert Settings(database_url="postgresql://u@h/db").database_url == "postgresql+psycopg://u@h/db"
    assert Settings(database_url="sqlite:////tmp/x.db").database_url == "sqlite+aiosqlite:////tmp/x.db"


def test_unset_database_url_means_an_embedded_sqlite_file(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.delenv("FERRY_DATABASE_URL", raising=False)
    settings = Settings()
    assert settings.is_sqlite and settings.database_url.endswith("control.sqlite3")
