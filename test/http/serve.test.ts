// `voxmill serve` as a process: startup checks, probes, logs, load (50 concurrent mixed requests; the memory
// afterwards is the soak tier's, test/soak/serve-burst.test.ts), and a SIGTERM that finishes in-flight requests and
// exits 0.
import { type ChildProcessWithoutNullStreams, execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import request from 'supertest';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
// Waits for the server's work and bounds on how long it takes grow with this machine's slowdown.
import { scaledMs } from '../../scripts/lib/machine-speed.mjs';
import { documented } from '../helpers/openapi.js';
import { fixture, repoRoot, sharedAudio, sharedModel } from '../helpers/paths.js';
import { mixedBurst, type Served, startServe } from '../helpers/serve-process.js';

const cli = join(repoRoot, 'dist', 'cli', 'main.js');
const run = promisify(execFile);
const temp = mkdtempSync(join(tmpdir(), 'voxmill-serve-'));
afterAll(() => rmSync(temp, { recursive: true, force: true }));

const tinyEn = fixture('models/ggml-tiny.en-random.bin');
const KEY = 'sk-serve';

function writeConfig(name: string, config: object): string {
  const path = join(temp, name);
  writeFileSync(path, JSON.stringify(config));
  return path;
}

const baseConfig = {
  apiKeys: [KEY],
  models: { 'svc-stt-1': tinyEn, 'svc-stt-1-flash': { model: tinyEn, maxQueue: 3 } },
  vadModel: sharedModel('whisper/ggml-silero-v6.2.0.bin'),
  voiceDirs: [fixture('voices')],
  tts: { maxQueue: 64 },
  idleUnloadMs: 0,
};

const children: ChildProcessWithoutNullStreams[] = [];
afterEach(() => {
  for (const child of children.splice(0)) child.kill('SIGKILL');
});

/** Starts `voxmill serve --port 0`, killed after the test. */
async function serve(args: string[], env: Record<string, string> = {}): Promise<Served> {
  return startServe(args, env, (child) => children.push(child));
}

describe('voxmill serve', () => {
  it('refuses to start without API keys unless --no-auth', async () => {
    const failed = await run(process.execPath, [cli, 'serve', '--port', '0'], {
      env: { ...process.env, VOXMILL_API_KEYS: '' },
    }).catch((error: { code: number; stderr: string }) => error);
    expect((failed as { code: number }).code).toBe(1);
    expect((failed as { stderr: string }).stderr).toMatch(/no API keys: set VOXMILL_API_KEYS .* or pass --no-auth/);

    const open = await serve(['--no-auth', '-c', writeConfig('open.json', { ...baseConfig, apiKeys: undefined })]);
    expect((await documented(request(open.url).get('/v1/voices'))).status).toBe(200);
    expect(open.lines.find((line) => line.event === 'auth_disabled')).toMatchObject({ level: 'warn' });
  });

  it('takes keys from VOXMILL_API_KEYS over the config file, and names bad config keys', async () => {
    const served = await serve(['-c', writeConfig('keys.json', baseConfig)], { VOXMILL_API_KEYS: 'env-1, env-2' });
    const agent = request(served.url);
    expect((await documented(agent.get('/v1/voices').set('Authorization', 'Bearer env-2'))).status).toBe(200);
    expect((await documented(agent.get('/v1/voices').set('Authorization', `Bearer ${KEY}`))).status).toBe(401);

    for (const [config, message] of [
      [{ ...baseConfig, port: 'x' }, /config file .*: port must be a number/],
      [{ ...baseConfig, threadz: 2 }, /options\.threadz/],
      [{ ...baseConfig, http: { limits: { maxFileBytes: -1 } } }, /limits\.maxFileBytes/],
    ] as const) {
      const failed = await run(process.execPath, [cli, 'serve', '-c', writeConfig('bad.json', config)]).catch(
        (error: { code: number; stderr: string }) => error,
      );
      expect((failed as { code: number }).code).toBe(1);
      expect((failed as { stderr: string }).stderr).toMatch(message);
    }
  });

  it('answers /healthz and /readyz without a key, and logs each request as one JSON line', async () => {
    const served = await serve(['-c', writeConfig('probe.json', baseConfig)]);
    const agent = request(served.url);
    expect((await agent.get('/healthz')).body).toEqual({ status: 'ok' });
    const ready = await agent.get('/readyz');
    expect(ready.status).toBe(200);
    expect(ready.body).toMatchObject({ status: 'ready', voices: 6 });
    expect(ready.body.stt).toEqual([
      { id: 'svc-stt-1', installed: true, loaded: false, device: null, active: 0, pending: 0 },
      { id: 'svc-stt-1-flash', installed: true, loaded: false, device: null, active: 0, pending: 0 },
    ]);
    expect(ready.headers['x-request-id']).toMatch(/^req_/);
    const posted = await documented(agent.post('/healthz'));
    expect(posted.status).toBe(405);
    expect(posted.headers.allow).toBe('GET, HEAD');
    const missing = await documented(agent.get('/nothing').set('Authorization', `Bearer ${KEY}`));
    expect(missing.status).toBe(404);
    await documented(agent.get('/v1/voices').set('Authorization', `Bearer ${KEY}`).set('X-Request-Id', 'log-me'));
    await expect
      .poll(() => served.lines.find((line) => line.request_id === 'log-me'), { timeout: scaledMs(1000) })
      .toMatchObject({
        event: 'request',
        level: 'info',
        method: 'GET',
        path: '/v1/voices',
        status: 200,
      });
    const empty = await serve([
      '-c',
      writeConfig('none.json', { ...baseConfig, models: { 'svc-stt-1': 'base', 'svc-stt-1-flash': 'tiny' } }),
      '--models-dir',
      temp,
    ]);
    const voicesOnly = await request(empty.url).get('/readyz');
    expect(voicesOnly.status).toBe(200); // voices are installed, so speech can be served
    const nothing = await serve([
      '-c',
      writeConfig('nothing.json', { ...baseConfig, models: { 'svc-stt-1': 'base' }, voiceDirs: [temp] }),
      '--models-dir',
      temp,
    ]);
    const notReady = await request(nothing.url).get('/readyz');
    expect(notReady.status).toBe(503);
    expect(notReady.body.status).toBe('no_models');
    // Probes are not logged; every line on stdout is JSON.
    expect(served.lines.filter((line) => line.path === '/readyz' || line.path === '/healthz')).toEqual([]);
    expect(served.lines.filter((line) => 'notJson' in line)).toEqual([]);
  });

  it('answers 50 concurrent mixed requests with 200 or 429', async () => {
    // One key is one client: its share of the slots (an eighth by default) is raised to all of them, since this
    // measures the load of 50 requests, not the fairness between clients.
    const config = { ...baseConfig, http: { limits: { maxConcurrentRequestsPerClient: 64 } } };
    const served = await serve(['-c', writeConfig('load.json', config), '--quiet']);
    const responses = await mixedBurst(served.url, KEY);
    const statuses = responses.map((res) => res.status);
    expect(statuses).toHaveLength(50);
    expect(statuses.every((status) => status === 200 || status === 429)).toBe(true);
    expect(statuses.filter((status) => status === 200).length).toBeGreaterThanOrEqual(40);
    for (const res of responses.filter((r) => r.status === 429)) expect(res.headers['retry-after']).toBe('1');
  });

  it('on SIGTERM stops accepting, finishes in-flight requests and exits 0', async () => {
    const served = await serve(['-c', writeConfig('term.json', baseConfig)]);
    const inFlight = documented(
      request(served.url)
        .post('/v1/transcriptions')
        .set('Authorization', `Bearer ${KEY}`)
        .field('model', 'svc-stt-1')
        .attach('file', sharedAudio('jfk.wav')),
    );
    // SIGTERM only once the transcription is really running.
    const active = async () => (await request(served.url).get('/readyz')).body.stt[0].active as number;
    await expect.poll(active, { timeout: scaledMs(10_000), interval: 20 }).toBe(1);
    served.child.kill('SIGTERM');
    await expect
      .poll(() => served.lines.some((line) => line.event === 'shutdown'), { timeout: scaledMs(1000) })
      .toBe(true);
    const refused = await request(served.url)
      .get('/healthz')
      .then(() => 'answered')
      .catch((error: Error) => error.message);
    expect(refused).toMatch(/ECONNREFUSED/);
    const res = await inFlight;
    expect(res.status).toBe(200);
    expect(res.body.duration).toBeCloseTo(11, 1);
    expect(await served.exited).toBe(0);
    expect(served.lines.at(-1)).toMatchObject({ event: 'stopped', drained: true });
  });

  /** Starts a transcription of gb0.wav (127 s: many seconds of whisper work) and waits until it runs. */
  async function longTranscription(served: Served) {
    const response = documented(
      request(served.url)
        .post('/v1/transcriptions')
        .set('Authorization', `Bearer ${KEY}`)
        .field('model', 'svc-stt-1')
        .attach('file', sharedAudio('gb0.wav')),
    );
    const active = async () => (await request(served.url).get('/readyz')).body.stt[0].active as number;
    await expect.poll(active, { timeout: scaledMs(10_000), interval: 20 }).toBe(1);
    // Wrapped: an async function returning the promise itself would wait for it.
    return { response };
  }

  it('past shutdownTimeoutMs cancels the work, answers 503 shutting_down, logs it, and exits 0 promptly', async () => {
    const served = await serve(['-c', writeConfig('cut.json', { ...baseConfig, http: { shutdownTimeoutMs: 300 } })]);
    const { response } = await longTranscription(served);
    const signalled = performance.now();
    served.child.kill('SIGTERM');
    const res = await response;
    expect(res.status).toBe(503);
    expect(res.body.error.code).toBe('shutting_down');
    expect(res.headers['retry-after']).toBe('1');
    expect(await served.exited).toBe(0);
    const seconds = (performance.now() - signalled) / 1000;
    // whisper stops at its next checkpoint instead of finishing 127 s of audio.
    expect(seconds).toBeLessThan(scaledMs(10_000) / 1000);
    expect(served.lines.find((line) => line.event === 'request' && line.path === '/v1/transcriptions')).toMatchObject({
      status: 503,
      error_code: 'shutting_down',
    });
    expect(served.lines.at(-1)).toMatchObject({ event: 'stopped', drained: false });
  });

  it('a second signal cancels the work, answers it 503 shutting_down and exits 1 at once', async () => {
    const served = await serve(['-c', writeConfig('twice.json', baseConfig)]);
    const { response } = await longTranscription(served);
    const settled = response.then(
      (res) => `${res.status} ${res.body.error?.code}`,
      () => 'cut',
    );
    const signalled = performance.now();
    served.child.kill('SIGTERM');
    await expect
      .poll(() => served.lines.some((line) => line.event === 'shutdown'), { timeout: scaledMs(1000) })
      .toBe(true);
    served.child.kill('SIGINT');
    expect(await served.exited).toBe(1);
    expect(performance.now() - signalled).toBeLessThan(scaledMs(10_000));
    expect(served.lines.some((line) => line.event === 'shutdown_forced')).toBe(true);
    expect(await settled).toBe('503 shutting_down');
  });

  it('--preload loads the installed models and keeps them; a busy port or an empty host is refused', async () => {
    const served = await serve(['-c', writeConfig('preload.json', baseConfig), '--preload']);
    expect(served.lines.filter((line) => line.event === 'model_loaded').map((line) => line.model)).toEqual([
      'svc-stt-1',
      'svc-stt-1-flash',
    ]);
    const loaded = async () =>
      (await request(served.url).get('/readyz')).body.stt.map((model: { loaded: boolean }) => model.loaded);
    expect(await loaded()).toEqual([true, true]);

    const port = new URL(served.url).port;
    const busy = await run(process.execPath, [cli, 'serve', '--no-auth', '--port', port]).catch(
      (error: { code: number; stdout: string; stderr: string }) => error,
    );
    expect((busy as { code: number }).code).toBe(1);
    expect((busy as { stderr: string }).stderr).toContain('EADDRINUSE');
    expect((busy as { stdout: string }).stdout).not.toContain('server_error');

    const empty = await run(process.execPath, [cli, 'serve', '--no-auth', '--port', '0', '--host', '']).catch(
      (error: { code: number; stderr: string }) => error,
    );
    expect((empty as { code: number }).code).toBe(1);
    expect((empty as { stderr: string }).stderr).toContain('the host is empty');
  });

  it('--preload with a model that is not installed fails start-up, naming the fix; --lazy serves without it', async () => {
    const config = writeConfig('missing.json', {
      ...baseConfig,
      models: { ...baseConfig.models, 'svc-stt-1': join(fixture('models'), 'not-there.bin') },
    });
    const refused = await run(process.execPath, [cli, 'serve', '-c', config, '--port', '0', '--preload']).catch(
      (error: { code: number; stderr: string }) => error,
    );
    expect(refused).toMatchObject({ code: 1, stderr: expect.stringMatching(/--preload: model svc-stt-1: .*--lazy/u) });
    const served = await serve(['-c', config, '--preload', '--lazy']);
    expect(served.lines.some((line) => line.event === 'preload_skipped' && line.model === 'svc-stt-1')).toBe(true);
    expect(served.lines.some((line) => line.event === 'model_loaded' && line.model === 'svc-stt-1-flash')).toBe(true);
  });
});
