"""Cross-cutting pieces: settings, database engine and session, token security, API errors, metrics."""
