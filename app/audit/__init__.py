"""The repository audit's edge (``logomesh audit``): read a repository and its PDF report, run the audit court."""
