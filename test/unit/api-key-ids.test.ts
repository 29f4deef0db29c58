// API keys with stable ids: the caller is its id, so a rotated key keeps its jobs; keys without one stay apart by
// their digest; bad entries are named without showing the key; VOXMILL_API_KEYS takes `id:key`.
import request from 'supertest';
import { afterEach, describe, expect, it } from 'vitest';
import { apiKeysFromEnv } from '../../src/cli/serve-config.js';
import { createJobQueue, createSpeechHandler, type JobQueue } from '../../src/index.js';
import { FakeSpeechEngine } from '../helpers/fake-speech-engine.js';

const queues: JobQueue[] = [];
afterEach(async () => {
  await Promise.all(queues.splice(0).map((queue) => queue.close()));
});

const WAV = Buffer.from('RIFF\x24\x00\x00\x00WAVEfmt ', 'latin1');

describe('API keys with ids', () => {
  it('keeps a job with its owner across a key rotation, and apart from other keys', async () => {
    const speech = new FakeSpeechEngine();
    const jobs = createJobQueue({ speech });
    queues.push(jobs);
    const before = createSpeechHandler({
      speech,
      jobs,
      auth: [{ id: 'team-a', key: 'old-key-a' }, 'plain-key-b', { id: 'team-c', key: 'key-c' }],
    });
    const created = await request(before)
      .post('/v1/jobs/transcriptions')
      .set('authorization', 'Bearer old-key-a')
      .field('model', 'svc-stt-1')
      .attach('file', WAV, 'a.wav');
    expect(created.status).toBe(202);
    const path = `/v1/jobs/${created.body.id}`;
    await jobs.wait(created.body.id, { owner: 'id:team-a' });
    for (const other of ['plain-key-b', 'key-c']) {
      expect((await request(before).get(path).set('authorization', `Bearer ${other}`)).status, other).toBe(404);
    }

    // Rotation: the new key under the same id, the old one gone.
    const after = createSpeechHandler({ speech, jobs, auth: [{ id: 'team-a', key: 'new-key-a' }, 'plain-key-b'] });
    const seen = await request(after).get(path).set('authorization', 'Bearer new-key-a');
    expect(seen.status).toBe(200);
    expect(seen.body).toMatchObject({ id: created.body.id, status: 'completed' });
    const listed = await request(after).get('/v1/jobs').set('authorization', 'Bearer new-key-a');
    expect(listed.body.data.map((job: { id: string }) => job.id)).toEqual([created.body.id]);
    expect((await request(after).get(path).set('authorization', 'Bearer old-key-a')).status).toBe(401);
    expect((await request(after).get(path).set('authorization', 'Bearer plain-key-b')).status).toBe(404);
  });

  it('accepts two keys under one id (the rotation window), both the same caller', async () => {
    const speech = new FakeSpeechEngine();
    const jobs = createJobQueue({ speech });
    queues.push(jobs);
    const app = createSpeechHandler({
      speech,
      jobs,
      auth: [
        { id: 'team-a', key: 'old-key-a' },
        { id: 'team-a', key: 'new-key-a' },
      ],
    });
    const created = await request(app)
      .post('/v1/jobs/transcriptions')
      .set('authorization', 'Bearer old-key-a')
      .field('model', 'svc-stt-1')
      .attach('file', WAV, 'a.wav');
    const seen = await request(app).get(`/v1/jobs/${created.body.id}`).set('authorization', 'Bearer new-key-a');
    expect(seen.status).toBe(200);
  });

  it('names a bad entry, never showing the key', () => {
    const speech = new FakeSpeechEngine();
    const cases: [unknown[], RegExp][] = [
      [[{ id: 'bad id', key: 'secret-key-1' }], /auth\[0\]\.id must be 1-64 letters/],
      [[{ id: '', key: 'secret-key-1' }], /auth\[0\]\.id/],
      [[{ id: 'x'.repeat(65), key: 'secret-key-1' }], /auth\[0\]\.id/],
      [[{ id: 'a', key: 'secret key 1' }], /auth\[0\] must be an API key a Bearer token can carry/],
      [
        [
          { id: 'a', key: 'secret-key-1' },
          { id: 'b', key: 'secret-key-1' },
        ],
        /auth\[1\] must be a key not already/,
      ],
      [['secret-key-1', { id: 'b', key: 'secret-key-1' }], /auth\[1\]/],
      [[{ id: 'a', key: 'secret-key-1', role: 'admin' }], /auth\[0\]/],
      [[{ id: 'a' }], /auth\[0\] must be an API key \(a string\) or \{ id, key \}/],
      [[42], /auth\[0\]/],
    ];
    for (const [auth, message] of cases) {
      let error: unknown;
      try {
        createSpeechHandler({ speech, auth: auth as never });
      } catch (caught) {
        error = caught;
      }
      expect((error as { code?: string }).code, JSON.stringify(auth)).toMatch(/^INVALID_OPTION_(TYPE|VALUE)$/);
      expect((error as Error).message, JSON.stringify(auth)).toMatch(message);
      expect((error as Error).message).not.toContain('secret-key-1');
    }
    expect(() => createSpeechHandler({ speech, auth: [{ id: 'a', key: 'k' }, 'k2'] })).not.toThrow();
  });

  it('reads id:key from VOXMILL_API_KEYS', () => {
    expect(apiKeysFromEnv('team-a:key-1, plain-key ,ops@example.com:key-2,')).toEqual([
      { id: 'team-a', key: 'key-1' },
      'plain-key',
      { id: 'ops@example.com', key: 'key-2' },
    ]);
    expect(apiKeysFromEnv(' , ')).toBeUndefined();
  });
});
