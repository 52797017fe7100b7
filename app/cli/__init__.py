"""The ``logomesh`` command line: one module per command group, one console (:mod:`app.cli.console`)."""
