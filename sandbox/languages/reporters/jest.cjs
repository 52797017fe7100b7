// LogoMesh's Jest reporter: run in Jest's parent process (given by --reporters, which replaces the project's own),
// it writes one marked line per test and per test file that failed outside any test to file descriptor 3, the
// channel the sandbox reads; Jest and the tests write their own output to standard error.
'use strict';
const { emit, text } = require('./channel.cjs');

const STATUS = { passed: 'passed', failed: 'failed', pending: 'skipped', skipped: 'skipped', todo: 'skipped',
                 disabled: 'skipped', focused: 'passed' };

class LogoMeshReporter {
  onTestResult(test, result) {
    const file = String(result.testFilePath || (test && test.path) || '');
    const cases = Array.isArray(result.testResults) ? result.testResults : [];
    const failure = result.testExecError;
    if (failure) {
      emit({ type: 'file-error', file, message: text(failure.stack || failure.message || failure) });
    }
    for (const one of cases) {
      const names = [...(Array.isArray(one.ancestorTitles) ? one.ancestorTitles : []), one.title].map(text);
      const messages = Array.isArray(one.failureMessages) ? one.failureMessages : [];
      emit({ type: 'case', file, names, status: STATUS[one.status] || 'failed',
             message: messages.length ? text(messages.join('\n')) : null });
    }
    if (!failure && !cases.length && result.failureMessage) {
      emit({ type: 'file-error', file, message: text(result.failureMessage) });
    }
  }

  onRunComplete() {
    emit({ type: 'done' });
  }

  getLastError() {
    return undefined;
  }
}

module.exports = LogoMeshReporter;
