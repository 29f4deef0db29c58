// The `/v1/realtime` WebSocket endpoint driven by OpenAI's official realtime clients (installed by
// scripts/peers-setup.sh, never dependencies of voxmill): the npm SDK's OpenAIRealtimeWS (`openai/realtime/ws`, over
// the optional peer `ws`) and the Python SDK's `client.realtime.connect()` and `client.beta.realtime.connect()` (over
// `websockets`). The npm client only speaks `wss:`, so the server is HTTPS with a self-signed certificate made for
// the run, which each client is told to trust (ws's `ca`, Python's ssl context). jfk.wav's first 4 s are streamed in
// 20 ms chunks at real time and as fast as the socket takes them, then a second of silence; the engine runs
// random-weight tiny.en (real compute, meaningless text), so the events' order and shapes are checked, not words.
// Last, clients that vanish mid-utterance (TCP cut, no close frame) leave no session, no transcription, no handle
// and no memory behind.
import { execFile } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WebSocket } from 'ws';
// Deadlines for work (until(), the clients' and the tests' time limits) grow with this machine's slowdown.
import { scaledMs } from '../../scripts/lib/machine-speed.mjs';
import { StreamResampler } from '../../src/audio/resample.js';
import { buildSpeechHandler, type SpeechHandlerControl } from '../../src/http/handler.js';
import { createSpeech, type Speech } from '../../src/index.js';
import { fixture, sharedAudio, sharedModel } from '../helpers/paths.js';
import { type Requirement, requireOpenAiNodeSdk, requirePeerPython } from '../helpers/real-models.js';
import { makeSelfSigned } from '../helpers/self-signed.js';
import { pcm16, readPcm16Wav } from '../helpers/wav.js';

const execFileAsync = promisify(execFile);

/**
 * A peer's package beside one requireOpenAiNodeSdk() / requirePeerPython() found: the same skip (and, under CI, the
 * same failure) when a peers directory made before the realtime clients joined the setup lacks it.
 */
function alsoRequires(found: Requirement, present: boolean, what: string): Requirement {
  if (found.skip || present) return found;
  const command = "'bash scripts/peers-setup.sh'";
  if (process.env.CI === 'true') throw new Error(`${what} is missing under CI=true: run ${command} first`);
  return { path: undefined, skip: true, reason: `(skipped: ${what} is missing; run ${command})` };
}

const nodeSdk = (() => {
  const found = requireOpenAiNodeSdk();
  const ws = found.path !== undefined && existsSync(join(found.path, '..', 'ws', 'package.json'));
  return alsoRequires(found, ws, "ws, the npm SDK's realtime transport,");
})();
const python = (() => {
  const found = requirePeerPython();
  const lib = found.path === undefined ? undefined : join(found.path, '..', '..', 'lib');
  const websockets =
    lib !== undefined &&
    existsSync(lib) &&
    readdirSync(lib).some((dir) => existsSync(join(lib, dir, 'site-packages', 'websockets')));
  return alsoRequires(found, websockets, "websockets, the Python SDK's realtime transport,");
})();

const KEY = 'sk-openai-realtime';
// The random-weight model decodes slowly (it never stops early): jfk's first 4 s, as in test/e2e/live-transcribe.
const jfk4 = readPcm16Wav(sharedAudio('jfk.wav')).subarray(0, 4 * 16000);

/** jfk's 4 s, then a second of silence (the server VAD ends the last utterance in it), at each rate. */
const clip = {
  16000: Buffer.concat([pcm16(jfk4), Buffer.alloc(16000 * 2)]),
  24000: Buffer.concat([pcm16(new StreamResampler(16000, 24000).process(jfk4)), Buffer.alloc(24000 * 2)]),
} as const;
type Rate = keyof typeof clip;
/** 20 ms of 16-bit mono. */
const chunkBytes = (rate: Rate) => (rate / 50) * 2;

/** A server event, as the SDKs hand it over. */
interface RealtimeEvent {
  type: string;
  item_id?: string;
  [key: string]: unknown;
}

// The SDK is loaded from outside the repository, so it is typed here by what the test uses of it.
interface RealtimeWs {
  socket: WebSocket;
  url: URL;
  on(event: 'event', listener: (event: RealtimeEvent) => void): void;
  on(event: 'error', listener: (error: Error) => void): void;
  send(event: Record<string, unknown>): void;
  close(props?: { code?: number; reason?: string }): void;
}
type RealtimeWsClass = new (
  props: { intent: 'transcription'; options?: { ca?: Buffer } },
  client: { apiKey: string; baseURL: string },
) => RealtimeWs;

let speech: Speech;
let control: SpeechHandlerControl;
let server: Server;
let baseURL: string;
let dir: string;
let cert: Buffer;
let OpenAIRealtimeWS: RealtimeWsClass;
let client: { apiKey: string; baseURL: string };

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'voxmill-realtime-sdk-'));
  // A certificate for this run alone, valid for the address the clients dial.
  const { certPath } = await makeSelfSigned(dir);
  cert = await readFile(certPath);
  speech = createSpeech({
    models: { 'svc-stt-1': fixture('models/ggml-tiny.en-random.bin') },
    vadModel: sharedModel('whisper/ggml-silero-v6.2.0.bin'),
    voiceDirs: [fixture('voices')],
  });
  // Random weights decode slowly: admission by measured capacity would turn later sessions away (its own tests:
  // realtime-admission.test.ts).
  control = buildSpeechHandler({ speech, auth: [KEY], realtime: { admitByCapacity: false } });
  // Node's default 60 s headers timeout answered a loaded CI runner's third SDK connect with a bare 408 while its
  // handshake was still under way: give the limits the same machine-speed scale as the test's other ones.
  const headersTimeout = scaledMs(240_000);
  server = createServer(
    { key: await readFile(join(dir, 'key.pem')), cert, headersTimeout, requestTimeout: headersTimeout },
    control.handler,
  );
  control.handler.attach(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseURL = `https://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  if (nodeSdk.path) {
    ({ OpenAIRealtimeWS } = (await import(join(nodeSdk.path, 'realtime', 'ws.mjs'))) as {
      OpenAIRealtimeWS: RealtimeWsClass;
    });
    const { default: OpenAI } = (await import(join(nodeSdk.path, 'index.mjs'))) as {
      default: new (options: { apiKey: string; baseURL: string; maxRetries: number }) => typeof client;
    };
    client = new OpenAI({ apiKey: KEY, baseURL, maxRetries: 0 });
  }
});

afterAll(async () => {
  control?.closeRealtime();
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  await speech?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Resolves once `done()` holds, checked every 20 ms; fails after `timeoutMs` (scaled) with `what()` in the message.
 */
async function until(done: () => boolean, timeoutMs: number, what: () => unknown): Promise<void> {
  const limit = scaledMs(timeoutMs);
  const deadline = Date.now() + limit;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${limit} ms: ${JSON.stringify(what())}`);
    await sleep(20);
  }
}

interface NpmSession {
  rt: RealtimeWs;
  events: RealtimeEvent[];
  errors: Error[];
}

/** An npm SDK transcription session, open and past `session.created`. */
async function openNpm(): Promise<NpmSession> {
  const rt = new OpenAIRealtimeWS({ intent: 'transcription', options: { ca: cert } }, client);
  const session: NpmSession = { rt, events: [], errors: [] };
  rt.on('event', (event) => session.events.push(event));
  rt.on('error', (error) => session.errors.push(error));
  await until(
    () => session.events.length > 0 || session.errors.length > 0 || rt.socket.readyState > 1,
    10_000,
    () => session.errors.map(String),
  );
  expect(session.errors.map(String)).toEqual([]);
  expect(session.events[0]).toMatchObject({ type: 'session.created', session: { type: 'transcription' } });
  return session;
}

function sessionUpdate(rate: Rate): Record<string, unknown> {
  return {
    type: 'session.update',
    session: {
      type: 'transcription',
      audio: {
        input: {
          format: { type: 'audio/pcm', rate },
          transcription: { model: 'whisper-1', language: 'en', prompt: '' },
          turn_detection: { type: 'server_vad', threshold: 0.5, prefix_padding_ms: 300, silence_duration_ms: 500 },
        },
      },
    },
  };
}

/** Sends `audio` in 20 ms appends: at real time (each when its time comes), or all at once. */
async function streamAudio(
  send: (event: Record<string, unknown>) => void,
  audio: Buffer,
  rate: Rate,
  realTime: boolean,
) {
  const step = chunkBytes(rate);
  const start = performance.now();
  for (let at = 0, n = 0; at < audio.length; at += step, n++) {
    if (realTime) {
      const wait = start + n * 20 - performance.now();
      if (wait > 0) await sleep(wait);
    }
    send({ type: 'input_audio_buffer.append', audio: audio.subarray(at, at + step).toString('base64') });
  }
}

const STARTED = 'input_audio_buffer.speech_started';
const STOPPED = 'input_audio_buffer.speech_stopped';
const COMMITTED = 'input_audio_buffer.committed';
const DELTA = 'conversation.item.input_audio_transcription.delta';
const COMPLETED = 'conversation.item.input_audio_transcription.completed';

/** Every utterance the VAD opened has stopped and been transcribed. */
function allTranscribed(events: RealtimeEvent[]): boolean {
  const started = events.filter((e) => e.type === STARTED).map((e) => e.item_id);
  const completed = new Set(events.filter((e) => e.type === COMPLETED).map((e) => e.item_id));
  const stopped = events.filter((e) => e.type === STOPPED).length;
  return (
    events.some((e) => e.type === 'error') ||
    (started.length > 0 && stopped === started.length && started.every((id) => completed.has(id)))
  );
}

/**
 * The server-VAD event order for each utterance: speech_started, speech_stopped, committed (its previous_item_id the
 * item committed before), the deltas, completed, all with one item_id, and completed's transcript their text.
 */
function expectUtterances(events: RealtimeEvent[]): void {
  expect(events.filter((e) => e.type === 'error')).toEqual([]);
  const items = events.filter((e) => e.type === STARTED).map((e) => e.item_id as string);
  expect(items.length).toBeGreaterThan(0);
  expect(new Set(items).size).toBe(items.length);
  let previous: string | null = null;
  for (const id of items) {
    const of = (type: string) => events.findIndex((e) => e.type === type && e.item_id === id);
    const order = [STARTED, STOPPED, COMMITTED, COMPLETED].map(of);
    expect(
      order.every((index) => index >= 0),
      `${id}: ${JSON.stringify(order)}`,
    ).toBe(true);
    expect(order, id).toEqual([...order].sort((a, b) => a - b));
    const [started, stopped, committed, completed] = order.map((index) => events[index]!);
    expect(started!.audio_start_ms as number).toBeLessThan(stopped!.audio_end_ms as number);
    // The usage is the utterance's length: from where the VAD heard it start to where it stopped.
    const heard = ((stopped!.audio_end_ms as number) - (started!.audio_start_ms as number)) / 1000;
    expect(Math.abs((completed!.usage as { seconds: number }).seconds - heard)).toBeLessThan(0.1);
    expect(committed!.previous_item_id).toBe(previous);
    previous = id;
    expect(completed).toMatchObject({
      content_index: 0,
      transcript: expect.any(String),
      usage: { type: 'duration', seconds: expect.any(Number) },
    });
    const deltas = events.filter((e) => e.type === DELTA && e.item_id === id);
    for (const delta of deltas) {
      const at = events.indexOf(delta);
      expect(at).toBeGreaterThan(order[2]!);
      expect(at).toBeLessThan(order[3]!);
    }
    expect(deltas.map((d) => d.delta).join('')).toBe(completed!.transcript);
    // Each item's events once.
    for (const type of [STARTED, STOPPED, COMMITTED, COMPLETED]) {
      expect(events.filter((e) => e.type === type && e.item_id === id).length, `${type} ${id}`).toBe(1);
    }
  }
  expect(events.filter((e) => e.type === COMMITTED).length).toBe(items.length);
}

describe.skipIf(nodeSdk.skip)(`OpenAI's npm SDK realtime client ${nodeSdk.reason}`, () => {
  it.each([
    { rate: 16000 as Rate, realTime: true },
    { rate: 16000 as Rate, realTime: false },
    { rate: 24000 as Rate, realTime: true },
  ])('transcribes jfk at $rate Hz, 20 ms appends, real time: $realTime', { timeout: scaledMs(120_000) }, async ({
    rate,
    realTime,
  }) => {
    const { rt, events, errors } = await openNpm();
    expect(rt.url.protocol).toBe('wss:');
    expect(rt.url.searchParams.get('intent')).toBe('transcription');
    rt.send(sessionUpdate(rate));
    await until(
      () => events.length > 1,
      10_000,
      () => events,
    );
    expect(events[1]).toMatchObject({
      type: 'session.updated',
      session: {
        type: 'transcription',
        audio: {
          input: {
            format: { type: 'audio/pcm', rate },
            transcription: { model: 'whisper-1', language: 'en' },
            turn_detection: { type: 'server_vad', silence_duration_ms: 500 },
          },
        },
      },
    });
    const started = performance.now();
    await streamAudio((event) => rt.send(event), clip[rate], rate, realTime);
    const sentAll = events.length;
    if (realTime) {
      expect(performance.now() - started).toBeGreaterThan(4900);
      // At real time the first utterance (speech_stopped about 2.5 s in) is cut while the audio still comes.
      expect(events.slice(0, sentAll).some((e) => e.type === STOPPED)).toBe(true);
    }
    await until(
      () => allTranscribed(events),
      90_000,
      () => events.map((e) => e.type),
    );
    expectUtterances(events);
    expect(errors.map(String)).toEqual([]);
    // Every event the server sends carries its own id.
    expect(events.every((e) => typeof e.event_id === 'string')).toBe(true);
    rt.close();
    await until(
      () => rt.socket.readyState === 3,
      5_000,
      () => rt.socket.readyState,
    );
  });

  it('commits by hand with turn_detection null, clears, and answers a bad event with an error the SDK surfaces', {
    timeout: scaledMs(60_000),
  }, async () => {
    const { rt, events, errors } = await openNpm();
    const update = sessionUpdate(16000);
    (update.session as { audio: { input: Record<string, unknown> } }).audio.input.turn_detection = null;
    rt.send(update);
    await streamAudio((event) => rt.send(event), pcm16(jfk4.subarray(0, 16000)), 16000, false);
    rt.send({ type: 'input_audio_buffer.clear' });
    await streamAudio((event) => rt.send(event), pcm16(jfk4.subarray(0, 2 * 16000)), 16000, false);
    rt.send({ type: 'input_audio_buffer.commit' });
    await until(
      () => events.some((e) => e.type === COMPLETED),
      60_000,
      () => events.map((e) => e.type),
    );
    const types = events.map((e) => e.type);
    expect(types).not.toContain(STARTED);
    expect(types.slice(0, 3)).toEqual(['session.created', 'session.updated', 'input_audio_buffer.cleared']);
    const committed = events.find((e) => e.type === COMMITTED)!;
    const completed = events.find((e) => e.type === COMPLETED)!;
    expect(committed).toMatchObject({ previous_item_id: null, item_id: expect.any(String) });
    expect(completed).toMatchObject({ item_id: committed.item_id, transcript: expect.any(String) });
    // The utterance is what followed the clear: 2 s.
    expect((completed.usage as { seconds: number }).seconds).toBeCloseTo(2, 1);
    // A commit with nothing new: an error event, which the SDK raises as its `error`; the session goes on.
    rt.send({ type: 'input_audio_buffer.commit', event_id: 'evt_client_1' });
    await until(
      () => errors.length > 0,
      10_000,
      () => events.map((e) => e.type),
    );
    expect(events.at(-1)).toMatchObject({
      type: 'error',
      error: { code: 'input_audio_buffer_commit_empty', event_id: 'evt_client_1' },
    });
    expect(errors[0]).toMatchObject({
      name: 'OpenAIRealtimeError',
      error: { code: 'input_audio_buffer_commit_empty' },
    });
    expect(rt.socket.readyState).toBe(1);
    rt.close();
  });

  it('a wrong key is refused before the upgrade (401), and the SDK reports it', async () => {
    const rt = new OpenAIRealtimeWS(
      { intent: 'transcription', options: { ca: cert } },
      { apiKey: 'sk-wrong', baseURL: client.baseURL },
    );
    const errors: Error[] = [];
    rt.on('error', (error) => errors.push(error));
    await until(
      () => errors.length > 0,
      10_000,
      () => rt.socket.readyState,
    );
    expect(String(errors[0])).toMatch(/401/);
    expect(control.realtimeSessions).toBe(0);
  });
});

/** The engine has no transcription running or queued. */
const engineIdle = () => speech.status().every((model) => model.active === 0 && model.pending === 0);

/** Handles this process holds (sockets, timers, ...), by kind. */
function resources(): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const kind of process.getActiveResourcesInfo()) counts[kind] = (counts[kind] ?? 0) + 1;
  return counts;
}
const resourceCount = () => process.getActiveResourcesInfo().length;

/** Opens a session, sends speech, a pause and the start of the next utterance, then cuts the TCP connection. */
async function vanishMidUtterance(waitForTranscription: boolean): Promise<void> {
  const { rt, events } = await openNpm();
  rt.send(sessionUpdate(16000));
  // Two seconds of speech, a pause the VAD ends it in (its transcription starts), and more speech: an open utterance.
  const audio = Buffer.concat([
    pcm16(jfk4.subarray(0, 2 * 16000)),
    Buffer.alloc(0.7 * 16000 * 2),
    pcm16(jfk4.subarray(2 * 16000)),
  ]);
  await streamAudio((event) => rt.send(event), audio, 16000, false);
  if (waitForTranscription) {
    await until(
      () => events.filter((e) => e.type === STARTED).length >= 2,
      30_000,
      () => events.map((e) => e.type),
    );
  } else {
    await until(
      () => events.some((e) => e.type === STARTED),
      30_000,
      () => events.map((e) => e.type),
    );
  }
  rt.socket.terminate();
}

describe.skipIf(nodeSdk.skip)(`abrupt disconnects ${nodeSdk.reason}`, () => {
  it('clients cut mid-utterance (during a transcription, with audio unsent): no session, work, handle or memory left', {
    timeout: scaledMs(240_000),
  }, async () => {
    // Settled first: the model loaded, every earlier socket gone.
    await vanishMidUtterance(false);
    await until(
      () => control.realtimeSessions === 0 && engineIdle(),
      60_000,
      () => speech.status(),
    );
    await sleep(500);
    const before = resourceCount();
    const beforeKinds = resources();

    await Promise.all(Array.from({ length: 4 }, () => vanishMidUtterance(true)));
    await until(
      () => control.realtimeSessions === 0,
      10_000,
      () => control.realtimeSessions,
    );
    // A transcription that was running when its client went is cancelled or finishes; none is left queued.
    await until(engineIdle, 60_000, () => speech.status());
    await until(
      () => resourceCount() <= before,
      10_000,
      () => ({ before: beforeKinds, now: resources() }),
    );

    const rss = process.memoryUsage().rss;
    for (let cycle = 0; cycle < 20; cycle++) await vanishMidUtterance(false);
    await until(
      () => control.realtimeSessions === 0 && engineIdle(),
      60_000,
      () => speech.status(),
    );
    await until(
      () => resourceCount() <= before,
      10_000,
      () => ({ before: beforeKinds, now: resources() }),
    );
    const growth = process.memoryUsage().rss - rss;
    expect(growth, `${(growth / 1e6).toFixed(1)} MB`).toBeLessThan(50e6);

    // The server still serves a new session.
    const { rt, events } = await openNpm();
    rt.send(sessionUpdate(16000));
    await until(
      () => events.some((e) => e.type === 'session.updated'),
      10_000,
      () => events,
    );
    rt.close();
  });
});

/**
 * The Python SDK's side, answered as JSON on stdout: the GA client (`client.realtime.connect`, transcription by the
 * `intent=transcription` query as the SDK documents it) with server VAD at 24 kHz and by hand at 16 kHz, and the
 * retained beta client (`client.beta.realtime.connect`, header `OpenAI-Beta: realtime=v1`, whose `model` the
 * endpoint ignores) with `transcription_session.update`.
 */
const PYTHON_CLIENT = `
import base64, json, ssl, sys
from openai import OpenAI
key, base_url, cafile, pcm24_path, pcm16_path = sys.argv[1:6]
ctx = ssl.create_default_context(cafile=cafile)
# websockets' 10 s opening deadline is generous for a local server, but not on a loaded 2-core runner.
options = {"ssl": ctx, "open_timeout": ${Math.ceil(scaledMs(60_000) / 1000)}}
client = OpenAI(api_key=key, base_url=base_url, max_retries=0)
pcm24 = open(pcm24_path, "rb").read()
pcm16 = open(pcm16_path, "rb").read()
out = {}

def events_until(connection, done):
    events = []
    for event in connection:
        events.append(event.to_dict())
        if done(events):
            return events
    return events

def all_transcribed(events):
    if any(e["type"] == "error" for e in events):
        return True
    started = [e["item_id"] for e in events if e["type"] == "input_audio_buffer.speech_started"]
    stopped = [e for e in events if e["type"] == "input_audio_buffer.speech_stopped"]
    completed = {e["item_id"] for e in events if e["type"] == "conversation.item.input_audio_transcription.completed"}
    return len(started) > 0 and len(stopped) == len(started) and all(i in completed for i in started)

def stream(connection, audio, rate):
    step = rate // 50 * 2
    for at in range(0, len(audio), step):
        connection.input_audio_buffer.append(audio=base64.b64encode(audio[at:at + step]).decode())

vad = {"type": "server_vad", "threshold": 0.5, "prefix_padding_ms": 300, "silence_duration_ms": 500}
with client.realtime.connect(extra_query={"intent": "transcription"},
                             websocket_connection_options=options) as connection:
    first = connection.recv().to_dict()
    connection.session.update(session={"type": "transcription", "audio": {"input": {
        "format": {"type": "audio/pcm", "rate": 24000},
        "transcription": {"model": "gpt-4o-transcribe", "language": "en"},
        "turn_detection": vad}}})
    stream(connection, pcm24, 24000)
    out["ga"] = [first] + events_until(connection, all_transcribed)

with client.realtime.connect(extra_query={"intent": "transcription"},
                             websocket_connection_options=options) as connection:
    connection.session.update(session={"type": "transcription", "audio": {"input": {
        "format": {"type": "audio/pcm", "rate": 16000}, "turn_detection": None}}})
    stream(connection, pcm16[:2 * 16000 * 2], 16000)
    connection.input_audio_buffer.commit()
    out["manual"] = events_until(connection, lambda events: any(
        e["type"] in ("error", "conversation.item.done") for e in events))

with client.beta.realtime.connect(model="gpt-4o-transcribe",
                                  websocket_connection_options=options) as connection:
    first = connection.recv().to_dict()
    connection.transcription_session.update(session={
        "input_audio_format": "pcm16",
        "input_audio_transcription": {"model": "gpt-4o-transcribe", "language": "en"},
        "turn_detection": vad})
    stream(connection, pcm24, 24000)
    out["beta"] = [first] + events_until(connection, all_transcribed)
print(json.dumps(out))
`;

describe.skipIf(python.skip)(`OpenAI's Python SDK realtime client ${python.reason}`, () => {
  it('GA transcription session with server VAD and by hand, and the beta transcription session, over wss', {
    timeout: scaledMs(240_000),
  }, async () => {
    await writeFile(join(dir, 'jfk24.pcm'), clip[24000]);
    await writeFile(join(dir, 'jfk16.pcm'), clip[16000]);
    // Asynchronously: the server answering it runs in this process.
    const args = [
      '-c',
      PYTHON_CLIENT,
      KEY,
      baseURL,
      join(dir, 'cert.pem'),
      join(dir, 'jfk24.pcm'),
      join(dir, 'jfk16.pcm'),
    ];
    const run = await execFileAsync(python.path as string, args, { encoding: 'utf8', timeout: scaledMs(200_000) });
    const out = JSON.parse(run.stdout) as Record<'ga' | 'manual' | 'beta', RealtimeEvent[]>;

    expect(out.ga[0]).toMatchObject({ type: 'session.created', session: { type: 'transcription' } });
    expect(out.ga[1]).toMatchObject({
      type: 'session.updated',
      session: { audio: { input: { format: { type: 'audio/pcm', rate: 24000 } } } },
    });
    expectUtterances(out.ga);

    expect(out.manual.map((e) => e.type)).toEqual([
      'session.created',
      'session.updated',
      COMMITTED,
      'conversation.item.added',
      ...(out.manual.some((e) => e.type === DELTA) ? [DELTA] : []),
      COMPLETED,
      'conversation.item.done',
    ]);
    const completed = out.manual.find((e) => e.type === COMPLETED);
    expect(completed).toMatchObject({ transcript: expect.any(String), usage: { type: 'duration' } });
    expect(out.manual.at(-1)).toMatchObject({
      item: {
        id: completed?.item_id,
        role: 'user',
        content: [{ type: 'input_audio', transcript: completed?.transcript }],
      },
    });

    expect(out.beta[0]).toMatchObject({
      type: 'transcription_session.created',
      session: { object: 'realtime.transcription_session' },
    });
    expect(out.beta[1]).toMatchObject({
      type: 'transcription_session.updated',
      session: { input_audio_format: 'pcm16', input_audio_transcription: { model: 'gpt-4o-transcribe' } },
    });
    expectUtterances(out.beta);
  });
});
