"""The probe programs the Red Agent sends into the sandbox, kept as real modules so linters and type checkers read
them: ``common.py`` (helpers of both), ``attack.py`` (one target, one payload) and ``imports.py`` (code that runs
at import). They are **never imported**: :mod:`checks.red.probe_source` reads their text, keeps what follows each
file's ``# --- program ---`` line and joins it after the source of :mod:`checks.red.sightings` and a
``CONFIG_JSON = '…'`` line. What comes before that line (imports of the names the joined program defines) is
there only for the tools.
"""

CONFIG_JSON = "{}"  # the probe's configuration, replaced by the real one in every program sent

raise ImportError("checks.red.probe_program holds probe programs as source text: read them, never import them")
