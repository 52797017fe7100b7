// LogoMesh's Vitest reporter: run in Vitest's main process (given by --reporter, which replaces the project's own),
// it writes one marked line per test and per test file that failed outside any test to file descriptor 3, the
// channel the sandbox reads; Vitest and the tests write their own output to standard error. Vitest 3 and later
// call onTestRunEnd with test modules; Vitest 1 and 2 call onFinished with the task tree; both are read as the
// same task tree, once.
import channel from './channel.cjs';

const { emit, text } = channel;

function described(errors) {
  if (!Array.isArray(errors) || !errors.length) return null;
  return text(errors.map((e) => (e && (e.stack || e.message)) || String(e)).join('\n'));
}

function walk(file, task, names) {
  for (const child of task.tasks || []) {
    const path = [...names, text(child.name)];
    if (child.type === 'suite') {
      const errors = child.result && child.result.errors;
      if (errors && errors.length) {  // a suite's hook failed: its tests carry no outcome of their own
        emit({ type: 'case', file, names: path, status: 'failed', message: described(errors) });
      }
      walk(file, child, path);
      continue;
    }
    const result = child.result || {};
    const state = result.state;
    const skipped = child.mode === 'skip' || child.mode === 'todo' || state === 'skip' || state === 'todo';
    const status = state === 'pass' ? 'passed' : state === 'fail' ? 'failed' : skipped ? 'skipped' : null;
    if (status === null) continue;  // never run (the run was interrupted): no outcome
    emit({ type: 'case', file, names: path, status, message: status === 'failed' ? described(result.errors) : null });
  }
}

export default class LogoMeshReporter {
  constructor() {
    this.done = false;
  }

  report(files) {
    if (this.done) return;
    this.done = true;
    for (const file of files || []) {
      if (!file) continue;
      const path = String(file.filepath || '');
      const errors = file.result && file.result.errors;
      if (errors && errors.length) emit({ type: 'file-error', file: path, message: described(errors) });
      walk(path, file, []);
    }
    emit({ type: 'done' });
  }

  onTestRunEnd(modules) {
    this.report((modules || []).map((module) => module && module.task));
  }

  onFinished(files) {
    this.report(files);
  }
}
