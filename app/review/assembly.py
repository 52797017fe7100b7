"""Assemble a review from the edges: read the change from git, pick the adapters, run the court.

The CLI and the worker both go through :func:`review_repository`, so a local review is exactly what the App
does on a pull request.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from app.review.gitrepo import CONFIG_FILE, GitRepo, read_case
from app.review.progress import report_progress
from app.settings import Settings
from checks.config import RepoConfig, parse_repo_config
from checks.court import CourtParts, review
from checks.models import Case, Evaluation
from rubric import Rubric, load_rubric

if TYPE_CHECKING:
    from checks.judges.digest import DigestBuilder
    from checks.protocols import Judge
    from sandbox.env_registry import EnvRegistry

ProgressFn = Callable[[str], None]


@dataclass(frozen=True)
class PreparedReview:
    case: Case
    rubric: Rubric
    config: RepoConfig


def prepare(
    repo: GitRepo,
    base: str,
    head: str,
    *,
    settings: Settings,
    title: str = "",
    body: str = "",
    config_text: str | None = None,
    config_source: str = CONFIG_FILE,
    use_base_config: bool = True,
    repo_name: str = "local",
    pr_number: int | None = None,
    linked_issues: Sequence[str] = (),
) -> PreparedReview:
    """Read the case and its effective configuration. ``.logomesh.yml`` comes from the **base** commit."""
    if config_text is None and use_base_config:
        config_text = repo.show(repo.resolve(base), CONFIG_FILE)
    config = parse_repo_config(config_text, config_source)
    rubric = load_rubric(settings.rubric_path, config.rubric_overrides())
    case = read_case(
        repo, base, head, config=config, title=title, body=body, repo_name=repo_name, pr_number=pr_number,
        linked_issues=linked_issues, timeout_seconds=min(settings.sandbox_timeout_seconds,
                                                         rubric.testing.timeout_seconds),
    )
    return PreparedReview(case=case, rubric=rubric, config=config)


class Attacher(Protocol):
    """Attaches one optional adapter to ``parts``; resources it opens are closed by ``stack``."""

    async def __call__(self, stack: contextlib.AsyncExitStack, repo: GitRepo, prepared: PreparedReview,
                       settings: Settings, parts: CourtParts, say: ProgressFn) -> None: ...


def env_registry(settings: Settings, stack: contextlib.AsyncExitStack) -> EnvRegistry | None:
    """The registry environments are shared through (``LOGOMESH_SANDBOX_ENV_REGISTRY``), its digests in the
    workers' Redis; None when unset. Redis is reached only when an environment is looked up or pushed."""
    if not settings.sandbox_env_registry:
        return None
    from sandbox.env_registry import EnvRegistry, RedisDigests
    from sandbox.setup_phase import MAX_AGE_SECONDS

    digests = RedisDigests(settings.redis_url, settings.redis_prefix, settings.sandbox_env_registry, MAX_AGE_SECONDS)
    stack.callback(digests.close)
    return EnvRegistry(settings.sandbox_env_registry, digests)


async def attach_sandbox(stack: contextlib.AsyncExitStack, repo: GitRepo, prepared: PreparedReview,
                         settings: Settings, parts: CourtParts, say: ProgressFn) -> None:
    """The Docker sandbox that measures T, holding the head tree read from git's object store.

    ``auto``: without a Docker engine or the image, T is "not measured" with a notice; ``docker``: the same
    situation raises :class:`~sandbox.errors.SandboxUnavailable`; ``off``: never.
    """
    if settings.sandbox == "off":
        parts.sandbox_missing = ("the sandbox is turned off (LOGOMESH_SANDBOX=off); set LOGOMESH_SANDBOX=auto to "
                                 "run them")
        say(f"notice: tests not measured: {parts.sandbox_missing}")
        return
    import asyncio

    from sandbox.docker_sandbox import DockerSandbox, SetupOptions, docker_client, require_image
    from sandbox.errors import SandboxError, SandboxUnavailable
    from sandbox.limits import SandboxCeiling, SandboxLimits
    from sandbox.runtime import require_runtime

    image = prepared.config.sandbox.image or settings.sandbox_image
    limits = SandboxLimits.from_rubric(prepared.rubric, settings.sandbox_timeout_seconds, ceiling=SandboxCeiling(
        memory_mb=settings.sandbox_max_memory_mb, cpus=settings.sandbox_max_cpus, pids=settings.sandbox_max_pids))
    setup = SetupOptions(allow=settings.sandbox_allow_setup, timeout_seconds=settings.sandbox_setup_timeout_seconds,
                         index_url=settings.sandbox_index_url, extra_hosts=settings.sandbox_index_hosts,
                         ca_bundle=settings.sandbox_ca_bundle, cache_mb=settings.sandbox_env_cache_mb,
                         npm_registry=settings.sandbox_npm_registry,
                         scope=prepared.case.repo if prepared.case.repo != "local" else str(repo.path.resolve()),
                         registry=env_registry(settings, stack))
    try:
        client = await asyncio.to_thread(docker_client)
        await asyncio.to_thread(require_image, client, image)
        await asyncio.to_thread(require_runtime, client, settings.sandbox_runtime)
    except SandboxUnavailable as exc:
        if settings.sandbox == "docker":
            raise
        parts.sandbox_missing = exc.reason
        say(f"notice: tests not measured: {exc.reason}")
        return
    stack.callback(client.close)
    try:
        # straight from git's objects, not `git archive`: the head's .gitattributes could export-ignore tests
        # the base run compares against the commit the change applies to: the merge base
        base_sha = await asyncio.to_thread(repo.merge_base, prepared.case.base_sha, prepared.case.head_sha)
        parts.sandbox = await asyncio.to_thread(
            DockerSandbox.for_git, repo.git_bytes, prepared.case.head_sha, limits, image, client,
            base_sha=base_sha, setup=setup, worker=settings.worker_id, runtime=settings.sandbox_runtime,
        )
    except SandboxError as exc:  # e.g. a tree larger than the work dir: the PR's problem is not T's to guess
        parts.sandbox_missing = exc.reason
        say(f"notice: tests not measured: {exc.reason}")


async def attach_embedder(stack: contextlib.AsyncExitStack, repo: GitRepo, prepared: PreparedReview,
                          settings: Settings, parts: CourtParts, say: ProgressFn) -> None:
    """The sentence-embedding model that measures R: ``on`` requires it, ``auto`` uses it when installed. The review
    does not wait for a first load (:class:`~app.review.embeddings.PendingEmbedder`); a load that fails is said when the
    review's parts are released, and with ``on`` fails the review there."""
    from app.review.embeddings import EmbeddingModelMissing, PendingEmbedder, SentenceEmbedder, model_available

    if settings.embedding == "off":
        parts.embedder_missing = "the embedding model is switched off (LOGOMESH_EMBEDDING=off)"
        return
    missing = model_available(settings.embedding_model_path)
    if missing is not None:
        if settings.embedding == "on":
            raise EmbeddingModelMissing(missing, settings.embedding_model_path)
        parts.embedder_missing = missing
        say(f"notice: rationale not measured: {missing}")
        return
    ready = SentenceEmbedder.loaded(settings.embedding_model_path)
    if ready is not None:  # a worker loaded it at start-up
        parts.embedder = ready
        return
    # Loading takes seconds the first time (then it is cached for the life of the process): the review does not
    # wait for it; R's first embedding does.
    pending = PendingEmbedder.start(settings.embedding_model_path)
    parts.embedder = pending

    async def settle() -> None:
        failed = await pending.close()
        if failed is None:
            return
        if settings.embedding == "on":
            raise failed
        say(f"notice: rationale not measured: {failed.message}")

    stack.push_async_callback(settle)


async def attach_red_team(stack: contextlib.AsyncExitStack, repo: GitRepo, prepared: PreparedReview,
                          settings: Settings, parts: CourtParts, say: ProgressFn) -> None:
    """The MCTS Red Agent: on in ``auto`` and ``on``; without a sandbox it analyses statically and says so."""
    if settings.red_team == "off":
        parts.red_team_missing = "the red agent is turned off (LOGOMESH_RED_TEAM=off)"
        return
    from app.review.red import RedTeamUnavailable, ReportingRedTeam, scanner_sources
    from checks.red import MCTSRedTeam

    try:
        sources, notice = scanner_sources(required=settings.red_team == "on")
    except RedTeamUnavailable as exc:  # LogoMesh's own gap: the review goes on and says why red did not run
        parts.red_team_missing = str(exc)
        say(f"notice: {exc}")
        return
    if notice:
        say(f"notice: {notice}")
    parts.red_team = ReportingRedTeam(MCTSRedTeam(sources=sources), say)
    if parts.sandbox is None:
        say("notice: red agent: no sandbox, so findings stay unconfirmed static findings "
            f"({parts.sandbox_missing})")


def llm_judges(stack: contextlib.AsyncExitStack, settings: Settings, personas: Iterable[str],
               fallbacks: Mapping[str, Judge], digest: DigestBuilder | None = None) -> tuple[list[Judge], str | None]:
    """``(judges, notice)``: an LLM judge per persona when an LLM provider is configured (``anthropic`` with a key,
    ``openai``), sharing one client from :func:`app.llm.make_llm_client` (closed by ``stack``) and one budget, each
    with its offline persona from ``fallbacks`` to rule when the provider cannot be reached; ``([], None)``
    offline; ``([], why)`` when the provider cannot be used. An unknown provider raises ``SettingsError``."""
    if settings.llm_provider == "offline":
        return [], None
    from app.llm import make_llm_client, missing_key, prompt_nonce_key, review_budget
    from checks.judges.digest import DigestBudget, build_digest
    from checks.judges.llm import LLMJudge

    notice = missing_key(settings)
    if notice is not None:
        return [], notice
    client = make_llm_client(settings, review_budget(settings))
    stack.push_async_callback(client.aclose)
    api_key = settings.llm_key()
    digest_budget = DigestBudget.scaled(settings.llm_digest_chars)
    nonce_key = prompt_nonce_key(settings)
    return [
        LLMJudge(persona, client, nonce_key=nonce_key, fallback=fallbacks.get(persona), budget=digest_budget,
                 known_secrets=(api_key,) if api_key else (), digest=digest or build_digest)
        for persona in personas
    ], None


async def attach_judges(stack: contextlib.AsyncExitStack, repo: GitRepo, prepared: PreparedReview,
                        settings: Settings, parts: CourtParts, say: ProgressFn) -> None:
    """The rubric's judges: its deterministic offline personas unless an LLM provider is configured
    (:func:`llm_judges`)."""
    from checks.judges import offline_judges

    personas = list(prepared.rubric.judges)
    offline = {judge.persona: judge for judge in offline_judges(personas)}
    judges, notice = llm_judges(stack, settings, personas, offline)
    if notice is not None:
        parts.notices.append(notice)
        say(f"notice: {notice}")
    if judges:
        parts.judges = judges
        say(f"judges: {', '.join(prepared.rubric.judges)} on {settings.llm_provider} {settings.llm_model}")
        return
    parts.judges = list(offline.values())  # the rubric's personas, offline
    for missing in (p for p in personas if p not in offline):
        parts.notices.append(f"the rubric's judge {missing} has no offline persona; the court ruled without it")


# The slow, independent attachers run together: Docker and the git objects the sandbox packs, while the embedding
# model loads in its thread. The rest run after them, in order: the red agent reads ``parts.sandbox``.
CONCURRENT_ATTACHERS: tuple[Attacher, ...] = (attach_sandbox, attach_embedder)
SEQUENTIAL_ATTACHERS: tuple[Attacher, ...] = (attach_red_team, attach_judges)
ATTACHERS: tuple[Attacher, ...] = CONCURRENT_ATTACHERS + SEQUENTIAL_ATTACHERS


async def attach_together(attachers: Sequence[Attacher], stack: contextlib.AsyncExitStack, repo: GitRepo,
                          prepared: PreparedReview, settings: Settings, parts: CourtParts, say: ProgressFn) -> None:
    """Run ``attachers`` concurrently, as if one after another for everything but the clock.

    Each attacher's messages are held and said in the attachers' order, so the output does not depend on which
    finished first. None is cancelled when another fails: each runs to its end, so whatever it opened is on
    ``stack`` and gets closed. Then the first failure, in the attachers' order, is raised; later ones become
    notes on it.
    """
    import asyncio

    said: list[list[str]] = [[] for _ in attachers]
    try:
        outcomes = await asyncio.gather(
            *(attach(stack, repo, prepared, settings, parts, messages.append)
              for attach, messages in zip(attachers, said, strict=True)),
            return_exceptions=True)
    finally:
        for messages in said:
            for message in messages:
                say(message)
    failures = [outcome for outcome in outcomes if isinstance(outcome, BaseException)]
    if failures:
        first = failures[0]
        for other in failures[1:]:
            first.add_note(f"also failed while attaching: {type(other).__name__}: {other}")
        raise first


@contextlib.asynccontextmanager
async def court_parts(
    repo: GitRepo, prepared: PreparedReview, settings: Settings, progress: ProgressFn | None = None
) -> AsyncIterator[CourtParts]:
    """The adapters for one review, each chosen by settings and availability, released afterwards."""
    say = progress or (lambda _msg: None)
    parts = CourtParts(rejection_first=prepared.config.rejection_first)
    async with contextlib.AsyncExitStack() as stack:
        await attach_together(CONCURRENT_ATTACHERS, stack, repo, prepared, settings, parts, say)
        for attach in SEQUENTIAL_ATTACHERS:
            await attach(stack, repo, prepared, settings, parts, say)
        yield parts


async def review_repository(
    path: str | Path,
    base: str,
    head: str,
    *,
    settings: Settings,
    title: str = "",
    body: str = "",
    config_text: str | None = None,
    config_source: str = CONFIG_FILE,
    progress: ProgressFn | None = None,
) -> tuple[Evaluation, PreparedReview]:
    """``config_source`` names ``config_text`` in errors (the ``--config`` path)."""
    repo = GitRepo.open(path)
    prepared = prepare(repo, base, head, settings=settings, title=title, body=body, config_text=config_text,
                       config_source=config_source)
    async with court_parts(repo, prepared, settings, progress) as parts:
        if progress:
            progress(f"reviewing {prepared.case.base_sha[:12]}..{prepared.case.head_sha[:12]} "
                     f"({len(prepared.case.files)} files)")
            report_progress(parts, progress)
        evaluation = await review(prepared.case, prepared.rubric, parts)
    return evaluation, prepared


def read_config_file(path: Path) -> str:
    return Path(path).read_text(encoding="utf-8")


__all__ = ["PreparedReview", "RepoConfig", "court_parts", "prepare", "read_config_file", "review_repository"]
