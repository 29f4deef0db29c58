// /v1/jobs over HTTP on the in-process queue and a fake engine, in every host: submit, poll, list, cancel, owners,
// errors (each answer checked against openapi.json); and the operator's endpoints: /metrics and the probes, mounted
// beside the handler with createOpsHandler.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import express from 'express';
import request from 'supertest';
import { afterEach, describe, expect, it } from 'vitest';
// Waits for jobs and bounds on how soon they end grow with this machine's slowdown.
import { scaledMs } from '../../scripts/lib/machine-speed.mjs';
import {
  createJobQueue,
  createOpsHandler,
  createSpeechHandler,
  createSpeechMetrics,
  type SpeechHandlerOptions,
} from '../../src/index.js';
import type { SpeechTranscribeOptions } from '../../src/stt/types.js';
import { AUDIO_HEADS, FakeSpeechEngine } from '../helpers/fake-speech-engine.js';
import { HOST_KINDS, makeHost, type TestHost } from '../helpers/http-apps.js';
import { documented } from '../helpers/openapi.js';

const KEY_A = 'sk-jobs-a';
const KEY_B = 'sk-jobs-b';
const as = (key: string) => (test: request.Test) => test.set('Authorization', `Bearer ${key}`);

/** A fake engine whose transcriptions take `ms` and stop when aborted. */
function slowEngine(ms: number): FakeSpeechEngine {
  const engine = new FakeSpeechEngine();
  engine.onTranscribe = async (_input, options: SpeechTranscribeOptions) => {
    for (let waited = 0; waited < ms; waited += 10) {
      options.signal?.throwIfAborted();
      await delay(10);
    }
    return { text: 'done', language: 'en', duration: 2 };
  };
  return engine;
}

const open: Server[] = [];
async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  open.push(server);
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}
afterEach(async () => {
  for (const server of open.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

async function start(
  kind: (typeof HOST_KINDS)[number],
  engine: FakeSpeechEngine,
  options: Partial<SpeechHandlerOptions> = {},
) {
  const host: TestHost = makeHost(kind, { speech: engine, auth: [KEY_A, KEY_B], ...options });
  const agent = request(await listen(host.server));
  const path = (p: string) => `${host.mount}${p}`;
  const check = (test: request.Test) => documented(test, host.mount);
  return { agent, path, check };
}

describe.each(HOST_KINDS)('jobs in %s', (kind) => {
  it('queues a job, answers 202, and serves its result to its owner only', async () => {
    const engine = slowEngine(50);
    const { agent, path, check } = await start(kind, engine);
    const created = await check(
      as(KEY_A)(agent.post(path('/v1/jobs/transcriptions')))
        .field('model', 'svc-stt-1')
        .field('language', 'en')
        .attach('file', AUDIO_HEADS.wav, 'a.wav'),
    );
    expect(created.status).toBe(202);
    expect(created.body).toMatchObject({ object: 'transcription.job', status: 'queued', model: 'svc-stt-1' });
    const { id } = created.body;
    await expect
      .poll(async () => (await as(KEY_A)(agent.get(path(`/v1/jobs/${id}`)))).body.status, {
        timeout: scaledMs(5000),
      })
      .toBe('completed');
    const done = await check(as(KEY_A)(agent.get(path(`/v1/jobs/${id}`))));
    expect(done.body).toMatchObject({ status: 'completed', progress: 1, result: { text: 'done' } });
    expect(engine.transcribeCalls[0]?.options).toMatchObject({ model: 'svc-stt-1', language: 'en' });

    const otherKey = await check(as(KEY_B)(agent.get(path(`/v1/jobs/${id}`))));
    expect(otherKey.status).toBe(404);
    expect(otherKey.body.error.code).toBe('job_not_found');
    expect((await check(as(KEY_B)(agent.delete(path(`/v1/jobs/${id}`))))).status).toBe(404);
    expect((await check(as(KEY_B)(agent.get(path('/v1/jobs'))))).body.data).toEqual([]);
    const mine = await check(as(KEY_A)(agent.get(path('/v1/jobs?status=completed'))));
    expect(mine.body.data.map((job: { id: string }) => job.id)).toEqual([id]);
    expect((await check(agent.get(path(`/v1/jobs/${id}`)))).status).toBe(401);
  });

  it('cancels a running job within a second', async () => {
    const { agent, path, check } = await start(kind, slowEngine(30_000));
    const created = await as(KEY_A)(agent.post(path('/v1/jobs/transcriptions')))
      .field('model', 'svc-stt-1')
      .attach('file', AUDIO_HEADS.mp3, 'a.mp3');
    await expect
      .poll(async () => (await as(KEY_A)(agent.get(path(`/v1/jobs/${created.body.id}`)))).body.status, {
        timeout: scaledMs(1000),
      })
      .toBe('running');
    const started = performance.now();
    const cancelled = await check(as(KEY_A)(agent.delete(path(`/v1/jobs/${created.body.id}`))));
    expect(cancelled.status).toBe(200);
    await expect
      .poll(async () => (await as(KEY_A)(agent.get(path(`/v1/jobs/${created.body.id}`)))).body.status, {
        timeout: scaledMs(1000),
        interval: 20,
      })
      .toBe('cancelled');
    expect(performance.now() - started).toBeLessThan(scaledMs(1000));
  });
});

describe('job errors', () => {
  it('names the field that is wrong', async () => {
    const { agent, path, check } = await start('bare http', new FakeSpeechEngine());
    const post = () => as(KEY_A)(agent.post(path('/v1/jobs/transcriptions')));
    const noModel = await check(post().attach('file', AUDIO_HEADS.wav, 'a.wav'));
    expect(noModel.status).toBe(400);
    expect(noModel.body.error.param).toBe('model');
    const badUrl = await check(
      post().field('model', 'svc-stt-1').field('callback_url', 'ftp://x').attach('file', AUDIO_HEADS.wav, 'a.wav'),
    );
    expect(badUrl.body.error).toMatchObject({ code: 'invalid_value', param: 'callback_url' });
    const noSecret = await check(
      post()
        .field('model', 'svc-stt-1')
        .field('callback_url', 'https://example.com/hook')
        .attach('file', AUDIO_HEADS.wav, 'a.wav'),
    );
    expect(noSecret.status).toBe(400);
    expect(noSecret.body.error).toMatchObject({ code: 'callbacks_disabled', param: 'callback_url' });
    const badStatus = await check(as(KEY_A)(agent.get(path('/v1/jobs?status=done'))));
    expect(badStatus.body.error).toMatchObject({ code: 'invalid_value', param: 'status' });
    const badLimit = await check(as(KEY_A)(agent.get(path('/v1/jobs?limit=1000'))));
    expect(badLimit.body.error).toMatchObject({ code: 'invalid_value', param: 'limit' });
    const notAnId = await check(as(KEY_A)(agent.get(path('/v1/jobs/../../etc'))));
    expect(notAnId.status).toBe(404);
    expect((await check(as(KEY_A)(agent.get(path('/v1/jobs/job_0123456789abcdef0123456789abcdef'))))).status).toBe(404);
  });

  it('answers 429 queue_full past maxQueuedJobs, and 404 jobs_disabled with jobs: false', async () => {
    const engine = slowEngine(30_000);
    const jobs = createJobQueue({ speech: engine, concurrency: 1, maxQueuedJobs: 1, drainTimeoutMs: 0 });
    try {
      const { agent, path } = await start('bare http', engine, { jobs });
      const post = () =>
        as(KEY_A)(agent.post(path('/v1/jobs/transcriptions')))
          .field('model', 'svc-stt-1')
          .attach('file', AUDIO_HEADS.wav, 'a.wav');
      expect((await post()).status).toBe(202);
      expect((await post()).status).toBe(202);
      const full = await post();
      expect(full.status).toBe(429);
      expect(full.body.error.code).toBe('queue_full');
    } finally {
      await jobs.close();
    }
    const disabled = await start('bare http', new FakeSpeechEngine(), { jobs: false });
    const answer = await as(KEY_A)(disabled.agent.get('/v1/jobs'));
    expect(answer.status).toBe(404);
    expect(answer.body.error.code).toBe('jobs_disabled');
  });
});

describe('metrics and probes beside the handler', () => {
  it('counts requests by route template into /metrics, and serves the probes', async () => {
    const engine = new FakeSpeechEngine();
    const metrics = createSpeechMetrics({ processMetrics: true });
    const app = express();
    const readiness = { status: () => [], listVoices: () => engine.listVoices(), ttsStatus: () => ({}) };
    app.use(createOpsHandler({ speech: readiness as never, metrics }));
    app.use(createSpeechHandler({ speech: engine, auth: [KEY_A], metrics }));
    const agent = request(await listen(createServer(app)));
    await as(KEY_A)(agent.get('/v1/voices'));
    await as(KEY_A)(agent.get('/v1/jobs/job_0123456789abcdef0123456789abcdef'));
    await agent.get('/v1/voices');
    const scraped = await agent.get('/metrics');
    expect(scraped.status).toBe(200);
    expect(scraped.headers['content-type']).toMatch(/^text\/plain/);
    const text = scraped.text;
    expect(text).toMatch(/voxmill_http_requests_total\{route="\/v1\/voices",method="GET",status="200"\} 1/);
    expect(text).toMatch(/voxmill_http_requests_total\{route="\/v1\/voices",method="GET",status="401"\} 1/);
    expect(text).toMatch(/voxmill_http_requests_total\{route="\/v1\/jobs\/\{id\}",method="GET",status="404"\} 1/);
    expect(text).toMatch(/voxmill_http_request_duration_seconds_bucket\{le="0.005",route="\/v1\/voices"/);
    expect(text).toMatch(/voxmill_jobs\{status="queued"\} 0/);
    expect(text).toMatch(/^process_resident_memory_bytes \d+/m);
    expect((await agent.get('/healthz')).body).toEqual({ status: 'ok' });
    const ready = await agent.get('/readyz');
    expect(ready.status).toBe(200);
    expect(ready.body.voices).toBe(1);
    expect((await agent.post('/metrics')).status).toBe(405);
  });

  it('asks for a key on /metrics when metricsAuth says so', async () => {
    const engine = new FakeSpeechEngine();
    const metrics = createSpeechMetrics({ processMetrics: false });
    const ops = createOpsHandler({ speech: engine as never, metrics, metricsAuth: ['scrape-key'] });
    const agent = request(await listen(createServer((req, res) => ops(req, res))));
    expect((await agent.get('/metrics')).status).toBe(401);
    expect((await as('wrong')(agent.get('/metrics'))).status).toBe(401);
    expect((await as('scrape-key')(agent.get('/metrics'))).status).toBe(200);
    expect((await agent.get('/elsewhere')).status).toBe(404);
  });
});
