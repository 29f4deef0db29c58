// The addon's own espeak-ng and ONNX Runtime against what ran Piper voices and speaker encoders before them (and
// still serve as references, as dev dependencies): piper-phonemize 1.4.11's WebAssembly phonemizer and
// onnxruntime-node 1.30.0 in JavaScript.
// - phonemes: the same code points for every sentence of the accuracy sets and a text in each of 20 languages;
// - Piper audio: the real voice en_US-joe-medium with no noise (noise_scale 0, noise_w 0, so both are deterministic),
//   voxmill's synthesize() against onnxruntime-node's run of the ids piper-phonemize gives, sentence by sentence:
//   as long, and correlated at 0.999 or more;
// - speaker embeddings: the real GE2E encoder on the same mel windows of two clips, on both runtimes: cosine 0.999 or
//   more.
// Per-sentence numbers go to test/accuracy/results/native-parity.json (git-ignored).
import { mkdirSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { frontEndFor } from '../../src/diarize/speaker-front-end.js';
import { createSpeech, decodeAudio, type Speech } from '../../src/index.js';
import { PhonemeIdEncoder } from '../../src/tts/phoneme-ids.js';
import { phonemizeTexts } from '../../src/tts/phonemizer.js';
import { normalizeText, splitIntoChunks } from '../../src/tts/text.js';
import { parseVoiceConfig } from '../../src/tts/voice-config.js';
import { OnnxModel } from '../../src/util/onnx-model.js';
import { repoRoot, sharedAudio } from '../helpers/paths.js';
import { requireRealModel } from '../helpers/real-models.js';
import { NORMALIZATION_SENTENCES } from './normalization-sentences.mjs';
import { ACCURACY_SENTENCES } from './sentences.mjs';

const joe = requireRealModel('piper-joe-medium');
const ge2e = requireRealModel('speaker-ge2e');
const resultsFile = join(repoRoot, 'test', 'accuracy', 'results', 'native-parity.json');
const wasm = createRequire(import.meta.url)('piper-phonemize') as {
  phonemize(text: string, voice: string): number[][] | null;
};

/** A sentence in each language piper-phonemize was checked in, with the espeak-ng voice that reads it. */
const LANGUAGES: Array<[string, string]> = [
  ['de', 'Der schnelle braune Fuchs springt über den faulen Hund. Wie geht es dir?'],
  ['fr', "Ça va très bien, merci! L'été dernier, nous sommes allés à Montréal."],
  ['es', '¿Dónde está la estación? El niño comió mañana, ¡qué rico!'],
  ['pt-br', 'A ciência é incrível; você já viu o céu à noite?'],
  ['it', "Perché l'università è chiusa oggi? Non lo so."],
  ['nl', 'De snelle bruine vos springt over de luie hond.'],
  ['pl', 'Zażółć gęślą jaźń. Dzień dobry!'],
  ['sv', 'Hur mår du? Jag mår bra, tack.'],
  ['ru', 'Съешь же ещё этих мягких французских булок, да выпей чаю.'],
  ['uk', 'Добрий день! Як справи?'],
  ['cs', 'Příliš žluťoučký kůň úpěl ďábelské ódy.'],
  ['el', 'Καλημέρα, τι κάνεις;'],
  ['fi', 'Hyvää huomenta, mitä kuuluu?'],
  ['hu', 'Árvíztűrő tükörfúrógép.'],
  ['tr', 'Günaydın, nasılsınız?'],
  ['ar', 'مرحبا بالعالم، كيف حالك؟'],
  ['fa', 'سلام دنیا، حال شما چطور است؟'],
  ['hi', 'नमस्ते दुनिया, आप कैसे हैं?'],
  ['vi', 'Xin chào thế giới, bạn có khỏe không?'],
  ['cmn', '你好世界，今天天气很好。'],
];

const pearson = (a: ArrayLike<number>, b: ArrayLike<number>): number => {
  const n = Math.min(a.length, b.length);
  let ma = 0;
  let mb = 0;
  for (let i = 0; i < n; i++) {
    ma += a[i] as number;
    mb += b[i] as number;
  }
  ma /= n;
  mb /= n;
  let sab = 0;
  let saa = 0;
  let sbb = 0;
  for (let i = 0; i < n; i++) {
    const x = (a[i] as number) - ma;
    const y = (b[i] as number) - mb;
    sab += x * y;
    saa += x * x;
    sbb += y * y;
  }
  return sab / Math.sqrt(saa * sbb);
};

const results: Record<string, unknown> = {};
afterAll(() => {
  mkdirSync(dirname(resultsFile), { recursive: true });
  writeFileSync(resultsFile, `${JSON.stringify(results, null, 2)}\n`);
});

describe("the addon's espeak-ng against piper-phonemize's own build", () => {
  it('gives the same phonemes for every sentence of the accuracy sets (en-us) and a text in 20 languages', async () => {
    const english = [...ACCURACY_SENTENCES, ...NORMALIZATION_SENTENCES.flat()];
    const cases: Array<[string, string]> = [...english.map((text): [string, string] => ['en-us', text]), ...LANGUAGES];
    const differ: Array<{ voice: string; text: string }> = [];
    for (const [voice, text] of cases) {
      const [ours] = await phonemizeTexts([text], voice);
      if (JSON.stringify(ours) !== JSON.stringify(wasm.phonemize(text, voice))) differ.push({ voice, text });
    }
    results.phonemes = { cases: cases.length, differ };
    expect(cases.length).toBeGreaterThanOrEqual(150);
    expect(differ).toEqual([]);
  });
});

describe.skipIf(joe.skip)(`Piper audio: the addon against onnxruntime-node ${joe.reason}`, () => {
  let speech: Speech;
  let session: ort.InferenceSession;
  let encoder: PhonemeIdEncoder;
  beforeAll(async () => {
    speech = createSpeech({ voiceDirs: [dirname(joe.path as string)] });
    session = await ort.InferenceSession.create(joe.path as string, { intraOpNumThreads: 1 });
    const config = parseVoiceConfig(
      JSON.parse((await import('node:fs')).readFileSync(`${joe.path}.json`, 'utf8')),
      `${joe.path}.json`,
    );
    encoder = new PhonemeIdEncoder({ idMap: [...config.phonemeIdMap], phonemeMap: [...config.phonemeMap] });
  });
  afterAll(async () => {
    await speech?.close();
    await session?.release();
  });

  it('every sentence as long, and correlated at 0.999 or more, with noise off', async () => {
    const rows: Array<{ text: string; correlation: number; samples: [number, number] }> = [];
    for (const text of ACCURACY_SENTENCES) {
      // One sentence at a time, as espeak-ng splits it: the reference runs exactly the ids piper-phonemize gives.
      const chunks = splitIntoChunks(normalizeText(text));
      const sentences = chunks.flatMap((chunk) => wasm.phonemize(chunk, 'en-us') ?? []).filter((s) => s.length > 0);
      if (sentences.length !== 1) continue;
      const ids = encoder.encode(sentences[0] as number[]);
      const reference = await session.run({
        input: new ort.Tensor('int64', BigInt64Array.from(ids, BigInt), [1, ids.length]),
        input_lengths: new ort.Tensor('int64', BigInt64Array.of(BigInt(ids.length)), [1]),
        scales: new ort.Tensor('float32', Float32Array.of(0, 1, 0), [3]),
      });
      const theirs = reference.output!.data as Float32Array;
      const ours = await speech.synthesizeToBuffer({
        voice: 'en_US-joe',
        input: text,
        format: 'pcm16',
        noiseScale: 0,
        noiseW: 0,
        // The raw text and the voice's raw level, as the reference gets them.
        normalize: false,
        normalizeAudio: false,
      });
      const samples = new Int16Array(ours.audio.buffer, ours.audio.byteOffset, ours.audio.length / 2);
      rows.push({ text, correlation: pearson(samples, theirs), samples: [samples.length, theirs.length] });
    }
    results.audio = rows;
    expect(rows.length).toBeGreaterThanOrEqual(20);
    expect(rows.filter((row) => row.samples[0] !== row.samples[1])).toEqual([]);
    expect(rows.filter((row) => !(row.correlation >= 0.999))).toEqual([]);
  });
});

describe.skipIf(ge2e.skip)(`GE2E speaker embeddings: the addon against onnxruntime-node ${ge2e.reason}`, () => {
  it('gives embeddings of the same 1.6 s windows at cosine 0.999 or more', async () => {
    const frontEnd = frontEndFor(40, 'mels')!;
    const ours = await OnnxModel.load(ge2e.path as string, { intraOpThreads: 1, memoryArena: true });
    const theirs = await ort.InferenceSession.create(ge2e.path as string, { intraOpNumThreads: 1 });
    const cosines: number[] = [];
    for (const clip of ['jfk.wav', 'pyannote_sample.wav']) {
      const { samples } = await decodeAudio(sharedAudio(clip));
      const mels = frontEnd.frames(samples, 0, samples.length);
      const frames = mels.length / 40;
      for (let start = 0; start + 160 <= frames; start += 80) {
        const window = mels.slice(start * 40, (start + 160) * 40);
        const a = (await ours.run([{ name: 'mels', type: 'float32', dims: [1, 160, 40], data: window }])).get(
          'embedding',
        )?.data as Float32Array;
        const b = (await theirs.run({ mels: new ort.Tensor('float32', window, [1, 160, 40]) })).embedding!
          .data as Float32Array;
        let dot = 0;
        let na = 0;
        let nb = 0;
        for (let i = 0; i < a.length; i++) {
          dot += (a[i] as number) * (b[i] as number);
          na += (a[i] as number) ** 2;
          nb += (b[i] as number) ** 2;
        }
        cosines.push(dot / Math.sqrt(na * nb));
      }
    }
    ours.release();
    await theirs.release();
    results.ge2e = { windows: cosines.length, lowest: Math.min(...cosines) };
    expect(cosines.length).toBeGreaterThan(20);
    expect(Math.min(...cosines)).toBeGreaterThanOrEqual(0.999);
  });
});
