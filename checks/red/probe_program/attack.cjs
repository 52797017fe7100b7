'use strict';
// The attack program for JavaScript and TypeScript: it loads the changed module as its users do (require, else
// import), calls one exported function twice — once with a benign value, once with the payload — and writes one
// marker line per phase to the output the reviewer reads. Child processes the call starts are awaited; file system
// calls are seen (the path-traversal oracle); database-like arguments record the SQL they are given.
// --- program ---
const CONFIG = JSON.parse(__CONFIG__);
const fs = require('fs');
const path = require('path');
const os = require('os');
const childProcess = require('child_process');
const builtins = require('module');
const { pathToFileURL } = require('url');

const real = { existsSync: fs.existsSync, readFileSync: fs.readFileSync, writeFileSync: fs.writeFileSync,
  mkdirSync: fs.mkdirSync, writeSync: fs.writeSync };
const NONCE = CONFIG.nonce;
const MARK = 'LOGOMESH-PROBE-' + NONCE + ' ';
// named by the nonce, so the same review builds the same payload bytes
const SCRATCH = path.join(os.tmpdir(), 'tmp' + NONCE.slice(0, 8));
const CANARY = path.join(SCRATCH, 'tmp' + NONCE.slice(8, 14));
const SECRET = path.join(SCRATCH, 'tmp' + NONCE.slice(14, 20));
const CONTENT = 'x' + NONCE;
const WAIT_MS = 3000;

function emit(phase, data) {
  real.writeSync(1, MARK + JSON.stringify(Object.assign({ phase }, data)) + '\n');
}

function shown(value) {
  try {
    if (typeof value === 'string') return value;
    if (Buffer.isBuffer(value)) return value.toString('utf8');
    return JSON.stringify(value) || String(value);
  } catch (error) {
    return String(value);
  }
}

// --- what the call does, seen from outside it ----------------------------------------------------------------
const children = [];
for (const name of ['exec', 'execFile', 'spawn', 'fork']) {
  const original = childProcess[name];
  childProcess[name] = function (...args) {
    const child = original.apply(this, args);
    children.push(child);
    return child;
  };
}
const opened = [];
function seen(target) {
  if (typeof target === 'string' || Buffer.isBuffer(target)) opened.push(path.resolve(String(target)));
  else if (target instanceof URL && target.protocol === 'file:') opened.push(target.pathname);
}
const FILE_CALLS = ['readFile', 'readFileSync', 'createReadStream', 'open', 'openSync', 'writeFile', 'writeFileSync',
  'appendFile', 'appendFileSync', 'createWriteStream', 'copyFile', 'copyFileSync', 'unlink', 'unlinkSync', 'rm',
  'rmSync', 'readdir', 'readdirSync', 'stat', 'statSync', 'access', 'accessSync'];
for (const owner of [fs, fs.promises]) {
  for (const name of FILE_CALLS) {
    const original = owner[name];
    if (typeof original !== 'function') continue;
    owner[name] = function (target, ...rest) {
      seen(target);
      return original.call(this, target, ...rest);
    };
  }
}
builtins.syncBuiltinESMExports();

// --- the values the call gets --------------------------------------------------------------------------------
function sqlPayload(family) {
  const marker = 'q' + NONCE.slice(0, 8);
  return { quote: marker + "'", 'double-quote': marker + '"', unbalanced: marker + "') \" '",
    tautology: marker + "' OR '" + marker + "'='" + marker, numeric: '0 OR 0=0 /*' + marker + '*/' }[family];
}

function payload(kind, family) {
  const shell = 'echo ' + NONCE + ' > ' + CANARY;
  const writer = 'process.mainModule.require("fs").writeFileSync(' + JSON.stringify(CANARY) + ', "' + NONCE + '")';
  const table = {
    'command-injection': { semicolon: 'a; ' + shell + ' #', subshell: '$(' + shell + ')',
      'quote-break': "a'; " + shell + "; echo '", backtick: '`' + shell + '`' },
    'code-injection': { expression: writer, constructor: 'this.constructor.constructor("return process")()'
      + writer.slice('process'.length), 'string-break': "');" + writer + ';//', 'statement-break': '1;' + writer
      + ';//' },
    deserialization: { 'function-iife': JSON.stringify({ a: '_$$ND_FUNC$$_function(){' + writer + '}()' }),
      expression: '(function(){' + writer + '})()' },
    'path-traversal': { dotdot: '../'.repeat(24) + SECRET.replace(/^\//, ''), absolute: SECRET },
  };
  if (kind === 'sql-injection') return sqlPayload(family);
  const value = (table[kind] || {})[family];
  if (value === undefined) throw new Error('no payload for ' + kind + '/' + family);
  return value;
}

function benign(kind, family) {
  if (kind === 'sql-injection' && family === 'numeric') return '1';
  if (kind === 'deserialization' && family === 'function-iife') return '{"a":"b"}';
  if (kind === 'deserialization') return '1';
  return 'a';
}

function field(value) {
  return new Proxy({}, { get: (object, key) => (typeof key === 'string' && key !== 'then' && key !== 'toJSON'
    ? value : undefined) });
}

function request(value) {
  const fields = field(value);
  const inner = { params: fields, query: fields, body: fields, headers: fields, cookies: fields, url: '/' + value,
    path: '/' + value, originalUrl: '/' + value, method: 'GET' };
  return Object.assign({}, inner, { request: inner, pathParameters: fields, queryStringParameters: fields,
    get: () => value, header: () => value, param: () => value });
}

function response(sent) {
  const answer = { headersSent: false, locals: {}, statusCode: 200 };
  for (const name of ['send', 'json', 'end', 'write', 'sendFile', 'download', 'render', 'set', 'type', 'status',
    'header', 'setHeader', 'writeHead', 'cookie', 'redirect', 'sendStatus', 'append', 'attachment', 'location']) {
    answer[name] = (...args) => {
      sent.push(args.map(shown).join(' '));
      return answer;
    };
  }
  return answer;
}

function database(statements) {
  const rows = [];
  const result = () => Object.assign(Promise.resolve(rows), { all: () => rows, get: () => undefined,
    run: () => ({ changes: 0 }), execute: async () => rows });
  const query = (sql, ...rest) => {
    statements.push(typeof sql === 'string' ? sql : sql && typeof sql.sql === 'string' ? sql.sql
      : sql && typeof sql.text === 'string' ? sql.text : shown(sql));
    const callback = rest.find((item) => typeof item === 'function');
    if (callback) callback(null, rows, []);
    return result();
  };
  return new Proxy({}, { get: (object, key) => (key === 'then' ? undefined : query) });
}

const REQUESTS = /^(req|request|ctx|context|event)$/i;
const RESPONSES = /^(res|response|reply)$/i;
const DATABASES = /^(db|database|conn|connection|client|pool|knex|sql|pg|mysql|sqlite|store)$/i;
const CALLBACKS = /^(next|cb|callback|done)$/i;

function argumentsFor(value, kind, traces) {
  return CONFIG.params.map((name) => {
    const carries = name === CONFIG.argument;
    if (REQUESTS.test(name)) return request(carries ? value : 'a.txt');
    if (carries) return value;
    if (RESPONSES.test(name)) return response(traces.sent);
    if (DATABASES.test(name)) return database(traces.sql);
    if (CALLBACKS.test(name)) return () => undefined;
    return 'a';
  });
}

// --- an Express route: an Express that records the routes the module registers ----------------------------------
const ROUTE_METHODS = ['get', 'post', 'put', 'delete', 'patch', 'all', 'options', 'head'];
const routes = [];

function recorder() {
  const uses = [];
  const app = function (req, res, next) {
    if (typeof next === 'function') next();
  };
  const add = (method, route, handlers) => {
    routes.push({ method, route, handlers: handlers.flat(Infinity), before: uses.slice() });
  };
  for (const name of ROUTE_METHODS) {
    app[name] = (first, ...rest) => {
      add(name.toUpperCase(), first, rest);
      return proxy;
    };
  }
  app.use = (first, ...rest) => {
    if (typeof first === 'function' || Array.isArray(first)) uses.push({ route: '/', handlers: [first, ...rest].flat(Infinity) });
    else uses.push({ route: first, handlers: rest.flat(Infinity) });
    return proxy;
  };
  app.route = (route) => {
    const chain = {};
    for (const name of ROUTE_METHODS) {
      chain[name] = (...handlers) => {
        add(name.toUpperCase(), route, handlers);
        return chain;
      };
    }
    return chain;
  };
  app.listen = () => ({ close: () => undefined, address: () => ({ port: 0 }), on: () => undefined });
  app.locals = {};
  const proxy = new Proxy(app, { get: (target, key) => (key in target ? target[key]
    : typeof key === 'string' && key !== 'then' ? () => proxy : undefined) });
  return proxy;
}

const passThrough = () => (req, res, next) => {
  if (typeof next === 'function') next();
};
const EXPRESS = new Proxy(Object.assign(function express() { return recorder(); }, { Router: () => recorder() }), {
  get: (target, key) => (key in target ? target[key] : key === 'then' || key === '__esModule' ? undefined
    : passThrough),
});
const EXPRESS_KEY = Symbol.for('logomesh.express.' + NONCE);
if (CONFIG.route) {
  const originalLoad = builtins._load;
  builtins._load = function (request, ...rest) {
    return request === 'express' ? EXPRESS : originalLoad.call(this, request, ...rest);
  };
  // ES modules: a resolve hook gives `import … from 'express'` a module that exports the same recording Express
  globalThis[EXPRESS_KEY] = EXPRESS;
  const key = 'Symbol.for(' + JSON.stringify(EXPRESS_KEY.description) + ')';
  const names = ['Router', 'json', 'urlencoded', 'raw', 'text', 'query'];
  const facade = 'const e = globalThis[' + key + ']; export default e; '
    + names.map((name) => 'export const ' + name + ' = e.' + name + ';').join(' ')
    + ' const s = e.static; export { s as static };';
  const url = 'data:text/javascript,' + encodeURIComponent(facade);
  const hooks = 'export async function resolve(specifier, context, next) { return specifier === "express" ? '
    + '{ url: ' + JSON.stringify(url) + ', shortCircuit: true } : next(specifier, context); }';
  if (typeof builtins.register === 'function') builtins.register('data:text/javascript,' + encodeURIComponent(hooks));
}

function findRoute() {
  const [method, route, occurrence, position] = CONFIG.route;
  const found = routes.filter((r) => r.method === method && r.route === route)[occurrence];
  if (!found || typeof found.handlers[position] !== 'function') return null;
  const before = found.before.filter((use) => typeof use.route === 'string' && route.startsWith(use.route))
    .flatMap((use) => use.handlers).filter((handler) => typeof handler === 'function' && handler.length < 4);
  return { chain: [...before, ...found.handlers.slice(0, position)], handler: found.handlers[position] };
}

// each middleware before the handler, in order, with the handler's request and response; one that does not call
// next() (it answered, it refused the request) ends the route there, as Express would
function routed(chain, handler) {
  return async (...args) => {
    const [req, res] = args;
    for (const middleware of chain) {
      let proceeded = false;
      let failure;
      const returned = middleware(req, res, (error) => {
        proceeded = true;
        failure = error;
      });
      if (returned && typeof returned.then === 'function') await settle(returned);
      for (let waited = 0; !proceeded && waited < 1000; waited += 10) {
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      if (!proceeded) return 'the route ended before the handler: a middleware did not call next()';
      if (failure !== undefined && failure !== 'route') return 'a middleware passed an error: ' + shown(failure);
    }
    return handler(...args);
  };
}

async function loadRoute(file) {
  // import(), never require(): a require() of an ES module (Node.js 22) would pass the resolve hook by
  const imported = await import(pathToFileURL(file).href);
  const module = imported && imported.default !== undefined ? imported.default : imported;
  let found = findRoute();
  // a module that registers its routes when it is called (on the app it is given, or on one it builds): each
  // function it exports, with an app for every parameter, until the route is there
  const exported = typeof module === 'function' ? [module] : [];
  for (const value of module && typeof module === 'object' ? Object.values(module) : []) {
    if (typeof value === 'function') exported.push(value);
  }
  for (const setup of exported.slice(0, 20)) {
    if (found) break;
    try {
      const returned = setup(...Array.from({ length: Math.max(1, setup.length) }, () => recorder()));
      if (returned && typeof returned.then === 'function') await settle(returned);
    } catch (error) {
      // not a function that sets routes up
    }
    found = findRoute();
  }
  if (!found) throw new TypeError('the route ' + CONFIG.qualname + ' was not registered when the module loaded');
  return routed(found.chain, found.handler);
}

// --- the calls -------------------------------------------------------------------------------------------------
async function load() {
  const file = path.resolve(CONFIG.path);
  if (CONFIG.route) return loadRoute(file);
  let module;
  try {
    module = require(file);
  } catch (error) {
    if (!error || !['ERR_REQUIRE_ESM', 'ERR_REQUIRE_ASYNC_MODULE'].includes(error.code)) throw error;
    module = await import(pathToFileURL(file).href);
  }
  const exported = (name) => (name === 'module.exports' ? (typeof module === 'function' ? module : module.default)
    : module[name] !== undefined ? module[name] : module.default && module.default[name]);
  if (CONFIG.is_method) {
    const split = CONFIG.qualname.lastIndexOf('.');
    const owner = exported(CONFIG.qualname.slice(0, split));
    const method = CONFIG.qualname.slice(split + 1);
    if (typeof owner !== 'function') throw new TypeError(CONFIG.qualname + ': its class is not exported');
    if (typeof owner[method] === 'function') return owner[method].bind(owner);
    const instance = new owner();
    if (typeof instance[method] !== 'function') throw new TypeError(CONFIG.qualname + ' is not a method');
    return instance[method].bind(instance);
  }
  const found = exported(CONFIG.qualname);
  if (typeof found !== 'function') throw new TypeError(CONFIG.qualname + ' is not an exported function');
  return found;
}

function settle(promise) {
  return Promise.race([promise, new Promise((resolve) => setTimeout(() => resolve(undefined), WAIT_MS))]);
}

async function call(target, value, kind) {
  const traces = { sent: [], sql: [] };
  children.length = 0;
  opened.length = 0;
  let outcome;
  try {
    let returned = target(...argumentsFor(value, kind, traces));
    if (returned && typeof returned.then === 'function') returned = await settle(returned);
    outcome = { ok: true, returned: shown(returned).slice(0, 4000) };
  } catch (error) {
    outcome = { ok: false, error_type: (error && error.constructor && error.constructor.name) || typeof error,
      error: String(error && error.message !== undefined ? error.message : error).slice(0, 500) };
  }
  await settle(Promise.all(children.map((child) => new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('close', resolve).once('error', resolve);
  }))));
  await new Promise((resolve) => setTimeout(resolve, 50));
  return Object.assign(outcome, { sql: traces.sql.slice(0, 50), sent: traces.sent.join('\n').slice(0, 4000),
    opened: opened.slice(0, 200) });
}

async function main() {
  const kind = CONFIG.kind;
  const family = CONFIG.family;
  real.mkdirSync(SCRATCH, { recursive: true });
  real.writeFileSync(SECRET, CONTENT);
  let target;
  try {
    target = await load();
  } catch (error) {
    emit('import', { ok: false, error_type: (error && error.constructor && error.constructor.name) || 'Error',
      error: String(error && error.message !== undefined ? error.message : error).slice(0, 500), sightings: [] });
    return;
  }
  emit('import', { ok: true, sightings: [] });
  emit('baseline', await call(target, benign(kind, family), kind));
  const value = payload(kind, family);
  emit('payload', { ok: true, sql_payload: kind === 'sql-injection' ? value : null });
  const outcome = await call(target, value, kind);
  const returned = outcome.returned + '\n' + outcome.sent;
  emit('attack', Object.assign(outcome, { canary: real.existsSync(CANARY), returned_secret: returned.includes(CONTENT),
    secret_intact: real.readFileSync(SECRET, 'utf8') === CONTENT, opened_secret: outcome.opened.includes(SECRET) }));
}

main().then(() => process.exit(0), (error) => {
  process.stderr.write(String(error && error.stack ? error.stack : error) + '\n');
  process.exit(1);
});
