"""``logomesh deploy``: the deployment's base images, built where no container registry can be reached."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from app.cli.console import Progress, fail

deploy_cli = typer.Typer(add_completion=False, no_args_is_help=True, rich_markup_mode=None,
                         help="The deployment (deploy/): offline base images.")


@deploy_cli.command("build-images",
                    short_help="Build deploy/compose.offline.yaml's base images offline (debootstrap, apt, import).")
def build_images_command(
    names: Annotated[list[str] | None, typer.Argument(metavar="[IMAGE]...",
                                                      help="python, engine, redis, postgres (default: all).")] = None,
    cache_dir: Annotated[Path, typer.Option("--cache-dir", metavar="DIR", help="Where the debootstrap trees are kept.")]
    = Path("/var/cache/logomesh"),
    mirror: Annotated[str | None, typer.Option("--mirror", metavar="URL",
                                               help="Debian mirror (default: the one apt uses).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Rebuild even if an image is current.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress on stderr.")] = False,
) -> None:
    """Build the base images deploy/compose.offline.yaml names, from a Debian mirror; a current image is kept."""
    say = Progress(quiet=quiet)
    from app.deploy_images import IMAGES, build_base_images
    from sandbox.errors import SandboxError

    try:
        build_base_images(names or tuple(IMAGES), cache_dir=cache_dir, mirror=mirror, force=force,
                          say=lambda message: say(f"deploy: {message}"))
    except SandboxError as exc:
        raise fail(exc.reason, 1) from exc
