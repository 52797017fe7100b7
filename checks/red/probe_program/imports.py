"""The import probe: imports each changed module once and reports what ran while it was imported."""

# Above the program line: for linters and type checkers only (the joined program defines these names itself).
from checks.red.probe_program.common import CONFIG, WATCH, emit, failure, import_module

# --- program ---


def main() -> None:
    for path in CONFIG["paths"]:
        try:
            import_module(path)
            emit("import", path=path, ok=True, sightings=WATCH.take())
        except BaseException as exc:  # the module is hostile code: catch SystemExit and the rest
            emit("import", path=path, sightings=WATCH.take(), **failure(exc))


main()
