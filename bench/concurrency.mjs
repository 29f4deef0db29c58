#!/usr/bin/env node
// Concurrent calls on one engine: does running N transcriptions at once finish them at least as fast as running
// them one after another, does a short clip wait behind a long file, and does mixed speech-to-text and
// text-to-speech load oversubscribe the cores? Real weights (Whisper tiny.en, the joe voice), in one Node process.
//
//   npm run bench:concurrency [-- --quick] [-- --configs before,after] [-- --long-minutes 10]
//
// Needs `npm run models:test`. Configurations, each a fresh engine:
// - before: the engine as it was before the CPU budget: 2 transcriptions per model at once, 2 threads each, and
//   no shared budget (cpuThreads 1024): on 2 cores, 4 compute threads.
// - after: the defaults: one budget of cores - 1 threads for all work (1 on this 2-core machine), threads per call
//   and calls per model from it, and the extra thread lent to short work.
// Per configuration:
// - N = 1, 2, 4, 8 transcriptions of the LibriSpeech clip (10.4 s): first one by one (sequential wall), then all at
//   once (concurrent wall); throughput ratio = sequential / concurrent (>= 1: concurrency costs nothing); p50 and
//   p95 of the concurrent calls' latencies; the event loop's longest delay during the concurrent run.
// - a 3 s clip submitted 2 s after a long file (gb0.wav repeated to --long-minutes): the clip's latency against the
//   same clip alone, and the long file's time.
// - mixed: 2 transcriptions and 2 syntheses (a 330-character paragraph) at once against the same 4 one by one.
// Results: bench/out/concurrency-<timestamp>.json. Beam 5 (the accuracy tier's decoding); VAD off.
import { dirname } from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import {
  benchArgs,
  distEntry,
  ensureDist,
  flag,
  gitCommit,
  isEntry,
  machineFacts,
  median,
  realModels,
  repeatToLength,
  runMain,
  sharedAudio,
  writeResults,
} from './lib.mjs';

const PARAGRAPH =
  'The committee met on Tuesday to review the budget. After a long discussion, the members agreed to fund the new ' +
  'library wing, to repair the roof of the town hall, and to hire two more teachers for the spring term. The vote ' +
  'was close, but the chair thanked everyone for their patience.';

const CONFIGS = {
  before: { cpuThreads: 1024, concurrency: 2, threads: 2 },
  after: {},
};

const percentile = (values, p) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
};
const seconds = (ms) => Number((ms / 1000).toFixed(3));

async function timed(run) {
  const started = performance.now();
  await run();
  return performance.now() - started;
}

/** N calls one by one, then N at once: walls, latencies, the event loop's longest delay. */
async function concurrencyCase(n, call) {
  const sequential = await timed(async () => {
    for (let i = 0; i < n; i++) await call();
  });
  const loop = monitorEventLoopDelay({ resolution: 5 });
  loop.enable();
  const started = performance.now();
  const latencies = await Promise.all(
    Array.from({ length: n }, async () => {
      await call();
      return performance.now() - started;
    }),
  );
  const concurrent = performance.now() - started;
  loop.disable();
  return {
    n,
    sequentialS: seconds(sequential),
    concurrentS: seconds(concurrent),
    throughputRatio: Number((sequential / concurrent).toFixed(3)),
    p50S: seconds(percentile(latencies, 50)),
    p95S: seconds(percentile(latencies, 95)),
    loopMaxDelayMs: Number((loop.max / 1e6).toFixed(1)),
  };
}

async function runConfig(name, overrides, { voxmill, tinyEn, voiceDir, clip, short, long, counts }) {
  const speech = voxmill.createSpeech({
    models: { bench: { model: tinyEn, beamSize: 5 } },
    voiceDirs: [voiceDir],
    vadModel: null,
    vad: false,
    idleUnloadMs: 0,
    ...overrides,
  });
  try {
    const voice = (await speech.listVoices()).find((v) => v.id.includes('joe'))?.id;
    if (!voice) throw new Error(`no joe voice in ${voiceDir}`);
    const transcribe = (samples) => speech.transcribe(samples, { model: 'bench', language: 'en' });
    const synthesize = () => speech.synthesizeToBuffer({ input: PARAGRAPH, voice, format: 'wav' });
    await transcribe(clip); // load and warm
    await synthesize();
    const cases = [];
    for (const n of counts) {
      cases.push(await concurrencyCase(n, () => transcribe(clip)));
      process.stderr.write(`${name} N=${n}: ${JSON.stringify(cases.at(-1))}\n`);
    }
    const shortAlone = await timed(() => transcribe(short));
    const longStarted = performance.now();
    const longRun = transcribe(long);
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const shortBehind = await timed(() => transcribe(short));
    await longRun;
    const longS = seconds(performance.now() - longStarted);
    const behindLong = { shortAloneS: seconds(shortAlone), shortBehindLongS: seconds(shortBehind), longS };
    process.stderr.write(`${name} short behind long: ${JSON.stringify(behindLong)}\n`);
    const mixedCalls = [() => transcribe(clip), () => synthesize(), () => transcribe(clip), () => synthesize()];
    const one = [];
    for (const call of mixedCalls) one.push(await timed(call));
    const started = performance.now();
    const together = await Promise.all(
      mixedCalls.map(async (call) => {
        await call();
        return performance.now() - started;
      }),
    );
    const mixed = {
      sequentialS: seconds(one.reduce((a, b) => a + b, 0)),
      concurrentS: seconds(Math.max(...together)),
      sttAloneS: one.filter((_, i) => i % 2 === 0).map(seconds),
      ttsAloneS: one.filter((_, i) => i % 2 === 1).map(seconds),
      sttTogetherS: together.filter((_, i) => i % 2 === 0).map(seconds),
      ttsTogetherS: together.filter((_, i) => i % 2 === 1).map(seconds),
    };
    mixed.throughputRatio = Number((mixed.sequentialS / mixed.concurrentS).toFixed(3));
    process.stderr.write(`${name} mixed: ${JSON.stringify(mixed)}\n`);
    return { name, overrides, cases, behindLong, mixed };
  } finally {
    await speech.close();
  }
}

async function main() {
  const { settings } = benchArgs('npm run bench:concurrency [-- options]', {
    quick: flag.boolean('N = 1, 2, 4 only and a 5-minute long file'),
    configs: flag.list('configurations to run, comma separated', CONFIGS),
    'long-minutes': flag.integer('length of the long file, in minutes', 10),
  });
  ensureDist();
  const models = realModels(['whisper-tiny.en', 'piper-joe-medium']);
  const voxmill = await import(distEntry);
  const decode = async (file) => (await voxmill.decodeAudio(sharedAudio(file))).samples;
  const clip = await decode('1089-134686-0000.flac');
  const gb0 = await decode('gb0.wav');
  const longMinutes = settings.quick ? 5 : settings.longMinutes;
  const long = repeatToLength(gb0, Math.round(longMinutes * 60 * 16_000));
  const short = clip.slice(0, 3 * 16_000);
  const counts = settings.quick ? [1, 2, 4] : [1, 2, 4, 8];
  const context = {
    voxmill,
    tinyEn: models['whisper-tiny.en'],
    voiceDir: dirname(models['piper-joe-medium']),
    clip,
    short,
    long,
    counts,
  };
  const results = [];
  for (const name of settings.configs) results.push(await runConfig(name, CONFIGS[name], context));
  console.log('\nconfig | N | sequential s | concurrent s | throughput ratio | p50 s | p95 s | loop max ms');
  for (const r of results) {
    for (const c of r.cases) {
      console.log(
        `${r.name} | ${c.n} | ${c.sequentialS} | ${c.concurrentS} | ${c.throughputRatio} | ${c.p50S} | ${c.p95S} | ${c.loopMaxDelayMs}`,
      );
    }
  }
  console.log(
    '\nconfig | 3 s clip alone s | behind a long file s | long file s | mixed sequential s | mixed concurrent s | mixed ratio',
  );
  for (const r of results) {
    const { behindLong: b, mixed: m } = r;
    console.log(
      `${r.name} | ${b.shortAloneS} | ${b.shortBehindLongS} | ${b.longS} | ${m.sequentialS} | ${m.concurrentS} | ${m.throughputRatio}`,
    );
  }
  const file = writeResults('concurrency', {
    machine: machineFacts(),
    commit: gitCommit(),
    cpu: voxmill.cpuInfo(),
    longMinutes,
    medianRatio: median(results.flatMap((r) => r.cases.map((c) => c.throughputRatio))),
    results,
  });
  console.log(`\nresults: ${file}`);
}

if (isEntry(import.meta.url)) runMain('concurrency', main);
