// whisper.cpp patch 0022 takes the encoder's GELU eight values at a time through native/voxmill_gelu.h, promising the
// bits of ggml's scalar f16-table loop on every input (x86-64 with AVX2 and F16C). bench/native/gelu-check.cc compares
// the two; this tier runs it on a sample of every 7th float (about 2 s), and on all 2^32 with VOXMILL_TEST_FULL=1
// (npm run soak; about 12 s of two cores when written).
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { scaledMs } from '../../scripts/lib/machine-speed.mjs';
import { repoRoot } from '../helpers/paths.js';

const run = promisify(execFile);
const require = createRequire(import.meta.url);

describe('native/voxmill_gelu.h against ggml scalar GELU', () => {
  const dir = mkdtempSync(join(tmpdir(), 'voxmill-gelu-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it(
    'gives the same bits on a sample of every 7th float, or all of them (or is not compiled for this CPU)',
    async () => {
      const ggml = join(dirname(require.resolve('whisper-cpp-src/package.json')), 'cpp', 'whisper.cpp', 'ggml');
      const binary = join(dir, 'gelu-check');
      await run('g++', [
        '-O2',
        '-march=native',
        '-std=c++17',
        `-I${join(repoRoot, 'native')}`,
        `-I${join(ggml, 'include')}`,
        `-I${join(ggml, 'src')}`,
        join(repoRoot, 'bench', 'native', 'gelu-check.cc'),
        '-o',
        binary,
        '-lpthread',
      ]);
      const stride = process.env.VOXMILL_TEST_FULL === '1' ? '1' : '7';
      const { stdout } = await run(binary, ['--stride', stride], { timeout: scaledMs(300_000) });
      expect(stdout).toMatch(/^(1 in 7 of the 2\^32 inputs|all 2\^32 inputs): the same bits|^scalar only/);
    },
    scaledMs(240_000),
  );
});
