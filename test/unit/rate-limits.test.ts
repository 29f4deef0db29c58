// Per-client rate limits: the token buckets (a fake clock), the 429s with Retry-After and the IETF RateLimit fields,
// audio charged after the work (debt included), jobs charged when they complete, clients apart, the in-process store
// bounded.
import request from 'supertest';
import { afterEach, describe, expect, it } from 'vitest';
import { MemoryRateLimitStore } from '../../src/http/rate-limit-store.js';
import { RateLimiter } from '../../src/http/rate-limits.js';
import { createJobQueue, createSpeechHandler, type JobQueue, type Transcription } from '../../src/index.js';
import { FakeSpeechEngine } from '../helpers/fake-speech-engine.js';

const WAV = Buffer.from('RIFF\x24\x00\x00\x00WAVEfmt ', 'latin1');

function clock() {
  let now = 0;
  return { now: () => now, advance: (ms: number) => (now += ms) };
}

describe('RateLimiter', () => {
  it('lets a burst of requestsPerMinute through, then refuses until the refill', async () => {
    const time = clock();
    const limiter = new RateLimiter(
      { requestsPerMinute: 3, audioSecondsPerHour: 0 },
      new MemoryRateLimitStore(10, time.now),
    );
    const fields = [];
    for (let i = 0; i < 3; i++) fields.push(await limiter.admit('key:a', false));
    expect(fields.map((f) => f.RateLimit)).toEqual([
      '"requests";r=2;t=20',
      '"requests";r=1;t=40',
      '"requests";r=0;t=60',
    ]);
    expect(fields[0]?.['RateLimit-Policy']).toBe('"requests";q=3;w=60');
    const refused = await limiter.admit('key:a', false).catch((e) => e);
    expect(refused).toMatchObject({ status: 429, code: 'rate_limited' });
    expect(refused.headers).toMatchObject({ 'Retry-After': '20', RateLimit: '"requests";r=0;t=60' });
    expect(refused.message).toBe('this client has used its 3 requests a minute; retry in 20 s');
    // Another client has its own bucket.
    await expect(limiter.admit('key:b', false)).resolves.toBeDefined();
    time.advance(19_000);
    await expect(limiter.admit('key:a', false)).rejects.toMatchObject({ headers: { 'Retry-After': '1' } });
    time.advance(1000);
    await expect(limiter.admit('key:a', false)).resolves.toMatchObject({ RateLimit: '"requests";r=0;t=60' });
  });

  it('admits audio work while any is left, charges it after, and refuses while in debt', async () => {
    const time = clock();
    const limiter = new RateLimiter(
      { requestsPerMinute: 0, audioSecondsPerHour: 3600 },
      new MemoryRateLimitStore(10, time.now),
    );
    // Requests not limited: only the audio bucket is consulted, and only for work on audio.
    expect(await limiter.admit('c', false)).toEqual({});
    expect(await limiter.admit('c', true)).toEqual({
      'RateLimit-Policy': '"audio-seconds";q=3600;w=3600',
      RateLimit: '"audio-seconds";r=3600;t=0',
    });
    await limiter.chargeAudio('c', 3000);
    await expect(limiter.admit('c', true)).resolves.toMatchObject({ RateLimit: '"audio-seconds";r=600;t=3000' });
    // One long file overdraws: admitted (600 s were left), then in debt.
    await limiter.chargeAudio('c', 1000);
    const refused = await limiter.admit('c', true).catch((e) => e);
    expect(refused).toMatchObject({ status: 429, code: 'audio_rate_limited' });
    expect(refused.headers['Retry-After']).toBe('400');
    // The debt is bounded by one hour's worth.
    await limiter.chargeAudio('c', 1e9);
    time.advance(3600_000);
    await expect(limiter.admit('c', true)).rejects.toMatchObject({ code: 'audio_rate_limited' });
    time.advance(1000);
    await expect(limiter.admit('c', true)).resolves.toBeDefined();
    // Requests that are not audio work pass however much audio was used.
    await limiter.chargeAudio('c', 5000);
    await expect(limiter.admit('c', false)).resolves.toEqual({});
  });

  it('keeps at most maxKeys buckets in process, full ones forgotten first', async () => {
    const time = clock();
    const store = new MemoryRateLimitStore(100, time.now);
    const limiter = new RateLimiter({ requestsPerMinute: 60, audioSecondsPerHour: 0 }, store);
    for (let i = 0; i < 1000; i++) await limiter.admit(`addr:${i}`, false);
    expect(store.size).toBeLessThanOrEqual(100);
    time.advance(2000); // every bucket full again
    await limiter.admit('addr:new', false);
    expect(store.size).toBeLessThanOrEqual(100);
  });
});

describe('rate limits over HTTP', () => {
  const queues: JobQueue[] = [];
  afterEach(async () => {
    await Promise.all(queues.splice(0).map((queue) => queue.close()));
  });

  it('answers 429 rate_limited with Retry-After and RateLimit fields, per key', async () => {
    const app = createSpeechHandler({
      speech: new FakeSpeechEngine(),
      auth: ['key-a', 'key-b'],
      limits: { requestsPerMinute: 2 },
    });
    const as = (key: string) => request(app).get('/v1/voices').set('authorization', `Bearer ${key}`);
    const first = await as('key-a');
    expect(first.status).toBe(200);
    expect(first.headers['ratelimit-policy']).toBe('"requests";q=2;w=60');
    expect(first.headers.ratelimit).toBe('"requests";r=1;t=30');
    expect((await as('key-a')).status).toBe(200);
    const refused = await as('key-a');
    expect(refused.status).toBe(429);
    expect(refused.body.error).toMatchObject({ type: 'rate_limit_error', code: 'rate_limited' });
    expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(29);
    expect(refused.headers.ratelimit).toBe('"requests";r=0;t=60');
    expect((await as('key-b')).status).toBe(200);
    // Without a key: 401 before any bucket is touched.
    expect((await request(app).get('/v1/voices')).status).toBe(401);
  });

  it('charges transcribed audio, refuses work on audio in debt, and still answers the rest', async () => {
    const speech = new FakeSpeechEngine();
    speech.onTranscribe = async (): Promise<Transcription> => ({ text: 'x', language: 'en', duration: 8 });
    const app = createSpeechHandler({ speech, auth: ['key-a'], limits: { audioSecondsPerHour: 10 } });
    const transcribe = () =>
      request(app)
        .post('/v1/audio/transcriptions')
        .set('authorization', 'Bearer key-a')
        .field('model', 'svc-stt-1')
        .attach('file', WAV, 'a.wav');
    expect((await transcribe()).status).toBe(200);
    const second = await transcribe();
    expect(second.status).toBe(200);
    expect(second.headers.ratelimit).toBe('"audio-seconds";r=2;t=2880');
    const refused = await transcribe();
    expect(refused.status).toBe(429);
    expect(refused.body.error.code).toBe('audio_rate_limited');
    expect(refused.body.error.message).toMatch(/10 seconds of audio an hour; retry in \d+ s/);
    expect((await request(app).get('/v1/voices').set('authorization', 'Bearer key-a')).status).toBe(200);
  });

  it('charges a job when it completes, to its owner', async () => {
    const speech = new FakeSpeechEngine();
    speech.onTranscribe = async (): Promise<Transcription> => ({ text: 'x', language: 'en', duration: 30 });
    const jobs = createJobQueue({ speech });
    queues.push(jobs);
    const app = createSpeechHandler({
      speech,
      jobs,
      auth: [{ id: 'team-a', key: 'key-a' }],
      limits: { audioSecondsPerHour: 20 },
    });
    const submit = () =>
      request(app)
        .post('/v1/jobs/transcriptions')
        .set('authorization', 'Bearer key-a')
        .field('model', 'svc-stt-1')
        .attach('file', WAV, 'a.wav');
    const created = await submit();
    expect(created.status).toBe(202);
    await jobs.wait(created.body.id, { owner: 'id:team-a' });
    await expect.poll(async () => (await submit()).status).toBe(429);
  });
});
