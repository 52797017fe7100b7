"""The sandbox image the tests run: the one the settings name (``LOGOMESH_SANDBOX_IMAGE``, else
``logomesh-sandbox:latest``), so a changed image can be built and tested under another tag."""

from __future__ import annotations

from app.settings import load_settings

SANDBOX_IMAGE = load_settings().sandbox_image
