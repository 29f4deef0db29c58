// whisper.cpp patches 0022 and 0023 take the encoder's GELU and its f32 -> f16 copies eight values at a time through
// native/voxmill_f16.h, promising the bits of ggml's scalar loops on every input (x86-64 with AVX2 and F16C).
// bench/native/f16-check.cc compares them; this tier runs it on a sample of 1 in 7 floats (about 3 s), and on all
// 2^32 with VOXMILL_TEST_FULL=1 (npm run soak; about 15 s of two cores when written).
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { scaledMs } from '../../scripts/lib/machine-speed.mjs';
import { compileBenchNative, runFile } from '../helpers/bench-native.js';

const require = createRequire(import.meta.url);

describe('native/voxmill_f16.h against ggml scalar loops', () => {
  it(
    'gives the same bits on a sample of every 7th float, or all of them (or is not compiled for this CPU)',
    async () => {
      const ggml = join(dirname(require.resolve('whisper-cpp-src/package.json')), 'cpp', 'whisper.cpp', 'ggml');
      const binary = await compileBenchNative('f16-check', [
        '-march=native',
        `-I${join(ggml, 'include')}`,
        `-I${join(ggml, 'src')}`,
      ]);
      const stride = process.env.VOXMILL_TEST_FULL === '1' ? '1' : '7';
      const { stdout } = await runFile(binary, ['--stride', stride], { timeout: scaledMs(300_000) });
      expect(stdout).toMatch(/^(1 in 7 of the 2\^32 inputs|all 2\^32 inputs): the same bits|^scalar only/);
    },
    scaledMs(360_000),
  );
});
