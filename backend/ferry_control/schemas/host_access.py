"""A cluster's host access: how the control plane reaches its servers' hosts for what their own protocol cannot do
(a rebuild's file copy, stopping and starting a server) — an SSH login (user, port, private key), the hosts'
`known_hosts` lines (a host showing another key is refused), the commands that stop and start a server, and the
donor lag that pauses a rebuild's copy. The private key is write-only: accepted by an admin's PUT, stored encrypted,
never returned (`private_key_set` and the public key's fingerprint say which key is stored)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, SecretStr

#: The defaults of the stop and start commands (a systemd unit named `mariadb`).
STOP_COMMAND = "systemctl stop mariadb"
START_COMMAND = "systemctl start mariadb"
#: A rebuild's copy pauses while its donor trails its source by more than this many seconds (the default).
DONOR_LAG_PAUSE_S = 60.0

Command = Annotated[str, Field(min_length=1, max_length=1000, pattern=r"^[^\n\r\x00]+$")]


class HostAccessSettings(BaseModel):
    """What is stored beside the key (readable by every role)."""

    user: str = Field(
        min_length=1, max_length=100, pattern=r"^[a-z_][a-z0-9_.-]*\$?$", description="The SSH login's user.",
        examples=["ferry"],
    )  # fmt: skip
    port: int = Field(22, ge=1, le=65535, description="The hosts' SSH port.")
    known_hosts: str = Field(
        min_length=1,
        max_length=100_000,
        description="The hosts' public keys, `known_hosts` format (one `host[,host…] keytype base64` a line; e.g. the "
        "output of `ssh-keyscan`). Required: a host that shows a key not listed for it is refused.",
    )
    stop_command: Command = Field(STOP_COMMAND, description="Run on a rebuild's recipient host to stop its server.")
    start_command: Command = Field(START_COMMAND, description="Run on a rebuild's recipient host to start its server.")
    donor_lag_pause_s: float = Field(
        DONOR_LAG_PAUSE_S,
        gt=0,
        le=86400,
        description="A rebuild's copy pauses while its donor's replication lag exceeds this (seconds), and goes on "
        "once it is back under it.",
    )


class HostAccessWrite(HostAccessSettings):
    """The body of PUT …/host-access (admin only): the settings, and the private key (OpenSSH or PEM text, without
    a passphrase). `private_key` left out keeps the stored key; required when none is stored."""

    model_config = ConfigDict(extra="forbid")

    private_key: Annotated[SecretStr, Field(min_length=1, max_length=20_000)] | None = Field(
        None,
        description="The login's private key (text, not a path); write-only, stored encrypted, never returned. Left "
        "out: the stored key is kept.",
    )


class HostAccessRead(HostAccessSettings):
    """A cluster's host access as the API shows it: never the key, only whether one is stored and its public half's
    fingerprint."""

    private_key_set: bool
    public_key_fingerprint: str | None = Field(
        None, description="SHA256 fingerprint of the stored key's public half (as `ssh-keygen -l` prints it)."
    )
