"""``logomesh sandbox``: build the offline sandbox image, check that reviews can measure T, sweep orphans."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from app.cli.console import Progress, fail, print_error, stderr

# the sandbox package (docker) is imported inside the commands: `logomesh --help` starts faster without it
sandbox_cli = typer.Typer(add_completion=False, no_args_is_help=True, rich_markup_mode=None,
                          help="The Docker sandbox that runs the PR's tests.")


def _image(image: str | None) -> str:
    if image:
        return image
    from app.settings import SettingsError, load_settings

    try:
        return load_settings().sandbox_image
    except SettingsError as exc:
        raise fail(str(exc)) from exc


TAG = typer.Option("--tag", metavar="IMAGE", help="Image tag (default: LOGOMESH_SANDBOX_IMAGE).")


@sandbox_cli.command("build-image", short_help="Build the sandbox image offline (debootstrap, docker import).")
def build_image_command(
    image: Annotated[str | None, TAG] = None,
    cache_dir: Annotated[Path, typer.Option("--cache-dir", metavar="DIR", help="Where the debootstrap folder is kept.")]
    = Path("/var/cache/logomesh"),
    mirror: Annotated[str | None, typer.Option("--mirror", metavar="URL",
                                               help="Debian mirror (default: the one apt uses).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Rebuild even if the tag exists.")] = False,
    suite: Annotated[str | None, typer.Option(
        "--suite", metavar="SUITE", help="Build the companion image of this Debian suite (its CPython offered "
        "beside the main image's, tagged IMAGE-pythonX.Y): trixie (3.13), bullseye (3.9). Default: the main "
        "image (bookworm, 3.11).")] = None,
    all_suites: Annotated[bool, typer.Option("--all", help="The main image and every companion image.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress on stderr.")] = False,
) -> None:
    """Build the sandbox image offline: debootstrap Debian + python3 + pytest, then docker import."""
    say = Progress(quiet=quiet)
    from sandbox.errors import SandboxError
    from sandbox.image import COMPANION_SUITES, DEFAULT_SUITE, SUITES, build_image, companion_tag

    tag = _image(image)
    suites = [DEFAULT_SUITE, *COMPANION_SUITES] if all_suites else [suite or DEFAULT_SUITE]
    try:
        for name in suites:
            if name not in SUITES:
                raise SandboxError(f"unknown Debian suite {name!r}; known: {', '.join(SUITES)}")
            target = tag if name == DEFAULT_SUITE else companion_tag(tag, SUITES[name])
            build_image(target, cache_dir=cache_dir, suite=name, mirror=mirror, force=force,
                        say=lambda message: say(f"sandbox: {message}"))
    except SandboxError as exc:
        raise fail(exc.reason, 1) from exc


@sandbox_cli.command("check", short_help="Exit 0 when Docker answers and the sandbox image exists.")
def check_command(image: Annotated[str | None, TAG] = None) -> None:
    """Exit 0 when a Docker engine answers and the sandbox image exists; otherwise say why and exit 1."""
    from sandbox.docker_sandbox import docker_client, require_image
    from sandbox.errors import SandboxError

    tag = _image(image)
    try:
        client = docker_client()
        require_image(client, tag)
    except SandboxError as exc:
        print_error(exc.reason, label="sandbox not ready")
        raise typer.Exit(1) from exc
    client.close()
    stderr.print(f"sandbox ready: {tag}", markup=False)


@sandbox_cli.command("janitor", short_help="Remove what crashed runs left behind.")
def janitor_command(
    older_than: Annotated[float, typer.Option("--older-than", metavar="SECONDS",
                                              help="Younger objects are left alone.")] = 3900.0,
) -> None:
    """Remove sandbox containers, volumes and prepared images left behind by crashed runs."""
    from sandbox.docker_sandbox import docker_client
    from sandbox.errors import SandboxError
    from sandbox.janitor import sweep

    try:
        client = docker_client()
    except SandboxError as exc:
        raise fail(exc.reason, 1) from exc
    swept = sweep(client, older_than)
    client.close()
    stderr.print(f"removed {swept.containers} containers, {swept.volumes} volumes, {swept.images} images")
