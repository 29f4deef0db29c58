#!/usr/bin/env node
// Slow-client benchmark: do slow or hostile clients lock normal ones out of `voxmill serve`?
//
//   npm run bench:slow-clients [-- options]     (the flags: `node bench/slow-clients.mjs --help`)
//
// Setup: createSpeechServer() with its default limits (and headersTimeoutMs), on 127.0.0.1 only, with the real
// engine: createSpeech() with the fixture voices (test/fixtures/voices, `npm run fixtures`) and no speech-to-text
// model. Normal clients use their own API key.
// Load, all at once:
// - 64 slow clients: POST /v1/speech with a chunked body, `{` and then one byte every 2 s (at most 45 bytes).
// - 3 probes: headers sent one line every 2 s; a body declaring Content-Length 1000 that sends 20 bytes; an
//   unauthenticated request with an endless chunked body (1 KiB every 10 ms).
// - 4 normal clients, back to back over keep-alive: GET /v1/voices and a one-sentence POST /v1/speech (mp3), in
//   turn, for as long as any slow client or probe is connected (at most 90 s).
// Reported: the normal clients' latency p50/p99 and status counts, in all and in 5 s windows; for the slow clients
// and probes, what they got (status, code) and when (time to the answer, and to the close).
// Raw results go to bench/out/slow-clients-<timestamp>.json. Everything stops by itself; the exit status is 1 only on
// errors of the benchmark itself.
import { Agent, request } from 'node:http';
import { connect } from 'node:net';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { benchArgs, distEntry, ensureDist, flag, root, writeResults } from './lib.mjs';

const { settings } = benchArgs('npm run bench:slow-clients [-- options]', {
  keys: flag.choice(
    'the 64 slow clients share one API key (shared: the attack as found), or each has its\n' +
      'own (distinct: then the per-client cap cannot help; only the body deadlines free the slots)',
    ['shared', 'distinct'],
    'shared',
  ),
  json: flag.boolean('print the results as one JSON document instead of text'),
});
const { keys: keysMode, json: asJson } = settings;

const SLOW_CLIENTS = 64;
const SLOW_EVERY_MS = 2000;
const SLOW_MAX_BYTES = 45;
const NORMAL_CLIENTS = 4;
const MAX_RUN_MS = 90_000;
const WINDOW_MS = 5000;
const NORMAL_KEY = 'sk-normal';
const slowKey = (i) => (keysMode === 'shared' ? 'sk-slow' : `sk-slow-${i}`);

ensureDist();
const { createSpeech, createSpeechServer } = await import(distEntry);
const speech = createSpeech({ models: {}, voiceDirs: [join(root, 'test', 'fixtures', 'voices')], idleUnloadMs: 0 });
const keys = [NORMAL_KEY, ...new Set(Array.from({ length: SLOW_CLIENTS }, (_, i) => slowKey(i)))];
const served = createSpeechServer({ speech, auth: keys });
const { port } = await served.listen(0, '127.0.0.1');
const started = performance.now();
const now = () => performance.now() - started;

/**
 * A raw client: sends `head` (and the blank line unless `headUnfinished`) and `body`, then `next(n)` every
 * `everyMs` until it returns undefined. Resolves once the server closes, or at MAX_RUN_MS.
 */
function rawClient({ head, headUnfinished = false, body = '', next, everyMs }) {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    const record = { status: 0, code: undefined, answeredMs: undefined, closedMs: undefined, sent: 0 };
    let received = '';
    let ticker;
    socket.setEncoding('utf8');
    socket.on('data', (text) => {
      received += text;
      const end = received.indexOf('\r\n\r\n');
      if (record.answeredMs === undefined && end >= 0) {
        record.answeredMs = now() - opened;
        record.status = Number(received.split(' ', 2)[1]);
      }
    });
    socket.on('error', () => undefined);
    const opened = now();
    const finish = () => {
      clearInterval(ticker);
      clearTimeout(limit);
      const bodyStart = received.indexOf('\r\n\r\n');
      try {
        record.code = JSON.parse(received.slice(bodyStart + 4)).error?.code;
      } catch {
        // Node's own 408 has no body.
      }
      socket.destroy();
      resolve(record);
    };
    const limit = setTimeout(finish, MAX_RUN_MS);
    socket.on('close', () => {
      record.closedMs = now() - opened;
      finish();
    });
    socket.write(headUnfinished ? head : `${head}\r\n\r\n${body}`);
    ticker = setInterval(() => {
      const piece = socket.destroyed ? undefined : next(record.sent);
      if (piece === undefined) return clearInterval(ticker);
      record.sent++;
      socket.write(piece);
    }, everyMs);
  });
}

const frame = (text) => `${Buffer.byteLength(text).toString(16)}\r\n${text}\r\n`;
const speechHead = (key, extra) =>
  [
    'POST /v1/speech HTTP/1.1',
    'Host: 127.0.0.1',
    ...(key ? [`Authorization: Bearer ${key}`] : []),
    'Content-Type: application/json',
    ...extra,
  ].join('\r\n');

const slow = Array.from({ length: SLOW_CLIENTS }, (_, i) =>
  rawClient({
    head: speechHead(slowKey(i), ['Transfer-Encoding: chunked']),
    body: frame('{'),
    next: (n) => (n < SLOW_MAX_BYTES ? frame(' ') : undefined),
    everyMs: SLOW_EVERY_MS,
  }),
);
const headerLines = Array.from({ length: 45 }, (_, i) => `X-Slow-${i}: y\r\n`);
const probes = {
  slowHeaders: rawClient({
    head: `GET /v1/voices HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${NORMAL_KEY}\r\n`,
    headUnfinished: true,
    next: (n) => headerLines[n],
    everyMs: SLOW_EVERY_MS,
  }),
  shortBody: rawClient({
    head: speechHead(NORMAL_KEY, ['Content-Length: 1000']),
    body: '{"model":"svc-tts-1"',
    next: () => undefined,
    everyMs: SLOW_EVERY_MS,
  }),
  unauthenticatedEndlessBody: rawClient({
    head: speechHead(undefined, ['Transfer-Encoding: chunked']),
    body: frame('{'),
    next: (n) => (n < MAX_RUN_MS / 10 ? frame('x'.repeat(1024)) : undefined),
    everyMs: 10,
  }),
};
let attackOver = false;
const allAttackers = Promise.all([...slow, ...Object.values(probes)]).then((results) => {
  attackOver = true;
  return results;
});

const agent = new Agent({ keepAlive: true, maxSockets: NORMAL_CLIENTS });
const speechBody = Buffer.from(
  JSON.stringify({ model: 'svc-tts-1', voice: 'en_US-fixture', input: 'Hello there.', format: 'mp3' }),
);
/** One normal request: { at, kind, ms, status, code }. */
function normalRequest(kind) {
  const at = now();
  const isSpeech = kind === 'speech';
  const headers = {
    Authorization: `Bearer ${NORMAL_KEY}`,
    ...(isSpeech ? { 'Content-Type': 'application/json', 'Content-Length': speechBody.length } : {}),
  };
  return new Promise((resolve) => {
    const req = request(
      { host: '127.0.0.1', port, agent, method: isSpeech ? 'POST' : 'GET', path: `/v1/${kind}`, headers },
      (res) => {
        const chunks = [];
        res.on('data', (chunk) => chunks.push(chunk));
        res.on('end', () => {
          let code;
          if (res.statusCode !== 200) code = JSON.parse(Buffer.concat(chunks).toString()).error?.code;
          resolve({ at, kind, ms: now() - at, status: res.statusCode, code });
        });
      },
    );
    req.on('error', (error) => resolve({ at, kind, ms: now() - at, status: 0, code: error.code }));
    req.end(isSpeech ? speechBody : undefined);
  });
}

const normal = [];
await Promise.all(
  Array.from({ length: NORMAL_CLIENTS }, async (_, client) => {
    for (let i = client; !attackOver && now() < MAX_RUN_MS; i++) {
      normal.push(await normalRequest(i % 2 === 0 ? 'voices' : 'speech'));
    }
  }),
);
const attackers = await allAttackers;
agent.destroy();
await served.shutdown();

const slowResults = attackers.slice(0, SLOW_CLIENTS);
const probeResults = Object.fromEntries(Object.keys(probes).map((name, i) => [name, attackers[SLOW_CLIENTS + i]]));

function percentile(values, p) {
  const sorted = values.filter(Number.isFinite).sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}
const round = (ms) => (Number.isFinite(ms) ? Math.round(ms * 10) / 10 : null);
const countBy = (items, key) =>
  items.reduce((counts, item) => {
    const name = key(item);
    counts[name] = (counts[name] ?? 0) + 1;
    return counts;
  }, {});
const outcome = (r) => `${r.status || 'none'}${r.code ? ` ${r.code}` : ''}`;
const latency = (items) => ({
  n: items.length,
  p50: round(
    percentile(
      items.map((r) => r.ms),
      50,
    ),
  ),
  p99: round(
    percentile(
      items.map((r) => r.ms),
      99,
    ),
  ),
  statuses: countBy(items, outcome),
});

const windows = [];
for (let from = 0; from < now(); from += WINDOW_MS) {
  const inWindow = normal.filter((r) => r.at >= from && r.at < from + WINDOW_MS);
  if (inWindow.length > 0) windows.push({ fromS: from / 1000, ...latency(inWindow) });
}
const slowGroups = Object.entries(countBy(slowResults, outcome)).map(([name, count]) => {
  const group = slowResults.filter((r) => outcome(r) === name);
  const span = (field) => [
    round(Math.min(...group.map((r) => r[field] ?? Number.NaN))),
    round(Math.max(...group.map((r) => r[field] ?? Number.NaN))),
  ];
  return { outcome: name, count, answeredMs: span('answeredMs'), closedMs: span('closedMs'), bytesSent: span('sent') };
});
const results = {
  setup: {
    node: process.version,
    keys: keysMode,
    slowClients: SLOW_CLIENTS,
    slowEveryMs: SLOW_EVERY_MS,
    normalClients: NORMAL_CLIENTS,
    limits: 'createSpeechServer defaults',
  },
  runS: round(now() / 1000),
  normal: {
    all: latency(normal),
    voices: latency(normal.filter((r) => r.kind === 'voices')),
    speech: latency(normal.filter((r) => r.kind === 'speech')),
    windows,
  },
  slow: slowGroups,
  probes: Object.fromEntries(
    Object.entries(probeResults).map(([name, r]) => [
      name,
      { outcome: outcome(r), answeredMs: round(r.answeredMs), closedMs: round(r.closedMs), sent: r.sent },
    ]),
  ),
};

const file = writeResults('slow-clients', { results, normal, slow: slowResults });
if (asJson) {
  process.stdout.write(`${JSON.stringify(results, null, 2)}\n`);
} else {
  const line = (label, l) =>
    `${label.padEnd(10)} n=${String(l.n).padStart(5)}  p50 ${String(l.p50).padStart(7)} ms  p99 ${String(l.p99).padStart(7)} ms  ${JSON.stringify(l.statuses)}`;
  const out = [
    `slow clients: ${SLOW_CLIENTS} (${keysMode} key${keysMode === 'shared' ? '' : 's'}), one chunked byte every ${SLOW_EVERY_MS} ms; run ${results.runS} s`,
    'normal clients while the slow ones were connected:',
    line('all', results.normal.all),
    line('voices', results.normal.voices),
    line('speech', results.normal.speech),
    'in 5 s windows:',
    ...windows.map((w) => line(`${w.fromS}s`, w)),
    'slow clients (answered / closed: min-max ms after connecting):',
    ...slowGroups.map(
      (g) =>
        `  ${String(g.count).padStart(3)} x ${g.outcome.padEnd(28)} answered ${g.answeredMs.join('-')}  closed ${g.closedMs.join('-')}  bytes sent ${g.bytesSent.join('-')}`,
    ),
    'probes:',
    ...Object.entries(results.probes).map(
      ([name, p]) =>
        `  ${name.padEnd(28)} ${p.outcome.padEnd(22)} answered ${p.answeredMs} ms  closed ${p.closedMs} ms  sent ${p.sent}`,
    ),
    `raw results: ${file}`,
  ];
  process.stdout.write(`${out.join('\n')}\n`);
}
