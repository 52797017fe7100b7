"""``logomesh sandbox``: build the offline sandbox image, check that reviews can measure T, sweep orphans."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from app.settings import SettingsError, load_settings
from sandbox.errors import SandboxError

sandbox_cli = typer.Typer(no_args_is_help=True, help="The Docker sandbox that runs the PR's tests.")
stderr = Console(stderr=True, highlight=False)


def _image(image: str | None) -> str:
    if image:
        return image
    try:
        return load_settings().sandbox_image
    except SettingsError as exc:
        stderr.print(f"[bold red]error:[/] {exc}", markup=True)
        raise typer.Exit(2) from exc


@sandbox_cli.command("build-image")
def build_image_command(
    image: Annotated[str | None, typer.Option("--tag", help="Image tag (default: LOGOMESH_SANDBOX_IMAGE).")] = None,
    cache_dir: Annotated[Path, typer.Option("--cache-dir", help="Where the debootstrap folder is kept.")]
    = Path("/var/cache/logomesh"),
    mirror: Annotated[str | None, typer.Option("--mirror", help="Debian mirror (default: the one apt uses).")]
    = None,
    force: Annotated[bool, typer.Option("--force", help="Rebuild even if the tag exists.")] = False,
) -> None:
    """Build the sandbox image offline: debootstrap Debian + python3 + pytest, then docker import."""
    from sandbox.image import build_image

    tag = _image(image)
    try:
        build_image(tag, cache_dir=cache_dir, mirror=mirror, force=force,
                    say=lambda message: stderr.print(f"[dim]sandbox:[/] {message}", markup=True))
    except SandboxError as exc:
        stderr.print(f"[bold red]error:[/] {exc.reason}", markup=True)
        raise typer.Exit(1) from exc


@sandbox_cli.command("check")
def check_command(
    image: Annotated[str | None, typer.Option("--tag", help="Image tag (default: LOGOMESH_SANDBOX_IMAGE).")] = None,
) -> None:
    """Exit 0 when a Docker engine answers and the sandbox image exists; otherwise say why and exit 1."""
    from sandbox.docker_sandbox import docker_client, require_image

    tag = _image(image)
    try:
        client = docker_client()
        require_image(client, tag)
    except SandboxError as exc:
        stderr.print(f"[bold red]sandbox not ready:[/] {exc.reason}", markup=True)
        raise typer.Exit(1) from exc
    client.close()
    stderr.print(f"sandbox ready: {tag}")


@sandbox_cli.command("janitor")
def janitor_command(
    older_than: Annotated[float, typer.Option("--older-than", help="Seconds; younger objects are left alone.")]
    = 3900.0,
) -> None:
    """Remove sandbox containers, volumes and prepared images left behind by crashed runs."""
    from sandbox.docker_sandbox import docker_client
    from sandbox.janitor import sweep

    try:
        client = docker_client()
    except SandboxError as exc:
        stderr.print(f"[bold red]error:[/] {exc.reason}", markup=True)
        raise typer.Exit(1) from exc
    swept = sweep(client, older_than)
    client.close()
    stderr.print(f"removed {swept.containers} containers, {swept.volumes} volumes, {swept.images} images")
