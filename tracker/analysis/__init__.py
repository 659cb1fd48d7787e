"""Analyses on top of the tracker: who holds a frontier (explain), what-if release, contracts, blame's walk and
critical path."""
