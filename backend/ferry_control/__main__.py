"""`python -m ferry_control worker [--metrics-port N]`: the worker process (ferry_control/worker.py); any other
command goes to the command line of ferry_control/cli.py."""

from __future__ import annotations

import sys

if __name__ == "__main__":
    if sys.argv[1:2] == ["worker"]:
        from ferry_control.worker import main

        sys.exit(main(sys.argv[2:]))
    from ferry_control.cli import main as cli_main

    sys.exit(cli_main())
