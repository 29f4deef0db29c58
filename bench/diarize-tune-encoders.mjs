#!/usr/bin/env node
// How the clustering settings of each speaker encoder were chosen, with and without the segmentation model: a grid
// search on a development set (never one file, never the held-out set). Each file's VAD regions, segmentation
// outputs and embeddings are computed once (the pipeline calls the models in the same order whatever the clustering
// settings, so their answers are replayed by call), then the pipeline re-runs with each setting. Scores: mean DER
// (0.25 s collar, overlaps scored), its parts, and the share of files whose speaker count is right, on the generated
// conversations; pyannote_sample is scored, not tuned on.
//
//   node bench/diarize-tune-encoders.mjs --encoder campplus|ecapa|ge2e|features [--pipeline segmentation|windows]
//        [--grid JSON] [--devset DIR] [--match TEXT]
//
// `--encoder features --pipeline segmentation` measures the built-in features with the segmentation model, which the
// library does not offer (its segmentation needs an embedding model): each local speaker's piece gets the mean and
// standard deviation of its 20 MFCCs, standardized over all the file's pieces (as the window pipeline standardizes
// over its windows), found in a first pass over the file and replayed in the second.
//
// --grid maps setting names to the values to try, e.g. '{"threshold":[0.5,0.6,0.7],"minSpeakerSeconds":[3,5]}'.
// A `segmentationStepSeconds`, `segmentationEmbedSeconds` or `segmentationSplitPauseSeconds` in the grid re-runs the
// models (their calls differ); put it first to keep one cache.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { deserialize, serialize } from 'node:v8';
import { devsetDir, devsetFiles, realModels, scoreTurns } from './diarize-devset.mjs';
import { benchArgs, distEntry, ensureDist, flag, root, sharedDir as shared } from './lib.mjs';

const { settings } = benchArgs('node bench/diarize-tune-encoders.mjs [options]', {
  encoder: flag.string('ge2e, ecapa or campplus', { value: 'NAME', defaultText: 'campplus' }),
  pipeline: flag.string('segmentation or windows', { value: 'NAME', defaultText: 'segmentation' }),
  grid: flag.json('settings to try', { threshold: [0.5, 0.6, 0.7] }),
  match: flag.string('only files whose name contains this', { value: 'TEXT', defaultText: 'all' }),
  variants: flag.string('only these variants (clean,noise,reverb,real)', { value: 'LIST', defaultText: 'all' }),
  'per-file': flag.boolean('also print each file whose speaker count is wrong'),
  devset: flag.string('the development set to score', { value: 'DIR', defaultText: 'test/fixtures/diarize-dev' }),
});
ensureDist();
const voxmill = await import(pathToFileURL(distEntry).href);
const dist = (file) => import(pathToFileURL(join(root, 'dist', file)).href);
const { diarizePcm } = await dist('diarize/pipeline.js');
const { diarizeWithSegmentation } = await dist('diarize/segmentation-pipeline.js');
const { segmentationRunner } = await dist('diarize/segmenter.js');
const config = await dist('diarize/config.js');
const { frontEndFor } = await dist('diarize/speaker-front-end.js');
const { embedWindows } = await dist('diarize/window-embedder.js');
const { OnnxModel } = await dist('util/onnx-model.js');

const { FeatureExtractor } = await dist('diarize/features.js');

const encoder = settings.encoder ?? 'campplus';
const models = realModels();
const builtIn = encoder === 'features';
const modelPath = builtIn ? undefined : models[`speaker-${encoder}`];
if (!builtIn && !modelPath) throw new Error(`no ${encoder} model: run 'npm run models:test'`);
const useSegmentation = (settings.pipeline ?? 'segmentation') === 'segmentation';

const session = builtIn ? undefined : await OnnxModel.load(modelPath, { intraOpThreads: 2, memoryArena: true });
const input = session?.inputs[0];
const frontEnd = builtIn
  ? { kind: 'features' }
  : frontEndFor(input.shape.at(-1) >= 0 ? input.shape.at(-1) : undefined, input.name);
const outputName = session?.outputs[0].name;
const runEncoder = async (features, batch, frames, dimension) =>
  (
    await session.run(
      [{ name: input.name, type: 'float32', dims: [batch, frames, dimension], data: features }],
      [outputName],
    )
  ).get(outputName).data;

/** Mean and standard deviation of 20 MFCCs over each window (the built-in features' raw vector). */
const mfcc = new FeatureExtractor(40, 20);
function statistics(samples, windows) {
  return windows.map(({ startSample, endSample }) => {
    const frames = mfcc.compute(samples, startSample, endSample);
    const count = frames.length / 20;
    const vector = new Float32Array(40);
    for (let f = 0; f < count; f++) {
      for (let d = 0; d < 20; d++) {
        const v = frames[f * 20 + d];
        vector[d] += v / count;
        vector[20 + d] += (v * v) / count;
      }
    }
    for (let d = 0; d < 20; d++) vector[20 + d] = Math.sqrt(Math.max(vector[20 + d] - vector[d] ** 2, 0));
    return vector;
  });
}

/** Standardizes raw vectors over all of them (per dimension), then scales each to unit length. */
function standardized(all) {
  const mean = new Float64Array(40);
  const square = new Float64Array(40);
  for (const v of all) {
    for (let d = 0; d < 40; d++) {
      mean[d] += v[d] / all.length;
      square[d] += v[d] ** 2 / all.length;
    }
  }
  return all.map((v) => {
    const out = Float32Array.from(v, (x, d) => (x - mean[d]) / Math.sqrt(Math.max(square[d] - mean[d] ** 2, 1e-8)));
    let norm = 0;
    for (const x of out) norm += x * x;
    norm = Math.sqrt(norm) || 1;
    return out.map((x) => x / norm);
  });
}
const segmentation = useSegmentation
  ? await OnnxModel.load(models['speaker-segmentation'], { intraOpThreads: 2, memoryArena: true })
  : undefined;
const runSegmentation = segmentation ? segmentationRunner(segmentation, models['speaker-segmentation']) : undefined;

const method = frontEnd.kind;
// The worker's own defaults for this encoder and pipeline (the built-in features with segmentation have none: the
// grid gives the threshold).
const base = config.clusteringSettings(
  {
    ...config.resolveDiarizationConfig({ embeddingModel: modelPath ?? null }).base,
    minSpeakers: 1,
    maxSpeakers: 8,
    numSpeakers: undefined,
  },
  method,
  useSegmentation,
);

/** Seconds with two or more speakers talking in `turns`, on a 10 ms grid: a Uint8Array of the grid's frames. */
function overlapFrames(turns, frames) {
  const count = new Uint8Array(frames);
  const bySpeaker = new Map();
  for (const t of turns) bySpeaker.set(t.speaker, [...(bySpeaker.get(t.speaker) ?? []), t]);
  for (const list of bySpeaker.values()) {
    const mine = new Uint8Array(frames);
    for (const t of list) mine.fill(1, Math.round(t.start * 100), Math.min(frames, Math.round(t.end * 100)));
    for (let f = 0; f < frames; f++) count[f] += mine[f];
  }
  return count.map((c) => (c >= 2 ? 1 : 0));
}

/** Replays a model's answers by call number; a call past the record runs the model and records it. */
function replay(runner, answers = []) {
  let call = 0;
  const replaying = async (...args) => {
    const at = call++;
    answers[at] ??= await runner(...args);
    return answers[at];
  };
  replaying.rewind = () => {
    call = 0;
  };
  replaying.answers = answers;
  return replaying;
}

// The models' answers are kept on disk per set, encoder, pipeline and file (v8-serialized), so another grid over the
// same set starts from them: ~/.cache/voxmill/diarize-tune/<set>/<encoder>-<pipeline>-<key>-<file>.bin. The set's
// folder is named by the set's path, the model files (size and time) and the pipeline's source, so a reconverted
// model or a changed pipeline never replays stale answers.
const stamp = [
  resolve(settings.devset ?? devsetDir),
  ...[modelPath, models['speaker-segmentation']].filter(Boolean).map((path) => {
    const { size, mtimeMs } = statSync(path);
    return `${path}:${size}:${mtimeMs}`;
  }),
  readFileSync(join(root, 'src', 'diarize', 'segmentation-pipeline.ts'), 'utf8'),
  readFileSync(join(root, 'src', 'diarize', 'window-embedder.ts'), 'utf8'),
];
const cacheDir = join(
  homedir(),
  '.cache',
  'voxmill',
  'diarize-tune',
  createHash('sha256').update(stamp.join('\n')).digest('hex').slice(0, 12),
);
mkdirSync(cacheDir, { recursive: true });
const cacheFile = (file, key) =>
  join(cacheDir, `${encoder}-${useSegmentation ? 'seg' : 'win'}-${key.replace(/\//g, '_')}-${file.name}.bin`);
function loadAnswers(file, key) {
  const path = cacheFile(file, key);
  return existsSync(path) ? deserialize(readFileSync(path)) : undefined;
}
function saveAnswers(file, key, value) {
  writeFileSync(cacheFile(file, key), serialize(value));
}

const vadModel = join(shared, 'models', 'whisper', 'ggml-silero-v6.2.0.bin');
const variants = settings.variants?.split(',');
const files = devsetFiles(settings.match ?? '', settings.devset ?? devsetDir).filter(
  (f) => !variants || variants.includes(f.variant),
);
const cached = [];
for (const file of files) {
  const { samples } = await voxmill.decodeAudio(file.wav);
  const regions = await voxmill.detectSpeechRegions(samples, { model: vadModel });
  const reference = [...voxmill.parseRttm(readFileSync(file.rttm, 'utf8')).values()][0];
  const caches = new Map();
  cached.push({ file, samples, regions, reference, caches });
}

const keys = Object.keys(settings.grid);
const combos = keys.reduce((acc, key) => acc.flatMap((c) => settings.grid[key].map((v) => ({ ...c, [key]: v }))), [{}]);
const sum = (rows, key) => rows.reduce((a, r) => a + r.overlap[key], 0);
const pct = (x) => `${(x * 100).toFixed(1).padStart(5)}%`;
const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
for (const combo of combos) {
  const rows = [];
  const started = performance.now();
  for (const { file, samples, regions, reference, caches } of cached) {
    const options = { ...base, ...combo };
    // The models' calls depend only on the step (segmentation) or the windows (window pipeline).
    const key = useSegmentation
      ? `${options.segmentationStepSeconds}-${options.segmentationEmbedSeconds}-${options.segmentationSplitPauseSeconds}`
      : `${options.windowSeconds}/${options.hopSeconds}`;
    const saved = caches.has(key) ? undefined : loadAnswers(file, key);
    if (saved) {
      const segment = replay(runSegmentation, saved.segment ?? []);
      const embed = saved.embed ? replay(async () => undefined, saved.embed) : undefined;
      if (saved.builtIn) {
        const { counts, all } = saved.builtIn;
        let call = 0;
        let at = 0;
        const replayed = async () => {
          const n = counts[call++];
          at += n;
          return all.slice(at - n, at);
        };
        replayed.rewind = () => {
          call = 0;
          at = 0;
        };
        caches.set(key, { segment, embed: replayed });
      } else caches.set(key, { segment, embed });
    }
    if (!caches.has(key) && builtIn && useSegmentation) {
      // First pass: every piece's raw statistics; then the same calls answer them standardized over the file.
      const raw = [];
      const counts = [];
      const segment = replay(runSegmentation);
      await diarizeWithSegmentation(samples, regions, {
        ...options,
        segment,
        segmentationBatch: 8,
        embed: async (pcm, windows) => {
          const vectors = statistics(pcm, windows);
          raw.push(...vectors);
          counts.push(vectors.length);
          return vectors.map(() => Float32Array.of(1));
        },
      });
      const all = standardized(raw);
      let call = 0;
      let at = 0;
      const embed = async () => {
        const n = counts[call++];
        at += n;
        return all.slice(at - n, at);
      };
      embed.rewind = () => {
        call = 0;
        at = 0;
      };
      caches.set(key, { segment, embed });
      saveAnswers(file, key, { segment: segment.answers, builtIn: { counts, all } });
    }
    if (!caches.has(key)) {
      caches.set(key, {
        segment: replay(runSegmentation),
        embed: builtIn
          ? undefined
          : replay((pcm, windows) => embedWindows(pcm, windows, frontEnd, runEncoder, async () => {})),
      });
    }
    const { segment, embed } = caches.get(key);
    segment.rewind();
    embed?.rewind();
    const turns = useSegmentation
      ? await diarizeWithSegmentation(samples, regions, { ...options, segment, segmentationBatch: 8, embed })
      : await diarizePcm(samples, regions, { ...options, embed });
    const row = scoreTurns(voxmill, file, reference, turns);
    const frames = Math.ceil((samples.length / 16000) * 100);
    const truth = overlapFrames(reference, frames);
    const found = overlapFrames(turns, frames);
    let both = 0;
    for (let f = 0; f < frames; f++) both += truth[f] & found[f];
    const overlap = { truth: truth.reduce((a, b) => a + b, 0), found: found.reduce((a, b) => a + b, 0), both };
    rows.push({ ...row, right: row.found === row.speakers, overlap });
    const entry = caches.get(key);
    if (!entry.saved && !existsSync(cacheFile(file, key))) {
      saveAnswers(file, key, { segment: segment.answers, embed: embed?.answers });
    }
    entry.saved = true;
  }
  const generated = rows.filter((r) => r.generated);
  if (settings.perFile) {
    for (const r of rows.filter((row) => !row.right)) {
      console.log(`  ${r.file.padEnd(24)} DER ${pct(r.der)} found ${r.found} of ${r.speakers}`);
    }
  }
  const sample = rows.find((r) => r.file === 'pyannote_sample');
  const over = generated.filter((r) => r.found > r.speakers).length;
  const under = generated.filter((r) => r.found < r.speakers).length;
  console.log(
    `${encoder}${useSegmentation ? '+seg' : ''} ${JSON.stringify(combo)}: mean DER ${pct(mean(generated.map((r) => r.der)))}, ` +
      `count right ${pct(mean(generated.map((r) => (r.right ? 1 : 0))))} (over ${over}, under ${under})` +
      ` (missed ${pct(mean(generated.map((r) => r.missed)))}, false alarm ${pct(mean(generated.map((r) => r.falseAlarm)))},` +
      ` confusion ${pct(mean(generated.map((r) => r.confusion)))})` +
      (sample ? `, pyannote_sample ${pct(sample.der)}` : '') +
      `, overlap found ${pct(sum(rows, 'both') / sum(rows, 'truth'))} of the truth's (precision ${pct(sum(rows, 'both') / Math.max(1, sum(rows, 'found')))})` +
      ` [${((performance.now() - started) / 1000).toFixed(0)} s]`,
  );
}
session?.release();
segmentation?.release();
