// whisper.cpp patch 0020 takes the log-softmax's and the probabilities' exponentials four at a time through
// native/voxmill_expf.h, promising the bits of the C library's expf on every input where that path runs (x86-64 with
// AVX2 and FMA, where glibc runs its FMA build of the same algorithm). bench/native/expf-check.cc compares all 2^32
// inputs on this machine's CPU and C library; this tier runs it (about 30 s of two cores when written).
import { describe, expect, it } from 'vitest';
import { scaledMs } from '../../scripts/lib/machine-speed.mjs';
import { compileBenchNative, runFile } from '../helpers/bench-native.js';

describe('native/voxmill_expf.h against expf', () => {
  it(
    'gives the same bits as the C library on all 2^32 inputs (or runs expf itself)',
    async () => {
      const binary = await compileBenchNative('expf-check');
      const { stdout } = await runFile(binary, [], { timeout: scaledMs(600_000) });
      expect(stdout).toMatch(/all 2\^32 inputs: the same bits as expf|scalar only/);
    },
    scaledMs(720_000),
  );
});
