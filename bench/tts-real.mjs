#!/usr/bin/env node
// Text-to-speech benchmark with a real Piper voice, en_US-joe-medium: voxmill against piper-tts 1.8.0 (Piper's own
// Python runtime, scripts/peers/piper_peer.py --serve) and against the bare ONNX Runtime loop of bench/tts.mjs.
//
//   npm run bench:tts-real [-- options]     (the flags: FLAGS below, or `node bench/tts-real.mjs --help`)
//
// Needs `npm run models:test` (test/fixtures/real/models.json: piper-joe-medium) and `bash scripts/peers-setup.sh`.
//
// Each repeat starts a fresh process per side (bare: Node with onnxruntime-node; voxmill: Node, its public API, one
// worker; piper-tts: Python), one after the other in an order that rotates per repeat. Each process loads the voice
// and synthesizes a short sentence once cold and 4 times more while the others sit idle. Then the parent drives the
// three step by step, one synthesis at a time, never two at once, the order rotating per step: the paragraph once
// per side and round, the time-to-first-audio text 3 times per side and round. So the syntheses a ratio compares
// ran seconds apart, which matters on a shared 2-core machine. Each ratio is computed per round (per call for time
// to first audio), its median taken per repeat, and the table shows the median and range of those per-repeat
// ratios. Every side uses voxmill's ONNX Runtime session options with the same number of intra-op threads. Noise is
// at the voice's defaults everywhere (noise_scale 0.667, noise_w 0.8), so every synthesis differs a little: the
// real-time factors divide by each synthesis's own audio.
// 1. Load: bare, InferenceSession.create; piper-tts, PiperVoice.load; voxmill has no load call, so its load is its
//    first synthesizeToBuffer() (pcm16) of the short sentence minus the median of the 4 after it (steady). "Cold
//    start" is (load +) that first synthesis minus steady on every side, the like-for-like number (voxmill's
//    includes starting its worker thread and loading ONNX Runtime and espeak-ng there).
// 2. Real-time factor on the 983-character paragraph of bench/tts.mjs: bare, the session.run() calls on phoneme ids
//    computed beforehand (by the parent, exactly as voxmill's worker computes them); voxmill, synthesizeToBuffer()
//    as pcm16 and as mp3 (two entries in the rotation); piper-tts, its synthesize() generator run to the end (its
//    defaults: peak normalisation on). RTF = wall time / seconds of speech (voxmill's 0.2 s pauses between
//    sentences, which the others do not make, are left out of its seconds).
// 3. Time to first audio for a 3-sentence paragraph: voxmill, synthesize() from the call until the stream's first
//    chunk, as mp3 and as pcm16 (each stream read to its end; one throwaway stream per format on the short sentence
//    at start); piper-tts, until its synthesize() generator yields the first sentence's audio; bare, the first
//    sentence's session.run().
// 4. Peak RSS of each process at its end (VmHWM for Node, the worker thread included; ru_maxrss for Python).
// Raw results go to bench/out/tts-real-<timestamp>.json. The exit status is 1 on errors, never for a ratio.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { loadavg } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import {
  benchArgs,
  ensureDist,
  flag,
  gitCommit,
  machineFacts,
  median,
  ownMemory,
  peersPython,
  realModels,
  root,
  rotate,
  runMain,
  spread,
  writeResults,
} from './lib.mjs';
import { bareSynthesis, loadDist, PARAGRAPH, PARAGRAPHS, phonemeIds, sessionOptions, WARM_TEXT } from './tts.mjs';

const self = fileURLToPath(import.meta.url);
const require = createRequire(import.meta.url);

const JOE = { voice: 'en_US-joe', variant: 'en_US-joe-medium' };
const peerScript = join(root, 'scripts', 'peers', 'piper_peer.py');
/** The first three sentences of bench/tts.mjs's walking paragraph (317 characters). */
const TTFA_TEXT = PARAGRAPHS[3]
  .split(/(?<=\.) /)
  .slice(0, 3)
  .join(' ');
/** Syntheses of the short sentence after the first one; their median is "steady". */
const STEADY_CALLS = 4;
/** Time-to-first-audio calls per side and round. */
const TTFA_CALLS = 3;
const SIDES = ['bare', 'voxmill', 'piper'];
/** The timed entries of the rotation: voxmill's formats are entries of their own. */
const TIMED = ['bare', 'piper', 'pcm16', 'mp3'];

// ---------------------------------------------------------------------------------------------------------------
// Node children: one side each, in a fresh process. They start (load, short sentence cold and steady), print one
// `@@ {json}` line, then answer one `@@ {json}` line per JSON command line on stdin.

/** Starts a command loop: `handle(command)` answers each line; `{"exit": true}` answers the peak RSS and ends. */
async function serveCommands(ready, handle, close) {
  const say = (document) => process.stdout.write(`@@ ${JSON.stringify(document)}\n`);
  say(ready);
  for await (const line of createInterface({ input: process.stdin })) {
    if (!line.trim()) continue;
    const command = JSON.parse(line);
    if (command.exit) break;
    say(await handle(command));
  }
  await close();
  say({ memory: ownMemory() });
}

/** The bare loop on phoneme ids the parent computed. */
async function childBare(task) {
  let started = performance.now();
  const ort = require('onnxruntime-node');
  const requireMs = performance.now() - started;
  const { ids, config } = task;
  started = performance.now();
  const session = await ort.InferenceSession.create(task.modelPath, sessionOptions(task.threads));
  const loadMs = performance.now() - started;
  const firstMs = (await bareSynthesis(ort, session, config, ids.warm)).ms;
  const steadyMs = [];
  for (let i = 0; i < STEADY_CALLS; i++) steadyMs.push((await bareSynthesis(ort, session, config, ids.warm)).ms);
  const seconds = (outputs) => outputs.reduce((sum, out) => sum + out.length, 0) / config.sampleRate;
  await serveCommands(
    { requireMs, loadMs, firstMs, steadyMs },
    async (command) => {
      if (command.op === 'paragraph') {
        const { ms, outputs } = await bareSynthesis(ort, session, config, ids.paragraph);
        return { ms, speechSeconds: seconds(outputs), sentences: outputs.length };
      }
      const { ms, outputs } = await bareSynthesis(ort, session, config, ids.ttfa.slice(0, 1));
      return { ms, firstSentenceSeconds: seconds(outputs) };
    },
    () => session.release(),
  );
}

/** voxmill through its public API, one worker with task.threads intra-op threads. */
async function childVoxmill(task) {
  const dist = await loadDist();
  const speech = dist.createSpeech({
    voiceDirs: [task.voiceDir],
    tts: { workers: 1, intraOpThreads: task.threads },
  });
  const buffer = async (input, format) => {
    const started = performance.now();
    const result = await speech.synthesizeToBuffer({ voice: JOE.voice, input, format });
    return { ms: performance.now() - started, duration: result.duration, bytes: result.audio.length };
  };
  const stream = async (input, format) => {
    const started = performance.now();
    const audio = await speech.synthesize({ voice: JOE.voice, input, format });
    let firstChunkMs;
    let firstChunkBytes = 0;
    let sentencesAtFirstChunk = 0;
    let bytes = 0;
    for await (const chunk of audio) {
      if (firstChunkMs === undefined) {
        firstChunkMs = performance.now() - started;
        firstChunkBytes = chunk.length;
        sentencesAtFirstChunk = audio.progress.sentences;
      }
      bytes += chunk.length;
    }
    return { ms: firstChunkMs, totalMs: performance.now() - started, firstChunkBytes, sentencesAtFirstChunk, bytes };
  };
  const firstMs = (await buffer(WARM_TEXT, 'pcm16')).ms;
  const steadyMs = [];
  for (let i = 0; i < STEADY_CALLS; i++) steadyMs.push((await buffer(WARM_TEXT, 'pcm16')).ms);
  await buffer(WARM_TEXT, 'mp3'); // the mp3 encoder's first use
  // One throwaway stream per format warms the streaming path (its first use costs 20 to 30 ms; BENCHMARKS.md).
  for (const format of ['mp3', 'pcm16']) await stream(WARM_TEXT, format);
  await serveCommands(
    { firstMs, steadyMs },
    (command) => (command.op === 'paragraph' ? buffer(PARAGRAPH, command.format) : stream(TTFA_TEXT, command.format)),
    () => speech.close(),
  );
}

const CHILDREN = { bare: childBare, voxmill: childVoxmill };

// ---------------------------------------------------------------------------------------------------------------
// Parent side.

const FLAGS = {
  repeats: flag.integer('repeats: each starts three fresh processes, one per side', 5),
  rounds: flag.integer('rounds of the timed cases per repeat', 2),
  threads: flag.integer("ONNX Runtime intra-op threads on every side; 1 is voxmill's default on 2 cores", 1),
  quick: flag.boolean('1 repeat, 1 round'),
  python: flag.string("the peers' Python", {
    value: 'PATH',
    defaultText: 'the last line `bash scripts/peers-setup.sh` prints',
  }),
  json: flag.boolean('print the results as one JSON document instead of tables (progress goes to stderr)'),
};

function joeModel() {
  const path = realModels(['piper-joe-medium'])['piper-joe-medium'];
  if (!existsSync(`${path}.json`)) throw new Error(`${path}.json is missing: run npm run models:test`);
  if (basename(path) !== `${JOE.variant}.onnx`) throw new Error(`${path} is not ${JOE.variant}.onnx`);
  return path;
}

/** Phoneme ids as voxmill's worker makes them (piper-phonemize, PhonemeIdEncoder), computed once for the bare side. */
async function idsForBare(voiceDir) {
  const dist = await loadDist();
  const phonemizer = require('piper-phonemize');
  const of = (text) => phonemeIds(dist, JOE.variant, text, phonemizer, voiceDir);
  const paragraph = of(PARAGRAPH);
  const { config } = paragraph;
  return {
    config: {
      noiseScale: config.noiseScale,
      lengthScale: config.lengthScale,
      noiseW: config.noiseW,
      sampleRate: config.sampleRate,
      sentenceSilenceSeconds: config.sentenceSilenceSeconds,
    },
    ids: { warm: of(WARM_TEXT).sentences, paragraph: paragraph.sentences, ttfa: of(TTFA_TEXT).sentences },
  };
}

/**
 * A child process speaking JSON lines: `request(document)` writes one line and resolves with the next answer line
 * (for Node children the lines that start with `@@ `, for the Python peer every line that starts with `{`).
 */
function lineProcess(command, args, prefix) {
  const proc = spawn(command, args, { cwd: root, stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  proc.stderr.setEncoding('utf8').on('data', (d) => {
    stderr = (stderr + d).slice(-4000);
  });
  const waiting = [];
  const answers = [];
  let failure;
  const fail = (error) => {
    failure ??= error;
    for (const w of waiting.splice(0)) w.reject(failure);
  };
  createInterface({ input: proc.stdout }).on('line', (line) => {
    if (!line.startsWith(prefix)) return;
    const document = JSON.parse(line.slice(prefix === '{' ? 0 : prefix.length));
    const w = waiting.shift();
    if (w) w.resolve(document);
    else answers.push(document);
  });
  proc.on('error', fail);
  proc.on('close', (code) => fail(new Error(`${basename(args[0] ?? command)} ended (exit ${code}):\n${stderr}`)));
  const next = () =>
    answers.length > 0
      ? Promise.resolve(answers.shift())
      : failure
        ? Promise.reject(failure)
        : new Promise((resolve, reject) => waiting.push({ resolve, reject }));
  return {
    next,
    request(document) {
      proc.stdin.write(`${JSON.stringify(document)}\n`);
      return next();
    },
    async finish() {
      const last = await this.request({ exit: true });
      proc.stdin.end();
      return last;
    },
    kill() {
      if (proc.exitCode === null) proc.kill();
    },
  };
}

/** The three sides of one repeat, each a fresh process, started in `order`; each does its load part at start. */
async function startSides(order, settings, context) {
  const sides = {};
  const starts = {};
  for (const side of order) {
    if (side === 'piper') {
      const peer = lineProcess(context.python, [peerScript, '--serve'], '{');
      sides.piper = peer;
      const described = await peer.request({ model: context.modelPath, threads: settings.threads, normalize: true });
      if (described.threads !== settings.threads) {
        throw new Error(`piper-tts runs with ${described.threads} intra-op threads, not ${settings.threads}`);
      }
      const first = await peer.request({ text: WARM_TEXT });
      const steadyMs = [];
      for (let i = 0; i < STEADY_CALLS; i++) steadyMs.push((await peer.request({ text: WARM_TEXT })).synth_ms);
      starts.piper = { described, loadMs: described.load_ms, firstMs: first.synth_ms, steadyMs };
    } else {
      const task = { kind: side, threads: settings.threads, modelPath: context.modelPath, voiceDir: context.voiceDir };
      const payload = side === 'bare' ? { ...task, ids: context.ids, config: context.config } : task;
      const child = lineProcess(process.execPath, [self, '--child', JSON.stringify(payload)], '@@ ');
      sides[side] = child;
      starts[side] = await child.next();
    }
  }
  return { sides, starts };
}

/** One timed synthesis on one entry of TIMED; returns ms and the seconds it is divided by (RTF) or shown with. */
async function timed(sides, entry, op, config, pauses) {
  if (entry === 'piper') {
    const answer = await sides.piper.request({ text: op === 'paragraph' ? PARAGRAPH : TTFA_TEXT });
    const samples = answer.chunks.reduce((sum, chunk) => sum + chunk.samples, 0);
    return op === 'paragraph'
      ? {
          ms: answer.synth_ms,
          speechSeconds: samples / config.sampleRate,
          sentences: answer.chunks.length,
          phonemeIds: answer.chunks.reduce((sum, chunk) => sum + chunk.phoneme_ids, 0),
        }
      : {
          ms: answer.first_chunk_ms,
          totalMs: answer.synth_ms,
          firstSentenceSeconds: answer.chunks[0].samples / config.sampleRate,
        };
  }
  if (entry === 'bare') return sides.bare.request({ op });
  const answer = await sides.voxmill.request({ op, format: entry });
  if (op === 'paragraph') return { ...answer, speechSeconds: answer.duration - pauses };
  return entry === 'pcm16'
    ? { ...answer, firstSentenceSeconds: answer.firstChunkBytes / 2 / config.sampleRate }
    : answer;
}

const PAIRS = {
  timed: [
    ['pcm16', 'bare'],
    ['mp3', 'bare'],
    ['piper', 'bare'],
    ['pcm16', 'piper'],
    ['mp3', 'piper'],
  ],
  start: [
    ['voxmill', 'bare'],
    ['piper', 'bare'],
    ['voxmill', 'piper'],
  ],
};

/** Per-repeat ratios: the median over the repeat's groups (rounds, or calls) of a/b within each group. */
function groupRatios(groups, value, pairs) {
  return Object.fromEntries(pairs.map(([a, b]) => [`${a}/${b}`, median(groups.map((g) => value(g[a]) / value(g[b])))]));
}

/** Each metric's per-side median over repeats, and its ratios: median and range of the per-repeat ratios. */
function summarizeMetric(repeats, metric) {
  const sides = Object.keys(repeats[0][metric].values);
  const medians = Object.fromEntries(sides.map((s) => [s, median(repeats.map((r) => r[metric].values[s]))]));
  const ratios = {};
  for (const key of Object.keys(repeats[0][metric].ratios)) {
    const values = repeats.map((r) => r[metric].ratios[key]);
    ratios[key] = { median: median(values), range: spread(values), perRepeat: values };
  }
  return { medians, ratios };
}

/** The numbers of one repeat. */
function deriveRepeat(run) {
  const rtf = (r) => r.ms / 1000 / r.speechSeconds;
  const ms = (r) => r.ms;
  const perSide = (groups, value) =>
    Object.fromEntries(TIMED.map((entry) => [entry, median(groups.map((g) => value(g[entry])))]));
  const steady = (s) => median(run.starts[s].steadyMs);
  const load = {
    bare: run.starts.bare.loadMs,
    voxmill: run.starts.voxmill.firstMs - steady('voxmill'),
    piper: run.starts.piper.loadMs,
  };
  const cold = {
    bare: run.starts.bare.loadMs + run.starts.bare.firstMs - steady('bare'),
    voxmill: run.starts.voxmill.firstMs - steady('voxmill'),
    piper: run.starts.piper.loadMs + run.starts.piper.firstMs - steady('piper'),
  };
  const steadies = Object.fromEntries(SIDES.map((s) => [s, steady(s)]));
  const rss = Object.fromEntries(SIDES.map((s) => [s, run.memory[s]]));
  const sideRatios = (values) => Object.fromEntries(PAIRS.start.map(([a, b]) => [`${a}/${b}`, values[a] / values[b]]));
  return {
    rtf: { values: perSide(run.paragraph, rtf), ratios: groupRatios(run.paragraph, rtf, PAIRS.timed) },
    rtfMs: { values: perSide(run.paragraph, ms), ratios: {} },
    ttfa: { values: perSide(run.ttfa, ms), ratios: groupRatios(run.ttfa, ms, PAIRS.timed) },
    load: { values: load, ratios: sideRatios(load) },
    cold: { values: cold, ratios: sideRatios(cold) },
    steady: { values: steadies, ratios: sideRatios(steadies) },
    rssKb: { values: rss, ratios: sideRatios(rss) },
  };
}

const x = (r) => r.toFixed(3);
const ms0 = (v) => v.toFixed(0);
const mb = (kb) => (kb / 1024).toFixed(1);

function report(summary, facts, settings) {
  const { rtf, rtfMs, ttfa, load, cold, steady, rssKb } = summary;
  const ratio = (metric, key) => {
    const r = metric.ratios[key];
    return r ? `**${x(r.median)}** (${x(r.range[0])}–${x(r.range[1])})` : '';
  };
  const lines = [];
  lines.push(
    `\n1. Real-time factor: ${PARAGRAPH.length}-character paragraph (${facts.sentences.bare} sentences, ` +
      `${facts.phonemeIds.bare} phoneme ids; piper-tts ${facts.sentences.piper} sentences, ${facts.phonemeIds.piper} ` +
      `ids), about ${facts.speechSeconds.toFixed(1)} s of speech; medians over ${settings.repeats} repeat(s) x ` +
      `${settings.rounds} round(s); ratios of RTFs: median (range) of the per-repeat ratios`,
    '| side | wall ms | RTF | ratio to bare | ratio to piper-tts |',
    '|---|--:|--:|--:|--:|',
    `| bare ONNX Runtime loop (ids precomputed) | ${ms0(rtfMs.medians.bare)} | ${rtf.medians.bare.toFixed(4)} | 1 | |`,
    `| piper-tts synthesize() | ${ms0(rtfMs.medians.piper)} | ${rtf.medians.piper.toFixed(4)} | ` +
      `${ratio(rtf, 'piper/bare')} | 1 |`,
  );
  for (const f of ['pcm16', 'mp3']) {
    lines.push(
      `| voxmill synthesizeToBuffer, ${f} | ${ms0(rtfMs.medians[f])} | ${rtf.medians[f].toFixed(4)} | ` +
        `${ratio(rtf, `${f}/bare`)} | ${ratio(rtf, `${f}/piper`)} |`,
    );
  }
  const sec = facts.firstSentenceSeconds;
  lines.push(
    `\n2. Time to first audio: ${TTFA_TEXT.length}-character, 3-sentence paragraph (first sentence's audio, median: ` +
      `bare ${sec.bare.toFixed(2)} s, piper-tts ${sec.piper.toFixed(2)} s, voxmill ${sec.pcm16.toFixed(2)} s); ` +
      `${TTFA_CALLS} calls per side and round; ms, medians`,
    '| side | ms | ratio to bare | ratio to piper-tts |',
    '|---|--:|--:|--:|',
    `| bare: the first sentence's session.run() | ${ms0(ttfa.medians.bare)} | 1 | |`,
    `| piper-tts: synthesize() until its first sentence's audio | ${ms0(ttfa.medians.piper)} | ` +
      `${ratio(ttfa, 'piper/bare')} | 1 |`,
    `| voxmill synthesize() until the first chunk, mp3 | ${ms0(ttfa.medians.mp3)} | ${ratio(ttfa, 'mp3/bare')} | ` +
      `${ratio(ttfa, 'mp3/piper')} |`,
    `| voxmill synthesize() until the first chunk, pcm16 | ${ms0(ttfa.medians.pcm16)} | ` +
      `${ratio(ttfa, 'pcm16/bare')} | ${ratio(ttfa, 'pcm16/piper')} |`,
  );
  lines.push(
    `\n3. Load, ms, medians ("${WARM_TEXT}": steady = median of ${STEADY_CALLS} syntheses after the first)`,
    '| side | load | ratio to bare | ratio to piper-tts | cold start (load + first − steady) | ratio to bare | ' +
      'ratio to piper-tts | steady |',
    '|---|--:|--:|--:|--:|--:|--:|--:|',
    `| bare: InferenceSession.create | ${ms0(load.medians.bare)} | 1 | | ${ms0(cold.medians.bare)} | 1 | | ` +
      `${ms0(steady.medians.bare)} |`,
    `| piper-tts: PiperVoice.load | ${ms0(load.medians.piper)} | ${ratio(load, 'piper/bare')} | 1 | ` +
      `${ms0(cold.medians.piper)} | ${ratio(cold, 'piper/bare')} | 1 | ${ms0(steady.medians.piper)} |`,
    `| voxmill: first synthesizeToBuffer − steady | ${ms0(load.medians.voxmill)} | ${ratio(load, 'voxmill/bare')} | ` +
      `${ratio(load, 'voxmill/piper')} | ${ms0(cold.medians.voxmill)} | ${ratio(cold, 'voxmill/bare')} | ` +
      `${ratio(cold, 'voxmill/piper')} | ${ms0(steady.medians.voxmill)} |`,
    `(bare: require('onnxruntime-node') took ${ms0(facts.requireMs)} ms before its load, not counted)`,
  );
  lines.push(
    `\n4. Peak RSS of each side's process (load, the short sentence 5 times, per round the paragraph ` +
      `(voxmill: twice) and the 3-sentence text ${TTFA_CALLS} times (voxmill: twice as many))`,
    '| side | peak RSS MB | ratio to bare | ratio to piper-tts |',
    '|---|--:|--:|--:|',
    `| bare (Node, onnxruntime-node; VmHWM) | ${mb(rssKb.medians.bare)} | 1 | |`,
    `| piper-tts (Python; ru_maxrss) | ${mb(rssKb.medians.piper)} | ${ratio(rssKb, 'piper/bare')} | 1 |`,
    `| voxmill (Node, worker thread; VmHWM) | ${mb(rssKb.medians.voxmill)} | ${ratio(rssKb, 'voxmill/bare')} | ` +
      `${ratio(rssKb, 'voxmill/piper')} |`,
  );
  return `${lines.join('\n')}\n`;
}

async function main() {
  const { settings } = benchArgs('npm run bench:tts-real [-- options]', FLAGS, { quick: { repeats: 1, rounds: 1 } });
  const log = (text) => (settings.json ? process.stderr : process.stdout).write(text);
  const benchStarted = performance.now();
  ensureDist();
  const modelPath = joeModel();
  const voiceDir = dirname(modelPath);
  const python = peersPython(settings.python);
  const { config, ids } = await idsForBare(voiceDir);
  const context = { python, modelPath, voiceDir, config, ids };
  // voxmill's pcm16 and mp3 audio hold a pause before every sentence but the first.
  const pauses = (ids.paragraph.length - 1) * config.sentenceSilenceSeconds;
  const machine = {
    ...machineFacts(),
    onnxruntimeNode: require('onnxruntime-node/package.json').version,
    piperPhonemize: require('piper-phonemize/package.json').version,
    python,
  };
  const loads = [loadavg()];
  log(
    `voxmill TTS bench, real voice ${JOE.variant}: ${machine.cpu}, ${machine.cores} cores, Node ${machine.node}, ` +
      `onnxruntime-node ${machine.onnxruntimeNode}\nintra-op threads ${settings.threads} on every side, 1 worker; ` +
      `${settings.repeats} repeat(s) x ${settings.rounds} round(s), three fresh processes per repeat; load average ` +
      `${loads[0].map((l) => l.toFixed(2)).join(' ')}\n\n`,
  );

  const runs = [];
  for (let repeat = 0; repeat < settings.repeats; repeat++) {
    const order = rotate(SIDES, repeat);
    let started;
    try {
      started = await startSides(order, settings, context);
      const run = { repeat, order, starts: started.starts, paragraph: [], ttfa: [], memory: {}, loadAverage: [] };
      let step = repeat;
      for (let round = 0; round < settings.rounds; round++) {
        const group = {};
        for (const entry of rotate(TIMED, step++)) {
          group[entry] = await timed(started.sides, entry, 'paragraph', config, pauses);
        }
        run.paragraph.push(group);
        for (let call = 0; call < TTFA_CALLS; call++) {
          const calls = {};
          for (const entry of rotate(TIMED, step++)) calls[entry] = await timed(started.sides, entry, 'ttfa', config);
          run.ttfa.push(calls);
        }
        run.loadAverage.push(loadavg()[0]);
        loads.push(loadavg());
      }
      for (const side of SIDES) {
        const last = await started.sides[side].finish();
        run.memory[side] = side === 'piper' ? last.max_rss_kb : last.memory.hwmKb;
      }
      run.derived = deriveRepeat(run);
      runs.push(run);
      const d = run.derived;
      log(
        `[${repeat + 1}/${settings.repeats}] ${order.join(' → ')}: RTF bare ${d.rtf.values.bare.toFixed(4)}, ` +
          `piper-tts ${d.rtf.values.piper.toFixed(4)}, voxmill pcm16 ${d.rtf.values.pcm16.toFixed(4)} mp3 ` +
          `${d.rtf.values.mp3.toFixed(4)}; first audio bare ${ms0(d.ttfa.values.bare)}, piper-tts ` +
          `${ms0(d.ttfa.values.piper)}, voxmill mp3 ${ms0(d.ttfa.values.mp3)} pcm16 ${ms0(d.ttfa.values.pcm16)} ms; ` +
          `load average ${loadavg()[0].toFixed(2)}\n`,
      );
    } finally {
      for (const side of Object.values(started?.sides ?? {})) side.kill();
    }
  }
  const benchMs = performance.now() - benchStarted;
  const derived = runs.map((r) => r.derived);
  const summary = Object.fromEntries(Object.keys(derived[0]).map((m) => [m, summarizeMetric(derived, m)]));
  const all = (op, entry, value) => median(runs.flatMap((r) => r[op].map((g) => value(g[entry]))));
  const oneMinute = loads.map((l) => l[0]);
  const facts = {
    sentences: { bare: ids.paragraph.length, piper: runs[0].paragraph[0].piper.sentences },
    phonemeIds: {
      bare: ids.paragraph.reduce((sum, s) => sum + s.length, 0),
      piper: runs[0].paragraph[0].piper.phonemeIds,
    },
    speechSeconds: all('paragraph', 'bare', (r) => r.speechSeconds),
    // The first sentence's audio differs from side to side and call to call (noise_w varies the durations).
    firstSentenceSeconds: Object.fromEntries(
      ['bare', 'piper', 'pcm16'].map((e) => [e, all('ttfa', e, (r) => r.firstSentenceSeconds)]),
    ),
    requireMs: median(runs.map((r) => r.starts.bare.requireMs)),
    loadAverage1m: { min: Math.min(...oneMinute), median: median(oneMinute), max: Math.max(...oneMinute) },
  };

  const { described } = runs[0].starts.piper;
  const document = {
    date: new Date().toISOString(),
    commit: gitCommit(),
    machine: {
      ...machine,
      piperTts: described.piper_tts,
      piperEspeakNg: described.espeak_ng,
      piperOnnxruntime: described.onnxruntime,
      loadAverages: loads,
    },
    voice: { variant: JOE.variant, modelPath, ...config },
    texts: { paragraph: PARAGRAPH, ttfa: TTFA_TEXT, short: WARM_TEXT },
    settings,
    benchMs,
    facts,
    summary,
    runs,
  };
  const outFile = writeResults('tts-real', document);
  if (settings.json) process.stdout.write(`${JSON.stringify({ ...document, rawResults: outFile }, null, 2)}\n`);
  else {
    process.stdout.write(report(summary, facts, settings));
    process.stdout.write(
      `piper-tts ${described.piper_tts} (espeak-ng ${described.espeak_ng}, onnxruntime ${described.onnxruntime}); ` +
        `load average (1 min) during the run ${facts.loadAverage1m.min.toFixed(2)} to ` +
        `${facts.loadAverage1m.max.toFixed(2)}, median ${facts.loadAverage1m.median.toFixed(2)}, on ` +
        `${machine.cores} cores\nBench time: ${(benchMs / 60000).toFixed(1)} min\nRaw results: ${outFile}\n`,
    );
  }
}

if (process.argv[2] === '--child') {
  const task = JSON.parse(process.argv[3]);
  await CHILDREN[task.kind](task);
} else runMain('tts-real', main);
