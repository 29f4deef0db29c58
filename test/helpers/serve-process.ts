// `voxmill serve` as a child process for the tests that run it: start it, read its JSON log, read its memory.
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import request from 'supertest';
import { expect } from 'vitest';
import WebSocket from 'ws';
// Deadlines for the server's work grow with this machine's slowdown.
import { scaledMs } from '../../scripts/lib/machine-speed.mjs';
import { documented } from './openapi.js';
import { repoRoot, sharedAudio } from './paths.js';

const cli = join(repoRoot, 'dist', 'cli', 'main.js');

export interface Served {
  child: ChildProcessWithoutNullStreams;
  url: string;
  lines: Record<string, unknown>[];
  exited: Promise<number | null>;
  /** The child's inspector (`inspect: true`): memory readings collect its garbage first. */
  inspectorUrl?: string;
}

export interface ServeOptions {
  /**
   * Starts the child with its inspector on a loopback port, so that `settledRss` can collect the garbage before it
   * reads: V8 gives its idle heap back on a timer of its own (the memory reducer: 20 MB, 10-19 s after a burst went
   * idle here), which a reading may fall on either side of.
   */
  inspect?: boolean;
}

/**
 * Starts `voxmill serve --port 0` (from dist/) and resolves once it logs that it listens; `started` receives the child
 * at once, so the caller can kill it whatever happens.
 */
export function startServe(
  args: string[],
  env: Record<string, string>,
  started: (child: ChildProcessWithoutNullStreams) => void,
  options: ServeOptions = {},
): Promise<Served> {
  const nodeArgs = options.inspect ? ['--inspect=127.0.0.1:0'] : [];
  const child = spawn(process.execPath, [...nodeArgs, cli, 'serve', '--port', '0', ...args], {
    env: { ...process.env, VOXMILL_API_KEYS: '', ...env },
  });
  started(child);
  const lines: Record<string, unknown>[] = [];
  // 'close' comes after the exit and after stdout and stderr are fully read.
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  let stderr = '';
  let inspectorFound: (url: string) => void = () => {};
  // Node writes this line before it runs the script; stdout and stderr are separate pipes, so the server's
  // 'listening' may still be read first, and waits for it.
  const inspectorUrl = new Promise<string>((resolve) => {
    inspectorFound = resolve;
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk;
    const url = /Debugger listening on (ws:\/\/\S+)\r?\n/.exec(stderr)?.[1];
    if (url) inspectorFound(url);
  });
  const inspector = async (): Promise<string | undefined> => {
    if (!options.inspect) return undefined;
    const timeout = scaledMs(10_000);
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`serve wrote no inspector address in ${timeout} ms: ${stderr}`)),
        timeout,
      );
    });
    try {
      return await Promise.race([inspectorUrl, late]);
    } finally {
      clearTimeout(timer);
    }
  };
  return new Promise((resolve, reject) => {
    let buffered = '';
    child.stdout.on('data', (chunk: Buffer) => {
      buffered += chunk;
      let newline = buffered.indexOf('\n');
      while (newline >= 0) {
        const line = buffered.slice(0, newline);
        buffered = buffered.slice(newline + 1);
        let record: Record<string, unknown>;
        try {
          record = JSON.parse(line) as Record<string, unknown>;
        } catch {
          record = { notJson: line };
        }
        lines.push(record);
        if (record.event === 'listening') {
          const url = record.url as string;
          inspector().then((inspectorUrl) => resolve({ child, url, lines, exited, inspectorUrl }), reject);
        }
        newline = buffered.indexOf('\n');
      }
    });
    void exited.then((code) => reject(new Error(`serve exited with ${code}: ${stderr}`)));
  });
}

export function rssOf(pid: number): number {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(match?.[1]) * 1024;
}

/**
 * Asks a child's inspector for a full garbage collection (V8's low-memory one: it also gives idle pages back).
 * Rejects, never hangs, when the socket fails or closes first, or no answer comes within 60 s (scaled).
 */
async function collectGarbage(inspectorUrl: string): Promise<void> {
  const socket = new WebSocket(inspectorUrl);
  let timer: NodeJS.Timeout | undefined;
  try {
    await new Promise<void>((resolve, reject) => {
      const timeout = scaledMs(60_000);
      timer = setTimeout(() => reject(new Error(`the inspector did not collect garbage in ${timeout} ms`)), timeout);
      socket.once('open', () => socket.send(JSON.stringify({ id: 1, method: 'HeapProfiler.collectGarbage' })));
      socket.on('message', (data) => {
        let reply: { id?: number; error?: { message: string } };
        try {
          reply = JSON.parse(String(data));
        } catch {
          reject(new Error(`the inspector answered with something not JSON: ${String(data).slice(0, 200)}`));
          return;
        }
        if (reply.id !== 1) return;
        if (reply.error) reject(new Error(`the inspector refused to collect garbage: ${reply.error.message}`));
        else resolve();
      });
      socket.on('error', reject);
      socket.once('close', (code) => reject(new Error(`the inspector closed (${code}) before the collection ended`)));
    });
  } finally {
    clearTimeout(timer);
    socket.terminate();
  }
}

/**
 * RSS once the server is idle and its memory has settled: what the last calls freed goes back to the OS over about
 * a second after their responses (measured: 244 MB falling to 219 MB within 1.2 s), so the reading is taken only
 * when five readings 200 ms apart agree within 1 %. A server started with `inspect: true` has its garbage collected
 * first, so the reading does not depend on whether V8's memory reducer has run yet.
 */
export async function settledRss(served: Pick<Served, 'url' | 'child' | 'inspectorUrl'>): Promise<number> {
  const idle = async () => {
    const { stt, tts } = (await request(served.url).get('/readyz')).body;
    return stt.every((m: { active: number; pending: number }) => m.active + m.pending === 0) && tts.active === 0;
  };
  await expect.poll(idle, { timeout: scaledMs(30_000), interval: 50 }).toBe(true);
  if (served.inspectorUrl) await collectGarbage(served.inspectorUrl);
  const readings: number[] = [];
  for (let i = 0; i < 60; i++) {
    readings.push(rssOf(served.child.pid as number));
    const last = readings.slice(-5);
    if (last.length === 5 && (Math.max(...last) - Math.min(...last)) / Math.min(...last) < 0.01) break;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return readings.at(-1) as number;
}

/**
 * 50 concurrent requests against a served `/v1` (every fifth lists voices, every fifth transcribes jfk.wav on
 * svc-stt-1-flash, the rest speak two sentences in the fixture voice, rotating the four formats), each checked
 * against openapi.json. Resolves with the responses in request order.
 */
export function mixedBurst(url: string, key: string): Promise<request.Response[]> {
  const agent = request(url);
  const jfk = readFileSync(sharedAudio('jfk.wav'));
  const formats = ['mp3', 'wav', 'opus', 'pcm16'];
  const authed = (test: request.Test) => test.set('Authorization', `Bearer ${key}`).timeout(scaledMs(120_000));
  return Promise.all(
    Array.from({ length: 50 }, (_, i) => {
      if (i % 5 === 0) return documented(authed(agent.get('/v1/voices')));
      if (i % 5 === 1) {
        return documented(
          authed(agent.post('/v1/transcriptions')).field('model', 'svc-stt-1-flash').attach('file', jfk, 'jfk.wav'),
        );
      }
      return documented(
        authed(agent.post('/v1/speech')).send({
          model: 'svc-tts-1',
          voice: 'en_US-fixture',
          input: `Request number ${i}. It has two sentences.`,
          format: formats[i % formats.length],
        }),
      );
    }),
  );
}
