"""How the control plane talks to servers: one interface (`base.ServerDriver`), one implementation per server
kind (`ferry` now over the node admin API; `mariadb` later), typed errors, and a factory that builds the right
driver for a registered server."""
