"""The settings' names, as a specification: grouping the settings (core/config.py) changed how code reads them, not
how they are set.

- Every environment variable the control plane read before its settings were grouped still sets the same setting;
  `ENVIRONMENT_BEFORE` lists them as they were, so a renamed or dropped variable fails here, named.
- Precedence, field by field: a keyword to `Settings(...)` (its flat name), else the environment, else the default;
  a keyword for one field of a group leaves the environment's values of the group's other fields in place.
- Flat keywords are the one way to give settings; a group given whole, or an unknown name, is refused.
- The fault tests' hook (FERRY_TEST_PAUSE_AFTER_STEP) is not a setting, and is refused outside the `test` environment.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from ferry_control.core.config import FLAT_NAMES, GROUPS, Settings, env_names
from ferry_control.core.secrets import generate_key
from ferry_control.core.testhooks import TestHooks
from ferry_control.main import create_app

#: Every environment variable of the settings as it was before the grouping, with a value that is not its default.
ENVIRONMENT_BEFORE: dict[str, str] = {
    "FERRY_ENVIRONMENT": "test",
    "DATABASE_URL": "postgresql://ferry@db-a/ferry",
    "FERRY_DATABASE_URL": "postgresql://ferry@db-b/ferry",
    "FERRY_DATABASE_ECHO": "true",
    "FERRY_ROLE": "worker",
    "FERRY_WEB_NICE": "5",
    "FERRY_OPERATION_PICKUP_INTERVAL_S": "2.5",
    "FERRY_DATABASE_POOL_SIZE": "20",
    "FERRY_DATABASE_POOL_OVERFLOW": "3",
    "FERRY_DATABASE_BACKGROUND_POOL_SIZE": "7",
    "FERRY_TOKEN_PEPPER": "a-real-pepper-of-some-length",
    "FERRY_NODE_TOKEN": "a-node-token-0123456789",
    "FERRY_NODE_TOKEN_FILE": "/etc/ferry/node-token",
    "FERRY_NODE_TLS_CA_FILE": "/etc/ferry/ca.pem",
    "FERRY_SECRET_KEYS": "key-one,key-two",
    "FERRY_DEV_SECRET_KEY_FILE": "/var/lib/ferry/dev.key",
    "FERRY_METRICS_TOKEN": "a-metrics-token-0123456789",
    "FERRY_COLLECTOR_ENABLED": "false",
    "FERRY_POLL_INTERVAL_S": "0.75",
    "FERRY_POLL_CONCURRENCY_MAX": "64",
    "FERRY_POLL_TIMEOUT_S": "3.5",
    "FERRY_UNREACHABLE_AFTER_FAILURES": "5",
    "FERRY_HAPROXY_ADMIN_SOCKETS": '["/run/haproxy/admin.sock", "10.0.0.9:9999"]',
    "FERRY_HAPROXY_TIMEOUT_S": "1.5",
    "FERRY_READER_MAX_LAG_S": "2.5",
    "FERRY_COLLECTOR_SHARE_CLUSTERS": "false",
    "FERRY_COLLECTOR_LEASE_S": "7.5",
    "FERRY_NODE_CONNECT_TIMEOUT_S": "1.25",
    "FERRY_NODE_READ_TIMEOUT_S": "6.5",
    "FERRY_NODE_ANSWER_BYTES_MAX": "2048",
    "FERRY_NODE_READ_RETRIES_MAX": "4",
    "FERRY_NODE_RETRY_BACKOFF_S": "0.25",
    "FERRY_POSITION_SAMPLE_FULL_RESOLUTION_S": "1800",
    "FERRY_POSITION_SAMPLE_BUCKET_S": "30",
    "FERRY_POSITION_SAMPLE_RETENTION_S": "86400",
    "FERRY_RETENTION_INTERVAL_S": "120",
    "FERRY_DISCOVERY_SERVERS_MAX": "40",
    "FERRY_DISCOVERY_CONCURRENCY_MAX": "4",
    "FERRY_INTERLEAVINGS_EVENTS_MAX": "500",
    "FERRY_HEAVY_READS_PER_TOKEN_MAX": "3",
    "FERRY_HEAVY_READS_MAX": "12",
    "FERRY_HEAVY_READ_TIMEOUT_S": "20",
    "FERRY_EXPENSIVE_READS_PER_MIN": "90",
    "FERRY_EVENTS_QUEUE_MAX": "2000",
    "FERRY_LIVE_POSITIONS_INTERVAL_S": "0.5",
    "FERRY_LIVE_POSITIONS_SERVERS_MAX": "25",
    "FERRY_EVENTS_PING_S": "20",
    "FERRY_AUTH_FAILURES_PER_MIN": "10",
    "FERRY_TRUSTED_PROXIES": '["10.9.0.5", "fd00::/8"]',
    "FERRY_REQUEST_BODY_BYTES_MAX": "65536",
    "FERRY_API_DOCS": "false",
    "FERRY_EVENTS_STREAMS_PER_TOKEN_MAX": "5",
    "FERRY_EVENTS_STREAMS_MAX": "500",
    "FERRY_TOKEN_LAST_USED_RESOLUTION_S": "30",
    "FERRY_REPLICATION_CONNECTION_NAME": "ferry_main",
    "FERRY_OPERATION_LEASE_S": "90",
    "FERRY_OPERATION_FENCE_TRUST_S": "15",
    "FERRY_OPERATION_SHUTDOWN_GRACE_S": "10",
    "FERRY_OPERATION_TIMEOUT_S": "900",
    "FERRY_SWITCHOVER_MAX_WINDOW_S": "4",
    "FERRY_SWITCHOVER_PREPARE_TIMEOUT_S": "45",
    "FERRY_REJOIN_RETRY_S": "600",
    "FERRY_VERIFY_AFTER_REJOIN": "false",
    "FERRY_VERIFY_CHUNK_ROWS": "500",
    "FERRY_SWITCHOVER_CATCH_UP_TIMEOUT_S": "12",
    "FERRY_IN_FLIGHT_QUIET_MS": "75",
    "FERRY_IN_FLIGHT_WAIT_MAX_S": "8",
    "FERRY_VERIFY_TIMEOUT_S": "40",
    "FERRY_WEBHOOK_TIMEOUT_S": "2.5",
    "FERRY_WEBHOOK_ALLOWED_HOSTS": '["hooks.internal", "10.0.0.0/8"]',
    "FERRY_SERVER_TRUSTED_HOSTS": '["db.internal", "192.168.0.0/16"]',
    "FERRY_WEBHOOK_RESPONSE_BYTES_MAX": "1024",
    "FERRY_PRE_OPERATION_WEBHOOKS": '["https://hooks.example/pre"]',
    "FERRY_POST_OPERATION_WEBHOOKS": '["https://hooks.example/post"]',
    "FERRY_FAILURE_DETECTION_WEBHOOKS": '["https://hooks.example/detected"]',
    "FERRY_READ_ONLY_ENFORCEMENT_WEBHOOKS": '["https://hooks.example/read-only"]',
    "FERRY_RECOVERY_FAILED_WEBHOOKS": '["https://hooks.example/not-recovered"]',
    "FERRY_FAILOVER_DETECTION_POLLS": "5",
    "FERRY_MASTER_WRITE_PROBE": "true",
    "FERRY_MASTER_WRITE_PROBE_TIMEOUT_S": "1.5",
    "FERRY_FAILOVER_RELAY_DRAIN_TIMEOUT_S": "45",
    "FERRY_FAILOVER_COOLDOWN_S": "300",
    "FERRY_FAILOVER_NOT_CONFIRMED_LOG_S": "30",
    "FERRY_DRILL_SCHEDULER_ENABLED": "false",
    "FERRY_DRILL_SCHEDULER_INTERVAL_S": "2.5",
    "FERRY_DRILL_FAILURE_WEBHOOKS": '["https://hooks.example/drill"]',
    "FERRY_DRILL_CANARY_TABLE": "canary_two",
    "FERRY_DRILL_EVENTS_SCAN_MAX": "1000",
    "FERRY_NODE_PROTOCOL_TIMEOUT_S": "7.5",
    "FERRY_DRILL_CANARY_INTERVAL_MS": "80",
    "FERRY_DRILL_CANARIES_PER_DOMAIN_MAX": "500",
    "FERRY_DRILL_CANARY_LEAD_S": "1.5",
    "FERRY_DRILL_CHECKSUM_WAIT_S": "2.5",
    "FERRY_DRILL_CANARY_VERIFY_TIMEOUT_S": "20",
}
#: Read before as a setting, now the fault tests' hook FERRY_TEST_PAUSE_AFTER_STEP (core/testhooks.py).
FAILPOINT_BEFORE = "FERRY_OPERATION_FAILPOINT_PAUSE_AFTER_STEP"
#: The setting each environment variable sets now, by flat name (from the model).
FLAT_BY_ENV = {env: flat for flat in FLAT_NAMES for env in env_names(flat)}
#: Production's secrets, given as keywords where the environment under test does not give them.
SECRETS = {"token_pepper": "p" * 24, "secret_keys": generate_key()}


@pytest.fixture(autouse=True)
def _no_settings_in_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [*ENVIRONMENT_BEFORE, *FLAT_BY_ENV, FAILPOINT_BEFORE, "FERRY_TEST_PAUSE_AFTER_STEP"]:
        monkeypatch.delenv(name, raising=False)


def value(settings: Settings, flat: str) -> Any:
    group, field = FLAT_NAMES[flat]
    return getattr(getattr(settings, group), field)


def keyword(raw: str) -> Any:
    """The keyword value equal to an environment variable's text (lists are JSON there)."""
    return json.loads(raw) if raw.startswith("[") else raw


def others(flat: str) -> dict[str, Any]:
    """Keywords that let Settings validate (an environment, or production's secrets) without touching `flat`'s group."""
    return SECRETS if FLAT_NAMES[flat][0] == "process" else {"environment": "development"}


def test_the_variables_are_exactly_those_of_before() -> None:
    assert set(FLAT_BY_ENV) - set(ENVIRONMENT_BEFORE) == set(), "variables that did not exist before"
    assert set(ENVIRONMENT_BEFORE) - set(FLAT_BY_ENV) == set(), "variables that no longer set any setting"


@pytest.mark.parametrize("name", ENVIRONMENT_BEFORE)
def test_each_variable_sets_its_setting(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    assert name in FLAT_BY_ENV, f"{name} no longer sets any setting"
    flat, raw = FLAT_BY_ENV[name], ENVIRONMENT_BEFORE[name]
    default = value(Settings(**others(flat)), flat)
    monkeypatch.setenv(name, raw)
    from_environment = value(Settings(**others(flat)), flat)
    assert from_environment == value(Settings(**others(flat), **{flat: keyword(raw)}), flat)
    assert from_environment != default, f"{name}={raw} left {flat} at its default"


@pytest.mark.parametrize("flat", FLAT_NAMES)
def test_a_keyword_beats_the_environment_for_its_field_only(flat: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every variable of the field's group set; the field given as a keyword (its default): the keyword wins for it,
    the environment for the group's other fields."""
    group, field = FLAT_NAMES[flat]
    siblings = [f for f, (g, _) in FLAT_NAMES.items() if g == group]
    for sibling in siblings:
        monkeypatch.setenv(env_names(sibling)[0], ENVIRONMENT_BEFORE[env_names(sibling)[0]])
    from_environment = Settings(**others(flat))
    default = getattr(GROUPS[group](), field)
    settings = Settings(**others(flat), **{flat: default})
    assert value(settings, flat) == default != value(from_environment, flat)
    for sibling in siblings:
        if sibling != flat:
            assert value(settings, sibling) == value(from_environment, sibling), sibling


def test_without_keyword_or_variable_every_setting_is_its_default() -> None:
    settings = Settings(environment="development")
    for name, group in GROUPS.items():
        defaults = group().model_dump()
        defaults.pop("environment", None)
        assert {k: v for k, v in getattr(settings, name).model_dump().items() if k in defaults} == defaults, name


def test_a_keyword_and_the_environment_both_hold_in_one_group(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FERRY_POLL_INTERVAL_S", "0.5")
    settings = Settings(environment="development", poll_timeout_s=5)
    assert (settings.collection.poll_interval_s, settings.collection.poll_timeout_s) == (0.5, 5.0)


def test_database_url_comes_before_ferry_database_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FERRY_DATABASE_URL", "postgresql://ferry@b/ferry")
    assert Settings(environment="development").database.url == "postgresql+psycopg://ferry@b/ferry"
    monkeypatch.setenv("DATABASE_URL", "postgresql://ferry@a/ferry")
    assert Settings(environment="development").database.url == "postgresql+psycopg://ferry@a/ferry"
    assert Settings(environment="development", database_url="sqlite:///x.db").database.url == "sqlite+aiosqlite:///x.db"


def test_flat_keywords_set_the_grouped_fields() -> None:
    settings = Settings(
        environment="development", collector_enabled=False, poll_timeout_s=5, operation_lease_s=9,
        drill_canary_table="canary", pre_operation_webhooks=["https://hooks.example/pre"],
    )  # fmt: skip
    assert not settings.collection.enabled and settings.collection.poll_timeout_s == 5.0
    assert settings.operations.lease_s == 9.0 and settings.drills.canary_table == "canary"
    assert settings.webhooks.pre_operation == ["https://hooks.example/pre"]
    copied = settings.model_copy(update={"role": "worker", "poll_interval_s": 0.5})
    assert (copied.process.role, copied.collection.poll_interval_s) == ("worker", 0.5)
    assert (settings.process.role, settings.collection.poll_interval_s) == ("all", 1.0), "the original unchanged"
    assert copied.collection.poll_timeout_s == 5.0
    assert Settings(**settings.flat()) == settings, "flat() gives back the keywords that built them"
    assert Settings(**{**settings.flat(), "poll_timeout_s": 7}).collection.poll_timeout_s == 7.0


def test_an_unknown_keyword_is_refused() -> None:
    with pytest.raises(ValidationError, match="'poll_intervall_s' is not a setting"):
        Settings(environment="development", poll_intervall_s=1)
    with pytest.raises(ValidationError, match="the test hook FERRY_TEST_PAUSE_AFTER_STEP"):
        Settings(environment="test", token_pepper="p" * 24, operation_failpoint_pause_after_step="verify")


def test_a_group_given_whole_is_refused() -> None:
    with pytest.raises(ValidationError, match=r"flat names \(collector_enabled=…\), not as a group \(collection=…\)"):
        Settings(environment="development", collection={"enabled": False})
    with pytest.raises(TypeError, match="'collection' is not the flat name of a setting"):
        Settings(environment="development").model_copy(update={"collection": {}})


def test_the_pause_hook_is_no_setting_and_only_for_tests(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(FAILPOINT_BEFORE, "verify")
    assert TestHooks.at_start_up("test").pause_after_step is None, "the old setting's variable is not read"
    monkeypatch.setenv("FERRY_TEST_PAUSE_AFTER_STEP", "verify")
    assert TestHooks.at_start_up("test").pause_after_step == "verify"
    for environment in ("development", "production"):
        with pytest.raises(ValueError) as refused:
            TestHooks.at_start_up(environment)
        assert str(refused.value) == (
            "FERRY_TEST_PAUSE_AFTER_STEP: a fault tests' hook, honoured only when FERRY_ENVIRONMENT=test "
            f"(here {environment}); unset it"
        )
    monkeypatch.delenv("FERRY_TEST_PAUSE_AFTER_STEP")
    assert TestHooks.at_start_up("production").pause_after_step is None


def test_the_api_refuses_to_start_with_the_pause_hook_outside_tests(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("FERRY_TEST_PAUSE_AFTER_STEP", "verify")
    settings = Settings(environment="development", database_url=f"sqlite:///{tmp_path}/control.sqlite3")
    with pytest.raises(ValueError, match="FERRY_TEST_PAUSE_AFTER_STEP: a fault tests' hook"):
        create_app(settings)
