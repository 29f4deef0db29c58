// The fixture Piper voices made by scripts/make-fixtures.mjs (scripts/lib/fixture-voices.mjs): Piper's I/O
// contract, and audio whose length, pitch and envelope are exactly as documented there. Runs the models with
// onnxruntime-node directly (no addon, no whisper models). The heavy bench voice (bench-voices/) passes the same
// checks and makes the medium fixture's audio bit for bit.
import { readFileSync } from 'node:fs';
import * as ort from 'onnxruntime-node';
import { beforeAll, describe, expect, it } from 'vitest';
import { fixture, sharedModel } from '../helpers/paths.js';

interface VoiceConfig {
  audio: { sample_rate: number; quality: string };
  espeak: { voice: string };
  inference: { noise_scale: number; length_scale: number; noise_w: number };
  phoneme_type: string;
  phoneme_map: Record<string, unknown>;
  phoneme_id_map: Record<string, number[]>;
  num_symbols: number;
  num_speakers: number;
  speaker_id_map: Record<string, number>;
  piper_version: string;
  language: Record<string, string>;
  dataset: string;
}

interface Expected {
  name: string;
  source: string;
  sampleRate: number;
  quality: string;
  espeak: string;
  language: string;
  frequency: number;
  speakers?: Record<string, number>;
  /** Directory under test/fixtures; default voices. */
  dir?: string;
}

const SPEAKERS = { alice: 0, bob: 1, carol: 2, dave: 3 };
const VOICES: Expected[] = [
  {
    name: 'en_US-fixture-medium',
    source: 'en_US-lessac-medium',
    sampleRate: 22050,
    quality: 'medium',
    espeak: 'en-us',
    language: 'en_US',
    frequency: 220,
  },
  {
    name: 'en_US-fixture-low',
    source: 'en_US-lessac-medium',
    sampleRate: 16000,
    quality: 'low',
    espeak: 'en-us',
    language: 'en_US',
    frequency: 330,
  },
  {
    name: 'en_US-fixture_multi-medium',
    source: 'en_US-lessac-medium',
    sampleRate: 22050,
    quality: 'medium',
    espeak: 'en-us',
    language: 'en_US',
    frequency: 220,
    speakers: SPEAKERS,
  },
  {
    name: 'de_DE-fixture-x_low',
    source: 'de_DE-thorsten-low',
    sampleRate: 16000,
    quality: 'x_low',
    espeak: 'de',
    language: 'de_DE',
    frequency: 247,
  },
  {
    name: 'en_US-fixture_heavy-medium',
    source: 'en_US-lessac-medium',
    sampleRate: 22050,
    quality: 'medium',
    espeak: 'en-us',
    language: 'en_US',
    frequency: 220,
    dir: 'bench-voices',
  },
];

const HOP = 256;
const readJson = <T>(path: string): T => JSON.parse(readFileSync(path, 'utf8')) as T;
const dirOf = (name: string) => VOICES.find((voice) => voice.name === name)?.dir ?? 'voices';
const config = (name: string) => readJson<VoiceConfig>(fixture(`${dirOf(name)}/${name}.onnx.json`));

const sessions = new Map<string, ort.InferenceSession>();
async function session(name: string): Promise<ort.InferenceSession> {
  let s = sessions.get(name);
  if (!s) {
    // Fatal-only logging: the tests that expect a failing run would otherwise print ORT's error log.
    s = await ort.InferenceSession.create(fixture(`${dirOf(name)}/${name}.onnx`), { logSeverityLevel: 4 });
    sessions.set(name, s);
  }
  return s;
}

interface Synthesis {
  ids: number[];
  lengthScale?: number;
  noiseScale?: number;
  noiseW?: number;
  sid?: number;
  inputLength?: number;
}

/** Runs a voice the way Piper does; returns the output tensor's dims and samples. */
async function synthesize(name: string, options: Synthesis): Promise<{ dims: readonly number[]; audio: Float32Array }> {
  const { ids, lengthScale = 1, noiseScale = 0.667, noiseW = 0.8, sid, inputLength = ids.length } = options;
  const feeds: Record<string, ort.Tensor> = {
    input: new ort.Tensor('int64', BigInt64Array.from(ids, BigInt), [1, ids.length]),
    input_lengths: new ort.Tensor('int64', BigInt64Array.from([BigInt(inputLength)]), [1]),
    scales: new ort.Tensor('float32', Float32Array.from([noiseScale, lengthScale, noiseW]), [3]),
  };
  if (sid !== undefined) feeds['sid'] = new ort.Tensor('int64', BigInt64Array.from([BigInt(sid)]), [1]);
  const { output } = await (await session(name)).run(feeds);
  if (!output) throw new Error('no output');
  return { dims: output.dims, audio: output.data as Float32Array };
}

/** Phoneme ids like a sentence: ^, then ids from the config's map, then $. */
function sentence(length: number, symbols: number): number[] {
  return Array.from({ length }, (_, i) => (i === 0 ? 1 : i === length - 1 ? 2 : (i * 7 + 3) % symbols));
}

/** The documented output, in float64. */
function reference(ids: number[], lengthScale: number, frequency: number, sampleRate: number): Float64Array {
  const samples = Math.floor(Math.fround(ids.length * Math.fround(lengthScale)) * HOP);
  const out = new Float64Array(samples);
  for (let t = 0; t < samples; t++) {
    const id = ids[Math.floor((t * ids.length) / samples)]!;
    const amplitude = 0.3 * (1 - 0.05 * (id % 5));
    const phase = ((frequency * t) % sampleRate) / sampleRate;
    out[t] = amplitude * Math.sin((Math.PI * t) / samples) * Math.sin(2 * Math.PI * phase);
  }
  return out;
}

/** The frequency (1 Hz steps in [lo, hi]) with the largest DFT magnitude (Goertzel). */
function dominantFrequency(audio: Float32Array, sampleRate: number, lo = 100, hi = 600): number {
  let best = lo;
  let bestPower = -1;
  for (let f = lo; f <= hi; f++) {
    const coefficient = 2 * Math.cos((2 * Math.PI * f) / sampleRate);
    let s1 = 0;
    let s2 = 0;
    for (const x of audio) {
      const s0 = x + coefficient * s1 - s2;
      s2 = s1;
      s1 = s0;
    }
    const power = s1 * s1 + s2 * s2 - coefficient * s1 * s2;
    if (power > bestPower) {
      bestPower = power;
      best = f;
    }
  }
  return best;
}

describe('fixture voice configs', () => {
  for (const voice of VOICES) {
    it(`${voice.name}.onnx.json has the structure of a real Piper config`, () => {
      const c = config(voice.name);
      const source = readJson<VoiceConfig>(sharedModel(`piper/configs-only/${voice.source}.onnx.json`));
      expect(c.audio).toEqual({ sample_rate: voice.sampleRate, quality: voice.quality });
      expect(c.espeak).toEqual({ voice: voice.espeak });
      expect(c.inference).toEqual({ noise_scale: 0.667, length_scale: 1, noise_w: 0.8 });
      expect(c.phoneme_type).toBe('espeak');
      expect(c.phoneme_map).toEqual({});
      expect(c.phoneme_id_map).toEqual(source.phoneme_id_map);
      expect(c.num_symbols).toBe(source.num_symbols);
      expect(c.num_speakers).toBe(voice.speakers ? Object.keys(voice.speakers).length : 1);
      expect(c.speaker_id_map).toEqual(voice.speakers ?? {});
      expect(c.piper_version).toBe('1.0.0');
      expect(c.language).toEqual(source.language);
      expect(c.language['code']).toBe(voice.language);
      expect(Object.keys(c.language).sort()).toEqual(
        ['code', 'country_english', 'family', 'name_english', 'name_native', 'region'].sort(),
      );
      expect(typeof c.dataset).toBe('string');
      const maxId = Math.max(...Object.values(c.phoneme_id_map).flat());
      expect(maxId).toBeLessThan(c.num_symbols);
    });
  }
});

describe('fixture voice models', () => {
  let real: ort.InferenceSession;
  beforeAll(async () => {
    real = await ort.InferenceSession.create(sharedModel('piper/test_voice.onnx'));
  });

  for (const voice of VOICES) {
    describe(voice.name, () => {
      const sid = voice.speakers ? 0 : undefined;

      it("has Piper's inputs and outputs (those of the shared test voice, plus sid when multi-speaker)", async () => {
        const s = await session(voice.name);
        const expectedInputs = [...real.inputMetadata];
        if (voice.speakers) expectedInputs.push({ name: 'sid', isTensor: true, type: 'int64', shape: [1] });
        expect(s.inputNames).toEqual(expectedInputs.map((input) => input.name));
        expect([...s.inputMetadata]).toEqual(expectedInputs);
        expect(s.outputNames).toEqual(['output']);
        expect([...s.outputMetadata]).toEqual([...real.outputMetadata]);
      });

      it('makes floor(N * length_scale * 256) samples, shaped [1, 1, T]', async () => {
        const symbols = config(voice.name).num_symbols;
        for (const n of [5, 37, 200]) {
          for (const lengthScale of [0.5, 1, 2]) {
            const { dims, audio } = await synthesize(voice.name, { ids: sentence(n, symbols), lengthScale, sid });
            const samples = Math.floor(n * lengthScale * HOP);
            expect(dims).toEqual([1, 1, samples]);
            expect(audio.length).toBe(samples);
          }
        }
      });

      it('is deterministic and computes the documented tone', async () => {
        const ids = sentence(37, config(voice.name).num_symbols);
        const first = await synthesize(voice.name, { ids, lengthScale: 1.1, sid });
        const second = await synthesize(voice.name, { ids, lengthScale: 1.1, sid });
        expect(second.audio).toEqual(first.audio);
        const expected = reference(ids, 1.1, voice.frequency, voice.sampleRate);
        expect(first.audio.length).toBe(expected.length);
        let maxError = 0;
        for (let t = 0; t < expected.length; t++) {
          maxError = Math.max(maxError, Math.abs(first.audio[t]! - expected[t]!));
        }
        expect(maxError).toBeLessThan(1e-5);
      });

      it('starts and ends at zero amplitude and peaks below 0.3', async () => {
        const { audio } = await synthesize(voice.name, { ids: sentence(37, config(voice.name).num_symbols), sid });
        expect(audio[0]).toBe(0);
        expect(Math.abs(audio[audio.length - 1]!)).toBeLessThan(1e-3);
        expect(Math.abs(audio[1]!)).toBeLessThan(1e-3);
        const peak = audio.reduce((max, x) => Math.max(max, Math.abs(x)), 0);
        expect(peak).toBeGreaterThan(0.2);
        expect(peak).toBeLessThanOrEqual(0.3);
      });

      it(`sounds at ${voice.frequency} Hz`, async () => {
        const { audio } = await synthesize(voice.name, { ids: sentence(37, config(voice.name).num_symbols), sid });
        expect(Math.abs(dominantFrequency(audio, voice.sampleRate) - voice.frequency)).toBeLessThanOrEqual(1);
      });

      it('accepts and ignores noise_scale, noise_w and input_lengths, like Piper', async () => {
        const ids = sentence(20, config(voice.name).num_symbols);
        const plain = await synthesize(voice.name, { ids, sid });
        const other = await synthesize(voice.name, { ids, sid, noiseScale: 0, noiseW: 2, inputLength: 3 });
        expect(other.audio).toEqual(plain.audio);
      });

      it('depends on the phoneme ids, not only their count', async () => {
        const a = await synthesize(voice.name, { ids: [1, 20, 21, 22, 2], sid });
        const b = await synthesize(voice.name, { ids: [1, 23, 24, 25, 2], sid });
        expect(b.audio.length).toBe(a.audio.length);
        expect(b.audio).not.toEqual(a.audio);
      });

      it('rejects ids outside num_symbols like an embedding lookup', async () => {
        const symbols = config(voice.name).num_symbols;
        await expect(synthesize(voice.name, { ids: [1, symbols, 2], sid })).rejects.toThrow(/out of data bounds/);
      });
    });
  }

  describe('heavy bench voice', () => {
    it("makes the medium fixture's audio bit for bit (its MLP only costs time)", async () => {
      for (const [n, lengthScale] of [
        [0, 1],
        [1, 1],
        [37, 1.1],
        [120, 0.8],
      ] as const) {
        const ids = n === 0 ? [] : sentence(n, 256);
        const heavy = await synthesize('en_US-fixture_heavy-medium', { ids, lengthScale });
        const medium = await synthesize('en_US-fixture-medium', { ids, lengthScale });
        expect(heavy.dims).toEqual(medium.dims);
        expect(heavy.audio).toEqual(medium.audio);
      }
    });
  });

  describe('multi-speaker voice', () => {
    const name = 'en_US-fixture_multi-medium';
    const ids = sentence(37, 256);

    it('sounds different for each speaker: 220 + 55 * sid Hz', async () => {
      const outputs = [];
      for (const sid of Object.values(SPEAKERS)) {
        const { dims, audio } = await synthesize(name, { ids, sid });
        expect(dims).toEqual([1, 1, 37 * HOP]);
        expect(Math.abs(dominantFrequency(audio, 22050) - (220 + 55 * sid))).toBeLessThanOrEqual(1);
        outputs.push(audio);
      }
      expect(outputs[1]).not.toEqual(outputs[0]);
    });

    it('needs sid and rejects one outside the speakers', async () => {
      await expect(synthesize(name, { ids })).rejects.toThrow(/sid/);
      await expect(synthesize(name, { ids, sid: 4 })).rejects.toThrow(/out of data bounds/);
    });
  });
});
