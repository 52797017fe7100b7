"""A fake GitHub on loopback: the 17 REST operations LogoMesh calls, validated strictly against GitHub's
official schemas (``github-rest-subset.json``), plus git smart HTTP through ``git http-backend``.

Pull-request reviews are held as GitHub holds them: a review's line comments must sit on lines of the pull
request's diff (right side: added or context lines of ``git diff base...head``), else 422 as GitHub answers; a
COMMENT or REQUEST_CHANGES review needs a body; review comments are listed and edited by id.

It records every call, checks App JWTs (RS256, signed by the App key) and installation tokens, and fails on
demand (``fail("checks/update", status=500)``, ``status=403`` with ``retry-after`` for a secondary rate limit,
``status=404``).
"""

from __future__ import annotations

import asyncio
import base64
import copy
import itertools
import json
import re
import secrets
import subprocess
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import jsonschema
import jwt
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "github"
SPEC = FIXTURES / "github-rest-subset.json"


def openapi_to_jsonschema(schema: Any) -> Any:
    """OpenAPI 3.0 → JSON Schema: ``nullable`` becomes a null alternative, ``discriminator`` is dropped."""
    if isinstance(schema, list):
        return [openapi_to_jsonschema(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: openapi_to_jsonschema(v) for k, v in schema.items() if k not in ("discriminator", "nullable")}
    if schema.get("nullable"):
        return {"anyOf": [out, {"type": "null"}]}
    return out


@dataclass
class Operation:
    op_id: str
    method: str
    pattern: re.Pattern[str]
    params: list[dict[str, Any]]
    body_schema: dict[str, Any] | None
    body_required: bool


@dataclass
class Call:
    op_id: str
    method: str
    path: str
    path_params: dict[str, Any]
    query: dict[str, Any]
    body: Any
    status: int


@dataclass
class Failure:
    status: int
    times: int
    retry_after: int | None = None


def load_operations() -> list[Operation]:
    spec = json.loads(SPEC.read_text())
    ops = []
    for op_id, op in spec.items():
        if op_id.startswith("_"):
            continue
        regex = re.sub(r"\{(\w+)\}", lambda m: f"(?P<{m.group(1)}>{'.+' if m.group(1) == 'path' else '[^/]+'})",
                       op["path"])
        body = op.get("requestBody")
        schema = None
        if body:
            schema = openapi_to_jsonschema(body["content"]["application/json"])
        ops.append(Operation(op_id, op["method"].upper(), re.compile(f"^{regex}$"),
                             [openapi_to_jsonschema(p) for p in op.get("parameters", [])], schema,
                             bool(body and body.get("required"))))
    return ops


class SchemaError(Exception):
    pass


def _coerce(value: str, schema: dict[str, Any]) -> Any:
    kinds = schema.get("type")
    if kinds == "integer" or (isinstance(kinds, list) and "integer" in kinds):
        if not re.fullmatch(r"-?\d+", value):
            raise SchemaError(f"{value!r} is not an integer")
        return int(value)
    if kinds == "boolean":
        return {"true": True, "false": False}.get(value, value)
    return value


@dataclass
class FakeGitHub:
    app_id: int
    public_key_pem: str
    repos_root: Path
    operations: list[Operation] = field(default_factory=load_operations)
    calls: list[Call] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    failures: dict[str, list[Failure]] = field(default_factory=dict)
    tokens: dict[str, int] = field(default_factory=dict)
    check_runs: dict[int, dict[str, Any]] = field(default_factory=dict)
    created_at: dict[int, float] = field(default_factory=dict)  # check run id → when it was created (monotonic)
    comments: dict[int, dict[str, Any]] = field(default_factory=dict)
    reviews: dict[int, dict[str, Any]] = field(default_factory=dict)
    review_comments: dict[int, dict[str, Any]] = field(default_factory=dict)
    reactions: list[dict[str, Any]] = field(default_factory=list)
    pulls: dict[tuple[str, int], dict[str, Any]] = field(default_factory=dict)
    permissions: dict[tuple[str, str], str] = field(default_factory=dict)
    manifest_codes: dict[str, dict[str, Any]] = field(default_factory=dict)
    git_requests: list[dict[str, Any]] = field(default_factory=list)
    on_first_git_request: Any = None
    ghes_calls: int = 0
    slug: str = "logomesh"
    git_failures: int = 0  # answer this many git requests with a 500 first
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1000))

    # --- test API ------------------------------------------------------------------------------------------

    def fail(self, op_id: str, status: int, times: int = 1, retry_after: int | None = None) -> None:
        self.failures.setdefault(op_id, []).append(Failure(status, times, retry_after))

    def add_pull(self, repo: str, number: int, *, head: str, base: str, title: str, body: str | None,
                 state: str = "open") -> None:
        self.pulls[(repo, number)] = {"repo": repo, "number": number, "head": head, "base": base, "title": title,
                                      "body": body, "state": state}

    def posted(self, op_id: str) -> list[Call]:
        return [c for c in self.calls if c.op_id == op_id and c.status < 400]

    def check_runs_for(self, head_sha: str) -> list[dict[str, Any]]:
        return [r for r in self.check_runs.values() if r["head_sha"] == head_sha]

    # --- the server ----------------------------------------------------------------------------------------

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/{rest:path}", self.dispatch,
                                       methods=["GET", "POST", "PATCH", "PUT", "DELETE"])])

    async def dispatch(self, request: Request) -> Response:
        path = request.url.path
        if path.startswith("/api/v3/"):  # GitHub Enterprise Server serves the REST API under /api/v3
            path = path[len("/api/v3"):]
            self.ghes_calls += 1
        if ".git/" in path:
            return await self.git(request)
        for op in self.operations:
            match = op.pattern.match(path)
            if match and op.method == request.method:
                break
        else:
            self.errors.append(f"no operation for {request.method} {path}")
            return JSONResponse({"message": "Not Found"}, status_code=404)
        raw = await request.body()
        try:
            path_params, query, body = self.validate(op, match.groupdict(), request, raw)
        except SchemaError as exc:
            self.errors.append(f"{op.op_id}: {exc}")
            self.calls.append(Call(op.op_id, request.method, path, {}, {}, None, 422))
            return JSONResponse({"message": f"Validation Failed: {exc}"}, status_code=422)
        auth_error = self.authenticate(op, request)
        if auth_error is not None:
            self.calls.append(Call(op.op_id, request.method, path, path_params, query, body, 401))
            return JSONResponse({"message": auth_error}, status_code=401)
        queue = self.failures.get(op.op_id)
        if queue:
            failure = queue[0]
            failure.times -= 1
            if failure.times <= 0:
                queue.pop(0)
            self.calls.append(Call(op.op_id, request.method, path, path_params, query, body, failure.status))
            headers = {}
            message = "Server Error"
            if failure.status == 403:
                message = "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."
                headers = {"retry-after": str(failure.retry_after or 1)}
            elif failure.status == 404:
                message = "Not Found"
            return JSONResponse({"message": message}, status_code=failure.status, headers=headers)
        handler = getattr(self, "op_" + op.op_id.replace("/", "_").replace("-", "_"))
        status, answer = handler(path_params, query, body, request)
        self.calls.append(Call(op.op_id, request.method, path, path_params, query, body, status))
        return JSONResponse(answer, status_code=status)

    def validate(self, op: Operation, raw_params: dict[str, str], request: Request,
                 raw: bytes) -> tuple[dict[str, Any], dict[str, Any], Any]:
        path_params: dict[str, Any] = {}
        query: dict[str, Any] = {}
        known_query = {p["name"] for p in op.params if p["in"] == "query"}
        unknown = set(request.query_params) - known_query
        if unknown:
            raise SchemaError(f"unknown query parameters {sorted(unknown)}")
        for param in op.params:
            schema = param.get("schema", {})
            if param["in"] == "path":
                value: Any = _coerce(raw_params[param["name"]], schema)
                path_params[param["name"]] = value
            elif param["in"] == "query":
                if param["name"] not in request.query_params:
                    if param.get("required"):
                        raise SchemaError(f"missing query parameter {param['name']}")
                    continue
                value = _coerce(request.query_params[param["name"]], schema)
                query[param["name"]] = value
            else:
                continue
            try:
                jsonschema.validate(value, schema, cls=jsonschema.Draft7Validator)
            except jsonschema.ValidationError as exc:
                raise SchemaError(f"parameter {param['name']}: {exc.message}") from exc
        body: Any = None
        if raw:
            try:
                body = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise SchemaError("body is not JSON") from exc
        if op.body_schema is None:
            if body not in (None, {}):
                raise SchemaError("this operation takes no body")
        else:
            if body is None and op.body_required:
                raise SchemaError("body required")
            if body is not None:
                try:
                    jsonschema.validate(body, op.body_schema, cls=jsonschema.Draft7Validator)
                except jsonschema.ValidationError as exc:
                    where = "/".join(str(p) for p in exc.absolute_path)
                    raise SchemaError(f"body {where}: {exc.message}") from exc
        return path_params, query, body

    def authenticate(self, op: Operation, request: Request) -> str | None:
        header = request.headers.get("authorization", "")
        if op.op_id == "apps/create-from-manifest":
            return None
        if op.op_id.startswith("apps/"):
            if not header.startswith("Bearer "):
                return "A JSON web token could not be decoded"
            try:
                claims = jwt.decode(header[7:], self.public_key_pem, algorithms=["RS256"])
            except jwt.PyJWTError as exc:
                return f"bad JWT: {exc}"
            if str(claims.get("iss")) != str(self.app_id):
                return "JWT issuer is not this App"
            return None
        token = header.removeprefix("token ").removeprefix("Bearer ")
        if token not in self.tokens:
            return "Bad credentials"
        return None

    # --- operations ------------------------------------------------------------------------------------------

    def _check_run_json(self, run: dict[str, Any]) -> dict[str, Any]:
        return copy.deepcopy(run)

    def op_apps_create_installation_access_token(self, pp: dict[str, Any], q: dict[str, Any], body: Any,
                                                 r: Request) -> tuple[int, Any]:
        token = "ghs_" + secrets.token_hex(18)
        self.tokens[token] = pp["installation_id"]
        expires = (datetime.now(UTC) + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
        return 201, {"token": token, "expires_at": expires, "permissions": {"checks": "write"},
                     "repository_selection": "all"}

    def op_apps_get_authenticated(self, pp: dict[str, Any], q: dict[str, Any], body: Any,
                                  r: Request) -> tuple[int, Any]:
        owner = {"login": "octo", "id": 1, "node_id": "MDQ6VXNlcjE=", "avatar_url": "https://example.invalid/a",
                 "gravatar_id": None, "url": "https://api.github.com/users/octo",
                 "html_url": "https://github.com/octo", "followers_url": "", "following_url": "", "gists_url": "",
                 "starred_url": "", "subscriptions_url": "", "organizations_url": "", "repos_url": "",
                 "events_url": "", "received_events_url": "", "type": "Organization", "site_admin": False}
        return 200, {"id": self.app_id, "slug": self.slug, "node_id": "A_1", "client_id": "Iv1.test", "owner": owner,
                     "name": "LogoMesh", "description": "", "external_url": "https://example.invalid",
                     "html_url": f"https://github.com/apps/{self.slug}", "created_at": "2026-01-01T00:00:00Z",
                     "updated_at": "2026-01-01T00:00:00Z", "permissions": {"checks": "write"},
                     "events": ["pull_request"], "installations_count": 1}

    def op_apps_create_from_manifest(self, pp: dict[str, Any], q: dict[str, Any], body: Any,
                                     r: Request) -> tuple[int, Any]:
        data = self.manifest_codes.pop(pp["code"], None)
        if data is None:
            return 404, {"message": "Not Found"}
        return 201, data

    def op_checks_list_for_ref(self, pp: dict[str, Any], q: dict[str, Any], body: Any,
                               r: Request) -> tuple[int, Any]:
        repo = f"{pp['owner']}/{pp['repo']}"
        runs = [self._check_run_json(c) for c in self.check_runs.values()
                if c["repo"] == repo and c["head_sha"] == pp["ref"]
                and ("check_name" not in q or c["name"] == q["check_name"])]
        return 200, {"total_count": len(runs), "check_runs": runs}

    def op_checks_create(self, pp: dict[str, Any], q: dict[str, Any], body: Any, r: Request) -> tuple[int, Any]:
        run_id = next(self._ids)
        run = {"id": run_id, "repo": f"{pp['owner']}/{pp['repo']}", "conclusion": None, "status": "queued",
               "output": {}, "annotations": [], "history": [], **body}
        self.created_at[run_id] = time.monotonic()
        run["annotations"] = list((body.get("output") or {}).get("annotations", []))
        run["history"] = [copy.deepcopy(body)]
        self.check_runs[run_id] = run
        return 201, self._check_run_json(run)

    def op_checks_update(self, pp: dict[str, Any], q: dict[str, Any], body: Any, r: Request) -> tuple[int, Any]:
        run = self.check_runs.get(pp["check_run_id"])
        if run is None:
            return 404, {"message": "Not Found"}
        run["history"].append(copy.deepcopy(body))
        output = body.get("output")
        if output:
            run["annotations"].extend(output.get("annotations", []))
        run.update({k: v for k, v in body.items() if k != "output"})
        if output:
            run["output"] = {k: v for k, v in output.items() if k != "annotations"}
        return 200, self._check_run_json(run)

    def op_issues_list_comments(self, pp: dict[str, Any], q: dict[str, Any], body: Any,
                                r: Request) -> tuple[int, Any]:
        repo = f"{pp['owner']}/{pp['repo']}"
        items = [c for c in self.comments.values() if c["repo"] == repo and c["issue_number"] == pp["issue_number"]]
        per_page, page = q.get("per_page", 30), q.get("page", 1)
        return 200, items[(page - 1) * per_page: page * per_page]

    def op_issues_create_comment(self, pp: dict[str, Any], q: dict[str, Any], body: Any,
                                 r: Request) -> tuple[int, Any]:
        comment_id = next(self._ids)
        comment = {"id": comment_id, "repo": f"{pp['owner']}/{pp['repo']}", "issue_number": pp["issue_number"],
                   "body": body["body"], "user": {"login": f"{self.slug}[bot]", "type": "Bot"}, "edits": 0}
        self.comments[comment_id] = comment
        return 201, comment

    def op_issues_update_comment(self, pp: dict[str, Any], q: dict[str, Any], body: Any,
                                 r: Request) -> tuple[int, Any]:
        comment = self.comments.get(pp["comment_id"])
        if comment is None:
            return 404, {"message": "Not Found"}
        comment["body"] = body["body"]
        comment["edits"] += 1
        return 200, comment

    def op_pulls_get(self, pp: dict[str, Any], q: dict[str, Any], body: Any, r: Request) -> tuple[int, Any]:
        pr = self.pulls.get((f"{pp['owner']}/{pp['repo']}", pp["pull_number"]))
        if pr is None:
            return 404, {"message": "Not Found"}
        return 200, {"number": pr["number"], "state": pr["state"], "title": pr["title"], "body": pr["body"],
                     "draft": False, "head": {"sha": pr["head"], "ref": "feature"},
                     "base": {"sha": pr["base"], "ref": "main"}}

    def op_pulls_list_files(self, pp: dict[str, Any], q: dict[str, Any], body: Any, r: Request) -> tuple[int, Any]:
        return 200, []

    def diff_lines(self, repo: str, base: str, head: str) -> dict[str, set[int]]:
        """The right-side lines of the PR's diff GitHub lets a review comment on: added and context lines."""
        owner, name = repo.split("/")
        out = subprocess.run(["git", "-c", "core.quotePath=false", "-C", str(self.repos_root / owner / f"{name}.git"),
                              "diff", "--no-color",
                              "--no-renames", f"{base}...{head}"], check=True, capture_output=True, text=True).stdout
        lines: dict[str, set[int]] = {}
        path, number = "", 0
        for text in out.splitlines():
            if text.startswith("+++ "):
                path = text[6:] if text.startswith("+++ b/") else ""
            elif text.startswith("@@"):
                number = int(re.match(r"@@ -\d+(?:,\d+)? \+(\d+)", text).group(1))  # type: ignore[union-attr]
            elif path and text[:1] in ("+", " ") and not text.startswith("+++"):
                lines.setdefault(path, set()).add(number)
                number += 1
        return lines

    def op_pulls_create_review(self, pp: dict[str, Any], q: dict[str, Any], body: Any,
                               r: Request) -> tuple[int, Any]:
        repo = f"{pp['owner']}/{pp['repo']}"
        pr = self.pulls.get((repo, pp["pull_number"]))
        if pr is None:
            return 404, {"message": "Not Found"}
        body = body or {}
        if body.get("event") in ("COMMENT", "REQUEST_CHANGES") and not body.get("body"):
            return 422, {"message": "Unprocessable Entity", "errors": ["Body is required for this event"]}
        commit = body.get("commit_id", pr["head"])
        diff = self.diff_lines(repo, pr["base"], commit)
        for c in body.get("comments", []):
            if "line" not in c or c.get("side", "RIGHT") != "RIGHT" or c["line"] not in diff.get(c["path"], set()):
                self.errors.append(f"pulls/create-review: line {c.get('line')} of {c['path']} is not in the diff")
                return 422, {"message": "Unprocessable Entity", "errors": ["Line could not be resolved"]}
        review_id = next(self._ids)
        login = f"{self.slug}[bot]"
        review = {"id": review_id, "repo": repo, "pull_number": pp["pull_number"], "commit_id": commit,
                  "state": {"COMMENT": "COMMENTED", "REQUEST_CHANGES": "CHANGES_REQUESTED",
                            "APPROVE": "APPROVED"}.get(body.get("event", ""), "PENDING"),
                  "event": body.get("event"), "body": body.get("body", ""), "user": {"login": login, "type": "Bot"}}
        self.reviews[review_id] = review
        for c in body.get("comments", []):
            comment_id = next(self._ids)
            self.review_comments[comment_id] = {
                "id": comment_id, "repo": repo, "pull_number": pp["pull_number"], "pull_request_review_id": review_id,
                "commit_id": commit, "path": c["path"], "line": c["line"], "side": "RIGHT", "body": c["body"],
                "user": {"login": login, "type": "Bot"}, "edits": 0}
        return 200, {k: v for k, v in review.items() if k != "repo"}

    def op_pulls_list_review_comments(self, pp: dict[str, Any], q: dict[str, Any], body: Any,
                                      r: Request) -> tuple[int, Any]:
        repo = f"{pp['owner']}/{pp['repo']}"
        items = [c for c in self.review_comments.values()
                 if c["repo"] == repo and c["pull_number"] == pp["pull_number"]]
        per_page, page = q.get("per_page", 30), q.get("page", 1)
        return 200, items[(page - 1) * per_page: page * per_page]

    def op_pulls_update_review_comment(self, pp: dict[str, Any], q: dict[str, Any], body: Any,
                                       r: Request) -> tuple[int, Any]:
        comment = self.review_comments.get(pp["comment_id"])
        if comment is None or comment["repo"] != f"{pp['owner']}/{pp['repo']}":
            return 404, {"message": "Not Found"}
        comment["body"] = body["body"]
        comment["edits"] += 1
        return 200, comment

    def op_repos_get_collaborator_permission_level(self, pp: dict[str, Any], q: dict[str, Any], body: Any,
                                                   r: Request) -> tuple[int, Any]:
        perm = self.permissions.get((f"{pp['owner']}/{pp['repo']}", pp["username"]))
        if perm is None:
            return 404, {"message": "Not Found"}
        return 200, {"permission": perm, "role_name": perm, "user": {"login": pp["username"]}}

    def op_repos_get_content(self, pp: dict[str, Any], q: dict[str, Any], body: Any, r: Request) -> tuple[int, Any]:
        return 404, {"message": "Not Found"}

    def op_reactions_create_for_issue_comment(self, pp: dict[str, Any], q: dict[str, Any], body: Any,
                                              r: Request) -> tuple[int, Any]:
        reaction = {"id": next(self._ids), "comment_id": pp["comment_id"], "content": body["content"]}
        self.reactions.append(reaction)
        return 201, reaction

    # --- git smart HTTP ------------------------------------------------------------------------------------

    async def git(self, request: Request) -> Response:
        header = request.headers.get("authorization", "")
        token = ""
        if header.startswith("Basic "):
            _user, _, token = base64.b64decode(header[6:]).decode().partition(":")
        self.git_requests.append({"path": request.url.path, "authorized": token in self.tokens,
                                  "url_has_credentials": "@" in str(request.url.netloc)})
        if token not in self.tokens:
            return Response("Authentication failed", status_code=401,
                            headers={"WWW-Authenticate": 'Basic realm="GitHub"'})
        if self.git_failures > 0:
            self.git_failures -= 1
            self.git_requests[-1]["status"] = 500
            return Response("Internal Server Error", status_code=500)
        if self.on_first_git_request is not None:
            hook, self.on_first_git_request = self.on_first_git_request, None
            await asyncio.to_thread(hook)
        body = await request.body()
        env = {
            "GIT_PROJECT_ROOT": str(self.repos_root), "GIT_HTTP_EXPORT_ALL": "1",
            "PATH_INFO": request.url.path, "REQUEST_METHOD": request.method,
            "QUERY_STRING": request.url.query, "CONTENT_TYPE": request.headers.get("content-type", ""),
            "CONTENT_LENGTH": str(len(body)), "REMOTE_USER": "x-access-token", "REMOTE_ADDR": "127.0.0.1",
            "PATH": "/usr/bin:/bin", "HOME": str(self.repos_root),
        }
        if "git-protocol" in request.headers:
            env["GIT_PROTOCOL"] = request.headers["git-protocol"]
        if "content-encoding" in request.headers:
            env["HTTP_CONTENT_ENCODING"] = request.headers["content-encoding"]
        proc = await asyncio.create_subprocess_exec("git", "http-backend", env=env, stdin=asyncio.subprocess.PIPE,
                                                    stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, _err = await proc.communicate(body)
        head, _, payload = out.partition(b"\r\n\r\n")
        if not _:
            head, _, payload = out.partition(b"\n\n")
        status = 200
        headers: dict[str, str] = {}
        for line in head.decode("latin-1").splitlines():
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = int(value.strip().split()[0])
            elif name:
                headers[name.strip()] = value.strip()
        headers.pop("Content-Length", None)
        return Response(payload, status_code=status, headers=headers)
