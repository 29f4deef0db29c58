// Tests print nothing: they assert, and numbers belong to bench/. Every project loads this file first (vitest
// setupFiles). A console call (log, info, warn, error, debug, trace, dir, table) or a process.stdout/stderr write
// made directly by test code (a file under test/) is recorded instead of printed and fails the test it happened in
// (or the file, when it happened outside a test). The same calls from the library, its dependencies or vitest pass
// through untouched: only the calling frame decides, so a logger the library is given keeps working. Child
// processes are not affected: their output reaches tests through pipes, and what execFileSync copies of a child's
// stderr to this process's passes through.
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll } from 'vitest';

const testDir = fileURLToPath(new URL('..', import.meta.url));
const thisFile = fileURLToPath(import.meta.url);

interface Print {
  via: string;
  at: string;
  text: string;
}

const recorded: Print[] = [];

/** The file of one stack frame (`at f (file:line:col)`, `at file:line:col`; eval'd code: `<anonymous>`). */
function fileOf(frame: string): string {
  const location = /\((.*)\)$/.exec(frame)?.[1] ?? frame.replace(/^\s*at /, '');
  const own = location.includes('eval at ') ? location.slice(location.lastIndexOf(', ') + 2) : location;
  return own.replace(/:\d+:\d+$/, '');
}

/**
 * The first stack frame outside this file and Node's internals: the code that made the call. None when the call
 * came through node:child_process (execFileSync copying a child's stderr through): a child's output is not a print.
 */
function caller(): { frame: string; file: string } | undefined {
  for (const line of (new Error().stack ?? '').split('\n').slice(1)) {
    const file = fileOf(line);
    if (file === 'node:child_process') return undefined;
    if (!file.includes(thisFile) && !file.startsWith('node:')) return { frame: line.trim(), file };
  }
  return undefined;
}

/** Wraps `target[name]`: calls from test code are recorded instead of printed, all others pass through. */
function guard<T extends object>(target: T, name: keyof T & string, via: string): void {
  const original = target[name] as unknown as (...args: unknown[]) => unknown;
  if (typeof original !== 'function') return;
  const wrapped = function (this: unknown, ...args: unknown[]) {
    const at = caller();
    if (at?.file.includes(testDir)) {
      const text = args.map((a) => (typeof a === 'string' ? a : String(a))).join(' ');
      recorded.push({
        via,
        at: at.frame.replace(/^at /, ''),
        text: text.length > 200 ? `${text.slice(0, 200)}…` : text,
      });
      // process.stdout.write's contract: true (nothing buffered), and its callback, if any, is called.
      const callback = args.find((a) => typeof a === 'function') as (() => void) | undefined;
      if (callback) queueMicrotask(callback);
      return via.startsWith('process.') ? true : undefined;
    }
    return original.apply(this, args);
  };
  (target as Record<string, unknown>)[name] = wrapped;
}

for (const method of ['log', 'info', 'warn', 'error', 'debug', 'trace', 'dir', 'table'] as const) {
  guard(console, method, `console.${method}`);
}
guard(process.stdout, 'write', 'process.stdout.write');
guard(process.stderr, 'write', 'process.stderr.write');

/** Takes (and clears) what test code printed so far; the guard's own test uses it. */
export function takePrints(): Print[] {
  return recorded.splice(0);
}

function check(where: string): void {
  const prints = takePrints();
  if (prints.length === 0) return;
  throw new Error(
    `tests print nothing (assert instead; numbers belong to bench/), but ${where} printed:\n` +
      prints.map((p) => `  ${p.via} at ${p.at}: ${JSON.stringify(p.text)}`).join('\n'),
  );
}

beforeAll(() => check('this file, at its top level,'));
afterEach(() => check('this test'));
afterAll(() => check('this file, outside its tests,'));
