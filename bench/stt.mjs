#!/usr/bin/env node
// Speech-to-text benchmark: voxmill's WhisperModel against whisper.cpp's own whisper-cli, built from the same
// whisper.cpp tree with the same flags (bench/build-whisper-cli.mjs), on the same model files and audio, with the
// same decoding parameters. Results are ratios taken in one run (../shared/DESIGN.md): CLI and voxmill runs are
// interleaved, their order alternating per repeat, and each ratio is the median of the per-pair ratios.
//
//   npm run bench:stt [-- options]     (the flags: FLAGS below, or `node bench/stt.mjs --help`)
//
// What one measurement is:
// - whisper-cli: one process per run, `-m M -f F -t T -l en -bs B -bo 5 -nf -oj`: wall time from spawn to exit,
//   peak RSS of the process, and its own "total - load" time from whisper_print_timings (decode audio + state +
//   inference, without reading the weights).
// - voxmill: one fresh Node process per run (so its peak RSS compares with a fresh whisper-cli): imports dist/,
//   loads the model, transcribes the file once. Reported: load+transcribe wall (the like-for-like number for the
//   CLI's wall; it leaves out Node's own start-up and module import, which are in the process wall), transcribe
//   alone, then a second transcribe on the warm model (steady state), and peak RSS after the first call.
// Peak RSS is the kernel's high-water mark of the process: for whisper-cli ru_maxrss at exit (GNU time's %M), for
// voxmill VmHWM from /proc/self/status read by the child after its first call, which is the same counter
// (mm->hiwater_rss) before the warm call could raise it. Neither samples, so no short peak is missed. Without
// /usr/bin/time (Debian: apt-get install time) the CLI's VmHWM is polled every 5 ms instead, which can miss growth
// in its last few ms; the JSON records which method was used. The voxmill process wall and process peak (GNU
// time) are in the JSON too; the process wall printed is without the warm call.
//
// Configurations:
// - parity:   voxmill loads with { dtw: false, flashAttention: true }, which is what whisper-cli does by default.
// - defaults: voxmill's load defaults (DTW timestamps with the model's alignment-heads preset, which needs flash
//             attention off) against whisper-cli -nfa -dtw <preset>: the same work on both sides.
// Then one process loads tiny.en once and transcribes jfk N times: RSS (after a full GC, so garbage waiting for
// the collector does not count) after the last call must be within max(10 MB, 5%) of RSS after call 5. On glibc
// the same run is repeated with a fixed mmap threshold, which tells the allocator keeping freed memory in
// per-thread arenas apart from memory that voxmill or whisper.cpp really holds on to. The exit status is 1 when the
// first run fails that check or when the two sides transcribed different texts.
//
// Raw results go to bench/out/stt-<timestamp>.json.
//
// bench/stt-real.mjs (real weights, with faster-whisper as a third side) and bench/stt-wer.mjs reuse this file's
// voxmill child, whisper-cli runner and faster-whisper request: the functions they need are exported, and main()
// runs only when this file is the entry point.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';
import {
  benchArgs,
  childResult,
  distEntry,
  ensureDist,
  ensureFixtures,
  flag,
  gitCommit,
  hasGnuTime,
  isEntry,
  machineFacts,
  measureProcess,
  median,
  ownMemory,
  printChildResult,
  root,
  rssDrift,
  runMain,
  runNodeChild,
  SETTLED_AFTER_CALL,
  sharedAudio,
  writeResults,
} from './lib.mjs';

const self = fileURLToPath(import.meta.url);

const MODELS = {
  'tiny.en': { file: 'ggml-tiny.en-random.bin', dtw: 'tiny.en' },
  'base.en': { file: 'ggml-base.en-random.bin', dtw: 'base.en' },
};
const AUDIO = { jfk: 'jfk.wav', gb0: 'gb0.wav' };
const WALL_RATIO_TARGET = 1.05;

// ---------------------------------------------------------------------------------------------------------------
// Child side: runs in a fresh Node process per measurement.

async function child(task) {
  const started = performance.now();
  const { WhisperModel } = await import(pathToFileURL(distEntry).href);
  const imported = performance.now();
  const memoryAfterImport = ownMemory();
  const model = await WhisperModel.load(task.model, task.load);
  const loaded = performance.now();
  const memoryAfterLoad = ownMemory();
  if (task.kind === 'memory') {
    const calls = [];
    for (let i = 1; i <= task.calls; i++) {
      const t = performance.now();
      await model.transcribe(task.audio, task.options);
      const ms = performance.now() - t;
      const beforeGc = ownMemory();
      // Growth means memory still held, not garbage waiting for the collector (each call's decoded audio, 0.7 MB
      // of ArrayBuffer here, stays until V8 collects): the child runs with --expose-gc.
      globalThis.gc?.();
      calls.push({ call: i, ms, rssBeforeGcKb: beforeGc.rssKb, ...ownMemory() });
    }
    model.dispose();
    return { info: model.info, loadMs: loaded - imported, calls };
  }
  // task.audio: one file, or a set of files transcribed in turn (bench/stt-sets.mjs): each pass is every file.
  const files = Array.isArray(task.audio) ? task.audio : [task.audio];
  const pass = async () => {
    const results = [];
    for (const file of files) results.push(await model.transcribe(file, task.options));
    return results;
  };
  const cpuBefore = process.cpuUsage();
  const first = await pass();
  const transcribed = performance.now();
  // CPU time of the whole process (every thread) during the call, user + system.
  const cpuMs = (usage) => (usage.user + usage.system) / 1000;
  const transcribeCpuMs = cpuMs(process.cpuUsage(cpuBefore));
  // Peak of a process that has done what one whisper-cli run does: load, one transcription.
  const afterFirst = ownMemory();
  let steadyMs = null;
  let steadyCpuMs = null;
  if (task.steady) {
    const t = performance.now();
    const cpu = process.cpuUsage();
    await pass();
    steadyMs = performance.now() - t;
    steadyCpuMs = cpuMs(process.cpuUsage(cpu));
  }
  model.dispose();
  return {
    info: model.info,
    importMs: imported - started,
    loadMs: loaded - imported,
    transcribeMs: transcribed - loaded,
    loadTranscribeMs: transcribed - imported,
    steadyMs,
    transcribeCpuMs,
    steadyCpuMs,
    hwmKb: afterFirst.hwmKb,
    rssKb: afterFirst.rssKb,
    // Where the fixed cost of a Node process goes: the runtime, then the addon and its shared libraries.
    rssAfterImportKb: memoryAfterImport.rssKb,
    rssAfterLoadKb: memoryAfterLoad.rssKb,
    text: first.map((r) => r.text).join(' '),
    texts: first.map((r) => r.text),
    segments: first.reduce((n, r) => n + (r.segments?.length ?? 0), 0),
    audioSeconds: first.reduce((sum, r) => sum + r.duration, 0),
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Parent side.

const FLAGS = {
  quick: flag.boolean('1 repeat, jfk only'),
  repeats: flag.integer('repeats per case', 3),
  models: flag.list('random-weight fixtures from `npm run fixtures`', MODELS),
  audio: flag.list('files in the shared test data', AUDIO),
  threads: flag.integer('threads on both sides', 2),
  'beam-size': flag.integer("beam size; 1 = greedy, 5 is whisper-cli's default", 5),
  fallback: flag.boolean('keep temperature fallback (default off on both sides: -nf / temperatureIncrement 0)'),
  'defaults-all': flag.boolean('run the "defaults" configuration on every audio file, not only jfk'),
  calls: flag.integer('transcriptions in the memory-stability run', 20, { min: SETTLED_AFTER_CALL + 1 }),
  'memory-only': flag.boolean('only the memory-stability run'),
};

export const fixturePath = (model) => join(root, 'test', 'fixtures', 'models', MODELS[model].file);

/** whisper-cli's -oj escapes only `"` and `\`: read the texts from the bytes (see test/soak/parity.test.ts). */
export function cliText(jsonPath) {
  const raw = readFileSync(jsonPath).toString('latin1');
  const texts = [
    ...raw.matchAll(/"offsets": \{\n\t*"from": \d+,\n\t*"to": \d+\n\t*\},\n\t*"text": "((?:[^"\\]|\\.)*)"\n/g),
  ];
  return {
    segments: texts.length,
    text: Buffer.from(texts.map((m) => m[1].replace(/\\(["\\])/g, '$1')).join(''), 'latin1')
      .toString('utf8')
      .trim(),
  };
}

// A case `c` is { config, model, audio }: names in MODELS and AUDIO, or, for other files (bench/stt-real.mjs),
// with `modelPath`, `audioPaths` (a set of files, transcribed in turn in one process) and `dtw` (the alignment-heads
// preset of the defaults configuration) given.
const casePaths = (c) => ({
  model: c.modelPath ?? fixturePath(c.model),
  audio: c.audioPaths ?? [sharedAudio(AUDIO[c.audio])],
  dtw: c.dtw ?? MODELS[c.model]?.dtw,
});

/** One whisper-cli process on case `c` (see casePaths). */
export async function runCli(cli, c, settings, ctx) {
  const out = join(ctx.scratch, `cli-${process.hrtime.bigint()}`);
  const paths = casePaths(c);
  // Every file of the set in one run, each with its own output file (-f and -of pair up in order).
  const outs = paths.audio.map((_, i) => `${out}-${i}`);
  const args = [
    ...['-m', paths.model, ...paths.audio.flatMap((file) => ['-f', file]), '-t', String(settings.threads), '-l', 'en'],
    ...['-bs', String(settings.beamSize), '-bo', '5'],
    ...(settings.fallback ? ['-tpi', '0.2'] : ['-nf']),
    ...(c.config === 'defaults' ? ['-nfa', '-dtw', paths.dtw] : []),
    '-oj',
    ...outs.flatMap((file) => ['-of', file]),
  ];
  const run = await measureProcess(cli, args, ctx);
  const timing = (name) => Number(new RegExp(`${name} time =\\s+([\\d.]+) ms`).exec(run.stderr)?.[1]);
  const results = outs.map((file) => cliText(`${file}.json`));
  for (const file of outs) rmSync(`${file}.json`, { force: true });
  const texts = results.map((r) => r.text);
  return {
    wallMs: run.wallMs,
    peakRssKb: run.peakRssKb,
    cpuMs: run.cpuMs,
    loadMs: timing('load'),
    // whisper_print_timings' total runs from the start of model loading to the end of inference.
    transcribeMs: timing('total') - timing('load'),
    text: texts.join(' '),
    texts,
    segments: results.reduce((n, r) => n + r.segments, 0),
  };
}

/** The decoding parameters every side uses, as voxmill's transcribe options. */
const voxmillOptions = (settings) => ({
  threads: settings.threads,
  beamSize: settings.beamSize,
  bestOf: 5,
  temperatureIncrement: settings.fallback ? 0.2 : 0,
  language: 'en',
});

/** faster-whisper's side of the comparison (bench/stt-real.mjs, bench/stt-wer.mjs). */
export const peerScript = join(root, 'scripts', 'peers', 'faster_whisper_peer.py');

/**
 * The peer's request for case `c` (its CTranslate2 directory and files) with voxmill's decoding (voxmillOptions):
 * no word timestamps on either side, non-speech tokens not suppressed (voxmill's default). `warmup`: the peer's
 * warm-up ('all': a first pass over every file; false: none).
 */
export const fasterWhisperRequest = (c, computeType, settings, warmup) => ({
  model: c.ct2Path,
  files: c.audioPaths,
  compute_type: computeType,
  threads: settings.threads,
  beam_size: settings.beamSize,
  best_of: 5,
  temperature: 0,
  temperature_increment: settings.fallback ? 0.2 : 0,
  language: 'en',
  word_timestamps: false,
  suppress_non_speech: false,
  warmup,
});

/** The decoding parameters as a line of the report; `noFallback` says how no temperature fallback is asked for. */
export const decodingText = (settings, noFallback = '') =>
  `threads ${settings.threads}, ${settings.beamSize > 1 ? `beam ${settings.beamSize}` : 'greedy'}, best-of 5, ` +
  `${settings.fallback ? 'temperature fallback 0.2' : `no temperature fallback${noFallback}`}, language en`;

/**
 * One fresh voxmill process on case `c` (see casePaths): load, transcribe, transcribe again on the warm model
 * (unless `c.steady` is false).
 */
export async function runVoxmill(c, settings, ctx) {
  const paths = casePaths(c);
  const task = {
    kind: 'measure',
    model: paths.model,
    audio: paths.audio,
    // Parity with upstream's whisper-cli: its attention, and the file's f16 decoder (voxmill's default quantizes it,
    // patch 0013). A case may give its own load options (bench/stt-real.mjs measures voxmill's default decoder).
    load: c.load ?? (c.config === 'parity' ? { dtw: false, flashAttention: true, decoderPrecision: 'full' } : {}),
    options: { ...voxmillOptions(settings), timestamps: 'segment' },
    // The second, warm pass; a case that only wants the text (bench/stt-wer.mjs) says steady: false.
    steady: c.steady ?? true,
  };
  const run = await measureProcess(process.execPath, [self, '--child', JSON.stringify(task)], ctx);
  const result = childResult(run.stdout);
  if (!result) throw new Error(`the voxmill child printed no result:\n${run.stderr.slice(-3000)}`);
  const wantPreset = c.config === 'defaults' ? paths.dtw : null;
  if (result.info.dtwPreset !== wantPreset || result.info.flashAttention !== (c.config === 'parity')) {
    throw new Error(`voxmill loaded ${c.model} with ${JSON.stringify(result.info)}, not the ${c.config} configuration`);
  }
  const { info: _info, ...rest } = result;
  return {
    // The process also ran the warm call, which a whisper-cli run does not: leave it out of the process wall.
    processWallMs: run.wallMs - (result.steadyMs ?? 0),
    // Likewise the peak: VmHWM read in the child right after the first call (the same kernel counter as the
    // CLI's ru_maxrss); the process peak, warm call included, is kept for reference.
    peakRssKb: result.hwmKb,
    processPeakRssKb: run.peakRssKb,
    // User + system CPU of the process without the warm call (null without GNU time).
    processCpuMs: run.cpuMs === null ? null : run.cpuMs - (result.steadyCpuMs ?? 0),
    ...rest,
  };
}

function summarize(c, runs) {
  const cli = (key) => median(runs.map((r) => r.cli[key]));
  const vox = (key) => median(runs.map((r) => r.voxmill[key]));
  // Median of per-pair ratios: each pair ran back to back, so slow phases of a shared machine hit both sides.
  const ratio = (voxKey, cliKey) => median(runs.map((r) => r.voxmill[voxKey] / r.cli[cliKey]));
  return {
    config: c.config,
    model: c.model,
    audio: c.audio,
    repeats: runs.length,
    sameText: runs.every((r) => r.cli.text === r.voxmill.text),
    cli: { wallMs: cli('wallMs'), transcribeMs: cli('transcribeMs'), peakRssKb: cli('peakRssKb') },
    voxmill: {
      loadTranscribeMs: vox('loadTranscribeMs'),
      processWallMs: vox('processWallMs'),
      importMs: vox('importMs'),
      transcribeMs: vox('transcribeMs'),
      steadyMs: vox('steadyMs'),
      peakRssKb: vox('peakRssKb'),
    },
    ratios: {
      wall: ratio('loadTranscribeMs', 'wallMs'),
      processWall: ratio('processWallMs', 'wallMs'),
      transcribe: ratio('transcribeMs', 'transcribeMs'),
      steady: ratio('steadyMs', 'transcribeMs'),
      peakRss: ratio('peakRssKb', 'peakRssKb'),
    },
  };
}

const sec = (ms) => (ms / 1000).toFixed(2);
const mb = (kb) => (kb / 1024).toFixed(0);
const x = (r) => r.toFixed(3);

function table(summaries) {
  const lines = [
    '| config | model | audio | CLI wall s | vox load+tx s | ratio | vox process s | ratio | CLI tx s | vox tx s | ratio | vox warm tx s | ratio | CLI peak MB | vox peak MB | ratio | same text |',
    '|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|',
  ];
  for (const s of summaries) {
    const flag = s.ratios.wall <= WALL_RATIO_TARGET ? '' : ' ⚠';
    lines.push(
      `| ${s.config} | ${s.model} | ${s.audio} | ${sec(s.cli.wallMs)} | ${sec(s.voxmill.loadTranscribeMs)} | ` +
        `${x(s.ratios.wall)}${flag} | ${sec(s.voxmill.processWallMs)} | ${x(s.ratios.processWall)} | ` +
        `${sec(s.cli.transcribeMs)} | ${sec(s.voxmill.transcribeMs)} | ${x(s.ratios.transcribe)} | ` +
        `${sec(s.voxmill.steadyMs)} | ${x(s.ratios.steady)} | ${mb(s.cli.peakRssKb)} | ${mb(s.voxmill.peakRssKb)} | ` +
        `${x(s.ratios.peakRss)} | ${s.sameText ? 'yes' : 'NO'} |`,
    );
  }
  return lines.join('\n');
}

/**
 * One process, one model, `settings.calls` transcriptions of jfk; RSS after each (after a full GC). `env` is added
 * to the child's environment (the allocator diagnostic).
 */
async function memoryStability(settings, env = {}) {
  const task = {
    kind: 'memory',
    model: fixturePath('tiny.en'),
    audio: sharedAudio(AUDIO.jfk),
    load: { dtw: false, flashAttention: true },
    options: voxmillOptions(settings),
    calls: settings.calls,
  };
  const { calls } = await runNodeChild(self, task, { nodeArgs: ['--expose-gc'], env, what: 'the memory run' });
  const { within, ...drift } = rssDrift(calls);
  return { env, calls, ...drift, pass: within };
}

function printCalls(memory) {
  for (const call of memory.calls) {
    process.stdout.write(
      `  call ${String(call.call).padStart(2)}: RSS ${(call.rssKb / 1024).toFixed(1)} MB ` +
        `(${(call.rssBeforeGcKb / 1024).toFixed(1)} before GC), peak ${(call.hwmKb / 1024).toFixed(1)} MB, ` +
        `${sec(call.ms)} s\n`,
    );
  }
}

function memoryVerdict(label, memory) {
  return (
    `${label}: RSS after call ${memory.settledCall} ${mb(memory.settledRssKb)} MB, after call ${memory.calls.length} ` +
    `${mb(memory.lastRssKb)} MB, growth ${(memory.growthKb / 1024).toFixed(1)} MB ` +
    `(tolerance ${(memory.toleranceKb / 1024).toFixed(1)} MB): ${memory.pass ? 'PASS' : 'FAIL'}; ` +
    `peak ${mb(memory.calls[memory.settledCall - 1].hwmKb)} -> ${mb(memory.calls[memory.calls.length - 1].hwmKb)} MB`
  );
}

async function main() {
  const { settings } = benchArgs('npm run bench:stt [-- options]', FLAGS, { quick: { repeats: 1, audio: ['jfk'] } });
  const benchStarted = performance.now();
  ensureDist();
  ensureFixtures(settings.models.map(fixturePath), 'fixture models');
  const cases = [];
  for (const config of ['parity', 'defaults']) {
    for (const model of settings.models) {
      for (const audio of settings.audio) {
        if (settings.memoryOnly || (config === 'defaults' && audio !== 'jfk' && !settings.defaultsAll)) continue;
        cases.push({ config, model, audio });
      }
    }
  }
  // The memory-stability run alone does not need whisper-cli: no build for --memory-only.
  const { ensureWhisperCli } = await import('./build-whisper-cli.mjs');
  const cli = cases.length > 0 ? ensureWhisperCli() : null;
  const gnuTime = hasGnuTime();
  const scratch = mkdtempSync(join(tmpdir(), 'voxmill-bench-'));
  const ctx = { gnuTime, scratch };
  const machine = {
    ...machineFacts(),
    loadAverageAtStart: loadavg(),
  };
  const decoding = decodingText(settings, ' (-nf / temperatureIncrement 0)');
  process.stdout.write(
    `voxmill STT bench: ${machine.cpu}, ${machine.cores} cores, Node ${machine.node}\n` +
      `whisper-cli: ${cli ?? 'not needed (--memory-only)'}\npeak RSS: ${gnuTime ? 'GNU time %M (ru_maxrss)' : 'VmHWM polled every 5 ms'}\n` +
      `decoding: ${decoding}\n${settings.repeats} repeat(s) of ${cases.length} case(s), CLI and voxmill interleaved\n\n`,
  );

  const runs = new Map(cases.map((c) => [c, []]));
  for (let repeat = 0; repeat < settings.repeats; repeat++) {
    for (const c of cases) {
      // Alternate which side goes first, so a drift in machine load does not favour one side.
      const cliFirst = repeat % 2 === 0;
      const pair = {};
      for (const side of cliFirst ? ['cli', 'voxmill'] : ['voxmill', 'cli']) {
        pair[side] = side === 'cli' ? await runCli(cli, c, settings, ctx) : await runVoxmill(c, settings, ctx);
      }
      runs.get(c).push({ repeat, cliFirst, ...pair });
      process.stdout.write(
        `[${repeat + 1}/${settings.repeats}] ${c.config} ${c.model} ${c.audio}: CLI ${sec(pair.cli.wallMs)} s ` +
          `${mb(pair.cli.peakRssKb)} MB | voxmill load+tx ${sec(pair.voxmill.loadTranscribeMs)} s ` +
          `(process ${sec(pair.voxmill.processWallMs)} s, warm tx ${sec(pair.voxmill.steadyMs)} s) ` +
          `${mb(pair.voxmill.peakRssKb)} MB${pair.cli.text === pair.voxmill.text ? '' : ' — TEXT DIFFERS'}\n`,
      );
    }
  }
  const summaries = cases.map((c) => summarize(c, runs.get(c)));

  process.stdout.write(`\nMemory stability: tiny.en loaded once, jfk transcribed ${settings.calls} times\n`);
  const memory = await memoryStability(settings);
  printCalls(memory);
  // glibc raises its mmap threshold to the size of the largest block freed so far (up to 32 MB), so whisper's
  // per-call buffers move from mmap (returned on free) into malloc arenas (kept), one arena per thread that
  // allocated them; which thread runs a call varies. A fixed threshold takes that behaviour away: what still grows
  // under it is held by voxmill or whisper.cpp.
  const allocatorDiagnostic =
    process.platform === 'linux' && process.report?.getReport().header.glibcVersionRuntime
      ? await memoryStability(settings, { GLIBC_TUNABLES: 'glibc.malloc.mmap_threshold=131072' })
      : null;
  if (allocatorDiagnostic) {
    process.stdout.write(
      'Again with a fixed glibc mmap threshold (GLIBC_TUNABLES=glibc.malloc.mmap_threshold=131072):\n',
    );
    printCalls(allocatorDiagnostic);
  }
  rmSync(scratch, { recursive: true, force: true });
  const benchMs = performance.now() - benchStarted;

  process.stdout.write(
    (summaries.length === 0
      ? '\n'
      : `\nMedians (ratio = median of per-pair voxmill/CLI; target wall ratio <= ${WALL_RATIO_TARGET}, ⚠ = over):\n` +
        `${table(summaries)}\n\n`) +
      `${memoryVerdict('Memory', memory)}\n` +
      (allocatorDiagnostic ? `${memoryVerdict('Memory, fixed mmap threshold', allocatorDiagnostic)}\n` : '') +
      `Bench time: ${(benchMs / 60000).toFixed(1)} min\n`,
  );

  const outFile = writeResults('stt', {
    date: new Date().toISOString(),
    commit: gitCommit(),
    machine: { ...machine, loadAverageAtEnd: loadavg() },
    whisperCli: cli,
    peakRssMethod: gnuTime ? 'gnu-time-maxrss' : 'vmhwm-poll-5ms',
    settings,
    decoding,
    benchMs,
    summaries,
    memory,
    allocatorDiagnostic,
    runs: cases.map((c) => ({ ...c, runs: runs.get(c) })),
  });
  process.stdout.write(`Raw results: ${outFile}\n`);
  if (!memory.pass || summaries.some((s) => !s.sameText)) process.exitCode = 1;
}

if (isEntry(import.meta.url)) {
  if (process.argv[2] === '--child') printChildResult(await child(JSON.parse(process.argv[3])));
  else runMain('stt', main);
}
