"""Hooks for the fault tests, kept out of the settings: each read from its own environment variable and honoured
only when FERRY_ENVIRONMENT is `test`; one set in any other environment stops the process at start-up.

- FERRY_TEST_PAUSE_AFTER_STEP: an operation pauses for good once a step of this name has ended and been recorded,
  so that a test can kill the API at that point of a switchover.
"""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

ENV_PREFIX = "FERRY_TEST_"


class TestHooks(BaseSettings):
    """The fault tests' hooks, from the environment (`TestHooks.at_start_up(environment)`)."""

    __test__ = False  # not a test class, though named like one

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, env_file=None, extra="ignore")

    pause_after_step: str | None = Field(
        None, description="The step after which every operation pauses for good (the API is then killed there)."
    )

    @classmethod
    def at_start_up(cls, environment: str) -> TestHooks:
        """The hooks the environment sets; refused (ValueError naming them) unless `environment` is `test`."""
        hooks = cls()
        if environment != "test":
            given = sorted(ENV_PREFIX + name.upper() for name in hooks.model_fields_set)
            if given:
                raise ValueError(
                    f"{', '.join(given)}: a fault tests' hook, honoured only when FERRY_ENVIRONMENT=test "
                    f"(here {environment}); unset it"
                )
        return hooks
