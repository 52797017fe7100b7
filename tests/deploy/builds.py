"""Whether the tests that build the App's deployment images run here.

They build the offline base images (debootstrap) and the App image with its torch layer: minutes on a warm machine,
about half an hour on a cold one. They run when ``LOGOMESH_DEPLOY_BUILD_TESTS=1`` (docs/deploy.md); otherwise they
skip, saying so.
"""

from __future__ import annotations

import os

import pytest

ENABLED = os.environ.get("LOGOMESH_DEPLOY_BUILD_TESTS") == "1"
needs_image_builds = pytest.mark.skipif(
    not ENABLED, reason="builds the deployment images (minutes to half an hour): set LOGOMESH_DEPLOY_BUILD_TESTS=1")
