// The guard every project loads (test/setup/no-prints.ts): test code's prints fail the test; the library's pass.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { takePrints } from '../setup/no-prints.js';

describe('tests print nothing', () => {
  it('records console calls and stdout/stderr writes made by test code, with where they were made', () => {
    console.log('a number', 42);
    console.error('an error');
    process.stdout.write('raw\n');
    expect(process.stderr.write('raw too\n')).toBe(true);
    const prints = takePrints();
    expect(prints.map((p) => [p.via, p.text])).toEqual([
      ['console.log', 'a number 42'],
      ['console.error', 'an error'],
      ['process.stdout.write', 'raw\n'],
      ['process.stderr.write', 'raw too\n'],
    ]);
    expect(prints.every((p) => p.at.includes('no-prints.test.ts'))).toBe(true);
  });

  it('lets writes from outside test/ through (a library, a child process)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'voxmill-no-prints-'));
    try {
      const library = join(dir, 'library.mjs');
      // Empty writes: passed through, they print nothing here either.
      writeFileSync(library, "export function log() { process.stdout.write(''); process.stderr.write(''); }\n");
      const { log } = (await import(pathToFileURL(library).href)) as { log: () => void };
      log();
      // Code compiled at run time (eval, new Function) has no file of its own either.
      (new Function('process', "process.stdout.write('')") as (p: NodeJS.Process) => void)(process);
      // A child's stderr, which execFileSync copies to this process's (here empty).
      execFileSync(process.execPath, ['-e', '']);
      expect(takePrints()).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
