"""The control plane's settings: `Settings`, one group per concern (settings_groups.py), read from the environment.

Names. Code reads a setting through its group: `settings.collection.poll_interval_s`, `settings.database.url`.
Every setting also has a flat name, the one it had before the settings were grouped (`poll_interval_s`,
`database_url`, `collector_enabled` for `collection.enabled`): its environment variable is `FERRY_` and the flat name
upper-cased (the database URL: DATABASE_URL, else FERRY_DATABASE_URL), so deployments set exactly what they always
set. Settings are given to `Settings(...)` one way only: as keywords of their flat names (`Settings(poll_timeout_s=5,
collector_enabled=True)`), routed to their groups before validation; `model_copy(update=...)` takes flat names too,
and `flat()` gives them back (`Settings(**{**settings.flat(), **changes})` builds validated changed settings). A
group given whole (`Settings(collection=...)`) is refused, and so is an unknown name (a keyword or a `model_copy`
update).

Precedence, field by field: a keyword, else the environment, else the default; a keyword for one field of a group
leaves the environment's value of its other fields in place.

Units are last in the names (`_s` seconds). The default environment is `production`: placeholder secrets are
refused at start-up, and so is a missing key for the secrets stored in the database; development conveniences (a
generated key file) need `FERRY_ENVIRONMENT=development` and their own setting. Fault tests' hooks are not settings
(core/testhooks.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any, Self

from pydantic import AliasChoices, Field, create_model, model_validator
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from ferry_control.core.settings_groups import (
    DEFAULT_SQLITE_PATH,
    CollectionSettings,
    DatabaseSettings,
    DrillSettings,
    FailoverSettings,
    NodeClientSettings,
    OperationSettings,
    ProcessSettings,
    ProxySettings,
    ReadSettings,
    SecuritySettings,
    SettingsGroup,
    StreamSettings,
    WebhookSettings,
    normalize_database_url,
)

__all__ = ["DEFAULT_SQLITE_PATH", "FLAT_NAMES", "GROUPS", "Settings", "get_settings", "normalize_database_url"]

#: Secrets that are fine on a laptop and nowhere else.
PLACEHOLDER_SECRETS = frozenset({"", "changethis", "change-me", "secret", "development-pepper"})
#: ferryd refuses admin tokens shorter than this.
NODE_TOKEN_CHARS_MIN = 16
ENV_PREFIX = "FERRY_"

#: The groups, by their attribute on `Settings`.
GROUPS: dict[str, type[SettingsGroup]] = {
    "process": ProcessSettings,
    "database": DatabaseSettings,
    "security": SecuritySettings,
    "collection": CollectionSettings,
    "nodes": NodeClientSettings,
    "streams": StreamSettings,
    "reads": ReadSettings,
    "operations": OperationSettings,
    "failover": FailoverSettings,
    "webhooks": WebhookSettings,
    "drills": DrillSettings,
    "proxies": ProxySettings,
}
#: Every setting's flat name → (its group, its field there).
FLAT_NAMES: dict[str, tuple[str, str]] = {
    group.flat_name(field): (name, field) for name, group in GROUPS.items() for field in group.model_fields
}
#: Former settings, with what replaced them (said when one is given as a keyword).
RETIRED = {
    "operation_failpoint_pause_after_step": (
        " (the fault tests' pause is the test hook FERRY_TEST_PAUSE_AFTER_STEP, core/testhooks.py)"
    ),
}
#: The environment variables read instead of FERRY_<flat name> (the first set wins).
ENV_ALIASES: dict[str, tuple[str, ...]] = {"database_url": ("DATABASE_URL", "FERRY_DATABASE_URL")}


def env_names(flat_name: str) -> tuple[str, ...]:
    """The environment variables that set the setting of this flat name."""
    return ENV_ALIASES.get(flat_name, (ENV_PREFIX + flat_name.upper(),))


class _FlatEnvironment(BaseSettings):
    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, env_file=None, extra="ignore")


def _flat_environment() -> type[BaseSettings]:
    """A model of one field per flat name (each group field's type), for pydantic-settings' own environment source to
    read and decode (JSON for lists) exactly as it read the flat settings; never validated."""
    fields: dict[str, Any] = {}
    for flat, (group, field) in FLAT_NAMES.items():
        aliases = ENV_ALIASES.get(flat)
        alias = AliasChoices(*aliases) if aliases else None
        fields[flat] = (GROUPS[group].model_fields[field].annotation, Field(None, validation_alias=alias))
    model: type[BaseSettings] = create_model("FlatEnvironment", __base__=_FlatEnvironment, **fields)
    return model


_FLAT_ENVIRONMENT = _flat_environment()


class _FlatEnvironmentSource(EnvSettingsSource):
    """pydantic-settings' environment source over the flat names; a value found under an alias (DATABASE_URL) is
    keyed by its flat name, so that a keyword of that name takes precedence over it like over any other."""

    def __init__(self) -> None:
        super().__init__(_FLAT_ENVIRONMENT)

    def __call__(self) -> dict[str, Any]:
        by_alias = {aliases[0]: flat for flat, aliases in ENV_ALIASES.items()}
        return {by_alias.get(key, key): value for key, value in super().__call__().items()}


class Settings(BaseSettings):
    """Control plane settings, by group; see each group's fields (settings_groups.py)."""

    model_config = SettingsConfigDict(env_file=None)

    process: ProcessSettings = Field(default_factory=ProcessSettings)
    database: DatabaseSettings = Field(default_factory=DatabaseSettings)
    security: SecuritySettings = Field(default_factory=SecuritySettings)
    collection: CollectionSettings = Field(default_factory=CollectionSettings)
    nodes: NodeClientSettings = Field(default_factory=NodeClientSettings)
    streams: StreamSettings = Field(default_factory=StreamSettings)
    reads: ReadSettings = Field(default_factory=ReadSettings)
    operations: OperationSettings = Field(default_factory=OperationSettings)
    failover: FailoverSettings = Field(default_factory=FailoverSettings)
    webhooks: WebhookSettings = Field(default_factory=WebhookSettings)
    drills: DrillSettings = Field(default_factory=DrillSettings)
    proxies: ProxySettings = Field(default_factory=ProxySettings)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # Keywords first, then the environment by flat name; both flat, merged field by field, then routed.
        return init_settings, _FlatEnvironmentSource()

    @model_validator(mode="before")
    @classmethod
    def _route_flat_names(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        grouped: dict[str, dict[str, Any]] = {name: {} for name in GROUPS}
        for key, value in data.items():
            if key in GROUPS:
                example = GROUPS[key].flat_name(next(iter(GROUPS[key].model_fields)))
                raise ValueError(f"settings are given by their flat names ({example}=…), not as a group ({key}=…)")
            target = FLAT_NAMES.get(key)
            if target is None:  # the environment gives known names only: this is a keyword
                raise ValueError(f"{key!r} is not a setting{RETIRED.get(key, '')}")
            grouped[target[0]][target[1]] = value
        return grouped

    @model_validator(mode="after")
    def _refuse_placeholders(self) -> Settings:
        environment, security = self.process.environment, self.security
        if environment != "development":
            if security.token_pepper.get_secret_value() in PLACEHOLDER_SECRETS or len(security.token_pepper) < 16:
                raise ValueError(
                    f"FERRY_TOKEN_PEPPER is a placeholder or shorter than 16 characters; set a real secret "
                    f"when FERRY_ENVIRONMENT={environment}"
                )
        if environment == "production":
            if security.secret_keys is None:
                raise ValueError(
                    "FERRY_SECRET_KEYS is not set: the secrets stored in the database need a key in production "
                    "(generate one with `python -m ferry_control.cli generate-secret-key`)"
                )
            if security.dev_secret_key_file is not None:
                raise ValueError("FERRY_DEV_SECRET_KEY_FILE is for development and tests; set FERRY_SECRET_KEYS")
        if security.metrics_token is not None and len(security.metrics_token) < NODE_TOKEN_CHARS_MIN:
            raise ValueError(f"FERRY_METRICS_TOKEN must have at least {NODE_TOKEN_CHARS_MIN} characters")
        if security.node_token is not None:
            token = security.node_token.get_secret_value()
            if len(token) < NODE_TOKEN_CHARS_MIN:
                raise ValueError(f"FERRY_NODE_TOKEN must have at least {NODE_TOKEN_CHARS_MIN} characters")
            if environment != "development" and token in PLACEHOLDER_SECRETS:
                raise ValueError("FERRY_NODE_TOKEN is a placeholder")
        return self

    def flat(self) -> dict[str, Any]:
        """Every setting by its flat name: the keywords that build these settings again (`Settings(**s.flat())`)."""
        return {flat: getattr(getattr(self, group), field) for flat, (group, field) in FLAT_NAMES.items()}

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy with the settings of these flat names changed (not validated, as pydantic's model_copy)."""
        changes: dict[str, dict[str, Any]] = {}
        for key, value in (update or {}).items():
            target = FLAT_NAMES.get(key)
            if target is None:
                raise TypeError(f"{key!r} is not the flat name of a setting")
            changes.setdefault(target[0], {})[target[1]] = value
        copied = super().model_copy(deep=deep)
        for group, fields in changes.items():
            setattr(copied, group, getattr(copied, group).model_copy(update=fields))
        return copied


@lru_cache
def get_settings() -> Settings:
    """The process's settings, read once."""
    return Settings()
