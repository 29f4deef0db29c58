#!/usr/bin/env node
// Text-to-speech benchmark: voxmill's synthesis against a bare ONNX Runtime loop on the same voice model, with the
// same session options and the same phoneme ids. Results are ratios taken in one run (../shared/DESIGN.md): both
// sides run in the same child process, one after the other (never at once), their order rotating per repeat, and
// each ratio is the median of the per-repeat ratios.
//
//   npm run bench:tts [-- options]     (the flags: FLAGS below, or `node bench/tts.mjs --help`)
//
// The voice is test/fixtures/bench-voices/en_US-fixture_heavy-medium (`npm run fixtures`): the medium fixture's
// 22050 Hz tone, computed alongside an MLP that costs what a real Piper medium voice costs on a CPU
// (scripts/lib/fixture-voices.mjs). What is measured, each in a fresh Node process per repeat:
// 1. Real-time factor (wall time / seconds of audio) for a 1,000-character English paragraph. Bare: phoneme ids
//    computed beforehand exactly as the worker does (normalizeText, splitIntoChunks, piper-phonemize,
//    PhonemeIdEncoder), then InferenceSession.run() sentence by sentence, timing only the runs. voxmill:
//    synthesizeToBuffer() end to end, as pcm16 at the voice's rate and as mp3 (phonemization, worker messages and
//    encoding included). Both sides are warmed first (session created, one throwaway run or synthesis).
// 2. Time to first audio for a 5,000-character input: synthesize() as mp3 until its first chunk arrives, against
//    synthesizeToBuffer() of the input's first sentence alone, as mp3. A throwaway call of the same kind (stream or
//    buffer) on that sentence runs before each measurement: it warms the worker, its session and that code path,
//    and waits out the sentences a cancelled stream had synthesized ahead.
// 3. Encoding cost per format and rate: the bare side's audio of (1) through a StreamingEncoder in the sentence
//    chunks the worker sends, streaming (as synthesize()) and whole (as synthesizeToBuffer()), as a share of the
//    bare synthesis time of the same audio.
// 4. Memory, in one process run with --expose-gc (RSS read after a full GC): before any voice, after a synthesis
//    with the trivial medium fixture (worker thread, ONNX Runtime, espeak-ng), after the heavy voice, after a
//    copy of the heavy voice under another name (its own session), then the drift over N more syntheses.
//
// The exit status is 1 on errors (a child failed, or the two sides made different amounts of audio), never for a
// missed target. Raw results go to bench/out/tts-<timestamp>.json.
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';
import {
  benchArgs,
  ensureDist,
  ensureFixtures,
  flag,
  gitCommit,
  isEntry,
  machineFacts,
  median,
  ownMemory,
  printChildResult,
  root,
  rotate,
  rssDrift,
  runMain,
  runNodeChild,
  SETTLED_AFTER_CALL,
  spread,
  writeResults,
} from './lib.mjs';

const distDir = join(root, 'dist');
const self = fileURLToPath(import.meta.url);
const require = createRequire(import.meta.url);

const HEAVY = { voice: 'en_US-fixture_heavy', variant: 'en_US-fixture_heavy-medium' };
const LIGHT = { voice: 'en_US-fixture', variant: 'en_US-fixture-medium' };
const COPY = { voice: 'en_US-fixture_heavycopy', variant: 'en_US-fixture_heavycopy-medium' };
const benchVoicesDir = join(root, 'test', 'fixtures', 'bench-voices');
const fixtureVoicesDir = join(root, 'test', 'fixtures', 'voices');
const RTF_RATIO_TARGET = 1.1;
const TTFA_RATIO_TARGET = 1.2;
// Formats and output rates of the encoding table; null is the voice's own rate (Opus has no 22050 Hz mode).
const ENCODINGS = [
  ['mp3', null],
  ['mp3', 48000],
  ['wav', null],
  ['wav', 48000],
  ['opus', 24000],
  ['opus', 48000],
  ['pcm16', null],
  ['pcm16', 48000],
];

// English prose: the first paragraph (983 characters) is the 1,000-character input; all of them, then the first
// again, cut at the last sentence end within 5,000 characters, make the long input.
export const PARAGRAPHS = [
  'The lighthouse at the end of the harbour was built in 1874, after a winter in which three fishing boats were lost on the rocks within sight of the town. ' +
    'Its keeper lived in a small stone cottage beside the tower and climbed the spiral stairs four times every night to wind the clockwork that turned the lens. ' +
    'The light could be seen twenty miles out to sea on a clear night, and sailors learned to count its flashes to know which coast they were approaching. ' +
    'In 1921 the oil lamp was replaced by an electric bulb, and in 1968 the last keeper retired when the station was automated. ' +
    'Today the cottage is a small museum, open on weekends from April to October, where visitors can see the old logbooks, the brass tools, and a photograph of every keeper who served there. ' +
    'On stormy evenings people still gather on the pier to watch the beam sweep across the water, as if the town could not quite believe that no one is up there any more. ' +
    'Nobody in town has ever suggested turning it off.',
  'Bread is one of the oldest prepared foods, and its basic recipe has hardly changed in thousands of years. ' +
    'Flour, water, salt and yeast are mixed into a dough, which is kneaded until it becomes smooth and elastic. ' +
    'During kneading, proteins in the flour form long chains of gluten that trap the gas produced by the yeast. ' +
    'The dough is then left to rise in a warm place, usually for an hour or two, until it has roughly doubled in size. ' +
    'A baker shapes it into loaves, lets it rise once more, and bakes it in a hot oven until the crust turns a deep golden brown. ' +
    'Slower methods, such as sourdough, rely on wild yeasts and bacteria instead of a packet from the shop. ' +
    'They take longer, sometimes a day or more, but they give the bread a sharper flavour and help it keep for several days. ' +
    'Many home bakers say the hardest part is not the work itself but the patience: waiting for the dough, and then waiting again for the loaf to cool before cutting it.',
  "The city library opens at nine in the morning, and by ten o'clock most of the long tables on the second floor are taken. " +
    'Students arrive with laptops and stacks of borrowed books, retired readers settle into the armchairs by the windows with the daily newspapers, and parents bring small children to the story hour downstairs. ' +
    'The librarians answer questions about everything from tax forms to family history, and they can usually find an answer even when the question is vague. ' +
    'Last year the library lent more than two hundred thousand items, including films, music, board games and even a few telescopes. ' +
    'It also runs free classes for people who want to learn to use a computer, write a job application, or speak a new language. ' +
    'When the budget was cut three years ago, hundreds of residents came to the council meeting to argue that the building was worth every penny. ' +
    'The council listened, and the opening hours were restored the following spring.',
  'Walking is the simplest form of exercise, and doctors recommend it to almost everyone. ' +
    'It needs no special equipment apart from comfortable shoes, it can be done at any age, and it is gentle on the joints. ' +
    'A brisk walk of thirty minutes a day strengthens the heart, lowers blood pressure, and helps to control weight. ' +
    'It also has clear benefits for the mind: people who walk regularly report better sleep, less anxiety, and a brighter mood. ' +
    'Some researchers believe that walking in parks or along rivers is more calming than walking along busy streets, although any walking is better than none. ' +
    'Walking with a friend makes it easier to keep the habit, and the conversation makes the time pass quickly. ' +
    'For people who find thirty minutes difficult, three walks of ten minutes spread through the day appear to work almost as well. ' +
    'The important thing, the doctors say, is simply to start, and then to keep going week after week.',
  'The first railway across the mountains took eleven years to build and cost far more than anyone had expected. ' +
    'Engineers had to cut tunnels through solid granite, build bridges over deep valleys, and protect the line from avalanches in winter. ' +
    'Thousands of workers lived in temporary camps along the route, where food was scarce and the weather was often brutal. ' +
    'When the line finally opened, a journey that had taken two weeks by horse and cart could be made in a single day. ' +
    'Towns along the railway grew quickly, as farmers could now send their produce to distant markets while it was still fresh. ' +
    'Tourists followed soon after, drawn by the lakes, the glaciers and the clean mountain air. ' +
    'Today modern trains run on the same route, and the old stations, with their wooden benches and painted signs, have been carefully restored. ' +
    'Many passengers still press their faces to the windows as the train crosses the highest bridge.',
];
export const PARAGRAPH = PARAGRAPHS[0];
const LONG_TEXT = (() => {
  const all = [...PARAGRAPHS, PARAGRAPHS[0]].join('\n\n');
  return all.slice(0, all.lastIndexOf('. ', 4998) + 1);
})();
// Warms voxmill's worker, session and encoders before the timed calls.
export const WARM_TEXT = 'Bread is one of the oldest prepared foods.';

// ---------------------------------------------------------------------------------------------------------------
// Child side: runs in a fresh Node process per measurement.

/** RSS once the main isolate's garbage is gone (the memory child runs with --expose-gc). */
function settledMemory() {
  globalThis.gc?.();
  return ownMemory();
}

export async function loadDist() {
  const load = (path) => import(pathToFileURL(join(distDir, path)).href);
  const [index, text, phonemeIds, voiceConfig] = await Promise.all([
    load('index.js'),
    load('tts/text.js'),
    load('tts/phoneme-ids.js'),
    load('tts/voice-config.js'),
  ]);
  return { ...index, ...text, ...phonemeIds, ...voiceConfig };
}

/** The voice's config and the phoneme ids of `text`, sentence by sentence, as the synthesis worker makes them. */
export function phonemeIds(dist, variant, text, phonemizer, voicesDir = benchVoicesDir) {
  const configPath = join(voicesDir, `${variant}.onnx.json`);
  const config = dist.parseVoiceConfig(JSON.parse(readFileSync(configPath, 'utf8')), configPath);
  const encoder = new dist.PhonemeIdEncoder({ idMap: [...config.phonemeIdMap], phonemeMap: [...config.phonemeMap] });
  const started = performance.now();
  const sentences = [];
  for (const chunk of dist.splitIntoChunks(dist.normalizeText(text))) {
    for (const phonemes of phonemizer.phonemize(chunk, config.espeakVoice)) {
      const ids = encoder.encode(phonemes);
      if (!encoder.isEmpty(ids)) sentences.push(ids);
    }
  }
  return { config, sentences, phonemizeMs: performance.now() - started };
}

/** The session options voxmill's worker uses (src/tts/synth-worker.ts). */
export const sessionOptions = (threads) => ({
  intraOpNumThreads: threads,
  interOpNumThreads: 1,
  executionMode: 'sequential',
  graphOptimizationLevel: 'all',
});

/** The bare loop: one session.run() per sentence; returns the time of the runs and each sentence's samples. */
export async function bareSynthesis(ort, session, config, sentences) {
  const scales = Float32Array.of(config.noiseScale, config.lengthScale, config.noiseW);
  const outputs = [];
  const started = performance.now();
  for (const ids of sentences) {
    const { output } = await session.run({
      input: new ort.Tensor('int64', BigInt64Array.from(ids, BigInt), [1, ids.length]),
      input_lengths: new ort.Tensor('int64', BigInt64Array.of(BigInt(ids.length)), [1]),
      scales: new ort.Tensor('float32', scales, [3]),
    });
    outputs.push(output.data);
  }
  return { ms: performance.now() - started, outputs };
}

/** The sentence chunks the worker sends: each sentence's samples, the pause before all but the first. */
function workerChunks(outputs, config) {
  const silence = Math.round(config.sentenceSilenceSeconds * config.sampleRate);
  return outputs.map((samples, i) => {
    const chunk = new Float32Array((i === 0 ? 0 : silence) + samples.length);
    chunk.set(samples, i === 0 ? 0 : silence);
    return chunk;
  });
}

async function encodeOnce(dist, chunks, inputSampleRate, format, rate, whole) {
  const started = performance.now();
  const encoder = new dist.StreamingEncoder({
    format,
    inputSampleRate,
    outputSampleRate: rate ?? dist.defaultSampleRate(format, inputSampleRate),
    whole,
  });
  let bytes = 0;
  try {
    for (const chunk of chunks) bytes += (await encoder.encode(chunk)).length;
    bytes += (await encoder.finish()).length;
  } finally {
    encoder.dispose();
  }
  return { ms: performance.now() - started, bytes };
}

/** Sections 1 and 3: real-time factors of the bare loop and of voxmill, then the encoders on the bare audio. */
async function childRtf(task) {
  const dist = await loadDist();
  const ort = require('onnxruntime-node');
  const phonemizer = require('piper-phonemize');
  phonemizer.phonemize('', 'en-us'); // espeak-ng loads its data on the first call; the worker does this at start
  phonemeIds(dist, HEAVY.variant, PARAGRAPH, phonemizer); // warm
  const { config, sentences, phonemizeMs } = phonemeIds(dist, HEAVY.variant, PARAGRAPH, phonemizer);
  const session = await ort.InferenceSession.create(
    join(benchVoicesDir, `${HEAVY.variant}.onnx`),
    sessionOptions(task.threads),
  );
  const speech = dist.createSpeech({
    voiceDirs: [benchVoicesDir],
    tts: { workers: 1, intraOpThreads: task.threads },
  });
  try {
    // Warm both sides: the session's first run, and voxmill's worker, session and both encoders.
    await bareSynthesis(ort, session, config, sentences.slice(0, 1));
    for (const format of ['pcm16', 'mp3']) {
      await speech.synthesizeToBuffer({ voice: HEAVY.voice, input: WARM_TEXT, format });
    }
    const sides = {};
    let bare;
    for (const side of rotate(['bare', 'pcm16', 'mp3'], task.repeat)) {
      if (side === 'bare') {
        bare = await bareSynthesis(ort, session, config, sentences);
        sides.bare = { ms: bare.ms };
      } else {
        const started = performance.now();
        const result = await speech.synthesizeToBuffer({ voice: HEAVY.voice, input: PARAGRAPH, format: side });
        sides[side] = { ms: performance.now() - started, duration: result.duration, bytes: result.audio.length };
      }
    }
    const chunks = workerChunks(bare.outputs, config);
    const samples = chunks.reduce((sum, chunk) => sum + chunk.length, 0);
    sides.bare.samples = samples;
    sides.pcm16.samples = sides.pcm16.bytes / 2;

    // Section 3, on the bare side's audio: one throwaway pass per encoder, then one timed pass each.
    const encodings = [];
    for (const [format, rate] of ENCODINGS) {
      for (const whole of [false, true])
        await encodeOnce(dist, chunks.slice(0, 1), config.sampleRate, format, rate, whole);
    }
    for (const [format, rate] of rotate(ENCODINGS, task.repeat)) {
      for (const whole of task.repeat % 2 ? [true, false] : [false, true]) {
        const { ms, bytes } = await encodeOnce(dist, chunks, config.sampleRate, format, rate, whole);
        encodings.push({ format, rate: rate ?? config.sampleRate, whole, ms, bytes });
      }
    }
    return {
      sentences: sentences.length,
      phonemeIds: sentences.reduce((sum, ids) => sum + ids.length, 0),
      characters: PARAGRAPH.length,
      audioSeconds: samples / config.sampleRate,
      sampleRate: config.sampleRate,
      phonemizeMs,
      ...sides,
      encodings,
    };
  } finally {
    await speech.close();
    await session.release();
  }
}

/** Section 2: time to the first chunk of a long streamed input against the first sentence alone. */
async function childTtfa(task) {
  const dist = await loadDist();
  const firstSentence = dist.splitIntoChunks(dist.normalizeText(LONG_TEXT))[0];
  const speech = dist.createSpeech({
    voiceDirs: [benchVoicesDir],
    tts: { workers: 1, intraOpThreads: task.threads },
  });
  // Throwaway calls of each kind: they warm the worker, its session, the encoder and the code path of the call that
  // follows, and (after a cancelled stream) wait until the worker has finished the sentences it had ahead.
  const throwaway = {
    stream: async () => {
      const stream = await speech.synthesize({ voice: HEAVY.voice, input: firstSentence, format: 'mp3' });
      for await (const _ of stream);
    },
    reference: () => speech.synthesizeToBuffer({ voice: HEAVY.voice, input: firstSentence, format: 'mp3' }),
  };
  try {
    const result = { characters: LONG_TEXT.length, firstSentence };
    await throwaway.stream();
    await throwaway.reference();
    for (const side of task.repeat % 2 ? ['reference', 'stream'] : ['stream', 'reference']) {
      await throwaway[side]();
      const started = performance.now();
      if (side === 'stream') {
        const stream = await speech.synthesize({ voice: HEAVY.voice, input: LONG_TEXT, format: 'mp3' });
        const chunk = await new Promise((resolvePromise, reject) => {
          stream.once('data', resolvePromise);
          stream.once('error', reject);
        });
        result.stream = { ms: performance.now() - started, bytes: chunk.length, sentences: stream.progress.sentences };
        stream.destroy();
      } else {
        const audio = await speech.synthesizeToBuffer({ voice: HEAVY.voice, input: firstSentence, format: 'mp3' });
        result.reference = { ms: performance.now() - started, bytes: audio.audio.length, duration: audio.duration };
      }
    }
    // Closing the engine terminates the worker thread, and terminating it inside an InferenceSession.run() aborts
    // the process (onnxruntime-node 1.30.0: "terminate called after throwing an instance of 'Napi::Error'"). A
    // cancelled stream's worker finishes the sentence it is on, so wait for it before closing.
    await throwaway.reference();
    return result;
  } finally {
    await speech.close();
  }
}

/** Section 4: RSS per loaded voice and over repeated syntheses. */
async function childMemory(task) {
  const atStart = settledMemory();
  const dist = await loadDist();
  const speech = dist.createSpeech({
    voiceDirs: [benchVoicesDir, fixtureVoicesDir, task.copyDir],
    tts: { workers: 1, intraOpThreads: task.threads },
  });
  const steps = [
    { step: 'process start', ...atStart },
    { step: 'dist imported, engine created', ...settledMemory() },
  ];
  const say = (voice, format = 'pcm16') => speech.synthesizeToBuffer({ voice, input: PARAGRAPH, format });
  try {
    await say(LIGHT.voice);
    steps.push({ step: `after ${LIGHT.variant} (worker, ONNX Runtime, espeak-ng, tiny session)`, ...settledMemory() });
    await say(HEAVY.voice);
    steps.push({ step: `after ${HEAVY.variant} (voice A)`, ...settledMemory() });
    await say(COPY.voice);
    steps.push({ step: `after ${COPY.variant} (voice B, a copy of A)`, ...settledMemory() });
    const calls = [];
    for (let i = 1; i <= task.calls; i++) {
      const started = performance.now();
      await say(HEAVY.voice, 'mp3');
      calls.push({ call: i, ms: performance.now() - started, ...settledMemory() });
    }
    return { steps, calls };
  } finally {
    await speech.close();
  }
}

const CHILDREN = { rtf: childRtf, ttfa: childTtfa, memory: childMemory };

// ---------------------------------------------------------------------------------------------------------------
// Parent side.

const FLAGS = {
  quick: flag.boolean('1 repeat, 6 calls in the memory run (CI smoke, about 30 s)'),
  repeats: flag.integer('repeats of the timed cases', 5),
  calls: flag.integer('syntheses in the memory-drift run', 20, { min: SETTLED_AFTER_CALL + 1 }),
  threads: flag.integer("ONNX Runtime intra-op threads on both sides; 1 is voxmill's default on 2 cores", 1),
  json: flag.boolean('print the results as one JSON document instead of tables (progress goes to stderr)'),
};

/** Runs one measurement in a fresh Node process and returns what it printed after `@@result`. */
const runChild = (task, nodeArgs = []) => runNodeChild(self, task, { nodeArgs });

function summarizeRtf(runs) {
  const rtf = (run, side) => run[side].ms / 1000 / run.audioSeconds;
  const side = (name) => ({
    ms: median(runs.map((r) => r[name].ms)),
    rtf: median(runs.map((r) => rtf(r, name))),
  });
  // Median of per-repeat ratios: both sides ran in the same process within seconds of each other.
  const ratios = (name) => runs.map((r) => r[name].ms / r.bare.ms);
  const ratio = (name) => ({ median: median(ratios(name)), range: spread(ratios(name)) });
  return {
    characters: runs[0].characters,
    sentences: runs[0].sentences,
    phonemeIds: runs[0].phonemeIds,
    audioSeconds: runs[0].audioSeconds,
    sameAudio: runs.every((r) => r.bare.samples === r.pcm16.samples),
    phonemizeMs: median(runs.map((r) => r.phonemizeMs)),
    bare: side('bare'),
    pcm16: side('pcm16'),
    mp3: side('mp3'),
    ratios: { pcm16: ratio('pcm16'), mp3: ratio('mp3') },
  };
}

function summarizeEncodings(runs) {
  const rows = [];
  for (const [format, rate] of ENCODINGS) {
    const outRate = rate ?? runs[0].sampleRate;
    const row = { format, rate: outRate };
    for (const whole of [false, true]) {
      const ms = runs.map(
        (r) => r.encodings.find((e) => e.format === format && e.rate === outRate && e.whole === whole).ms,
      );
      const shares = runs.map((r, i) => ms[i] / r.bare.ms);
      row[whole ? 'whole' : 'streaming'] = { ms: median(ms), share: median(shares) };
    }
    rows.push(row);
  }
  return rows;
}

function summarizeTtfa(runs) {
  const ratios = runs.map((r) => r.stream.ms / r.reference.ms);
  return {
    characters: runs[0].characters,
    firstSentence: runs[0].firstSentence,
    firstSentenceSeconds: runs[0].reference.duration,
    streamMs: median(runs.map((r) => r.stream.ms)),
    referenceMs: median(runs.map((r) => r.reference.ms)),
    sentencesAtFirstChunk: median(runs.map((r) => r.stream.sentences)),
    ratio: { median: median(ratios), range: spread(ratios) },
  };
}

function summarizeMemory(memory) {
  const { steps, calls } = memory;
  const at = (i) => steps[i].rssKb;
  const { within, ...drift } = rssDrift(calls);
  return {
    steps,
    fixedCostKb: at(2) - at(1),
    voiceAKb: at(3) - at(2),
    voiceBKb: at(4) - at(3),
    drift: {
      calls: calls.length,
      ...drift,
      flat: within,
      firstRssKb: calls[0].rssKb,
      maxRssKb: Math.max(...calls.map((c) => c.rssKb)),
    },
    calls,
  };
}

const ms = (v) => v.toFixed(0);
const x = (r) => r.toFixed(3);
const mb = (kb) => (kb / 1024).toFixed(1);
const pct = (v) => `${(v * 100).toFixed(1)} %`;
const verdict = (met) => (met ? 'target met' : 'target missed');

function report(summary, settings) {
  const { rtf, ttfa, encodings, memory } = summary;
  const lines = [];
  lines.push(
    `\n1. Real-time factor: ${rtf.characters}-character paragraph, ${rtf.sentences} sentences, ${rtf.phonemeIds} ` +
      `phoneme ids, ${rtf.audioSeconds.toFixed(2)} s of audio at 22050 Hz; medians of ${settings.repeats} repeat(s)`,
    '| side | wall ms | RTF | ratio to bare (median) | per-repeat range | |',
    '|---|--:|--:|--:|---|---|',
    `| bare ONNX Runtime loop (ids precomputed) | ${ms(rtf.bare.ms)} | ${rtf.bare.rtf.toFixed(4)} | 1 | | |`,
  );
  for (const name of ['pcm16', 'mp3']) {
    const r = rtf.ratios[name];
    lines.push(
      `| voxmill synthesizeToBuffer, ${name} | ${ms(rtf[name].ms)} | ${rtf[name].rtf.toFixed(4)} | **${x(r.median)}** | ` +
        `${x(r.range[0])}–${x(r.range[1])} | ${verdict(r.median <= RTF_RATIO_TARGET)} (<= ${RTF_RATIO_TARGET}) |`,
    );
  }
  const mp3Whole = encodings.find((e) => e.format === 'mp3' && e.rate === 22050).whole;
  const pcmWhole = encodings.find((e) => e.format === 'pcm16' && e.rate === 22050).whole;
  lines.push(
    `Where voxmill's extra time can go: phonemizing the paragraph ${ms(rtf.phonemizeMs)} ms ` +
      `(${pct(rtf.phonemizeMs / rtf.bare.ms)} of bare), encoding it whole as pcm16 ${ms(pcmWhole.ms)} ms ` +
      `(${pct(pcmWhole.share)}), as mp3 ${ms(mp3Whole.ms)} ms (${pct(mp3Whole.share)}); ` +
      `voxmill's worker phonemizes and its encoder runs while the next sentence is inferred.` +
      `${rtf.sameAudio ? '' : '\nERROR: voxmill pcm16 and the bare loop made different numbers of samples'}`,
  );
  lines.push(
    `\n2. Time to first audio: ${ttfa.characters}-character input, mp3; first sentence ` +
      `${ttfa.firstSentence.length} characters, ${ttfa.firstSentenceSeconds.toFixed(2)} s of audio`,
    '| measurement | ms (median) |',
    '|---|--:|',
    `| synthesize() of the whole input, until the first chunk (sentences done then: ${ttfa.sentencesAtFirstChunk}) | ${ms(ttfa.streamMs)} |`,
    `| synthesizeToBuffer() of the first sentence alone | ${ms(ttfa.referenceMs)} |`,
    `Ratio **${x(ttfa.ratio.median)}** (per-repeat ${x(ttfa.ratio.range[0])}–${x(ttfa.ratio.range[1])}): ` +
      `${verdict(ttfa.ratio.median <= TTFA_RATIO_TARGET)} (<= ${TTFA_RATIO_TARGET})`,
  );
  lines.push(
    `\n3. Encoding the paragraph's audio (${rtf.audioSeconds.toFixed(2)} s, ${rtf.sentences} sentence chunks) ` +
      `as a share of its bare synthesis time (${ms(rtf.bare.ms)} ms)`,
    '| format | rate Hz | streaming ms | share | whole ms | share |',
    '|---|--:|--:|--:|--:|--:|',
    ...encodings.map(
      (e) =>
        `| ${e.format} | ${e.rate} | ${e.streaming.ms.toFixed(1)} | ${pct(e.streaming.share)} | ` +
        `${e.whole.ms.toFixed(1)} | ${pct(e.whole.share)} |`,
    ),
  );
  lines.push(
    '\n4. Memory (RSS after a full GC of the main isolate)',
    '| step | RSS MB | RssAnon MB | RssFile MB | peak (VmHWM) MB |',
    '|---|--:|--:|--:|--:|',
    ...memory.steps.map((s) => `| ${s.step} | ${mb(s.rssKb)} | ${mb(s.anonKb)} | ${mb(s.fileKb)} | ${mb(s.hwmKb)} |`),
    `Fixed cost of the first synthesis (worker, ONNX Runtime, espeak-ng, tiny session): ${mb(memory.fixedCostKb)} MB; ` +
      `per loaded heavy voice: A ${mb(memory.voiceAKb)} MB, B ${mb(memory.voiceBKb)} MB`,
    `Drift over ${memory.drift.calls} syntheses of voice A (mp3): RSS after call 1 ${mb(memory.drift.firstRssKb)} MB, ` +
      `after call ${memory.drift.settledCall} ${mb(memory.drift.settledRssKb)} MB, after call ${memory.drift.calls} ` +
      `${mb(memory.drift.lastRssKb)} MB (growth ${mb(memory.drift.growthKb)} MB, tolerance ` +
      `${mb(memory.drift.toleranceKb)} MB, highest ${mb(memory.drift.maxRssKb)} MB): ` +
      `${memory.drift.flat ? 'flat, target met' : 'grows, target missed'}`,
  );
  return `${lines.join('\n')}\n`;
}

async function main() {
  const { settings } = benchArgs('npm run bench:tts [-- options]', FLAGS, {
    quick: { repeats: 1, calls: SETTLED_AFTER_CALL + 1 },
  });
  const log = (text) => (settings.json ? process.stderr : process.stdout).write(text);
  const benchStarted = performance.now();
  ensureDist();
  ensureFixtures(
    [join(benchVoicesDir, `${HEAVY.variant}.onnx`), join(fixtureVoicesDir, `${LIGHT.variant}.onnx`)],
    'fixture voices',
  );
  const machine = {
    ...machineFacts(),
    onnxruntime: require('onnxruntime-node/package.json').version,
    loadAverageAtStart: loadavg(),
  };
  log(
    `voxmill TTS bench: ${machine.cpu}, ${machine.cores} cores, Node ${machine.node}, onnxruntime-node ` +
      `${machine.onnxruntime}\nvoice: ${HEAVY.variant} (compute-realistic fixture), intra-op threads ` +
      `${settings.threads}, 1 worker; ${settings.repeats} repeat(s), one child process per repeat and section\n\n`,
  );

  const rtfRuns = [];
  const ttfaRuns = [];
  for (let repeat = 0; repeat < settings.repeats; repeat++) {
    const rtf = await runChild({ kind: 'rtf', repeat, threads: settings.threads });
    rtfRuns.push(rtf);
    log(
      `[${repeat + 1}/${settings.repeats}] RTF bare ${(rtf.bare.ms / 1000 / rtf.audioSeconds).toFixed(4)}, ` +
        `voxmill pcm16 ${x(rtf.pcm16.ms / rtf.bare.ms)}x, mp3 ${x(rtf.mp3.ms / rtf.bare.ms)}x` +
        `${rtf.bare.samples === rtf.pcm16.samples ? '' : ' — AUDIO LENGTH DIFFERS'}\n`,
    );
    const ttfa = await runChild({ kind: 'ttfa', repeat, threads: settings.threads });
    ttfaRuns.push(ttfa);
    log(
      `[${repeat + 1}/${settings.repeats}] first audio ${ms(ttfa.stream.ms)} ms, first sentence alone ` +
        `${ms(ttfa.reference.ms)} ms (${x(ttfa.stream.ms / ttfa.reference.ms)}x)\n`,
    );
  }

  const copyDir = mkdtempSync(join(tmpdir(), 'voxmill-bench-tts-'));
  let memoryRun;
  try {
    for (const suffix of ['.onnx', '.onnx.json']) {
      copyFileSync(join(benchVoicesDir, `${HEAVY.variant}${suffix}`), join(copyDir, `${COPY.variant}${suffix}`));
    }
    log(`memory: ${settings.calls} syntheses in one process\n`);
    memoryRun = await runChild({ kind: 'memory', threads: settings.threads, copyDir, calls: settings.calls }, [
      '--expose-gc',
    ]);
  } finally {
    rmSync(copyDir, { recursive: true, force: true });
  }
  const benchMs = performance.now() - benchStarted;

  const summary = {
    rtf: summarizeRtf(rtfRuns),
    ttfa: summarizeTtfa(ttfaRuns),
    encodings: summarizeEncodings(rtfRuns),
    memory: summarizeMemory(memoryRun),
  };
  const targets = {
    rtfPcm16: summary.rtf.ratios.pcm16.median <= RTF_RATIO_TARGET,
    rtfMp3: summary.rtf.ratios.mp3.median <= RTF_RATIO_TARGET,
    timeToFirstAudio: summary.ttfa.ratio.median <= TTFA_RATIO_TARGET,
    memoryFlat: summary.memory.drift.flat,
  };
  const document = {
    date: new Date().toISOString(),
    commit: gitCommit(),
    machine: { ...machine, loadAverageAtEnd: loadavg() },
    voice: HEAVY.variant,
    settings,
    targets,
    benchMs,
    summary,
    runs: { rtf: rtfRuns, ttfa: ttfaRuns, memory: memoryRun },
  };
  const outFile = writeResults('tts', document);
  if (settings.json) process.stdout.write(`${JSON.stringify({ ...document, rawResults: outFile }, null, 2)}\n`);
  else {
    process.stdout.write(report(summary, settings));
    process.stdout.write(`Bench time: ${(benchMs / 60000).toFixed(1)} min\nRaw results: ${outFile}\n`);
  }
  if (!summary.rtf.sameAudio) {
    process.stderr.write('bench:tts: voxmill and the bare loop made different amounts of audio\n');
    process.exitCode = 1;
  }
}

// Only as a program: bench/tts-real.mjs imports this file for its texts and its bare loop.
if (isEntry(import.meta.url)) {
  if (process.argv[2] === '--child') {
    const task = JSON.parse(process.argv[3]);
    printChildResult(await CHILDREN[task.kind](task));
  } else runMain('tts', main);
}
