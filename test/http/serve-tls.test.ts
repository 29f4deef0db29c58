// `voxmill serve --tls-cert --tls-key`: HTTPS and `wss:` realtime from the serve process itself, reached by OpenAI's
// npm SDK realtime client (which only dials wss:) trusting the run's self-signed certificate; and the start-up errors
// of a half-given or unusable certificate.
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { get } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { WebSocket } from 'ws';
import { scaledMs } from '../../scripts/lib/machine-speed.mjs';
import { fixture, repoRoot, sharedAudio, sharedModel } from '../helpers/paths.js';
import { requireOpenAiNodeSdk } from '../helpers/real-models.js';
import { makeSelfSigned, type SelfSigned } from '../helpers/self-signed.js';
import { type Served, startServe } from '../helpers/serve-process.js';
import { pcm16, readPcm16Wav } from '../helpers/wav.js';

const cli = join(repoRoot, 'dist', 'cli', 'main.js');
const run = promisify(execFile);
const KEY = 'sk-serve-tls';
const temp = mkdtempSync(join(tmpdir(), 'voxmill-serve-tls-'));
const config = join(temp, 'config.json');
writeFileSync(
  config,
  JSON.stringify({
    apiKeys: [KEY],
    models: { 'svc-stt-1': fixture('models/ggml-tiny.en-random.bin') },
    vadModel: sharedModel('whisper/ggml-silero-v6.2.0.bin'),
    voiceDirs: [fixture('voices')],
    // Random weights decode slowly: admission by measured capacity would turn the next session away.
    http: { realtime: { admitByCapacity: false } },
  }),
);
let files: SelfSigned;
beforeAll(async () => {
  files = await makeSelfSigned(temp);
});
afterAll(() => rmSync(temp, { recursive: true, force: true }));
const children: ChildProcessWithoutNullStreams[] = [];
afterEach(() => {
  for (const child of children.splice(0)) child.kill('SIGKILL');
});

/** GET over HTTPS trusting only the run's certificate: the status and body. */
function httpsGet(url: string, ca: Buffer): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    get(url, { ca }, (res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => {
        body += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    }).on('error', reject);
  });
}

interface RealtimeWs {
  socket: WebSocket;
  on(event: 'event', listener: (event: { type: string; [key: string]: unknown }) => void): void;
  on(event: 'error', listener: (error: Error) => void): void;
  send(event: Record<string, unknown>): void;
  close(): void;
}

const nodeSdk = requireOpenAiNodeSdk();

describe('voxmill serve over TLS', () => {
  it.skipIf(nodeSdk.skip)(
    `serves HTTPS, and the npm SDK's realtime client transcribes over wss: ${nodeSdk.reason ?? ''}`,
    { timeout: scaledMs(90_000) },
    async () => {
      const served: Served = await startServe(
        ['-c', config, '--tls-cert', files.certPath, '--tls-key', files.keyPath],
        {},
        (child) => children.push(child),
      );
      expect(served.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/u);
      const ca = readFileSync(files.certPath);
      expect(await httpsGet(`${served.url}/healthz`, ca)).toMatchObject({ status: 200 });

      const sdk = nodeSdk.path as string;
      const { OpenAIRealtimeWS } = (await import(join(sdk, 'realtime', 'ws.mjs'))) as {
        OpenAIRealtimeWS: new (props: { model: string; options: { ca: Buffer } }, client: unknown) => RealtimeWs;
      };
      const { default: OpenAI } = (await import(join(sdk, 'index.mjs'))) as {
        default: new (options: { apiKey: string; baseURL: string; maxRetries: number }) => unknown;
      };
      const client = new OpenAI({ apiKey: KEY, baseURL: `${served.url}/v1`, maxRetries: 0 });
      // As the README shows it: `model` (openai 6.x on Node 20 has no `intent`).
      const rt = new OpenAIRealtimeWS({ model: 'whisper-1', options: { ca } }, client);
      const events: Array<{ type: string; [key: string]: unknown }> = [];
      const errors: Error[] = [];
      rt.on('event', (event) => events.push(event));
      rt.on('error', (error) => errors.push(error));
      const seen = (type: string) => () => events.some((e) => e.type === type) || errors.length > 0;
      await expect.poll(seen('session.created'), { timeout: scaledMs(10_000), interval: 20 }).toBe(true);
      rt.send({
        type: 'session.update',
        session: {
          type: 'transcription',
          audio: {
            input: {
              format: { type: 'audio/pcm', rate: 16000 },
              transcription: { model: 'whisper-1' },
              turn_detection: null,
            },
          },
        },
      });
      const second = pcm16(readPcm16Wav(sharedAudio('jfk.wav')).subarray(0, 16000));
      rt.send({ type: 'input_audio_buffer.append', audio: second.toString('base64') });
      rt.send({ type: 'input_audio_buffer.commit' });
      const completed = 'conversation.item.input_audio_transcription.completed';
      await expect.poll(seen(completed), { timeout: scaledMs(60_000), interval: 20 }).toBe(true);
      rt.close();
      expect(errors.map(String)).toEqual([]);
      expect(events.map((e) => e.type)).toEqual(
        expect.arrayContaining(['session.created', 'session.updated', 'input_audio_buffer.committed', completed]),
      );
    },
  );

  it('refuses a certificate without its key, an unreadable file and one that is not PEM, naming each', async () => {
    const failure = (args: string[]) =>
      run(process.execPath, [cli, 'serve', '--port', '0', '-c', config, ...args]).catch(
        (error: { code: number; stderr: string }) => error,
      );
    expect(await failure(['--tls-cert', files.certPath])).toMatchObject({
      code: 1,
      stderr: expect.stringMatching(/--tls-cert and --tls-key go together/u),
    });
    expect(await failure(['--tls-cert', files.certPath, '--tls-key', join(temp, 'none.pem')])).toMatchObject({
      code: 1,
      stderr: expect.stringMatching(/--tls-key: cannot read .*none\.pem/u),
    });
    expect(await failure(['--tls-cert', config, '--tls-key', files.keyPath])).toMatchObject({
      code: 1,
      stderr: expect.stringMatching(/--tls-cert\/--tls-key: tls must be a PEM certificate and its private key/u),
    });
  });
});
