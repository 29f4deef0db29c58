#!/usr/bin/env node
// HTTP benchmark: what the /v1 handler costs over calling the library directly, and latency under concurrency.
// Ratios and differences are taken in one run, in one process (../shared/DESIGN.md).
//
//   npm run bench:http [-- options]     (the flags: `node bench/http.mjs --help`)
//
// Setup: createSpeech() with the fixture voice en_US-fixture (test/fixtures/voices) and the random-weight
// tiny.en model (real compute, `npm run fixtures`) as svc-stt-1-flash, served by createSpeechHandler() on a bare
// http server on 127.0.0.1. The client is node:http with keep-alive; multipart bodies are built once beforehand,
// so the client's own work is small and constant.
// 1. Per-request overhead. The engine is wrapped so each request records the time spent inside the library call
//    (transcribe() until it resolves; synthesize() until its stream has ended). Overhead = the client's whole
//    request time (send to last byte) minus that. Sequential requests, median and p90. The same calls are also
//    made directly (no HTTP) and the medians compared.
//    - speech: a two-sentence input as mp3.
//    - transcription: jfk.wav (11 s, 352 KB) uploaded as multipart/form-data.
// 2. Under 8 concurrent clients, each sending its requests back to back: p50 and p99 latency and throughput, for
//    speech and for transcription (one whisper call at a time, so transcription latency is mostly queueing).
// Raw results go to bench/out/http-<timestamp>.json. The exit status is 1 on errors, never for a missed target.
import { readFileSync } from 'node:fs';
import { Agent, createServer, request } from 'node:http';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { benchArgs, distEntry, ensureDist, flag, median, root, sharedDir as shared, writeResults } from './lib.mjs';

const { settings } = benchArgs('npm run bench:http [-- options]', {
  quick: flag.boolean('fewer requests (CI smoke, about 40 s)'),
  json: flag.boolean('print the results as one JSON document instead of tables'),
});
const { quick, json: asJson } = settings;
const runs = {
  speech: quick ? 15 : 40,
  transcription: quick ? 3 : 8,
  concurrentSpeech: quick ? 5 : 20,
  concurrentTranscription: quick ? 1 : 2,
};
const CLIENTS = 8;
const TARGET_MS = 5;

ensureDist();
const { createSpeech, createSpeechHandler } = await import(distEntry);
const fixtures = join(root, 'test', 'fixtures');
const tinyEn = join(fixtures, 'models', 'ggml-tiny.en-random.bin');
const jfkPath = join(shared, 'audio', 'jfk.wav');
const jfk = readFileSync(jfkPath);

const speech = createSpeech({
  models: { 'svc-stt-1-flash': { model: tinyEn, maxQueue: 32 }, 'svc-stt-1': tinyEn },
  voiceDirs: [join(fixtures, 'voices')],
  tts: { maxQueue: 256 },
  idleUnloadMs: 0,
});

// Library time of the latest request; overhead runs are sequential, so it belongs to the request just answered.
let innerMs = Number.NaN;
const engine = {
  get modelIds() {
    return speech.modelIds;
  },
  listVoices: (o) => speech.listVoices(o),
  async transcribe(input, options) {
    const started = performance.now();
    try {
      return await speech.transcribe(input, options);
    } finally {
      innerMs = performance.now() - started;
    }
  },
  async synthesize(options) {
    const started = performance.now();
    const stream = await speech.synthesize(options);
    stream.once('end', () => {
      innerMs = performance.now() - started;
    });
    return stream;
  },
};

const handler = createSpeechHandler({ speech: engine, auth: false, limits: { maxConcurrentRequests: 1024 } });
const server = createServer(handler);
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const port = server.address().port;
const agent = new Agent({ keepAlive: true, maxSockets: CLIENTS * 2 });

const BOUNDARY = 'voxmill-bench-boundary';
const multipart = Buffer.concat([
  Buffer.from(
    `--${BOUNDARY}\r\nContent-Disposition: form-data; name="model"\r\n\r\nsvc-stt-1-flash\r\n` +
      `--${BOUNDARY}\r\nContent-Disposition: form-data; name="timestamps"\r\n\r\nsegment\r\n` +
      `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="jfk.wav"\r\nContent-Type: audio/wav\r\n\r\n`,
  ),
  jfk,
  Buffer.from(`\r\n--${BOUNDARY}--\r\n`),
]);
const speechBody = (i) =>
  Buffer.from(
    JSON.stringify({
      model: 'svc-tts-1',
      voice: 'en_US-fixture',
      input: `This is request ${i} of the benchmark. It has a second sentence too.`,
      format: 'mp3',
    }),
  );

let sequence = 0;
/** One request; resolves to { ms, status, bytes }. */
function send(kind, i) {
  const id = `bench-${++sequence}`;
  const body = kind === 'speech' ? speechBody(i) : multipart;
  const headers = {
    'X-Request-Id': id,
    'Content-Length': body.length,
    'Content-Type': kind === 'speech' ? 'application/json' : `multipart/form-data; boundary=${BOUNDARY}`,
  };
  const path = kind === 'speech' ? '/v1/speech' : '/v1/transcriptions';
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const req = request({ host: '127.0.0.1', port, path, method: 'POST', headers, agent }, (res) => {
      let bytes = 0;
      res.on('data', (chunk) => {
        bytes += chunk.length;
      });
      res.on('end', () => {
        const ms = performance.now() - started;
        if (res.statusCode !== 200) reject(new Error(`${path} answered ${res.statusCode}`));
        else resolve({ ms, status: res.statusCode, bytes });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

async function direct(kind, i) {
  const started = performance.now();
  if (kind === 'speech') {
    const stream = await speech.synthesize(JSON.parse(speechBody(i).toString()));
    for await (const _chunk of stream) {
      // consumed as the handler would
    }
  } else {
    await speech.transcribe(jfk, { model: 'svc-stt-1-flash', timestamps: 'segment' });
  }
  return performance.now() - started;
}

const percentile = (values, p) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
};

async function overhead(kind, n) {
  // Warm-up: worker started, model loaded, code paths compiled.
  await send(kind, 0);
  await direct(kind, 0);
  const overheads = [];
  const https = [];
  const directs = [];
  for (let i = 1; i <= n; i++) {
    // Alternate the order so neither side always runs on a warmer machine.
    if (i % 2) directs.push(await direct(kind, i));
    innerMs = Number.NaN;
    const result = await send(kind, i);
    https.push(result.ms);
    overheads.push(result.ms - innerMs);
    if (!(i % 2)) directs.push(await direct(kind, i));
  }
  return {
    kind,
    requests: n,
    overheadMedianMs: median(overheads),
    overheadP90Ms: percentile(overheads, 90),
    httpMedianMs: median(https),
    directMedianMs: median(directs),
    ratio: median(https) / median(directs),
  };
}

async function concurrent(kind, perClient) {
  const latencies = [];
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CLIENTS }, async (_, client) => {
      for (let i = 0; i < perClient; i++) latencies.push((await send(kind, client * 100 + i)).ms);
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  return {
    kind,
    clients: CLIENTS,
    requests: latencies.length,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    throughputPerSecond: latencies.length / seconds,
  };
}

const results = { date: new Date().toISOString(), cpus: cpus().length, quick, overhead: [], concurrent: [] };
let failed = false;
try {
  results.overhead.push(await overhead('speech', runs.speech));
  results.overhead.push(await overhead('transcription', runs.transcription));
  results.concurrent.push(await concurrent('speech', runs.concurrentSpeech));
  results.concurrent.push(await concurrent('transcription', runs.concurrentTranscription));
} catch (error) {
  failed = true;
  process.stderr.write(`bench:http failed: ${error.stack ?? error}\n`);
} finally {
  agent.destroy();
  server.close();
  await speech.close();
}

const f = (n, digits = 1) => (Number.isFinite(n) ? n.toFixed(digits) : 'n/a');
if (asJson) {
  process.stdout.write(`${JSON.stringify(results, null, 2)}\n`);
} else {
  console.log(`\nbench:http (${results.cpus} CPUs${quick ? ', --quick' : ''})\n`);
  console.log('per-request overhead of the handler over the library call (client-observed, loopback)');
  for (const r of results.overhead) {
    console.log(
      `  ${r.kind.padEnd(14)} overhead median ${f(r.overheadMedianMs, 2)} ms, p90 ${f(r.overheadP90Ms, 2)} ms` +
        ` (target < ${TARGET_MS} ms: ${r.overheadMedianMs < TARGET_MS ? 'met' : 'MISSED'});` +
        ` HTTP ${f(r.httpMedianMs)} ms vs direct ${f(r.directMedianMs)} ms = ${f(r.ratio, 3)}x  [${r.requests} requests]`,
    );
  }
  console.log(`\nlatency under ${CLIENTS} concurrent clients`);
  for (const r of results.concurrent) {
    console.log(
      `  ${r.kind.padEnd(14)} p50 ${f(r.p50Ms)} ms, p99 ${f(r.p99Ms)} ms, ${f(r.throughputPerSecond, 2)} requests/s` +
        `  [${r.requests} requests]`,
    );
  }
}
writeResults('http', results);
process.exit(failed ? 1 : 0);
