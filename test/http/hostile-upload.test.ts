// Hostile uploads over HTTP against a real engine (the random-weight tiny.en fixture, DTW on): every one is answered
// with 200 or a documented 4xx JSON error, never a 5xx, a dropped connection or a dead server.
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// Bounds on how long work takes, and a test's own time limit, grow with this machine's slowdown.
import { scaledMs } from '../../scripts/lib/machine-speed.mjs';
import { createSpeech, createSpeechServer, type SpeechServer } from '../../src/index.js';
import { damagedCopies, lyingWavs, nonFiniteWavs, sharedClips, toneWav } from '../helpers/hostile-audio.js';
import { documented } from '../helpers/openapi.js';
import { fixture } from '../helpers/paths.js';

let server: SpeechServer;
let agent: ReturnType<typeof request>;

beforeAll(async () => {
  const speech = createSpeech({
    models: { 'svc-stt-1': fixture('models/ggml-tiny.en-random.bin') },
    vadModel: null,
    modelsDir: fixture('voices'),
  });
  server = createSpeechServer({ speech, auth: false, limits: { maxAudioSeconds: 600 } });
  const { port } = await server.listen(0, '127.0.0.1');
  agent = request(`http://127.0.0.1:${(server.server.address() as AddressInfo).port ?? port}`);
});
afterAll(async () => {
  await server.shutdown();
});

async function upload(bytes: Buffer): Promise<{ status: number; code: string | undefined }> {
  const res = await documented(
    agent.post('/v1/transcriptions').field('model', 'svc-stt-1').field('timestamps', 'word').attach('file', bytes, 'x'),
  );
  if (res.status !== 200) {
    expect(res.body.error).toMatchObject({
      type: expect.any(String),
      code: expect.any(String),
      message: expect.any(String),
    });
    expect(res.body.error.request_id).toMatch(/\S/);
  }
  return { status: res.status, code: res.body.error?.code };
}

describe('hostile uploads', () => {
  it('non-finite float WAVs (NaN, ±Inf, ±3e38 in 32 and 64 bits): 200 with finite word times', async () => {
    // The library tests run all twelve; over HTTP, one of each kind of value in each width.
    for (const { name, bytes } of nonFiniteWavs().filter((_, i) => i % 3 === 0)) {
      const res = await documented(
        agent
          .post('/v1/transcriptions')
          .field('model', 'svc-stt-1')
          .field('timestamps', 'word')
          .attach('file', bytes, 'x'),
      );
      expect(res.status, name).toBe(200);
      for (const word of res.body.words) expect(Number.isFinite(word.start) && Number.isFinite(word.end)).toBe(true);
    }
  });

  it('lying WAV headers: each 200 or a 4xx naming file', async () => {
    const statuses = new Map<number, number>();
    // Those whose data decodes get transcribed too (2 s each); the library tests run every header on its own.
    for (const { name, bytes } of lyingWavs().filter(
      (f) => !/^(RIFF|data) size/.test(f.name) || / 0$| 4294967295$/.test(f.name),
    )) {
      const { status, code } = await upload(bytes);
      expect(status, `${name}: ${code}`).toBeLessThan(500);
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
    }
    expect(statuses.get(400)).toBeGreaterThan(0);
  });

  it('a WAV claiming 7 Hz is a 400 at once; 20 minutes of audio past limits.maxAudioSeconds is a 413', async () => {
    const started = performance.now();
    expect(await upload(toneWav(7, 64_000))).toEqual({ status: 400, code: 'audio_decode_failed' });
    expect(performance.now() - started).toBeLessThan(scaledMs(2000));
    // 1,200 s at 8 kHz in 19 MB: over the 600 s this server allows.
    expect(await upload(toneWav(8000, 8000 * 1200))).toEqual({ status: 413, code: 'audio_too_long' });
  });

  it(
    'a cut and a corrupted copy of a clip of each container: 200 or 4xx; the server answers afterwards',
    async () => {
      const kinds = new Map<string, { name: string; bytes: Buffer }>();
      for (const clip of sharedClips()) {
        const ext = clip.name.split('.').pop()!;
        if (!kinds.has(ext) && clip.bytes.length < 1_000_000) kinds.set(ext, clip);
      }
      for (const [index, clip] of [...kinds.values()].entries()) {
        for (const damaged of damagedCopies(clip, 2, 1, 500 + index).slice(1)) {
          const { status, code } = await upload(damaged.bytes);
          expect(status, `${damaged.name}: ${code}`).toBeLessThan(500);
        }
      }
      const voices = await documented(agent.get('/v1/voices'));
      expect(voices.status).toBe(200);
    },
    scaledMs(240_000),
  );
});
