#!/usr/bin/env node
// Transcription speed of a GPU build (VOXMILL_GPU=cuda or vulkan): one addon, one model file and one decoded audio
// clip, transcribed on the GPU (load option gpu: true) and on the same addon's CPU code (gpu: false), in one process
// and one run, so the ratio compares like with like on the machine at hand.
//
//   VOXMILL_ADDON_PATH=build-cuda/Release/voxmill.node npm run bench:gpu [-- options]   (--help lists the flags)
//
// Per model: the build's report first (backends(), devices(), the model's info.device), then for each clip
// - load: WhisperModel.load to resolve (the GPU's includes creating its backend and copying the weights over);
// - first call: the first transcription after the load (kernel selection, buffers);
// - warm call: the median of --repeats more transcriptions of the same samples;
// - x realtime: audio seconds / warm call;
// - WER against ../shared/audio/transcripts.tsv where the clip has a reference, and the word edits between the GPU's
//   and the CPU's text (the two back ends add in different orders, so a word may differ; the number says how much).
// Models load as whisper-cli runs them by default: flash attention on, no DTW alignment (--dtw turns it on, which
// turns flash attention off). Audio is decoded once and passed as samples, so decoding is not in any figure. The long clip is gb0.wav repeated
// to --long-minutes (one recording, so WER is not scored for it).
//
// This imports dist/stt/whisper-model.js, dist/audio/decode.js and dist/system.js rather than dist/index.js: those
// need no package from node_modules, so the benchmark runs on a machine that has only Node, the addon and its shared
// libraries (how it was run on a rented GPU machine: BENCHMARKS.md, "GPU speed").
//
// Raw results go to bench/out/gpu-<timestamp>.json. The exit status is 1 when a model does not run on the GPU (no
// device, or a CPU-only addon) unless --allow-cpu is given; never for a ratio.
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import {
  benchArgs,
  flag,
  gitCommit,
  machineFacts,
  median,
  readReferences,
  realModels,
  referenceWer,
  repeatToLength,
  root,
  runMain,
  sharedAudio,
  transcriptWords,
  wordEdits,
  writeResults,
} from './lib.mjs';

const DEFAULT_CLIPS = 'jfk.wav,gb0.wav';

const FLAGS = {
  models: flag.string(
    'name=path pairs, comma-separated (ggml files); default the real tiny.en and base of npm run models:test',
    { value: 'LIST', defaultText: 'tiny.en,base from test/fixtures/real/models.json' },
  ),
  clips: flag.string('shared audio files to transcribe, comma-separated', {
    value: 'LIST',
    defaultText: DEFAULT_CLIPS,
  }),
  'long-minutes': flag.integer('minutes of the long clip (gb0.wav repeated); 0 leaves it out', 5, { min: 0 }),
  repeats: flag.integer('warm calls per clip and side', 3),
  'cpu-repeats': flag.integer('warm calls per clip on the CPU side (it is the slow one)', 1),
  'cpu-threads': flag.integer('threads of the CPU side', Math.min(availableParallelism(), 8), {
    defaultText: 'the cores, at most 8',
  }),
  'gpu-threads': flag.integer('threads of the GPU side (the mel spectrogram and the sampling run on the CPU)', 4),
  dtw: flag.boolean('load with DTW word alignment on (the library default; it turns flash attention off)'),
  'no-cpu': flag.boolean('time only the GPU side'),
  'allow-cpu': flag.boolean('do not fail when the GPU side runs on the CPU'),
};

function parseModels(text) {
  if (!text) {
    const real = realModels(['whisper-tiny.en', 'whisper-base']);
    return [
      { name: 'tiny.en', path: real['whisper-tiny.en'] },
      { name: 'base', path: real['whisper-base'] },
    ];
  }
  return text.split(',').map((pair) => {
    const at = pair.indexOf('=');
    if (at <= 0) throw new Error(`--models: expected name=path, received '${pair}'`);
    return { name: pair.slice(0, at), path: pair.slice(at + 1) };
  });
}

async function timeCall(fn) {
  const started = performance.now();
  const value = await fn();
  return { value, seconds: (performance.now() - started) / 1000 };
}

/** One side (GPU or CPU) of one model: load, then each clip's first and warm calls. */
async function runSide(WhisperModel, model, side, clips, settings) {
  const gpu = side === 'gpu';
  const load = await timeCall(() => WhisperModel.load(model.path, { gpu, dtw: settings.dtw }));
  const loaded = load.value;
  const options = {
    language: 'en',
    threads: gpu ? settings.gpuThreads : settings.cpuThreads,
  };
  const repeats = gpu ? settings.repeats : settings.cpuRepeats;
  const rows = [];
  try {
    for (const clip of clips) {
      const first = await timeCall(() => loaded.transcribe(clip.samples, options));
      const warm = [];
      for (let i = 0; i < repeats; i++)
        warm.push((await timeCall(() => loaded.transcribe(clip.samples, options))).seconds);
      const warmSeconds = median(warm);
      rows.push({
        clip: clip.name,
        audioSeconds: clip.seconds,
        firstCallSeconds: first.seconds,
        warmCallSeconds: warmSeconds,
        warmCalls: warm,
        realtimeFactor: clip.seconds / warmSeconds,
        text: first.value.text,
        wer: clip.reference === undefined ? null : referenceWer(first.value.text, clip.reference),
      });
    }
  } finally {
    loaded.dispose();
  }
  return {
    side,
    device: loaded.info.device,
    gpu: loaded.info.gpu,
    loadSeconds: load.seconds,
    threads: options.threads,
    rows,
  };
}

async function main() {
  const { settings } = benchArgs('node bench/gpu.mjs [options]', FLAGS);
  const dist = (path) => import(join(root, 'dist', path));
  const { WhisperModel } = await dist('stt/whisper-model.js');
  const { decodeAudio } = await dist('audio/decode.js');
  const { backends, devices, versions } = await dist('system.js');
  const models = parseModels(settings.models);
  const references = readReferences();

  const clips = [];
  for (const name of (settings.clips ?? DEFAULT_CLIPS).split(',')) {
    const { samples } = await decodeAudio(sharedAudio(name));
    clips.push({ name, samples, seconds: samples.length / 16_000, reference: references.get(name) });
  }
  if (settings.longMinutes > 0) {
    // gb0.wav is decoded once: the listed clip's samples when it is one of them.
    const samples =
      clips.find((clip) => clip.name === 'gb0.wav')?.samples ?? (await decodeAudio(sharedAudio('gb0.wav'))).samples;
    const long = repeatToLength(samples, settings.longMinutes * 60 * 16_000);
    clips.push({ name: `gb0.wav x${settings.longMinutes} min`, samples: long, seconds: long.length / 16_000 });
  }

  const report = { backends: backends(), devices: devices(), system: versions().system };
  console.log(`backends: ${report.backends.join(', ')}`);
  for (const d of report.devices) console.log(`device: ${d.name} [${d.type}] ${d.description}`);

  const results = [];
  let ranOnCpu = false;
  for (const model of models) {
    const gpuSide = await runSide(WhisperModel, model, 'gpu', clips, settings);
    if (!gpuSide.gpu) ranOnCpu = true;
    const cpuSide = settings.noCpu ? null : await runSide(WhisperModel, model, 'cpu', clips, settings);
    results.push({ model: model.name, path: model.path, gpuSide, cpuSide });
    console.log(
      `\n${model.name}: GPU side on ${gpuSide.device} (load ${gpuSide.loadSeconds.toFixed(2)} s, ${gpuSide.threads} threads)` +
        (cpuSide
          ? `, CPU side on ${cpuSide.device} (load ${cpuSide.loadSeconds.toFixed(2)} s, ${cpuSide.threads} threads)`
          : ''),
    );
    console.log(
      '| clip | audio s | GPU first s | GPU warm s | GPU x realtime | CPU warm s | CPU x realtime | CPU/GPU | WER GPU | WER CPU | word edits GPU vs CPU |',
    );
    console.log('| --- | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: |');
    for (const [i, g] of gpuSide.rows.entries()) {
      const c = cpuSide?.rows[i];
      const pct = (v) => (v === null || v === undefined ? '-' : `${(v * 100).toFixed(1)}%`);
      const edits = c ? wordEdits(transcriptWords(g.text), transcriptWords(c.text)) : '-';
      console.log(
        `| ${g.clip} | ${g.audioSeconds.toFixed(1)} | ${g.firstCallSeconds.toFixed(3)} | ${g.warmCallSeconds.toFixed(3)} | ` +
          `${g.realtimeFactor.toFixed(0)} | ${c ? c.warmCallSeconds.toFixed(3) : '-'} | ${c ? c.realtimeFactor.toFixed(0) : '-'} | ` +
          `${c ? (c.warmCallSeconds / g.warmCallSeconds).toFixed(1) : '-'} | ${pct(g.wer)} | ${pct(c?.wer)} | ${edits} |`,
      );
    }
  }
  const file = writeResults('gpu', { machine: machineFacts(), commit: gitCommit(), settings, report, results });
  console.log(`\nraw results: ${file}`);
  if (ranOnCpu && !settings.allowCpu) {
    throw new Error(
      'a model ran on the CPU with gpu: true (no GPU device, or a CPU-only addon); --allow-cpu to time it anyway',
    );
  }
}

runMain('gpu', main);
