"""LLM judges: one persona of the rubric, asked through an :class:`~checks.protocols.LLMClient`.

Per review and persona: build the digest (largest risk first, budgeted, redacted), wrap the PR's words in
nonce delimiters, force one call of a do-nothing tool whose input schema is the opinions list, validate the
answer with pydantic, and repair once. Then:

- a valid answer → the opinions, plus an evidence record of how they were obtained (model, response ids,
  prompt hash, tokens) for the DBOM;
- invalid twice → :class:`~checks.errors.JudgeError`: the court rules without this judge;
- the provider unreachable, refusing or over budget → the persona's offline judge rules instead, and the
  verdict's notices say so.

The nonce is an HMAC of the inputs under a secret key, so it is unpredictable to a PR author but the same
inputs give the same prompt (and prompt hash): the record stays reproducible.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from checks.errors import JudgeError, LLMError
from checks.judges.digest import DigestBudget, DigestBuilder, build_digest
from checks.judges.prompt import (
    MAX_ARGUMENT,
    RULES_MARKER,
    TOOL_DESCRIPTION,
    TOOL_NAME,
    OpinionsAnswer,
    answer_schema,
    derive_nonce,
    rehearing_prompt,
    repair_prompt,
    system_prompt,
    user_prompt,
)
from checks.llm_types import LLMReply, LLMRequest, LLMTurn, LLMUsage
from checks.models import Brief, Deliberation, Evidence, JudicialOpinion, sha256_text
from checks.protocols import Judge, LLMClient, Reconsidering
from checks.redaction import redact_secrets, truncate
from rubric import Rubric

RECORD_DETECTIVE = "judges"
WITHHELD = "[argument withheld: it quoted the judge's instructions]"


def _errors(exc: ValidationError) -> list[str]:
    return [f"{'.'.join(str(p) for p in e['loc']) or 'answer'}: {e['msg']}" for e in exc.errors()]


def inert_argument(text: str, withheld_markers: tuple[str, ...]) -> str:
    """Model text as the record keeps it: secrets out, one line, capped, and never a quote of its own prompt."""
    if any(marker and marker in text for marker in withheld_markers):
        return WITHHELD
    return truncate(" ".join(redact_secrets(text).split()), MAX_ARGUMENT) or "(no argument)"


def parse_answer(reply: LLMReply, rubric: Rubric, persona: str, evidence_ids: frozenset[str],
                 withheld_markers: tuple[str, ...] = ()) -> tuple[list[JudicialOpinion] | None, list[str]]:
    """Validate one reply: (opinions, []) when it is usable, (None, errors) when it is not."""
    if reply.tool_input is None:
        return None, [f"no call of {TOOL_NAME} (stop reason {reply.stop_reason})"]
    try:
        answer = OpinionsAnswer.model_validate(reply.tool_input)
    except ValidationError as exc:
        return None, _errors(exc)
    wanted = [c.id for c in rubric.criteria]
    got = [d.criterion_id for d in answer.opinions]
    errors = [f"unknown criterion id {cid[:40]!r}" for cid in got if cid not in wanted]
    errors += [f"criterion {cid!r} answered {got.count(cid)} times" for cid in wanted if got.count(cid) > 1]
    errors += [f"criterion {cid!r} missing" for cid in wanted if cid not in got]
    if errors:
        return None, errors
    opinions = [
        JudicialOpinion(
            judge=persona,
            criterion_id=d.criterion_id,
            score=d.score,
            argument=inert_argument(d.argument, withheld_markers),
            cited_evidence=tuple(dict.fromkeys(c for c in d.cited_evidence if c in evidence_ids)),
            verdict=d.verdict,
        )
        for d in answer.opinions
    ]
    return sorted(opinions, key=lambda o: wanted.index(o.criterion_id)), []


class LLMJudge:
    """A rubric persona judged by a language model, with its offline persona as the fallback."""

    def __init__(self, persona: str, client: LLMClient, *, nonce_key: bytes, fallback: Judge | None = None,
                 budget: DigestBudget | None = None, known_secrets: tuple[str, ...] = (),
                 digest: DigestBuilder = build_digest) -> None:
        if len(nonce_key) < 16:
            raise ValueError("nonce_key must hold at least 16 bytes")
        self.persona = persona
        self.client = client
        self.fallback = fallback
        self.budget = budget or DigestBudget()
        self._nonce_key = nonce_key
        self._known_secrets = known_secrets
        self._digest = digest
        self._fell_back: set[str] = set()  # the nonces of the cases the offline persona ruled: it re-hears them too

    def first_request(self, brief: Brief, rubric: Rubric) -> LLMRequest:
        """The first request this judge sends for ``brief`` (pure; exposed for tests and audits)."""
        if self.persona not in rubric.judges:
            raise JudgeError(self.persona, "the rubric has no instructions for this persona")
        nonce = self.nonce(brief, rubric)
        digest = self._digest(brief, self.budget, self._known_secrets)
        return LLMRequest(
            purpose=self.persona,
            system=system_prompt(rubric, self.persona, nonce, digest.subject),
            turns=(LLMTurn(role="user", text=user_prompt(rubric, brief, digest, nonce)),),
            tool_name=TOOL_NAME,
            tool_description=TOOL_DESCRIPTION,
            input_schema=answer_schema(rubric),
        )

    def nonce(self, brief: Brief, rubric: Rubric) -> str:
        case = brief.case
        return derive_nonce(self._nonce_key, self.persona, rubric.sha256, case.base_sha, case.head_sha,
                            case.intent_sha256, case.diff_sha256)

    async def deliberate(self, brief: Brief, rubric: Rubric) -> Deliberation:
        request = self.first_request(brief, rubric)
        evidence_ids = frozenset(e.id for e in brief.evidence)
        # An argument quoting the prompt's nonce or rules is an injection that worked; it is not published.
        markers = (self.nonce(brief, rubric), RULES_MARKER)
        replies: list[LLMReply] = []
        try:
            reply = await self.client.complete(request)
            replies.append(reply)
            opinions, errors = parse_answer(reply, rubric, self.persona, evidence_ids, markers)
            if opinions is None:
                repair = request.model_copy(update={"turns": (
                    *request.turns,
                    LLMTurn(role="assistant", text=self._echo(reply)),
                    LLMTurn(role="user", text=repair_prompt(errors)),
                )})
                reply = await self.client.complete(repair)
                replies.append(reply)
                opinions, errors = parse_answer(reply, rubric, self.persona, evidence_ids, markers)
        except LLMError as exc:
            return await self._fall_back(brief, rubric, request, replies, exc)
        if opinions is None:
            raise JudgeError(self.persona, f"{self.client.provider} gave no valid opinions after one repair "
                                           f"({'; '.join(errors[:3])}; responses "
                                           f"{', '.join(r.response_id for r in replies)})")
        return Deliberation(judge=self.persona, opinions=tuple(opinions),
                            evidence=(self._record(request, replies, outcome="answered"),))

    async def reconsider(self, brief: Brief, rubric: Rubric, first: Sequence[JudicialOpinion],
                         criteria: Sequence[str]) -> Deliberation:
        """The re-hearing (:mod:`checks.rehearing`): the first request, this judge's own first answer, then the
        bench's first-round opinions on ``criteria`` with their cited evidence, as untrusted data. One call, no
        repair: an invalid answer keeps the first opinion; an unreachable model hands the re-hearing to the
        offline persona's rule."""
        request = self.first_request(brief, rubric)
        nonce = self.nonce(brief, rubric)
        if nonce in self._fell_back and isinstance(self.fallback, Reconsidering):
            # the offline persona gave the first opinion, so its rule gives the second; the model is not asked
            return await self._fallback_reconsider(brief, rubric, first, criteria)
        own = [o for o in first if o.judge == self.persona]
        sent = json.dumps({"opinions": [{"criterion_id": o.criterion_id, "score": o.score, "argument": o.argument,
                                         "cited_evidence": list(o.cited_evidence), "verdict": o.verdict}
                                        for o in own]}, sort_keys=True)
        question = rehearing_prompt(rubric, brief, first, criteria, nonce,
                                    clean=lambda text: redact_secrets(text, self._known_secrets))
        again = request.model_copy(update={"turns": (*request.turns, LLMTurn(role="assistant", text=sent),
                                                     LLMTurn(role="user", text=question))})
        evidence_ids = frozenset(e.id for e in brief.evidence)
        try:
            reply = await self.client.complete(again)
        except LLMError as exc:
            reason = truncate(" ".join(exc.message.split()), 200)
            record = self._record(again, [], outcome="fell-back", reason=reason, stage="rehearing")
            if not isinstance(self.fallback, Reconsidering):
                raise JudgeError(self.persona, f"{self.client.provider} failed on re-hearing: {reason}") from exc
            answer = await self._fallback_reconsider(brief, rubric, first, criteria)
            return answer.model_copy(update={"evidence": (record,), "notices": (
                f"{self.client.provider} failed for the {self.persona} judge on re-hearing ({reason}); the offline "
                f"{self.persona}'s rule reconsidered instead",)})
        parsed, errors = parse_answer(reply, rubric, self.persona, evidence_ids, (nonce, RULES_MARKER))
        if parsed is None:
            raise JudgeError(self.persona, f"{self.client.provider} gave no valid opinions on re-hearing "
                                           f"({'; '.join(errors[:3])}; response {reply.response_id})")
        return Deliberation(judge=self.persona, opinions=tuple(o for o in parsed if o.criterion_id in criteria),
                            evidence=(self._record(again, [reply], outcome="answered", stage="rehearing"),))

    async def _fallback_reconsider(self, brief: Brief, rubric: Rubric, first: Sequence[JudicialOpinion],
                                   criteria: Sequence[str]) -> Deliberation:
        assert isinstance(self.fallback, Reconsidering)
        answer = await self.fallback.reconsider(brief, rubric, first, criteria)
        opinions = answer.opinions if isinstance(answer, Deliberation) else tuple(answer)
        return Deliberation(judge=self.persona, opinions=tuple(opinions))

    @staticmethod
    def _echo(reply: LLMReply) -> str:
        """What the model sent, as a short assistant turn for the repair request."""
        sent = json.dumps(reply.tool_input, sort_keys=True) if reply.tool_input is not None else reply.text
        return truncate(redact_secrets(sent or "(nothing)"), 2000)

    async def _fall_back(self, brief: Brief, rubric: Rubric, request: LLMRequest, replies: list[LLMReply],
                         exc: LLMError) -> Deliberation:
        reason = truncate(" ".join(exc.message.split()), 200)
        if self.fallback is None:
            raise JudgeError(self.persona, f"{self.client.provider} failed: {reason}") from exc
        self._fell_back.add(self.nonce(brief, rubric))
        answer = await self.fallback.deliberate(brief, rubric)
        opinions = answer.opinions if isinstance(answer, Deliberation) else tuple(answer)
        notice = (f"{self.client.provider} failed for the {self.persona} judge ({reason}); "
                  f"the offline {self.persona} ruled instead")
        return Deliberation(judge=self.persona, opinions=tuple(opinions), notices=(notice,),
                            evidence=(self._record(request, replies, outcome="fell-back", reason=reason),))

    def _record(self, request: LLMRequest, replies: list[LLMReply], *, outcome: str,
                reason: str | None = None, stage: str = "hearing") -> Evidence:
        usage = sum((r.usage for r in replies), LLMUsage())
        facts: dict[str, Any] = {
            "provider": self.client.provider,
            "model": self.client.model_id,
            "models_answering": sorted({r.model for r in replies}),
            "response_ids": [r.response_id for r in replies],
            "prompt_sha256": sha256_text(request.system + "\x00" + "\x00".join(t.text for t in request.turns)),
            "schema_sha256": sha256_text(json.dumps(request.input_schema, sort_keys=True)),
            "calls": len(replies),
            # per call, what the request carried: {"temperature": 0, "seed": 42}, or {} where the provider
            # accepts no sampling parameter (Anthropic's API 2026-10-21)
            "sampling": [dict(r.sampling) for r in replies],
            "http_attempts": sum(r.attempts for r in replies),
            "repaired": len(replies) > 1,
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "outcome": outcome,
            "stage": stage,
        }
        if reason:
            facts["reason"] = reason
        if outcome == "answered":
            summary = (f"{self.persona} judged by {self.client.provider} {self.client.model_id} in {len(replies)} "
                       f"call(s), {usage.input_tokens} input and {usage.output_tokens} output tokens")
        else:
            summary = f"{self.persona}: {self.client.provider} failed ({reason}); the offline persona ruled"
        if stage != "hearing":
            summary = f"{stage}: {summary}"
        suffix = "llm" if stage == "hearing" else f"llm-{stage}"
        return Evidence(id=f"{RECORD_DETECTIVE}.{self.persona}.{suffix}", detective=RECORD_DETECTIVE,
                        kind="llm-exchange", summary=summary, severity="info", facts=facts)
