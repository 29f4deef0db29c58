#!/usr/bin/env node
// Speech-to-text benchmark with real Whisper weights: voxmill against whisper.cpp's own whisper-cli (same tree, same
// ggml file; bench/build-whisper-cli.mjs) and against faster-whisper 1.2.1 (CTranslate2 on the CPU, on the
// CTranslate2 directory that ggml file was converted from) with compute_type int8 and float32.
//
//   npm run bench:stt-real [-- options]     (the flags: FLAGS below, or `node bench/stt-real.mjs --help`)
//
// Needs `npm run models:test` (test/fixtures/real/models.json: whisper-tiny.en, whisper-base and their ct2-*
// sources) and `bash scripts/peers-setup.sh`.
//
// The voxmill child and the whisper-cli runner are bench/stt.mjs's (its "parity" configuration, with voxmill loaded
// as { dtw: false, flashAttention: true }: whisper-cli's attention by default, and the decoder --decoder-precision
// asks for (full, voxmill's default, the file's f16 as whisper-cli; or int8, q8_0 by patch 0013); faster-whisper runs
// without word timestamps, so no side computes word alignments). faster-whisper runs through scripts/peers/faster_whisper_peer.py,
// the accuracy test's peer, with its decoding mirrored from voxmill's (beam 5, best of 5, condition on previous
// text, thresholds; see that file), language en forced on every side (base is multilingual).
// Per engine and case, one fresh process per repeat:
// - process wall: spawn to exit, without the warm call (Node or Python start-up, import, load, one transcription,
//   exit; whisper-cli: its whole run);
// - load+tx: in-process load plus the first transcription (voxmill and faster-whisper from their own clocks, without
//   the runtime's start and the import; whisper-cli: whisper_print_timings' total time);
// - warm call: a second transcription of the same file in the same process (voxmill, faster-whisper). whisper-cli
//   transcribes once, so its column holds its only transcription, "total - load" (the first call on a fresh state);
// - RTF: warm call / audio seconds;
// - CPU: user + system time of every thread of the process, the check on the wall times of a shared machine (a
//   busy core stretches wall time, much less CPU time): the process's from GNU time (%U + %S) less the warm call's,
//   and the warm call's own (process.cpuUsage() in the voxmill child, time.process_time() in the peer);
// - peak RSS: the kernel's high-water mark of the process after load + one transcription: VmHWM read inside the
//   voxmill child and the Python peer right after their first call, whisper-cli's ru_maxrss (GNU time %M).
// Engines run one at a time, never two at once, in an order that rotates per repeat. Each ratio voxmill / other is
// taken per repeat, between runs seconds to minutes apart, and the table shows the median of those ratios.
//
// Threads: the default is 1 on every side. Before whisper.cpp patch 0009, on 2 cores with another process busy on one
// of them, a thread count equal to the core count made ggml's spinning workers wait on each other (see
// test/accuracy/stt-accuracy.test.ts); the default stays 1 so tables compare across sessions (--threads 2: all cores).
//
// --variants f16,q8_0,q5_1 adds voxmill on quantized copies of the same ggml file (whisper.cpp's whisper-quantize,
// built with whisper-cli; made once into the test-model cache, ggml-quantized/): engines voxmill-q8_0, voxmill-q5_1.
// Audio (--audio): single shared files, or sets of files that each engine process transcribes in turn after one load
// (bench/stt-sets.mjs: librispeech-7, short-10, ten-minutes: issue 43's table); a set's warm call is a second pass
// over all of it. --beam-size takes a list (5,1): each beam size is its own rows, in one run.
// Every engine's text is also scored against the files' reference transcripts (../shared/audio/transcripts.tsv):
// word error rate after lower-casing and dropping punctuation (bench/lib.mjs transcriptWords), summed over a set's
// files, first repeat.
//
// whisper-cli is upstream's, built from the pinned tree without voxmill's patch set (what its users run); several
// patches change float summation order (0005, 0007, 0008, 0010, 0012) and 0013 quantizes the decoder, so its text may
// differ from voxmill's by a few words (the "edits vs voxmill" column; the accuracy tier checks equality against the
// patched build).
// Raw results go to bench/out/stt-real-<timestamp>.json. The exit status is 1 on errors or when a model file changed
// during the run; never for a ratio or a text.
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import {
  benchArgs,
  ensureDist,
  flag,
  gitCommit,
  hasGnuTime,
  loadAverageText,
  machineFacts,
  measureProcess,
  median,
  peersPython,
  quantizedCopy,
  REAL_WHISPER_MODELS,
  realModels,
  runMain,
  transcriptWords,
  wordEdits,
  writeResults,
} from './lib.mjs';
import { decodingText, fasterWhisperRequest, peerScript, runCli, runVoxmill } from './stt.mjs';
import { SETS, setFiles } from './stt-sets.mjs';

const MODELS = REAL_WHISPER_MODELS;
// voxmill's weight types: the f16 file itself, or that file quantized by whisper.cpp's whisper-quantize (built with
// whisper-cli, bench/build-whisper-cli.mjs) into the test-model cache, next to it in ggml-quantized/.
const VARIANTS = { f16: 'voxmill', q8_0: 'voxmill-q8_0', q5_1: 'voxmill-q5_1' };
const PEERS = ['whisper-cli', 'fw-int8', 'fw-float32'];

const FLAGS = {
  repeats: flag.integer('repeats; each starts one fresh process per engine and case', 3),
  quick: flag.boolean('1 repeat'),
  threads: flag.integer("threads on every side; 1 is voxmill's default on a 2-core machine (see the file's header)", 1),
  'peer-threads': flag.integer(
    "faster-whisper's cpu_threads when it should differ from --threads (on a VM where CTranslate2 runs faster on\n" +
      'fewer threads than voxmill, each side at its best)',
    undefined,
    { defaultText: '--threads' },
  ),
  models: flag.list('real models (`npm run models:test`)', MODELS),
  audio: flag.list(
    'audio: single files or sets of files transcribed in turn by one process (bench/stt-sets.mjs)',
    SETS,
    ['gb0', 'librispeech', 'jfk'],
  ),
  'beam-size': flag.beamSizes(
    'beam sizes on every side, each its own rows (best-of is 5 everywhere); 1 is greedy',
    [5],
  ),
  'decoder-precision': flag.decoderPrecision(),
  variants: flag.list("voxmill's weight types: f16 (the converted file), q8_0, q5_1 (quantized from it)", VARIANTS, [
    'f16',
  ]),
  'no-fallback': flag.boolean(
    'no temperature fallback (default: fallback steps of 0.2, as the accuracy test and\n' +
      'whisper-cli and faster-whisper by default; on these clips no engine falls back)',
  ),
  peers: flag.list(
    "the peers run beside voxmill (fw-int8, the target's yardstick, always runs; leaving out the others shortens a run)",
    Object.fromEntries(PEERS.map((peer) => [peer, peer])),
  ),
  python: flag.string("the peers' Python", {
    value: 'PATH',
    defaultText: 'the last line `bash scripts/peers-setup.sh` prints',
  }),
};

/** Engine name -> ggml file for each weight type asked for: f16 is the converted file itself, the others quantizedCopy's. */
function variantPaths(f16Path, variants, quantize) {
  return Object.fromEntries(
    variants.map((variant) => [
      VARIANTS[variant],
      variant === 'f16' ? f16Path : quantizedCopy(f16Path, variant, quantize),
    ]),
  );
}

/** Size, mtime and sha256 of a file, or of a CTranslate2 directory's model.bin: the run checks them again at its end. */
function identity(path) {
  const file = statSync(path).isDirectory() ? join(path, 'model.bin') : path;
  const stat = statSync(file);
  const sha256 = createHash('sha256').update(readFileSync(file)).digest('hex');
  return { file, bytes: stat.size, mtime: stat.mtime.toISOString(), sha256 };
}

/** One faster-whisper process: load, one transcription (the peer's warm-up), a second (warm) one. */
async function runFasterWhisper(python, c, computeType, settings, ctx) {
  // A first pass over the set, then the warm pass (its results).
  const request = fasterWhisperRequest(c, computeType, settings, 'all');
  const run = await measureProcess(python, [peerScript], { ...ctx, input: JSON.stringify(request) });
  const out = JSON.parse(run.stdout);
  const sum = (key) => out.results.reduce((total, r) => total + r[key], 0);
  const warm = {
    transcribe_ms: sum('transcribe_ms'),
    cpu_ms: sum('cpu_ms'),
    duration: sum('duration'),
    texts: out.results.map((r) => r.text),
    segments: out.results.flatMap((r) => r.segments),
  };
  return {
    versions: { fasterWhisper: out.faster_whisper, ctranslate2: out.ctranslate2 },
    // The warm call is not part of a load-and-transcribe-once process: leave it out, as for voxmill.
    processWallMs: run.wallMs - warm.transcribe_ms,
    wallMs: run.wallMs,
    processCpuMs: run.cpuMs === null ? null : run.cpuMs - warm.cpu_ms,
    transcribeCpuMs: out.warmup_cpu_ms,
    warmCpuMs: warm.cpu_ms,
    importMs: out.import_ms,
    loadMs: out.load_ms,
    transcribeMs: out.warmup_ms,
    loadTranscribeMs: out.load_ms + out.warmup_ms,
    warmMs: warm.transcribe_ms,
    peakRssKb: out.peak_rss_kb_after_warmup,
    processPeakRssKb: run.peakRssKb,
    audioSeconds: warm.duration,
    text: warm.texts.join(' '),
    texts: warm.texts,
    segments: warm.segments.length,
    // Temperature fallback leaves its trace here (whisper.cpp's does not reach its output).
    maxTemperature: Math.max(0, ...warm.segments.map((s) => s.temperature)),
  };
}

/** The engine's run in the common shape of the tables. */
async function runEngine(engine, c, settings, ctx) {
  if (engine.startsWith('voxmill')) {
    const r = await runVoxmill({ ...c, modelPath: c.variantPaths[engine] }, settings, ctx);
    return { ...r, warmMs: r.steadyMs, warmCpuMs: r.steadyCpuMs };
  }
  if (engine === 'whisper-cli') {
    const r = await runCli(ctx.cli, c, settings, ctx);
    return {
      ...r,
      processWallMs: r.wallMs,
      processCpuMs: r.cpuMs,
      loadTranscribeMs: r.loadMs + r.transcribeMs,
      warmMs: null,
      warmCpuMs: null,
    };
  }
  const peerSettings = { ...settings, threads: settings.peerThreads ?? settings.threads };
  return runFasterWhisper(ctx.python, c, engine === 'fw-int8' ? 'int8' : 'float32', peerSettings, ctx);
}

/** In-process warm-call time of an engine; whisper-cli's only call stands in for it. */
const warmOrOnly = (r) => r.warmMs ?? r.transcribeMs;

function summarize(c, runs, engineNames) {
  const audioSeconds = median(runs.flatMap((r) => [r.voxmill.audioSeconds, r['fw-float32']?.audioSeconds]));
  const engines = {};
  const references = c.references.map(transcriptWords);
  const referenceWords = references.reduce((n, words) => n + words.length, 0);
  // Word edits summed over the set's files, each against its own reference.
  const editsOf = (texts) => texts.reduce((n, text, i) => n + wordEdits(references[i], transcriptWords(text)), 0);
  for (const engine of engineNames) {
    const of = (key) => median(runs.map((r) => r[engine][key]));
    const voxWords = transcriptWords(runs[0].voxmill.text);
    engines[engine] = {
      processWallMs: of('processWallMs'),
      processCpuMs: of('processCpuMs'),
      loadTranscribeMs: of('loadTranscribeMs'),
      transcribeMs: of('transcribeMs'),
      warmMs: engine === 'whisper-cli' ? null : of('warmMs'),
      warmCpuMs: engine === 'whisper-cli' ? null : of('warmCpuMs'),
      rtf: median(runs.map((r) => warmOrOnly(r[engine]))) / 1000 / audioSeconds,
      peakRssKb: of('peakRssKb'),
      segments: of('segments'),
      words: transcriptWords(runs[0][engine].text).length,
      // Against voxmill's first repeat; every repeat's texts are in the JSON.
      wordEditsVsVoxmill: wordEdits(voxWords, transcriptWords(runs[0][engine].text)),
      // Word error rate against the files' reference transcripts (bench/stt-sets.mjs), first repeat.
      wer: editsOf(runs[0][engine].texts) / referenceWords,
      referenceWords,
      sameTextAsVoxmillEveryRepeat: runs.every((r) => r[engine].text === r.voxmill.text),
      ...(engine.startsWith('fw') ? { maxTemperature: Math.max(...runs.map((r) => r[engine].maxTemperature)) } : {}),
    };
  }
  const ratios = {};
  for (const other of engineNames.filter((engine) => engine !== 'voxmill')) {
    const ratio = (get) => median(runs.map((r) => get(r.voxmill) / get(r[other])));
    const perRepeat = (get) => runs.map((r) => get(r.voxmill) / get(r[other]));
    ratios[other] = {
      processWall: ratio((r) => r.processWallMs),
      processCpu: ratio((r) => r.processCpuMs),
      loadTranscribe: ratio((r) => r.loadTranscribeMs),
      transcribe: ratio((r) => r.transcribeMs),
      warm: ratio(warmOrOnly),
      warmCpu: other === 'whisper-cli' ? null : ratio((r) => r.warmCpuMs),
      peakRss: ratio((r) => r.peakRssKb),
      perRepeat: { processWall: perRepeat((r) => r.processWallMs), warm: perRepeat(warmOrOnly) },
    };
  }
  return {
    model: c.model,
    audio: c.audio,
    beamSize: c.beamSize,
    files: c.audioPaths.length,
    audioSeconds,
    repeats: runs.length,
    engines,
    ratios,
  };
}

const sec = (ms) => (Number.isFinite(ms) ? (ms / 1000).toFixed(2) : '—');
const mb = (kb) => (kb / 1024).toFixed(0);
const x = (r) => (Number.isFinite(r) ? r.toFixed(3) : '—');

function engineTable(summaries, engineNames) {
  const lines = [
    '| model | beam | audio | engine | process wall s | process CPU s | load+tx s | warm call s | warm CPU s | RTF | peak MB | words | edits vs voxmill | WER % |',
    '|---|--:|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|',
  ];
  for (const s of summaries) {
    for (const engine of engineNames) {
      const e = s.engines[engine];
      const warm = e.warmMs === null ? `(${sec(e.transcribeMs)})` : sec(e.warmMs);
      lines.push(
        `| ${s.model} | ${s.beamSize} | ${s.audio} (${s.audioSeconds.toFixed(0)} s) | ${engine} | ${sec(e.processWallMs)} | ` +
          `${sec(e.processCpuMs)} | ${sec(e.loadTranscribeMs)} | ${warm} | ` +
          `${e.warmCpuMs === null ? '—' : sec(e.warmCpuMs)} | ${e.rtf.toFixed(3)} | ${mb(e.peakRssKb)} | ${e.words} | ` +
          `${engine === 'voxmill' ? '' : e.wordEditsVsVoxmill} | ${(100 * e.wer).toFixed(1)} |`,
      );
    }
  }
  return lines.join('\n');
}

function ratioTable(summaries, engineNames) {
  const lines = [
    '| model | beam | audio | voxmill / | process wall | process CPU | load+tx | warm call | warm CPU | peak RSS |',
    '|---|--:|---|---|--:|--:|--:|--:|--:|--:|',
  ];
  for (const s of summaries) {
    for (const other of engineNames.filter((engine) => engine !== 'voxmill')) {
      const r = s.ratios[other];
      const warm = other === 'whisper-cli' ? `(${x(r.warm)})` : x(r.warm);
      lines.push(
        `| ${s.model} | ${s.beamSize} | ${s.audio} | ${other} | ${x(r.processWall)} | ${x(r.processCpu)} | ` +
          `${x(r.loadTranscribe)} | ${warm} | ${r.warmCpu === null ? '—' : x(r.warmCpu)} | ${x(r.peakRss)} |`,
      );
    }
  }
  return lines.join('\n');
}

/**
 * Issue 43's view: per row, voxmill against faster-whisper int8 (the target: process wall and warm call ratios
 * <= 1.0 at WER <= int8's + 0.5 point), with each engine's RTF, WER and peak RSS.
 */
function targetTable(summaries, engineNames) {
  const peers = engineNames.filter((engine) => engine !== 'voxmill');
  const pct = (v) => (100 * v).toFixed(1);
  const lines = [
    `| model | beam | audio | wall / int8 | warm / int8 | WER voxmill | ${peers.map((p) => `WER ${p}`).join(' | ')} | ` +
      `RTF voxmill | ${peers.map((p) => `RTF ${p}`).join(' | ')} | peak MB voxmill | ${peers.map((p) => `peak MB ${p}`).join(' | ')} | meets |`,
    `|---|--:|---|--:|--:|--:|${peers.map(() => '--:|').join('')}--:|${peers.map(() => '--:|').join('')}--:|${peers.map(() => '--:|').join('')}---|`,
  ];
  for (const s of summaries) {
    const r = s.ratios['fw-int8'];
    const e = s.engines;
    const meets = r.processWall <= 1 && r.warm <= 1 && e.voxmill.wer <= e['fw-int8'].wer + 0.005;
    lines.push(
      `| ${s.model} | ${s.beamSize} | ${s.audio} | ${x(r.processWall)} | ${x(r.warm)} | ${pct(e.voxmill.wer)} | ` +
        `${peers.map((p) => pct(e[p].wer)).join(' | ')} | ${e.voxmill.rtf.toFixed(3)} | ` +
        `${peers.map((p) => e[p].rtf.toFixed(3)).join(' | ')} | ${mb(e.voxmill.peakRssKb)} | ` +
        `${peers.map((p) => mb(e[p].peakRssKb)).join(' | ')} | ${meets ? 'yes' : 'no'} |`,
    );
  }
  return lines.join('\n');
}

async function main() {
  const { noFallback, ...flags } = benchArgs('npm run bench:stt-real [-- options]', FLAGS, {
    quick: { repeats: 1 },
  }).settings;
  const settings = { ...flags, fallback: !noFallback };
  const benchStarted = performance.now();
  ensureDist();
  const names = settings.models.flatMap((m) => [MODELS[m].ggml, MODELS[m].ct2]);
  const models = realModels(names);
  const python = peersPython(settings.python);
  const peers = PEERS.filter((peer) => peer === 'fw-int8' || settings.peers.includes(peer));
  // whisper-cli's build also gives the quantizer: built only when one of the two runs.
  const needsCli = peers.includes('whisper-cli') || settings.variants.some((variant) => variant !== 'f16');
  const { ensureWhisperCli, quantizeBeside } = await import('./build-whisper-cli.mjs');
  const cli = needsCli ? ensureWhisperCli() : undefined;
  const quantize = cli && quantizeBeside(cli);
  const gnuTime = hasGnuTime();
  const scratch = mkdtempSync(join(tmpdir(), 'voxmill-bench-real-'));
  const ctx = { gnuTime, scratch, cli, python };
  const engineNames = [...new Set(['voxmill', ...settings.variants.map((v) => VARIANTS[v])]), ...peers];
  const identities = Object.fromEntries(names.map((n) => [n, identity(models[n])]));

  const cases = [];
  const sets = Object.fromEntries(await Promise.all(settings.audio.map(async (name) => [name, await setFiles(name)])));
  for (const model of settings.models) {
    for (const beamSize of settings.beamSize) {
      for (const audio of settings.audio) {
        cases.push({
          config: 'parity',
          model,
          audio,
          beamSize,
          modelPath: models[MODELS[model].ggml],
          variantPaths: variantPaths(models[MODELS[model].ggml], settings.variants, quantize),
          references: sets[audio].map((file) => file.reference),
          ct2Path: models[MODELS[model].ct2],
          audioPaths: sets[audio].map((file) => file.path),
          dtw: MODELS[model].dtw,
          load: { dtw: false, flashAttention: true, decoderPrecision: settings.decoderPrecision },
        });
      }
    }
  }
  const machine = {
    ...machineFacts(),
    loadAverageAtStart: loadavg(),
  };
  const decoding = settings.beamSize.map((beamSize) => decodingText({ ...settings, beamSize })).join('; ');
  process.stdout.write(
    `voxmill STT bench, real weights: ${machine.cpu}, ${machine.cores} cores, Node ${machine.node}\n` +
      `whisper-cli: ${cli ?? 'not run'}\nfaster-whisper: ${python} ${peerScript}\n` +
      `peak RSS: VmHWM after the first call (voxmill, faster-whisper), ` +
      `${gnuTime ? 'GNU time %M' : 'VmHWM polled every 5 ms'} (whisper-cli)\n` +
      `decoding: ${decoding}${settings.peerThreads ? ` (faster-whisper: ${settings.peerThreads} thread(s))` : ''}\n` +
      `${settings.repeats} repeat(s) of ${cases.length} case(s) x ${engineNames.length} engines, order rotating\n` +
      `load average at start: ${loadAverageText()}\n\n`,
  );

  const runs = new Map(cases.map((c) => [c, []]));
  for (let repeat = 0; repeat < settings.repeats; repeat++) {
    for (const c of cases) {
      const order = engineNames.map((_, i) => engineNames[(i + repeat) % engineNames.length]);
      const result = { repeat, order };
      const caseSettings = { ...settings, beamSize: c.beamSize };
      for (const engine of order) result[engine] = await runEngine(engine, c, caseSettings, ctx);
      runs.get(c).push(result);
      const v = result.voxmill;
      const cliDiffers = result['whisper-cli'] !== undefined && result['whisper-cli'].text !== v.text;
      const parts = engineNames.map((engine) => {
        const r = result[engine];
        const warm = r.warmMs === null ? '' : `, warm ${sec(r.warmMs)}`;
        return `${engine} ${sec(r.processWallMs)} s${warm}, ${mb(r.peakRssKb)} MB`;
      });
      process.stdout.write(
        `[${repeat + 1}/${settings.repeats}] ${c.model} beam ${c.beamSize} ${c.audio} (${order.join(' > ')}; load ${loadAverageText()}): ` +
          `${parts.join(' | ')}${cliDiffers ? " (whisper-cli's text differs)" : ''}\n`,
      );
    }
  }
  rmSync(scratch, { recursive: true, force: true });
  const summaries = cases.map((c) => summarize(c, runs.get(c), engineNames));
  const changed = names.filter((n) => identity(models[n]).sha256 !== identities[n].sha256);
  const benchMs = performance.now() - benchStarted;

  process.stdout.write(
    `\nMedians per engine (warm call: second transcription in the process; whisper-cli's only one in parentheses; ` +
      `RTF = warm call / audio s):\n${engineTable(summaries, engineNames)}\n\n` +
      `Ratios voxmill / other, median of per-repeat ratios (< 1: voxmill faster or smaller):\n` +
      `${ratioTable(summaries, engineNames)}\n\n` +
      `Against faster-whisper int8 (issue 43's target: both ratios <= 1.0 at WER <= int8's + 0.5 point; ` +
      `whisper-cli's RTF is its only call):\n${targetTable(summaries, engineNames)}\n\n` +
      `load average at end: ${loadAverageText()}\n` +
      (changed.length > 0 ? `MODEL FILES CHANGED DURING THE RUN: ${changed.join(', ')}\n` : '') +
      `Bench time: ${(benchMs / 60000).toFixed(1)} min\n`,
  );

  const first = runs.get(cases[0])[0];
  const outFile = writeResults('stt-real', {
    date: new Date().toISOString(),
    commit: gitCommit(),
    machine: { ...machine, loadAverageAtEnd: loadavg() },
    whisperCli: cli,
    python,
    fasterWhisper: first['fw-int8'].versions,
    peakRssMethod: {
      voxmill: 'vmhwm-after-first-call',
      fasterWhisper: 'vmhwm-after-first-call',
      whisperCli: gnuTime ? 'gnu-time-maxrss' : 'vmhwm-poll-5ms',
    },
    settings,
    decoding,
    models: identities,
    modelsChangedDuringRun: changed,
    benchMs,
    summaries,
    runs: cases.map((c) => ({ ...c, runs: runs.get(c) })),
  });
  process.stdout.write(`Raw results: ${outFile}\n`);
  if (changed.length > 0) process.exitCode = 1;
}

runMain('stt-real', main);
