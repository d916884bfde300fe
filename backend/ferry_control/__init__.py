"""Ferry's control plane: a FastAPI service that watches ferryd clusters (topology, per-domain GTID positions,
lag, stream interleavings) through server drivers and keeps what it sees in SQL.

Layers, outside in: `api/` (thin routers) → `services/` (logic) → `repositories/` (all SQL) → `models/` (ORM);
`drivers/` speak to servers; `schemas/` are the API's pydantic shapes; `core/` holds settings, the database
session, security, errors and metrics.
"""
