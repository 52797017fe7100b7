"""The home directory of the command line: a notice when ``./.logomesh``, the default before the user's data
directory (``app.settings.default_home``), still holds a ledger or a signing key.

Nothing is moved: the directory holds a private key, and where it goes is the user's decision.
"""

from __future__ import annotations

from pathlib import Path

from app.settings import Settings

LEGACY_HOME = Path(".logomesh")


def legacy_home_notice(settings: Settings, cwd: Path | None = None) -> str | None:
    """One line when ``./.logomesh`` holds a ledger this run no longer uses by default, else None.

    Silent when ``LOGOMESH_HOME`` is set (the user chose a home) or already points at that directory.
    """
    if "home" in settings.model_fields_set:
        return None
    try:
        legacy = (cwd or Path.cwd()) / LEGACY_HOME
        if not ((legacy / "battles.db").is_file() or (legacy / "keys").is_dir()):
            return None
        if legacy.resolve() == settings.home.resolve():
            return None
    except OSError:  # a working directory that is gone, an unreadable one: nothing to say
        return None
    return (f"notice: {legacy} (the DBOM ledger and private signing key of earlier runs) is no longer used by "
            f"default; the ledger is now in {settings.home}; set LOGOMESH_HOME={legacy} to keep using it, and keep "
            f"it out of git")
