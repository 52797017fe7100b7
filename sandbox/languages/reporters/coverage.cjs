// LogoMesh's reader of V8 coverage (sandbox/languages/coverage.py): after the head's tests, the coverage files the
// run's node processes wrote (the folder of argv[2]) reduced to the scripts of the wanted tree files (argv[3..],
// paths relative to /sandbox/repo), one JSON script per line on standard output.
'use strict';
const fs = require('node:fs');
const path = require('node:path');

const folder = process.argv[2];
const wanted = new Set(process.argv.slice(3).map((p) => 'file:///sandbox/repo/' + p));
let names = [];
try { names = fs.readdirSync(folder).filter((n) => n.endsWith('.json')).sort(); } catch { names = []; }
for (const name of names) {
  let document;
  try { document = JSON.parse(fs.readFileSync(path.join(folder, name), 'utf8')); } catch { continue; }
  const scripts = document && Array.isArray(document.result) ? document.result : [];
  for (const script of scripts) {
    if (script && wanted.has(script.url)) {
      process.stdout.write(JSON.stringify({ url: script.url, functions: script.functions }) + '\n');
    }
  }
}
