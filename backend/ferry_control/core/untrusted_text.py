"""Text a managed server had a say in (an error it answered, a refusal's message, a reason quoting its answer), as the
control plane stores it and shows it to every reader, viewers included: printable characters only (control and
format characters — line breaks, terminal escapes, bidirectional overrides — become spaces, runs of spaces one) and
at most `STORED_TEXT_MAX` characters, so a server cannot park a page of its own text (a banner, an HTML body) in the
control plane's records."""

from __future__ import annotations

#: The longest stored text a server had a say in: enough for our own reason and the server's error code and
#: message, not for the body of whatever answered.
STORED_TEXT_MAX = 300


def bounded(text: str, limit: int = STORED_TEXT_MAX) -> str:
    """`text` with only printable characters, whitespace collapsed, cut to `limit` characters (ending in "…")."""
    cleaned = " ".join("".join(c if c.isprintable() else " " for c in text).split())
    return cleaned if len(cleaned) <= limit else f"{cleaned[: limit - 1]}…"
