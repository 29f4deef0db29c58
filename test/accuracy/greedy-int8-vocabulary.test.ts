// whisper.cpp patch 0019: a greedy step ranks the vocabulary on a q8_0 copy of the projection and recomputes from the
// f16 rows the logits that decide the token (within a margin far over the measured q8_0 error). The chosen tokens and
// timestamps must be those of the f16 projection alone; only the softmax's normalizer still sums q8_0 values for the
// unlikely tokens, so the reported log probabilities move a little. Measured when written (whisper-cli, 12 greedy cases of tiny.en and base):
// every token and timestamp the same, token probabilities within 0.0023.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Transcription, WhisperModel } from '../../dist/index.js';
import { sharedAudio } from '../helpers/paths.js';
import { requireRealModel } from '../helpers/real-models.js';

const models = [
  { name: 'whisper-tiny.en', files: ['jfk.wav', 'gb0.wav', '4507-16021-0012.wav'] },
  { name: 'whisper-base', files: ['jfk.wav', '8455-210777-0068.wav'] },
] as const;

/** Greedy at temperature 0 with fallback off: every step goes through the copy when there is one. */
const greedy = { language: 'en', beamSize: 1, temperatureIncrement: 0, segmentDecoding: true } as const;

for (const { name, files } of models) {
  const real = requireRealModel(name);
  describe.skipIf(real.skip)(
    `${name}: greedy steps on the int8 vocabulary copy choose the f16 tokens ${real.reason}`,
    () => {
      let withCopy: WhisperModel;
      let without: WhisperModel;
      beforeAll(async () => {
        withCopy = await WhisperModel.load(real.path as string, { dtw: false });
        without = await WhisperModel.load(real.path as string, { dtw: false, greedyInt8Vocabulary: false });
      });
      afterAll(() => {
        withCopy?.dispose();
        without?.dispose();
      });

      it('makes the copy by default and not when asked not to', () => {
        expect(withCopy.info.greedyInt8Vocabulary).toBe(true);
        expect(without.info.greedyInt8Vocabulary).toBe(false);
      });

      it.each(files)('%s: the same tokens and timestamps, log probabilities within 0.01', async (file) => {
        const a: Transcription = await withCopy.transcribe(sharedAudio(file), greedy);
        const b: Transcription = await without.transcribe(sharedAudio(file), greedy);
        expect(a.text).toBe(b.text);
        const segmentsA = a.segments ?? [];
        const segmentsB = b.segments ?? [];
        expect(segmentsA.length).toBeGreaterThan(0);
        expect(segmentsA.map((s) => [s.start, s.end, s.decoding?.tokens])).toEqual(
          segmentsB.map((s) => [s.start, s.end, s.decoding?.tokens]),
        );
        let largestDifference = 0;
        for (const [i, segment] of segmentsA.entries()) {
          const other = segmentsB[i]?.decoding;
          expect(Math.abs((segment.decoding?.avgLogprob ?? 0) - (other?.avgLogprob ?? 0))).toBeLessThan(0.01);
          expect(Math.abs((segment.decoding?.noSpeechProb ?? 0) - (other?.noSpeechProb ?? 0))).toBeLessThan(1e-6);
          for (const [j, token] of (segment.decoding?.tokenLogprobs ?? []).entries()) {
            const difference = Math.abs(token.logprob - (other?.tokenLogprobs[j]?.logprob ?? Number.NaN));
            expect(difference).toBeLessThan(0.01);
            largestDifference = Math.max(largestDifference, difference);
          }
        }
        // The copy was used: its q8_0 normalizer moves some log probability a little (all of them equal would mean
        // the greedy steps never took it).
        expect(largestDifference).toBeGreaterThan(0);
      });

      // Above temperature 0 the logits are divided by the temperature, and recomputed f16 logits would land among them
      // unscaled: no step may take the copy there, however small the temperature (the sampler still takes the argmax
      // below 1e-6; with bestOf 1 one decoder runs, as at 0). Before the fix a step at 1e-7 took it.
      it('jfk.wav at temperature 1e-7: no step takes the copy (the same tokens and log probabilities exactly)', async () => {
        const warm = { ...greedy, temperature: 1e-7, bestOf: 1 };
        const a = await withCopy.transcribe(sharedAudio('jfk.wav'), warm);
        const b = await without.transcribe(sharedAudio('jfk.wav'), warm);
        expect(a.text.length).toBeGreaterThan(0);
        const tokens = (t: Transcription) =>
          (t.segments ?? []).map((s) => [s.start, s.end, s.decoding?.tokens, s.decoding?.tokenLogprobs]);
        expect(tokens(a)).toEqual(tokens(b));
      });
    },
  );
}
