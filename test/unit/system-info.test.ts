import { describe, expect, it } from 'vitest';
import { parseInstructionSets } from '../../src/system.js';

describe('parseInstructionSets', () => {
  it("reads the instruction sets set to 1 from ggml's CPU part of whisper.cpp's system line", () => {
    const line =
      'WHISPER : COREML = 0 | OPENVINO = 0 | CPU : SSE3 = 1 | SSSE3 = 1 | AVX = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 | ' +
      'BMI2 = 1 | AVX512 = 1 | AVX512_VBMI = 0 | REPACK = 1 | ';
    expect(parseInstructionSets(line)).toEqual(['SSE3', 'SSSE3', 'AVX', 'AVX2', 'F16C', 'FMA', 'BMI2', 'AVX512']);
  });

  it('stops at the next backend, and answers none without a CPU part', () => {
    expect(parseInstructionSets('CPU : NEON = 1 | ARM_FMA = 1 | CUDA : ARCHS = 890 | ')).toEqual(['NEON', 'ARM_FMA']);
    expect(parseInstructionSets('WHISPER : COREML = 0 | ')).toEqual([]);
  });
});
