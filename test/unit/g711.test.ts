// G.711 decoding against Python's audioop (ulaw2lin / alaw2lin, the ITU-T reference tables): a spread of codes
// across every segment and both signs. All 256 codes of each were compared when the decoder was written.
import { describe, expect, it } from 'vitest';
import { decodeALaw, decodeMuLaw } from '../../src/audio/g711.js';

const CODES = [0, 15, 51, 90, 127, 128, 156, 196, 240, 255];

describe('G.711', () => {
  it('decodes mu-law as audioop.ulaw2lin does', () => {
    expect([...decodeMuLaw(Uint8Array.from(CODES))]).toEqual([
      -32124, -16764, -3516, -556, 0, 32124, 9852, 1628, 120, 0,
    ]);
  });

  it('decodes A-law as audioop.alaw2lin does', () => {
    expect([...decodeALaw(Uint8Array.from(CODES))]).toEqual([
      -5504, -6784, -11520, -248, -848, 5504, 3264, 280, 688, 848,
    ]);
  });

  it('is symmetric: the sign bit flips the sample', () => {
    const low = Uint8Array.from({ length: 128 }, (_, i) => i);
    const high = Uint8Array.from({ length: 128 }, (_, i) => i + 128);
    // `|| 0`: mu-law has two zeros, and -0 is not 0 to toEqual.
    expect([...decodeMuLaw(low)].map((v) => -v || 0)).toEqual([...decodeMuLaw(high)]);
    expect([...decodeALaw(low)].map((v) => -v || 0)).toEqual([...decodeALaw(high)]);
  });
});
