"""Checks an SSH private key and `known_hosts` text as an admin gives them, so a bad one is refused at once with
the reason (422), not at a rebuild's first connection; and the fingerprint of a key's public half."""

from __future__ import annotations

import base64
import binascii
import hashlib

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import dsa, ec, ed25519, rsa

#: The host key types a known_hosts line may name.
KEY_TYPES = frozenset(
    {"ssh-ed25519", "ssh-rsa", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521",
     "sk-ssh-ed25519@openssh.com", "sk-ecdsa-sha2-nistp256@openssh.com", "ssh-dss"}
)  # fmt: skip


def private_key_refusal(text: str) -> str | None:
    """Why `text` is not a usable private key (OpenSSH or PEM, no passphrase), in words; None when it is."""
    data = text.strip().encode() + b"\n"
    if b"PRIVATE KEY-----" not in data:
        return "private_key is not a private key: expected OpenSSH or PEM text (-----BEGIN … PRIVATE KEY-----)"
    if b"ENCRYPTED" in data.split(b"\n", 2)[0] or b"Proc-Type: 4,ENCRYPTED" in data:
        return "private_key is protected by a passphrase: give a key without one (it is stored encrypted)"
    try:
        key = (
            serialization.load_ssh_private_key(data, password=None)
            if b"OPENSSH PRIVATE KEY" in data
            else serialization.load_pem_private_key(data, password=None)
        )
    except TypeError:
        return "private_key is protected by a passphrase: give a key without one (it is stored encrypted)"
    except (ValueError, binascii.Error) as e:
        return f"private_key could not be read: {e}"
    except Exception as e:  # the parsers raise their own kinds on malformed input
        return f"private_key could not be read: {type(e).__name__}"
    if not isinstance(
        key, rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey | ed25519.Ed25519PrivateKey | dsa.DSAPrivateKey
    ):
        return f"private_key is a {type(key).__name__}, not an SSH key type (ed25519, ECDSA or RSA)"
    return None


def fingerprint(text: str) -> str | None:
    """`SHA256:…` of the key's public half, as `ssh-keygen -l` prints it; None when it cannot be read."""
    data = text.strip().encode() + b"\n"
    try:
        key = (
            serialization.load_ssh_private_key(data, password=None)
            if b"OPENSSH PRIVATE KEY" in data
            else serialization.load_pem_private_key(data, password=None)
        )
        public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    except Exception:
        return None
    blob = base64.b64decode(public.split()[1])
    return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")


def known_hosts_refusal(text: str) -> str | None:
    """Why `text` is not `known_hosts` lines (`[@marker ]hosts keytype base64 [comment]`), naming the line; None when
    every line is one (blank lines and `#` comments allowed; at least one key)."""
    keys = 0
    for number, line in enumerate(text.splitlines(), 1):
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        if words[0].startswith("@"):
            words = words[1:]
        if len(words) < 3:
            return f"known_hosts line {number}: expected `host[,host…] keytype base64-key`"
        if words[1] not in KEY_TYPES:
            return f"known_hosts line {number}: {words[1][:40]!r} is not an SSH key type"
        try:
            base64.b64decode(words[2], validate=True)
        except binascii.Error:
            return f"known_hosts line {number}: the key is not base64"
        keys += 1
    if keys == 0:
        return "known_hosts lists no host key: give each host's public key line (ssh-keyscan prints them)"
    return None
