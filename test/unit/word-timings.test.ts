// Word timings' parts without a worker: the ONNX graph edit (on the fixture voice, run by onnxruntime-node), the
// alignment of a chunk's phonemes to its words, and the timer that turns frames into word times.
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, utimesSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { afterAll, describe, expect, it } from 'vitest';
import { addDurationOutput, DurationGraphError } from '../../src/tts/duration-output.js';
import { timedVoiceModel } from '../../src/tts/edited-voice.js';
import { PhonemeIdEncoder } from '../../src/tts/phoneme-ids.js';
import { isSound, wordOfEachPhoneme, wordsOf } from '../../src/tts/word-alignment.js';
import { ChunkWordTimer } from '../../src/tts/word-times.js';
import { fieldsOf, lengthField, varintField } from '../../src/util/protobuf-fields.js';
import { fixture } from '../helpers/paths.js';

const voicePath = fixture('voices/en_US-fixture-medium.onnx');
const cp = (text: string) => [...text].map((c) => c.codePointAt(0) as number);
const scratch = mkdtempSync(join(tmpdir(), 'voxmill-timed-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

async function run(model: string | Uint8Array, ids: number[], lengthScale = 1) {
  const session =
    typeof model === 'string' ? await ort.InferenceSession.create(model) : await ort.InferenceSession.create(model);
  try {
    const results = await session.run({
      input: new ort.Tensor('int64', BigInt64Array.from(ids, BigInt), [1, ids.length]),
      input_lengths: new ort.Tensor('int64', BigInt64Array.of(BigInt(ids.length)), [1]),
      scales: new ort.Tensor('float32', Float32Array.of(0.667, lengthScale, 0.8), [3]),
    });
    return { outputs: session.outputNames, results };
  } finally {
    await session.release();
  }
}

describe('protobuf fields', () => {
  it('reads back what it writes, and refuses truncated input', () => {
    const message = Buffer.concat([varintField(1, 300), lengthField(2, 'héllo'), varintField(3, 2 ** 40)]);
    const fields = [...fieldsOf(message)];
    expect(fields.map((f) => [f.field, f.varint])).toEqual([
      [1, 300],
      [2, 0],
      [3, 2 ** 40],
    ]);
    expect(message.subarray(fields[1]?.valueStart, fields[1]?.end).toString('utf8')).toBe('héllo');
    expect(() => [...fieldsOf(message.subarray(0, message.length - 2))]).toThrow(/varint|past its message/);
    expect(() => [...fieldsOf(Buffer.from([0x0b]))]).toThrow(/wire type 3/);
  });
});

describe('addDurationOutput', () => {
  it("adds the Ceil that feeds a CumSum as an output: one frame count per id, the fixture voice's audio unchanged", async () => {
    const original = readFileSync(voicePath);
    const { output, model } = addDurationOutput(original);
    expect(output).toBe('w_ceil');
    const ids = [1, 0, 20, 0, 30, 0, 2];
    const edited = await run(model, ids, 2);
    expect(edited.outputs).toEqual(['output', 'w_ceil']);
    expect(Array.from(edited.results.w_ceil?.data as Float32Array)).toEqual(ids.map(() => 2));
    const plain = await run(voicePath, ids, 2);
    expect(edited.results.output?.data).toEqual(plain.results.output?.data);
    // Adding it twice changes nothing.
    expect(addDurationOutput(model).model.equals(model)).toBe(true);
  });

  it('refuses a graph without durations and bytes that are not a model, with DurationGraphError', () => {
    const embedding = readFileSync(fixture('embeddings/fixture-speaker-embedding.onnx'));
    expect(() => addDurationOutput(embedding)).toThrow(DurationGraphError);
    expect(() => addDurationOutput(embedding)).toThrow(/no phoneme durations/);
    expect(() => addDurationOutput(Buffer.from([0xff, 0xff, 0xff]))).toThrow(/not an ONNX model/);
  });

  it('caches the edit beside the voice under a hidden name, made again when the voice file changes', async () => {
    const dir = mkdtempSync(join(scratch, 'cache-'));
    const voice = join(dir, 'v.onnx');
    copyFileSync(voicePath, voice);
    const first = await timedVoiceModel(voice);
    expect(first).toMatchObject({ made: true });
    const second = await timedVoiceModel(voice);
    expect(second).toEqual({ ...first, made: false });
    expect(readFileSync(voice).equals(readFileSync(voicePath))).toBe(true);
    utimesSync(voice, new Date(), new Date(Date.now() + 5000));
    const third = await timedVoiceModel(voice);
    expect(third.made).toBe(true);
    // The stale cache is gone; the voice and one cache remain, and no temporary file.
    expect(readdirSync(dir).sort()).toEqual([(third as { path: string }).path.split('/').pop(), 'v.onnx'].sort());
  });
});

describe('wordsOf and wordOfEachPhoneme', () => {
  it('keeps tokens with a letter or digit, trimming outer punctuation but not inner', () => {
    expect(wordsOf('"Hello," she said — it costs $3.50, e.g. now!').map((w) => w.text)).toEqual([
      'Hello',
      'she',
      'said',
      'it',
      'costs',
      '3.50',
      'e.g',
      'now',
    ]);
    expect(wordsOf('$3.50')[0]?.token).toBe('$3.50');
  });

  it('splits phonemes espeak joined across words ("ʌvðə") and skips stress marks, spaces and punctuation', () => {
    // "a test of the system." as espeak-ng gives it, and each word alone.
    const sentence = cp('ɐ tˈɛst ʌvðə sˈɪstəm.');
    const words = ['ɐ', 'tˈɛst', 'ʌv', 'ðə', 'sˈɪstəm'].map(cp);
    const [labels] = wordOfEachPhoneme([sentence], words);
    const byWord = new Map<number, string>();
    sentence.forEach((p, i) => {
      const w = labels?.[i] as number;
      if (w >= 0) byWord.set(w, (byWord.get(w) ?? '') + String.fromCodePoint(p));
    });
    expect([...byWord]).toEqual([
      [0, 'ɐ'],
      [1, 'tɛst'],
      [2, 'ʌv'],
      [3, 'ðə'],
      [4, 'sɪstəm'],
    ]);
    expect(isSound(cp('ˈ')[0] as number)).toBe(false);
    expect(isSound(cp('ː')[0] as number)).toBe(true);
  });

  it('gives sounds no word expects to a neighbour and spans sentences espeak made up ("Dr.")', () => {
    const sentences = [cp('dˈɑːktɚ.'), cp('smˈɪθ ɪz hˈiə.')];
    const words = ['dˈɑːktɚ', 'smˈɪθ', 'ɪz', 'hˈɪɹ'].map(cp);
    const labels = wordOfEachPhoneme(sentences, words);
    expect(Array.from(labels[0] as Int32Array).filter((w) => w >= 0)).toEqual([0, 0, 0, 0, 0, 0]);
    expect(new Set(Array.from(labels[1] as Int32Array).filter((w) => w >= 0))).toEqual(new Set([1, 2, 3]));
    expect(labels[1]?.[labels[1].length - 1]).toBe(-1); // the full stop
  });
});

describe('ChunkWordTimer', () => {
  const tables = {
    idMap: [...'^_$abc '].map((c, i) => [c.codePointAt(0) as number, [i]] as const),
    phonemeMap: [],
  };

  it("times each word from its sounds' frames, after the pause before the sentence, at the sentence's ratio", () => {
    const encoder = new PhonemeIdEncoder(tables);
    const { ids, sources } = encoder.encodeWithSources(cp('ab c'));
    // ^ _ a _ b _ ' ' _ c _ $ : 2 frames each
    expect(ids.length).toBe(11);
    const frames = ids.map(() => 2);
    const timer = new ChunkWordTimer(
      [
        { text: 'ab', token: 'ab' },
        { text: 'c', token: 'c' },
      ],
      [Int32Array.from([0, 0, -1, 1])],
    );
    const words = timer.sentence({
      index: 0,
      sources,
      frames,
      samples: 22 * 256,
      leadSamples: 100,
      sampleRate: 1000,
      last: true,
    });
    // a starts after ^ _ (frame 4), b ends at frame 10; c starts after _ ' ' _ (frame 16) and ends at 18.
    expect(words).toEqual([
      { word: 'ab', start: (100 + 4 * 256) / 1000, end: (100 + 10 * 256) / 1000 },
      { word: 'c', start: (100 + 16 * 256) / 1000, end: (100 + 18 * 256) / 1000 },
    ]);
  });

  it('reports a word no sound was aligned to with no length, in order, and the rest at the end of the chunk', () => {
    const encoder = new PhonemeIdEncoder(tables);
    const { sources } = encoder.encodeWithSources(cp('ab'));
    const timer = new ChunkWordTimer(
      ['x', 'y', 'z', 'w'].map((t) => ({ text: t, token: t })),
      [Int32Array.from([0, 2])],
    );
    const words = timer.sentence({
      index: 0,
      sources,
      frames: sources.map(() => 1),
      samples: 7,
      leadSamples: 0,
      sampleRate: 1,
      last: true,
    });
    expect(words).toEqual([
      { word: 'x', start: 2, end: 3 },
      { word: 'y', start: 4, end: 4 },
      { word: 'z', start: 4, end: 5 },
      { word: 'w', start: 7, end: 7 },
    ]);
  });
});
