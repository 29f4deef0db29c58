#!/usr/bin/env node
// How diarization's clustering settings were chosen: a grid search on the development set (never one file). Each
// file's VAD regions and window embeddings are computed once, then the pipeline re-runs with each setting from the
// cache, so a grid of dozens of settings takes minutes. Scores: mean DER (0.25 s collar, overlaps scored) and the
// share of files whose speaker count is right, on the generated conversations only (pyannote_sample is the held-out
// check and is scored, not tuned on).
//
//   node bench/diarize-tune.mjs [--config ge2e|features] [--grid JSON] [--match TEXT] [--vad JSON]
//
// --grid maps setting names to the values to try, e.g. '{"threshold":[0.2,0.25,0.3],"minSpeakerSeconds":[3,5,8]}'.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { devsetDir, devsetFiles, ge2eModel, scoreTurns } from './diarize-devset.mjs';
import { benchArgs, distEntry, ensureDist, flag, root, sharedDir as shared } from './lib.mjs';

const { settings } = benchArgs('node bench/diarize-tune.mjs [options]', {
  config: flag.string('ge2e or features', { value: 'NAME', defaultText: 'ge2e' }),
  grid: flag.json('settings to try', { threshold: [0.2, 0.25, 0.3] }),
  match: flag.string('only files whose name contains this', { value: 'TEXT', defaultText: 'all' }),
  devset: flag.string('the development set to score', { value: 'DIR', defaultText: 'test/fixtures/diarize-dev' }),
  vad: flag.json('speech detection options (detectSpeechRegions), the same for every setting', {}),
});
ensureDist();
const voxmill = await import(pathToFileURL(distEntry).href);
const dist = (file) => import(pathToFileURL(join(root, 'dist', file)).href);
const { diarizePcm } = await dist('diarize/pipeline.js');
const {
  resolveDiarizationConfig,
  DEFAULT_DIARIZATION_THRESHOLDS,
  DEFAULT_DIARIZATION_MERGE_DISTANCES,
  DEFAULT_DIARIZATION_SHORT_SPEAKER_DISTANCES,
} = await dist('diarize/config.js');
const { frontEndFor } = await dist('diarize/speaker-front-end.js');
const { embedWindows } = await dist('diarize/window-embedder.js');

const useModel = (settings.config ?? 'ge2e') === 'ge2e';
const modelPath = useModel ? ge2eModel() : undefined;
if (useModel && !modelPath) throw new Error("no GE2E model: run 'npm run models:test'");
const method = modelPath ? 'ge2e' : 'features';
const base = {
  ...resolveDiarizationConfig(modelPath ? { embeddingModel: modelPath } : { embeddingModel: null }).base,
  threshold: DEFAULT_DIARIZATION_THRESHOLDS[method],
  mergeDistance: DEFAULT_DIARIZATION_MERGE_DISTANCES[method],
  shortSpeakerDistance: DEFAULT_DIARIZATION_SHORT_SPEAKER_DISTANCES[method],
};

let session;
let ort;
if (modelPath) {
  ort = await import('onnxruntime-node');
  session = await ort.InferenceSession.create(modelPath, { intraOpNumThreads: 2 });
}
const frontEnd = frontEndFor(40, 'mels');
const run = async (input, batch, frames, dimension) =>
  (await session.run({ mels: new ort.Tensor('float32', input, [batch, frames, dimension]) })).embedding.data;

const vadModel = join(shared, 'models', 'whisper', 'ggml-silero-v6.2.0.bin');
const files = devsetFiles(settings.match ?? '', settings.devset ?? devsetDir);
const cached = [];
for (const file of files) {
  // The library's decoder, as Speech.diarize decodes.
  const { samples } = await voxmill.decodeAudio(file.wav);
  const regions = await voxmill.detectSpeechRegions(samples, { ...settings.vad, model: vadModel });
  const reference = [...voxmill.parseRttm(readFileSync(file.rttm, 'utf8')).values()][0];
  // Embeddings keyed by window, computed on first use (window placement depends on windowSeconds / hopSeconds).
  const memo = new Map();
  const embed = async (pcm, windows) => {
    const key = windows.map((w) => `${w.startSample}:${w.endSample}`).join(',');
    if (!memo.has(key)) memo.set(key, await embedWindows(pcm, windows, frontEnd, run, async () => {}));
    return memo.get(key);
  };
  cached.push({ file, samples, regions, reference, embed: modelPath ? embed : undefined });
}

const keys = Object.keys(settings.grid);
const combos = keys.reduce((acc, key) => acc.flatMap((c) => settings.grid[key].map((v) => ({ ...c, [key]: v }))), [{}]);
const pct = (x) => `${(x * 100).toFixed(1).padStart(5)}%`;
for (const combo of combos) {
  const rows = [];
  for (const { file, samples, regions, reference, embed } of cached) {
    const turns = await diarizePcm(samples, regions, {
      ...base,
      minSpeakers: 1,
      maxSpeakers: 8,
      numSpeakers: undefined,
      ...combo,
      embed,
    });
    const row = scoreTurns(voxmill, file, reference, turns);
    rows.push({ ...row, right: row.found === row.speakers });
  }
  const generated = rows.filter((r) => r.generated);
  const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const sample = rows.find((r) => r.file === 'pyannote_sample');
  console.log(
    `${JSON.stringify(combo)}: mean DER ${pct(mean(generated.map((r) => r.der)))}, count right ${pct(mean(generated.map((r) => (r.right ? 1 : 0))))}` +
      ` (missed ${pct(mean(generated.map((r) => r.missed)))}, false alarm ${pct(mean(generated.map((r) => r.falseAlarm)))},` +
      ` confusion ${pct(mean(generated.map((r) => r.confusion)))})` +
      (sample ? `, pyannote_sample ${pct(sample.der)}` : ''),
  );
}
