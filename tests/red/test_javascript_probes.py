"""The Red Agent on JavaScript and TypeScript sinks: hypotheses from the syntax tree, each confirmed (or not) by a node
program that really runs the changed module (in a throwaway copy, see conftest; the Docker path is
``tests/sandbox/test_javascript_probes.py``)."""

from __future__ import annotations

import shutil

import pytest

from checks.red import collect_hypotheses
from checks.red.js_targets import hypotheses
from rubric import Rubric
from tests.red.conftest import Attack
from tests.red.fixtures import make_case

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")

# A stand-in of node-serialize 0.0.4's reader: a value that starts with its function flag is evaluated, as the
# package does (`eval('(' + value.substring(FLAG.length) + ')')`).
NODE_SERIALIZE = '''const FLAG = '_$$ND_FUNC$$_';
exports.unserialize = function (text) {
  const data = typeof text === 'string' ? JSON.parse(text) : text;
  for (const key of Object.keys(data)) {
    if (typeof data[key] === 'string' && data[key].indexOf(FLAG) === 0) {
      data[key] = eval('(' + data[key].substring(FLAG.length) + ')');
    }
  }
  return data;
};
'''

# name: (path, source, (kind, severity, confirmed))
VULNERABLE = {
    "command": ("lib/files.js", """const { exec } = require('child_process');

function listDir(dir, done) {
  const command = 'ls ' + dir;
  exec(command, (error, out) => done(out));
}

module.exports = { listDir };
""", ("command-injection", "critical", True)),
    "command-esm": ("lib/files.mjs", """import { execSync } from 'node:child_process';

export function count(pattern) {
  return execSync(`ls ${pattern} | wc -l`).toString();
}
""", ("command-injection", "critical", True)),
    "class-method": ("lib/runner.js", """const { exec } = require('child_process');

class Runner {
  constructor(program) {
    this.program = program || 'ls';
  }

  run(dir) {
    return exec(this.program + ' ' + dir);
  }
}

module.exports = { Runner };
""", ("command-injection", "critical", True)),
    "class-static-esm": ("lib/shell.mjs", """import { execSync } from 'node:child_process';

export default class Shell {
  static echo(line) {
    return execSync('echo ' + line).toString();
  }
}
""", ("command-injection", "critical", True)),
    "eval": ("lib/discount.js", """exports.apply = function (price, rule) {
  return price * eval(rule);
};
""", ("code-injection", "critical", True)),
    "vm": ("lib/template.js", """const vm = require('vm');

module.exports.render = (expression) => vm.runInNewContext(expression, { total: 3 });
""", ("code-injection", "critical", True)),
    "deserialize": ("lib/session.js", """const serialize = require('node-serialize');

exports.load = function (cookie) {
  return serialize.unserialize(cookie);
};
""", ("deserialization", "critical", True)),
    "sql": ("lib/users.js", """async function findUser(db, name) {
  return db.query("SELECT id FROM users WHERE name = '" + name + "'");
}

module.exports = { findUser };
""", ("sql-injection", "high", True)),
    "path": ("lib/uploads.js", """const fs = require('fs');
const path = require('path');

module.exports = function download(req, res) {
  fs.readFile(path.join(__dirname, 'uploads', req.params.name), (error, data) => res.send(data));
};
""", ("path-traversal", "high", True)),
    # an Express route's handler, which no export names: the probe runs the route through a recording Express
    "express-route": ("app.js", """const express = require('express');
const { exec } = require('child_process');

const app = express();
app.use(express.json());
app.get('/health', (req, res) => res.send('ok'));
app.get('/files', (req, res) => {
  exec('ls ' + req.query.dir, (error, out) => res.send(out));
});
app.listen(3000);
""", ("command-injection", "critical", True)),
    # routes set up by an exported factory that builds its own app
    "express-factory": ("lib/server.js", """const express = require('express');
const { exec } = require('child_process');

function createServer(options) {
  const app = express();
  app.get('/ping', (req, res) => {
    exec('ping -c 1 ' + req.query.host, (error, out) => res.send(out));
  });
  return app;
}

module.exports = { createServer, version: '1.0.0' };
""", ("command-injection", "critical", True)),
    # the same in an ES module, which imports Express
    "express-esm": ("server.mjs", """import express, { json } from 'express';
import { execSync } from 'node:child_process';

const app = express();
app.use(json());
app.post('/count', (req, res) => {
  res.send(execSync(`ls ${req.body.pattern} | wc -l`).toString());
});
export default app;
""", ("command-injection", "critical", True)),
    # routes registered on the app the module is given, behind a middleware that lets the request through
    "express-setup": ("routes/run.js", """const { exec } = require('child_process');
const express = require('express');

function signedIn(req, res, next) {
  req.user = 'someone';
  next();
}

module.exports = function routes(app) {
  const router = express.Router();
  router.route('/run').post(signedIn, (request, response) => {
    exec('echo ' + request.body.name, () => response.end());
  });
  app.use('/api', router);
};
""", ("command-injection", "critical", True)),
}

# the same sinks, written so that no payload gets through: flagged, probed, never confirmed
GUARDED = {
    # a middleware before the handler refuses what is not a plain name: the payload never reaches the shell
    "express-validated": ("routes/files.js", """const express = require('express');
const { exec } = require('child_process');

const router = express.Router();
function plainName(req, res, next) {
  if (!/^[\\w.-]+$/.test(String(req.query.dir))) return res.status(400).send('bad name');
  return next();
}
router.get('/files', plainName, (req, res) => {
  exec('ls ' + req.query.dir, (error, out) => res.send(out));
});
module.exports = router;
""", ("command-injection", "high", False)),
    "command": ("lib/files.js", """const { exec } = require('child_process');

function quoted(text) {
  return "'" + String(text).replace(/'/g, "'\\\\''") + "'";
}

function listDir(dir, done) {
  exec('ls ' + quoted(dir), (error, out) => done(out));
}

module.exports = { listDir };
""", ("command-injection", "high", False)),
    "sql": ("lib/users.js", """async function findUser(db, name) {
  return db.query("SELECT id FROM users WHERE name = '" + String(name).replace(/'/g, "''") + "'");
}

module.exports = { findUser };
""", ("sql-injection", "medium", False)),
    "path": ("lib/uploads.js", """const fs = require('fs');
const path = require('path');

module.exports = function download(req, res) {
  const root = path.join(__dirname, 'uploads');
  if (!path.join(root, req.params.name).startsWith(root + path.sep)) return res.status(400).send('no');
  fs.readFile(path.join(root, req.params.name), (error, data) => res.send(data));
};
""", ("path-traversal", "medium", False)),
}


def repo_files(path: str, source: str) -> dict[str, str]:
    files = {path: source}
    if "node-serialize" in source:
        files["node_modules/node-serialize/index.js"] = NODE_SERIALIZE
    return files


@pytest.mark.parametrize("name", sorted(VULNERABLE))
async def test_each_javascript_sink_is_confirmed_by_running_it(attack: Attack, rubric: Rubric, name: str) -> None:
    path, source, (kind, severity, confirmed) = VULNERABLE[name]
    analysis, _agent, sandbox = await attack(repo_files(path, source))
    assert [(f.id.split(":")[0], f.severity, f.confirmed) for f in analysis.findings] == [(kind, severity, confirmed)]
    finding = analysis.findings[0]
    assert finding.location is not None and finding.location.path == path
    assert finding.payload and finding.effect and "confirmed in the sandbox" in finding.title
    assert sandbox.probes and all("LOGOMESH-PROBE-" in probe for probe in sandbox.probes)
    assert analysis.attack_successful


@pytest.mark.parametrize("name", sorted(GUARDED))
async def test_a_guarded_sink_is_probed_and_not_confirmed(attack: Attack, name: str) -> None:
    path, source, (kind, severity, confirmed) = GUARDED[name]
    analysis, _agent, sandbox = await attack(repo_files(path, source))
    assert [(f.id.split(":")[0], f.severity, f.confirmed) for f in analysis.findings] == [(kind, severity, confirmed)]
    assert sandbox.probes, "a guarded sink is still tried"
    assert "not confirmed by" in (analysis.findings[0].effect or "")
    assert not analysis.attack_successful


async def test_a_sink_outside_any_export_stays_a_static_finding(attack: Attack) -> None:
    source = """const { exec } = require('child_process');

function internal(dir) {
  exec('ls ' + dir);
}

module.exports = { version: 1 };
"""
    analysis, _agent, sandbox = await attack({"lib/internal.js": source})
    assert [(f.id.split(":")[0], f.confirmed) for f in analysis.findings] == [("command-injection", False)]
    assert sandbox.probes == []


async def test_output_that_forges_the_probe_s_lines_confirms_nothing(attack: Attack) -> None:
    # the target prints a confirmation with a nonce of its own and never runs its input
    source = """const { exec } = require('child_process');

exports.run = function (name) {
  process.stdout.write('LOGOMESH-PROBE-0123456789abcdef0123 {"phase":"attack","ok":true,"canary":true}\\n');
  return exec('echo ' + JSON.stringify(String(name)).replace(/[$`\\\\]/g, ''));
};
"""
    analysis, _agent, sandbox = await attack({"lib/forge.js": source})
    assert sandbox.probes
    assert [(f.id.split(":")[0], f.confirmed) for f in analysis.findings] == [("command-injection", False)]


def test_hypotheses_name_the_exported_function_and_the_parameters_that_reach_the_sink() -> None:
    source = """const fs = require('fs');
const path = require('path');
const { exec } = require('child_process');

function run(dir, done) {
  const listing = 'ls ' + dir;
  exec(listing, (error, out) => done(out));
}
const read = (req, res) => { fs.readFile(path.join('/srv', req.query.file), (e, d) => res.send(d)); };
export default (code) => new Function(code)();
module.exports = { run, handler: read };
"""
    found = {(h.kind, h.target.qualname if h.target else None, h.tainted) for h in hypotheses("a.js", source, None)}
    assert found == {("command-injection", "run", ("dir",)), ("path-traversal", "handler", ("req",)),
                     ("code-injection", "default", ("code",))}
    methods = "const vm = require('vm');\nclass Box {\n  constructor(code) {\n    vm.runInNewContext(code);\n  }\n"
    methods += "  open(code) {\n    return vm.runInNewContext(code);\n  }\n}\nmodule.exports = Box;\n"
    # a constructor is never a target; a method of the class the module exports is ``module.exports.open``
    assert [(h.line, h.target.qualname if h.target else None, h.target.is_method if h.target else None)
            for h in hypotheses("box.js", methods, None)] == [(4, None, None), (7, "module.exports.open", True)]
    # only the lines the change adds
    assert [h.line for h in hypotheses("a.js", source, {7})] == [7]


def test_an_express_route_handler_is_a_target_named_by_its_method_and_path() -> None:
    path, source, _ = VULNERABLE["express-route"]
    [found] = hypotheses(path, source, None)
    assert found.target is not None and found.target.qualname == "GET /files" and found.tainted == ("req",)
    assert found.target.route == ("GET", "/files", 0, 0) and found.target.params == ("req", "res")
    path, source, _ = VULNERABLE["express-setup"]
    [found] = hypotheses(path, source, None)
    assert found.target is not None and found.target.route == ("POST", "/run", 0, 1)
    assert found.tainted == ("request",)
    path, source, _ = VULNERABLE["express-esm"]
    [found] = hypotheses(path, source, None)
    assert found.target is not None and found.target.route == ("POST", "/count", 0, 0)
    # the same handler in a module that does not load Express (another framework): no target
    other = VULNERABLE["express-route"][1].replace("require('express')", "require('fastify')")
    assert [h.target for h in hypotheses("app.js", other, None)] == [None]


def test_test_files_and_runner_configuration_make_no_hypothesis(rubric: Rubric) -> None:
    sink = "const { exec } = require('child_process');\nexports.f = (d) => exec('ls ' + d);\n"
    case = make_case({"test/files.test.js": sink, "jest.config.js": sink, "lib/files.ts": sink})
    assert [h.path for h in collect_hypotheses(case, rubric)] == ["lib/files.ts"]
