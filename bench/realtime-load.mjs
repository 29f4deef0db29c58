#!/usr/bin/env node
// Realtime sessions under load (issue 44): for each count of sessions (default 1, 2, 4, 8, 16, 32), a fresh
// `voxmill serve` process (real tiny.en, Silero VAD, every default: admission by measured capacity, interims shed
// under load) warmed by one session streaming jfk.wav once (so its capacity is measured, as on a server that has been
// up a while), then that many clients arriving 250 ms apart, each streaming jfk.wav twice at real time (24 kHz,
// 100 ms appends, server VAD, interims every 1000 ms). A refused client does not retry. Per count: sessions accepted
// and refused (and how), utterances completed of those expected, the VAD's end of speech (`speech_stopped`) to
// `completed` at p50 and p95 over every accepted utterance, interims delivered per second, and the server's
// /metrics (refusals by reason, interims shed). The server runs in its own process; the clients here (base64 and JSON
// of 100 ms appends) share the machine with it.
//
//   node bench/realtime-load.mjs [--counts 1,2,4,8,16,32] [--rounds 2] [--without-admission]
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import WebSocket from 'ws';
import { startProcess } from '../scripts/lib/job-cluster.mjs';
import {
  benchArgs,
  distEntry,
  ensureDist,
  flag,
  gitCommit,
  machineFacts,
  realModels,
  runMain,
  sharedAudio,
  sharedDir,
  toPcm16,
  writeResults,
} from './lib.mjs';

const { settings } = benchArgs('node bench/realtime-load.mjs [flags]', {
  counts: flag.string('session counts, comma-separated', { value: 'N,N,...', defaultText: '1,2,4,8,16,32' }),
  rounds: flag.integer('times each client streams jfk.wav', 2),
  'without-admission': flag.boolean(
    'admit every session up to maxSessions (realtime.admitByCapacity false): the before',
  ),
});
const KEY = 'bench-load';
const CHUNK_MS = 100;
const COMPLETED = 'conversation.item.input_audio_transcription.completed';

/** Opens a session; resolves with the client, or with how it was refused (HTTP status, or an error event's code). */
function connect(url) {
  return new Promise((resolve) => {
    const socket = new WebSocket(url, { headers: { Authorization: `Bearer ${KEY}` } });
    const events = [];
    socket.on('message', (data) => events.push({ ...JSON.parse(String(data)), at: performance.now() }));
    const closed = new Promise((done) => socket.on('close', (code) => done(code)));
    socket.once('unexpected-response', (_req, res) => {
      resolve({ refused: `HTTP ${res.statusCode}` });
      res.resume();
      socket.terminate();
    });
    socket.once('error', (error) => resolve({ refused: `connect: ${error.message}` }));
    socket.once('message', () => {
      const first = events[0];
      if (first.type === 'error') resolve({ refused: `event ${first.error.code}`, closed });
      else resolve({ socket, events, closed });
    });
  });
}

async function oneClient(url, pcm, rounds, speechEnd) {
  const client = await connect(url);
  if (!client.socket) {
    await client.closed;
    return { refused: client.refused };
  }
  const send = (event) => client.socket.readyState === WebSocket.OPEN && client.socket.send(JSON.stringify(event));
  send({
    type: 'session.update',
    session: {
      type: 'transcription',
      audio: { input: { format: { type: 'audio/pcm', rate: 24000 }, turn_detection: { type: 'server_vad' } } },
      voxmill: { interim_interval_ms: 1000 },
    },
  });
  const chunk = (24000 * 2 * CHUNK_MS) / 1000;
  const started = performance.now();
  const total = pcm.length * rounds;
  for (let i = 0; i < total; i += chunk) {
    const wait = started + (i / 2 / 24000) * 1000 - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const at = i % pcm.length;
    send({ type: 'input_audio_buffer.append', audio: pcm.subarray(at, at + chunk).toString('base64') });
  }
  // Silence until the last utterance is completed (or a minute passes).
  const lastEndMs = ((rounds - 1) * pcm.length) / 2 / 24 + speechEnd * 1000;
  const deadline = performance.now() + 60_000;
  const silence = Buffer.alloc(chunk).toString('base64');
  const done = () => client.events.some((e) => e.type === COMPLETED && e.voxmill.audio_end_ms >= lastEndMs - 500);
  while (!done() && client.socket.readyState === WebSocket.OPEN && performance.now() < deadline) {
    await new Promise((r) => setTimeout(r, CHUNK_MS));
    send({ type: 'input_audio_buffer.append', audio: silence });
  }
  const seconds = (performance.now() - started) / 1000;
  client.socket.close();
  await client.closed;
  const stoppedAt = new Map(
    client.events.filter((e) => e.type === 'input_audio_buffer.speech_stopped').map((e) => [e.item_id, e.at]),
  );
  const completed = client.events.filter((e) => e.type === COMPLETED);
  return {
    completed: completed.length,
    latencies: completed.filter((e) => stoppedAt.has(e.item_id)).map((e) => e.at - stoppedAt.get(e.item_id)),
    interims: client.events.filter((e) => e.type === 'voxmill.input_audio_transcription.interim').length,
    errors: client.events.filter((e) => e.type === 'error').map((e) => e.error.code),
    seconds,
  };
}

const quantile = (values, q) => {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil(q * sorted.length) - 1)];
};

async function metricsOf(baseUrl) {
  const text = await (await fetch(`${baseUrl}/metrics`)).text();
  const refusals = {};
  for (const match of text.matchAll(/^voxmill_realtime_refusals_total\{reason="(\w+)"\} (\d+)/gm)) {
    refusals[match[1]] = Number(match[2]);
  }
  const shed = Number(/^voxmill_realtime_interims_shed_total (\d+)/m.exec(text)?.[1] ?? 0);
  const capacity = Number(/^voxmill_realtime_sessions\{state="capacity"\} (\d+)/m.exec(text)?.[1] ?? 0);
  return { refusals, shed, capacity };
}

async function main() {
  ensureDist();
  const voxmill = await import(pathToFileURL(distEntry).href);
  const counts = (settings.counts ?? '1,2,4,8,16,32').split(',').map(Number);
  const models = realModels(['whisper-tiny.en']);
  const vadModel = join(sharedDir, 'models', 'whisper', 'ggml-silero-v6.2.0.bin');
  const { samples: jfk } = await voxmill.decodeAudio(sharedAudio('jfk.wav'));
  const { StreamResampler } = await import(pathToFileURL(join(dirname(distEntry), 'audio', 'resample.js')).href);
  const pcm = toPcm16(new StreamResampler(16000, 24000).process(jfk));
  const regions = await voxmill.detectSpeechRegions(jfk, { model: vadModel });
  const speechEnd = regions.at(-1).end;
  const dir = mkdtempSync(join(tmpdir(), 'voxmill-realtime-load-'));
  const config = join(dir, 'config.json');
  writeFileSync(
    config,
    JSON.stringify({
      models: { 'svc-stt-1': models['whisper-tiny.en'] },
      vadModel,
      // One key for every client: the per-client limit must not be what refuses them.
      http: { realtime: { maxSessionsPerClient: 32, admitByCapacity: !settings.withoutAdmission } },
    }),
  );
  const rows = [];
  try {
    for (const count of counts) {
      const server = startProcess(
        ['serve', '--port', '0', '--config', config, '--quiet'],
        { VOXMILL_API_KEYS: KEY },
        (r) => r.event === 'listening',
      );
      await server.started;
      const baseUrl = server.lines.find((r) => r.event === 'listening').url.replace(/\/$/, '');
      const url = `${baseUrl.replace(/^http/, 'ws')}/v1/realtime`;
      try {
        const warm = await oneClient(url, pcm, 1, speechEnd);
        const wallStarted = performance.now();
        const results = await Promise.all(
          Array.from({ length: count }, async (_, i) => {
            await new Promise((r) => setTimeout(r, i * 250));
            return oneClient(url, pcm, settings.rounds, speechEnd);
          }),
        );
        const wall = (performance.now() - wallStarted) / 1000;
        const accepted = results.filter((r) => r.refused === undefined);
        const latencies = accepted.flatMap((r) => r.latencies);
        const metrics = await metricsOf(baseUrl);
        const row = {
          sessions: count,
          accepted: accepted.length,
          refused: results.length - accepted.length,
          refusedHow: [...new Set(results.filter((r) => r.refused).map((r) => r.refused))],
          completed: accepted.reduce((sum, r) => sum + r.completed, 0),
          // Streamed back to back, a round's last utterance and the next one's first are one utterance to the VAD.
          expected: accepted.length * (settings.rounds * warm.completed - (settings.rounds - 1)),
          p50: quantile(latencies, 0.5),
          p95: quantile(latencies, 0.95),
          worst: quantile(latencies, 1),
          interimsPerSecond: accepted.reduce((sum, r) => sum + r.interims, 0) / wall,
          errors: accepted.flatMap((r) => r.errors),
          capacity: metrics.capacity,
          serverRefusals: metrics.refusals,
          interimsShed: metrics.shed,
          warmLatencies: warm.latencies,
        };
        rows.push(row);
        const ms = (v) => (v === null ? '-' : `${Math.round(v)}`);
        console.log(
          `${count} sessions: ${row.accepted} accepted, ${row.refused} refused (${row.refusedHow.join(', ') || 'none'}); ` +
            `capacity ${row.capacity}; completed ${row.completed}/${row.expected}; speech_stopped->completed ` +
            `p50 ${ms(row.p50)} ms, p95 ${ms(row.p95)} ms, worst ${ms(row.worst)} ms; ` +
            `interims ${row.interimsPerSecond.toFixed(2)}/s, shed ${row.interimsShed}; errors ${row.errors.join(', ') || 'none'}`,
        );
      } finally {
        server.child.kill('SIGTERM');
        await server.exited;
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const out = writeResults('realtime-load', { commit: gitCommit(), machine: machineFacts(), settings, rows });
  console.log(`raw results: ${out}`);
}

runMain('realtime-load', main);
