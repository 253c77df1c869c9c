"""Issue #29 abuse bench: each module starts clarion serve, abuses it and prints figures."""
