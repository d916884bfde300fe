"""`ferryctl`: a command-line client over the control plane's REST API (/api/v1), for operators and scripts.

- `config`   — where the API is and which token to use: flags, else `FERRY_URL`/`FERRY_TOKEN`, else the config file
- `errors`   — the exit codes and the one error type every failure becomes (printed as the API's message)
- `client`   — the HTTP client: one call per request, API errors mapped to exit codes, names or ids resolved
- `output`   — rendering: rich tables for people, `--output json` (stable documents) for scripts
- `progress` — following an operation to its end, printing each step as it starts and finishes
- `commands/` — one module per command group (clusters, servers, discover, status, switchover/failover, drills,
  operations, tokens)
- `main`     — the root command, its global options and the error boundary (no stack traces reach the user)
"""
