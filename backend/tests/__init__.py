"""The backend's test suite (pytest, against a real PostgreSQL and real ferryd nodes)."""
