#!/usr/bin/env node
// Text-to-speech benchmark with a real Piper voice, en_US-joe-medium: voxmill against its two peers, in one run:
// piper-tts 1.8.0 (Piper's own runtime, Python: its espeak-ng 1.52 and onnxruntime, from the peers venv that
// scripts/peers-setup.sh makes) and sherpa-onnx-node 1.13.8 (k2-fsa's Node addon: espeak-ng and ONNX Runtime in C++).
//
//   npm run bench:tts-peers [-- options]     (the flags: FLAGS below, or `node bench/tts-peers.mjs --help`)
//
// Needs `npm run models:test` (test/fixtures/real/models.json: piper-joe-medium), `bash scripts/peers-setup.sh` (the
// venv with piper-tts) and the npm registry once: sherpa-onnx-node is installed by this script, never as a dependency
// of the project, with `npm install --prefix` into $VOXMILL_PEERS_DIR/sherpa-onnx-node-1.13.8 (default
// ~/.cache/voxmill/peers), its platform package pinned too.
// sherpa-onnx reads a Piper voice only as its own scripts/piper/add_meta_data.py exports it, so the same folder gets:
// - voices/en_US-joe-medium/model.onnx: the voice's bytes with the metadata_props that script writes appended
//   (ModelProto field 14; the voice has none of its own): model_type vits, comment piper (what makes
//   offline-tts-vits-model.cc take the Piper path), language, voice (the espeak-ng voice, en-us), version 1,
//   has_espeak 1, has_g2pw 0, n_speakers and sample_rate from the .onnx.json. The loader requires sample_rate,
//   n_speakers, language and comment; the others are read with defaults or not at all. Made again when the voice's
//   size or time changes.
// - tokens.txt: the .onnx.json's phoneme_id_map as that script writes it, "<symbol> <id>" per line, "\n" left out.
// - espeak-ng data: sherpa's dataDir is the espeak-ng-data shipped beside voxmill's addon (piper-phonemize's), so
//   sherpa and voxmill phonemize with the same dictionaries; piper-tts uses its own (espeak-ng 1.52's).
//
// voxmill runs twice: with the voice's own weights, and with `precision: 'int8'` (the svc-tts-1-flash tier's default;
// the quantized graph is made before the repeats, as the first int8 synthesis caches it beside the voice).
// Each repeat runs one fresh process per side, one after the other (never at once), the order rotating per repeat.
// Every side runs on one thread (voxmill: createSpeech({ cpuThreads: 1, tts: { intraOpThreads: 1, workers: 1 } });
// sherpa: numThreads 1; piper-tts: voxmill's session options with one intra-op thread, as scripts/peers/piper_peer.py
// sets them) and measures:
// 1. Load + warm-up: creating the engine and loading the voice, then synthesizing the short sentence once (voxmill:
//    createSpeech() and its first synthesizeToBuffer(), which loads ONNX Runtime, espeak-ng and the voice; sherpa: new
//    OfflineTts() and its first generateAsync(); piper-tts: PiperVoice.load() and its first synthesize()). Importing
//    each package is timed apart and not counted.
// 2. Fixed cost per call: the median of N warm syntheses of "Hi.".
// 3. Time to first audio for a 3-sentence paragraph (317 characters, the one bench/tts-real.mjs uses): voxmill, from
//    synthesize() as pcm16 until the stream's first chunk; sherpa, from generateAsync() until its onProgress callback
//    first runs (one sentence per callback); piper-tts, until PiperVoice.synthesize's generator yields its first chunk
//    (one sentence per chunk, timed inside the Python process).
// 4. The 30 sentences of the accuracy tier (test/accuracy/sentences.mjs), one call each: the real-time factor (their
//    total time over the seconds of speech each side made; noise makes them differ a little from call to call;
//    voxmill's pauses between sentences, which the others do not make, are left out of its seconds).
// 5. Peak RSS: VmHWM of the process after those calls (piper-tts: ru_maxrss of the Python process).
// Every side uses the voice's noise_scale, noise_w and length_scale (0.667, 0.8, 1) and its 22050 Hz rate, and its own
// default loudness (piper-tts and voxmill scale each sentence to full scale; sherpa does not). sherpa runs with
// silenceScale 1 (--silence-scale): its default, 0.2, shortens every pause longer than 0.2 s in the audio it returns,
// which the others do not do. The ratio of a measure is voxmill / the better peer per repeat (below 1: voxmill
// faster or smaller than both); the table shows its median and range over the repeats.
// Raw results go to bench/out/tts-peers-<timestamp>.json. The exit status is 1 on errors, never for a ratio.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { homedir, loadavg } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { ACCURACY_SENTENCES } from '../test/accuracy/sentences.mjs';
import {
  benchArgs,
  distEntry,
  ensureDist,
  flag,
  gitCommit,
  isEntry,
  machineFacts,
  median,
  ownMemory,
  peersPython,
  printChildResult,
  realModels,
  root,
  rotate,
  runMain,
  runNodeChild,
  spread,
  writeResults,
} from './lib.mjs';
import { PARAGRAPHS, WARM_TEXT } from './tts.mjs';

const self = fileURLToPath(import.meta.url);

const SHERPA_VERSION = '1.13.8';
const JOE = { voice: 'en_US-joe', variant: 'en_US-joe-medium' };
/** voxmill-int8: the same voice with `precision: 'int8'` (the svc-tts-1-flash tier's default), its graph made before. */
const OURS = ['voxmill', 'voxmill-int8'];
const SIDES = [...OURS, 'sherpa', 'piper-tts'];
const PEERS = ['sherpa', 'piper-tts'];
const SHORT_TEXT = 'Hi.';
/** The first three sentences of bench/tts.mjs's walking paragraph (317 characters), as in bench/tts-real.mjs. */
const PARAGRAPH_TEXT = PARAGRAPHS[3]
  .split(/(?<=\.) /)
  .slice(0, 3)
  .join(' ');

// ---------------------------------------------------------------------------------------------------------------
// Children: one side each, in a fresh process.

/** voxmill through its public API, one synthesis at a time on one intra-op thread. */
async function childVoxmill(task) {
  let started = performance.now();
  const dist = await import(pathToFileURL(distEntry).href);
  const importMs = performance.now() - started;
  started = performance.now();
  const speech = dist.createSpeech({
    cpuThreads: 1,
    tts: { intraOpThreads: 1, workers: 1 },
    voiceDirs: [task.voiceDir],
    vadModel: null,
  });
  const precision = task.kind === 'voxmill-int8' ? 'int8' : 'fp32';
  const whole = async (input) => {
    const t = performance.now();
    const result = await speech.synthesizeToBuffer({ voice: JOE.voice, input, format: 'pcm16', precision });
    return { ms: performance.now() - t, seconds: result.duration, sampleRate: result.sampleRate };
  };
  const stream = async (input) => {
    const t = performance.now();
    const audio = await speech.synthesize({ voice: JOE.voice, input, format: 'pcm16', precision });
    let firstMs;
    let firstBytes = 0;
    let bytes = 0;
    for await (const chunk of audio) {
      if (firstMs === undefined) {
        firstMs = performance.now() - t;
        firstBytes = chunk.length;
      }
      bytes += chunk.length;
    }
    const totalMs = performance.now() - t;
    const { sentences } = audio.progress;
    const seconds = bytes / 2 / audio.sampleRate;
    return {
      firstMs,
      totalMs,
      sentences,
      firstSeconds: firstBytes / 2 / audio.sampleRate,
      seconds,
      // A pause before every sentence but the first, which the model did not make.
      speechSeconds: seconds - (sentences - 1) * task.sentenceSilence,
      sampleRate: audio.sampleRate,
    };
  };
  const warm = await whole(task.texts.warm);
  const loadMs = performance.now() - started;
  const short = [];
  for (let i = 0; i < task.shortCalls; i++) short.push(await whole(task.texts.short));
  await stream(task.texts.warm); // the streaming path's first use, not counted
  const paragraph = [];
  for (let i = 0; i < task.paragraphCalls; i++) paragraph.push(await stream(task.texts.paragraph));
  const sentences = [];
  for (const text of task.texts.sentences) sentences.push(await stream(text));
  const memory = ownMemory();
  await speech.close();
  return { importMs, loadMs, warm, short, paragraph, sentences, memory };
}

/** sherpa-onnx-node from the peer folder, numThreads 1. */
async function childSherpa(task) {
  let started = performance.now();
  const peerRequire = createRequire(join(task.peer.dir, 'package.json'));
  const sherpa = peerRequire('sherpa-onnx-node');
  const importMs = performance.now() - started;
  started = performance.now();
  const tts = new sherpa.OfflineTts({
    model: {
      vits: {
        model: task.peer.model,
        tokens: task.peer.tokens,
        dataDir: task.peer.espeakData,
        noiseScale: task.inference.noiseScale,
        noiseScaleW: task.inference.noiseW,
        lengthScale: task.inference.lengthScale,
      },
      numThreads: 1,
      provider: 'cpu',
      debug: 0,
    },
    maxNumSentences: 1,
  });
  const generationConfig = new sherpa.GenerationConfig({ sid: 0, speed: 1, silenceScale: task.silenceScale });
  const whole = async (text) => {
    const t = performance.now();
    const audio = await tts.generateAsync({ text, sid: 0, speed: 1, generationConfig });
    return {
      ms: performance.now() - t,
      seconds: audio.samples.length / audio.sampleRate,
      sampleRate: audio.sampleRate,
    };
  };
  const stream = async (text) => {
    const t = performance.now();
    let firstMs;
    let firstSamples = 0;
    let sentences = 0;
    const audio = await tts.generateAsync({
      text,
      sid: 0,
      speed: 1,
      generationConfig,
      onProgress: (info) => {
        if (firstMs === undefined) {
          firstMs = performance.now() - t;
          firstSamples = info.samples.length;
        }
        sentences++;
        return 1;
      },
    });
    const totalMs = performance.now() - t;
    const seconds = audio.samples.length / audio.sampleRate;
    return {
      firstMs,
      totalMs,
      sentences,
      firstSeconds: firstSamples / audio.sampleRate,
      seconds,
      speechSeconds: seconds,
      sampleRate: audio.sampleRate,
    };
  };
  const warm = await whole(task.texts.warm);
  const loadMs = performance.now() - started;
  const short = [];
  for (let i = 0; i < task.shortCalls; i++) short.push(await whole(task.texts.short));
  await stream(task.texts.warm); // the callback path's first use, not counted
  const paragraph = [];
  for (let i = 0; i < task.paragraphCalls; i++) paragraph.push(await stream(task.texts.paragraph));
  const sentences = [];
  for (const text of task.texts.sentences) sentences.push(await stream(text));
  const memory = ownMemory();
  return { importMs, loadMs, warm, short, paragraph, sentences, memory, sampleRate: tts.sampleRate };
}

/**
 * piper-tts in its own Python process (scripts/peers/piper_peer.py --serve), driven line by line: every time is
 * measured inside that process, around PiperVoice's own calls.
 */
async function childPiperTts(task) {
  const started = performance.now();
  const peer = spawn(task.python, [join(root, 'scripts', 'peers', 'piper_peer.py'), '--serve'], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: peer.stdout })[Symbol.asyncIterator]();
  const ask = async (request) => {
    peer.stdin.write(`${JSON.stringify(request)}\n`);
    const { value, done } = await lines.next();
    if (done) throw new Error('piper_peer.py ended early');
    return JSON.parse(value);
  };
  const ready = await ask({ model: task.model, threads: 1, normalize: true });
  const importMs = performance.now() - started - ready.load_ms;
  const speak = async (text) => {
    const answer = await ask({ text });
    const samples = answer.chunks.reduce((sum, chunk) => sum + chunk.samples, 0);
    const seconds = samples / ready.sample_rate;
    return {
      ms: answer.synth_ms,
      firstMs: answer.first_chunk_ms,
      totalMs: answer.synth_ms,
      sentences: answer.chunks.length,
      firstSeconds: (answer.chunks[0]?.samples ?? 0) / ready.sample_rate,
      seconds,
      speechSeconds: seconds,
      sampleRate: ready.sample_rate,
    };
  };
  const warm = await speak(task.texts.warm);
  const loadMs = ready.load_ms + warm.ms;
  const short = [];
  for (let i = 0; i < task.shortCalls; i++) short.push(await speak(task.texts.short));
  const paragraph = [];
  for (let i = 0; i < task.paragraphCalls; i++) paragraph.push(await speak(task.texts.paragraph));
  const sentences = [];
  for (const text of task.texts.sentences) sentences.push(await speak(text));
  const { max_rss_kb: hwmKb } = await ask({ exit: true });
  peer.stdin.end();
  return { importMs, loadMs, warm, short, paragraph, sentences, memory: { hwmKb }, versions: ready };
}

const CHILDREN = {
  voxmill: childVoxmill,
  'voxmill-int8': childVoxmill,
  sherpa: childSherpa,
  'piper-tts': childPiperTts,
};

// ---------------------------------------------------------------------------------------------------------------
// The peer: installed into a scratch folder, the voice exported for it.

const peersDir = () => process.env.VOXMILL_PEERS_DIR ?? join(homedir(), '.cache', 'voxmill', 'peers');

function installedVersion(dir, name) {
  try {
    return JSON.parse(readFileSync(join(dir, 'node_modules', name, 'package.json'), 'utf8')).version;
  } catch {
    return undefined;
  }
}

/** sherpa-onnx-node and its platform package, both SHERPA_VERSION, in the peers folder (npm install once). */
function ensurePeer(log) {
  const dir = join(peersDir(), `sherpa-onnx-node-${SHERPA_VERSION}`);
  const platform = `sherpa-onnx-${process.platform === 'win32' ? 'win' : process.platform}-${process.arch}`;
  const ready = () =>
    installedVersion(dir, 'sherpa-onnx-node') === SHERPA_VERSION && installedVersion(dir, platform) === SHERPA_VERSION;
  if (!ready()) {
    mkdirSync(dir, { recursive: true });
    if (!existsSync(join(dir, 'package.json'))) writeFileSync(join(dir, 'package.json'), '{ "private": true }\n');
    const args = ['install', '--prefix', dir, '--no-audit', '--no-fund', '--save-exact'];
    args.push(`sherpa-onnx-node@${SHERPA_VERSION}`, `${platform}@${SHERPA_VERSION}`);
    log(`peer: npm ${args.join(' ')}\n`);
    // npm's own output goes to stderr, so that --json keeps stdout to itself.
    const result = spawnSync('npm', args, { stdio: ['ignore', 2, 2], shell: process.platform === 'win32' });
    if (result.status !== 0 || !ready()) throw new Error(`npm install of sherpa-onnx-node@${SHERPA_VERSION} failed`);
  }
  return { dir, platformPackage: platform };
}

/** Writes `bytes` to `path` by way of a temporary file beside it. */
function writeFileAtomically(path, bytes) {
  const temporary = `${path}.tmp-${process.pid}`;
  writeFileSync(temporary, bytes);
  renameSync(temporary, path);
}

/**
 * The voice as sherpa-onnx loads a Piper voice (scripts/piper/add_meta_data.py): a copy with metadata_props and
 * tokens.txt, in the peer folder, made again when the voice file changes.
 */
async function sherpaVoice(peerDir, modelPath, config, log) {
  const { lengthField } = await import(pathToFileURL(join(root, 'dist', 'util', 'protobuf-fields.js')).href);
  const dir = join(peerDir, 'voices', JOE.variant);
  const model = join(dir, 'model.onnx');
  const tokens = join(dir, 'tokens.txt');
  const stampFile = join(dir, 'source.json');
  const { size, mtimeMs } = statSync(modelPath);
  const sampleRate = config.audio.sample_rate === 22500 ? 22050 : config.audio.sample_rate; // as the script does
  const metadata = {
    model_type: 'vits',
    comment: 'piper',
    language: config.language?.name_english ?? 'English',
    voice: config.lang_code ?? config.espeak.voice,
    version: 1,
    has_espeak: 1,
    has_g2pw: 0,
    n_speakers: config.num_speakers,
    sample_rate: sampleRate,
  };
  const stamp = JSON.stringify({ source: modelPath, size, mtimeMs, metadata });
  const current = existsSync(stampFile) ? readFileSync(stampFile, 'utf8') : '';
  if (current !== stamp || !existsSync(model) || !existsSync(tokens)) {
    log(`peer: writing ${JOE.variant} with sherpa-onnx's metadata into ${dir}\n`);
    mkdirSync(dir, { recursive: true });
    // ModelProto.metadata_props (14) is a repeated StringStringEntryProto (key 1, value 2): appended fields add entries.
    const entries = Object.entries(metadata).map(([key, value]) =>
      lengthField(14, Buffer.concat([lengthField(1, key), lengthField(2, String(value))])),
    );
    writeFileAtomically(model, Buffer.concat([readFileSync(modelPath), ...entries]));
    const lines = Object.entries(config.phoneme_id_map)
      .filter(([symbol]) => symbol !== '\n')
      .map(([symbol, ids]) => `${symbol} ${Array.isArray(ids) ? ids[0] : ids}\n`);
    writeFileAtomically(tokens, lines.join(''));
    writeFileAtomically(stampFile, stamp);
  }
  return { model, tokens, metadata };
}

/** The espeak-ng-data shipped beside voxmill's addon, the data voxmill phonemizes with. */
async function espeakDataDir() {
  const { nativeAssets } = await import(pathToFileURL(join(root, 'dist', 'native.js')).href);
  const dir = nativeAssets().espeakData;
  if (!existsSync(join(dir, 'phontab'))) throw new Error(`${dir} is not an espeak-ng-data folder`);
  return dir;
}

function joeModel() {
  const path = realModels(['piper-joe-medium'])['piper-joe-medium'];
  if (!existsSync(`${path}.json`)) throw new Error(`${path}.json is missing: run npm run models:test`);
  if (basename(path) !== `${JOE.variant}.onnx`) throw new Error(`${path} is not ${JOE.variant}.onnx`);
  return path;
}

// ---------------------------------------------------------------------------------------------------------------
// Parent side.

const FLAGS = {
  repeats: flag.integer('repeats: each starts one fresh process per side, the order alternating', 5),
  'short-calls': flag.integer(`warm syntheses of "${SHORT_TEXT}" per process (their median is the fixed cost)`, 10),
  'paragraph-calls': flag.integer('syntheses of the 3-sentence paragraph per process (first audio, total, RTF)', 3),
  'silence-scale': {
    type: 'string',
    value: 'X',
    help: "sherpa's silenceScale, 0.01 to 10: 1 leaves the pauses of its audio as made (its own default is 0.2)",
    default: 1,
    parse: (text, name) => {
      const x = Number(text);
      if (!(x >= 0.01 && x <= 10)) throw new Error(`--${name} needs a number from 0.01 to 10, got "${text}"`);
      return x;
    },
  },
  python: flag.string(
    "the Python with piper-tts (default: the peers venv's, the last line scripts/peers-setup.sh prints)",
    {
      value: 'PATH',
    },
  ),
  quick: flag.boolean('1 repeat, 5 short calls, 2 paragraph calls'),
  json: flag.boolean('print the results as one JSON document instead of a table (progress goes to stderr)'),
};

const sum = (values) => values.reduce((a, b) => a + b, 0);
const METRICS = {
  loadMs: (r) => r.loadMs,
  shortMs: (r) => median(r.short.map((c) => c.ms)),
  firstAudioMs: (r) => median(r.paragraph.map((c) => c.firstMs)),
  totalMs: (r) => median(r.paragraph.map((c) => c.totalMs)),
  rtf: (r) => sum(r.sentences.map((c) => c.totalMs)) / 1000 / sum(r.sentences.map((c) => c.speechSeconds)),
  peakRssKb: (r) => r.memory.hwmKb,
};

/**
 * The numbers of one repeat: each metric per side, and each voxmill side / the better peer (every metric: lower is
 * better).
 */
function deriveRepeat(results) {
  return Object.fromEntries(
    Object.entries(METRICS).map(([name, value]) => {
      const values = Object.fromEntries(SIDES.map((side) => [side, value(results[side])]));
      const best = Math.min(...PEERS.map((peer) => values[peer]));
      return [name, { values, ratios: Object.fromEntries(OURS.map((side) => [side, values[side] / best])) }];
    }),
  );
}

/** Per metric: each side's median over the repeats, and the ratio's median, range and per-repeat values. */
function summarize(derived) {
  return Object.fromEntries(
    Object.keys(METRICS).map((name) => {
      const ratioOf = (side) => {
        const ratios = derived.map((d) => d[name].ratios[side]);
        return { median: median(ratios), range: spread(ratios), perRepeat: ratios };
      };
      return [
        name,
        {
          medians: Object.fromEntries(SIDES.map((side) => [side, median(derived.map((d) => d[name].values[side]))])),
          ratios: Object.fromEntries(OURS.map((side) => [side, ratioOf(side)])),
        },
      ];
    }),
  );
}

const ms0 = (v) => v.toFixed(0);
const mb = (kb) => (kb / 1024).toFixed(1);

function report(summary, facts, settings) {
  const row = (label, name, format) => {
    const { medians, ratios } = summary[name];
    const cells = SIDES.map((side) => format(medians[side])).join(' | ');
    const ratioCells = OURS.map((side) => {
      const { median: m, range } = ratios[side];
      return `**${m.toFixed(3)}** (${range[0].toFixed(3)}–${range[1].toFixed(3)})`;
    });
    return `| ${label} | ${cells} | ${ratioCells.join(' | ')} |`;
  };
  const seconds = (side, key) => facts[side][key].toFixed(2);
  return [
    `\nvoxmill against piper-tts ${facts.versions?.piper_tts ?? ''} and sherpa-onnx-node ${SHERPA_VERSION}, ` +
      `${JOE.variant}, 1 thread each; medians over ${settings.repeats} repeat(s); ratio voxmill / the better peer per ` +
      'repeat, median (range): below 1, voxmill faster or smaller than both; int8: precision int8 (svc-tts-1-flash)',
    '| measure | voxmill | voxmill int8 | sherpa-onnx-node | piper-tts | ratio | ratio int8 |',
    '|---|--:|--:|--:|--:|--:|--:|',
    row('load + warm-up ms (create, then the short sentence once)', 'loadMs', ms0),
    row(`fixed cost ms ("${SHORT_TEXT}", median of ${settings.shortCalls} warm calls)`, 'shortMs', (v) => v.toFixed(1)),
    row(`time to first audio ms (${PARAGRAPH_TEXT.length}-character, 3-sentence paragraph)`, 'firstAudioMs', ms0),
    row('total ms, same paragraph', 'totalMs', ms0),
    row(`real-time factor (${ACCURACY_SENTENCES.length} sentences, one call each)`, 'rtf', (v) => v.toFixed(4)),
    row('peak RSS MB (VmHWM after the calls)', 'peakRssKb', mb),
    '',
    `Paragraph: sentences ${SIDES.map((side) => `${side} ${facts[side].sentences}`).join(', ')}; seconds of speech ` +
      `${SIDES.map((side) => `${side} ${seconds(side, 'speechSeconds')}`).join(', ')} (voxmill's ` +
      `${(facts.voxmill.sentences - 1) * facts.sentenceSilence} s of pauses left out); first sentence's audio ` +
      `${SIDES.map((side) => `${side} ${seconds(side, 'firstSeconds')} s`).join(', ')}.`,
    `Import, not counted in load: ${SIDES.map((side) => `${side} ${ms0(facts[side].importMs)} ms`).join(', ')}.`,
    '',
  ].join('\n');
}

async function main() {
  const { settings } = benchArgs('npm run bench:tts-peers [-- options]', FLAGS, {
    quick: { repeats: 1, shortCalls: 5, paragraphCalls: 2 },
  });
  const log = (text) => (settings.json ? process.stderr : process.stdout).write(text);
  const benchStarted = performance.now();
  ensureDist();
  const modelPath = joeModel();
  const voiceDir = dirname(modelPath);
  const config = JSON.parse(readFileSync(`${modelPath}.json`, 'utf8'));
  const inference = {
    noiseScale: config.inference?.noise_scale ?? 0.667,
    noiseW: config.inference?.noise_w ?? 0.8,
    lengthScale: config.inference?.length_scale ?? 1,
  };
  const sentenceSilence = config.inference?.sentence_silence ?? 0.2; // voxmill's pause between sentences
  // The int8 graph is made once and cached beside the voice (as the first int8 synthesis would): load is its load.
  const { editedVoiceModel } = await import(pathToFileURL(join(root, 'dist', 'tts', 'edited-voice.js')).href);
  await editedVoiceModel(modelPath, { timed: false, int8: true });
  const peer = ensurePeer(log);
  const voice = await sherpaVoice(peer.dir, modelPath, config, log);
  const espeakData = await espeakDataDir();
  const texts = { warm: WARM_TEXT, short: SHORT_TEXT, paragraph: PARAGRAPH_TEXT, sentences: ACCURACY_SENTENCES };
  const task = {
    model: modelPath,
    python: peersPython(settings.python),
    voiceDir,
    texts,
    inference,
    sentenceSilence,
    silenceScale: settings.silenceScale,
    shortCalls: settings.shortCalls,
    paragraphCalls: settings.paragraphCalls,
    peer: { dir: peer.dir, model: voice.model, tokens: voice.tokens, espeakData },
  };
  const machine = {
    ...machineFacts(),
    voxmill: (await import(pathToFileURL(distEntry).href)).versions(),
    sherpaOnnxNode: SHERPA_VERSION,
    sherpaPlatformPackage: peer.platformPackage,
  };
  const loads = [loadavg()];
  log(
    `voxmill TTS against piper-tts and sherpa-onnx-node ${SHERPA_VERSION}, real voice ${JOE.variant}: ${machine.cpu}, ` +
      `${machine.cores} cores, Node ${machine.node}\n1 thread per side; ` +
      `${settings.repeats} repeat(s), one fresh process per side each; load average ` +
      `${loads[0].map((l) => l.toFixed(2)).join(' ')}\n\n`,
  );

  const runs = [];
  for (let repeat = 0; repeat < settings.repeats; repeat++) {
    const order = rotate(SIDES, repeat);
    const results = {};
    for (const side of order) results[side] = await runNodeChild(self, { ...task, kind: side }, { what: side });
    const derived = deriveRepeat(results);
    runs.push({ repeat, order, results, derived, loadAverage: loadavg() });
    loads.push(loadavg());
    const v = (name, format) => SIDES.map((side) => format(derived[name].values[side])).join(' / ');
    log(
      `[${repeat + 1}/${settings.repeats}] ${order.join(' → ')} (voxmill / int8 / sherpa / piper-tts): load ` +
        `${v('loadMs', ms0)} ms; "${SHORT_TEXT}" ${v('shortMs', (x) => x.toFixed(1))} ms; first audio ` +
        `${v('firstAudioMs', ms0)} ms; RTF ${v('rtf', (x) => x.toFixed(4))}; peak RSS ${v('peakRssKb', mb)} MB; load ` +
        `average ${loadavg()[0].toFixed(2)}\n`,
    );
  }
  const benchMs = performance.now() - benchStarted;
  const summary = summarize(runs.map((r) => r.derived));
  const sideFacts = (side) => {
    const calls = runs.flatMap((r) => r.results[side].paragraph);
    return {
      sentences: median(calls.map((c) => c.sentences)),
      speechSeconds: median(calls.map((c) => c.speechSeconds)),
      firstSeconds: median(calls.map((c) => c.firstSeconds)),
      sampleRate: calls[0].sampleRate,
      importMs: median(runs.map((r) => r.results[side].importMs)),
    };
  };
  const facts = {
    ...Object.fromEntries(SIDES.map((side) => [side, sideFacts(side)])),
    sentenceSilence,
    versions: runs[0]?.results['piper-tts'].versions,
  };
  const oneMinute = loads.map((l) => l[0]);
  facts.loadAverage1m = { min: Math.min(...oneMinute), median: median(oneMinute), max: Math.max(...oneMinute) };

  const document = {
    date: new Date().toISOString(),
    commit: gitCommit(),
    machine: { ...machine, loadAverages: loads },
    voice: { variant: JOE.variant, modelPath, inference, sentenceSilence },
    peer: { ...task.peer, metadata: voice.metadata },
    texts,
    settings,
    benchMs,
    facts,
    summary,
    runs,
  };
  const outFile = writeResults('tts-peers', document);
  if (settings.json) process.stdout.write(`${JSON.stringify({ ...document, rawResults: outFile }, null, 2)}\n`);
  else {
    process.stdout.write(report(summary, facts, settings));
    process.stdout.write(
      `Load average (1 min) during the run ${facts.loadAverage1m.min.toFixed(2)} to ` +
        `${facts.loadAverage1m.max.toFixed(2)}, median ${facts.loadAverage1m.median.toFixed(2)}, on ${machine.cores} ` +
        `cores\nBench time: ${(benchMs / 60000).toFixed(1)} min\nRaw results: ${outFile}\n`,
    );
  }
}

if (isEntry(import.meta.url)) {
  if (process.argv[2] === '--child') {
    const task = JSON.parse(process.argv[3]);
    printChildResult(await CHILDREN[task.kind](task));
  } else runMain('tts-peers', main);
}
