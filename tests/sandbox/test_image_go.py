"""The production sandbox/Dockerfile builds the image sandbox/image.py builds: the same layout version, and the same
standard library packages compiled into each Go toolchain's warm build cache (what tests and the Red Agent's Go
probe import: a probe that found them cold would spend its time compiling)."""

from __future__ import annotations

import re
from pathlib import Path

from checks.red.probe_source import GO_ATTACK_TEMPLATE
from sandbox.image import GO_WARM_IMPORTS, IMAGE_VERSION

DOCKERFILE = (Path(__file__).parents[2] / "sandbox" / "Dockerfile").read_text(encoding="utf-8")


def test_the_production_dockerfile_has_the_same_layout_version() -> None:
    assert f"org.logomesh.image-version={IMAGE_VERSION} " in DOCKERFILE
    assert f"echo {IMAGE_VERSION} > /opt/logomesh/image-version" in DOCKERFILE


def test_the_production_dockerfile_warms_the_same_go_packages() -> None:
    warm = re.search(r"printf 'package warm\\n\\nimport \(\\n(.*?)\\n\)", DOCKERFILE)
    assert warm is not None
    assert sorted([*re.findall(r'_ "([\w/]+)"', warm.group(1)), "testing"]) == sorted(GO_WARM_IMPORTS)


def test_every_package_the_go_probe_imports_is_warm() -> None:
    imported = set(re.findall(r'^\tzz\w+ "([\w/]+)"$', GO_ATTACK_TEMPLATE, re.MULTILINE))
    assert imported and imported <= set(GO_WARM_IMPORTS), imported - set(GO_WARM_IMPORTS)
