"""`python -m ferry_control.ctl` is `ferryctl`."""

from ferry_control.ctl.main import main

main()
