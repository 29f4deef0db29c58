// The soak tier's bit-for-bit checks of the patched whisper.cpp's kernels are C++ programs under bench/native/:
// compiled here with the machine's g++ (for this CPU, as each CI machine checks its own), run, and their verdict read
// from stdout.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { onTestFinished } from 'vitest';
import { repoRoot } from './paths.js';

export const runFile = promisify(execFile);

/**
 * Compiles bench/native/<name>.cc (-O2, C++17, native/ on the include path, pthreads) with `flags` into a temporary
 * folder that is removed when the calling test ends, and gives the binary's path. Call it inside a test.
 */
export async function compileBenchNative(name: string, flags: readonly string[] = []): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), `voxmill-${name}-`));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  const binary = join(dir, name);
  await runFile('g++', [
    '-O2',
    '-std=c++17',
    ...flags,
    `-I${join(repoRoot, 'native')}`,
    join(repoRoot, 'bench', 'native', `${name}.cc`),
    '-o',
    binary,
    '-lpthread',
  ]);
  return binary;
}
