"""Abuse benches of issue #29: each module starts ``clarion serve`` itself and prints figures."""
