// LogoMesh's Mocha reporter: run in Mocha's process (given by --reporter, which replaces the project's own), it
// writes one marked line per test and per failing hook to file descriptor 3, the channel the sandbox reads; Mocha
// and the tests write their own output to standard error.
'use strict';
const { emit, text } = require('./channel.cjs');

function names(test) {
  try { return test.titlePath().map(text); } catch (error) { return [text(test && test.title)]; }
}

function LogoMeshReporter(runner) {
  runner.on('pass', (test) => emit({ type: 'case', file: text(test.file), names: names(test), status: 'passed',
                                     message: null }));
  runner.on('pending', (test) => emit({ type: 'case', file: text(test.file), names: names(test), status: 'skipped',
                                        message: null }));
  runner.on('fail', (test, error) => emit({
    type: 'case', file: text(test.file || (test.parent && test.parent.file)), names: names(test), status: 'failed',
    message: text(error && (error.stack || error.message) || error),
  }));
  runner.once('end', () => emit({ type: 'done' }));
}

module.exports = LogoMeshReporter;
