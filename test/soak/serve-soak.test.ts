// Soak: thousands of mixed requests against `voxmill serve` as a process, its RSS sampled as they go. Memory must
// level off: the RSS the server settles at when idle after the run may not exceed the RSS it settled at after a
// warm-up. Sized for CI by default (VOXMILL_SOAK_REQUESTS, default 4000); `npm run soak` runs the full 10,000. The RSS
// series is written to test/soak/results/ (git-ignored), or to $VOXMILL_SOAK_OUT, for BENCHMARKS.md.

import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
// The test's own time limit grows with this machine's slowdown.
import { scaledMs } from '../../scripts/lib/machine-speed.mjs';
import { toneWav } from '../helpers/hostile-audio.js';
import { fixture, repoRoot } from '../helpers/paths.js';
import { rssOf, settledRss, startServe } from '../helpers/serve-process.js';

const REQUESTS = Number(process.env.VOXMILL_SOAK_REQUESTS ?? 4000);
const CONCURRENCY = 4;
const SAMPLE_EVERY = Math.max(50, Math.round(REQUESTS / 40));
const WARM_UP = Math.round(REQUESTS / 4);
const KEY = 'sk-soak';
const out = process.env.VOXMILL_SOAK_OUT ?? join(repoRoot, 'test', 'soak', 'results', 'serve-soak.json');

const temp = mkdtempSync(join(tmpdir(), 'voxmill-soak-'));
const children: ChildProcessWithoutNullStreams[] = [];
afterAll(() => {
  for (const child of children) child.kill('SIGKILL');
  rmSync(temp, { recursive: true, force: true });
});

/** Two seconds of tone as a 16 kHz WAV: enough to run whisper, short enough that transcriptions do not dominate. */
const shortClip = toneWav(16000, 32000);

type Kind = 'voices' | 'speech' | 'transcription' | 'unauthorized' | 'bad_json' | 'unsupported' | 'too_large';
const FORMATS = ['mp3', 'wav', 'opus', 'pcm16'] as const;

/** The mix: mostly speech and voices, a transcription in 50, and each kind of refusal. */
function kindOf(i: number): Kind {
  if (i % 50 === 0) return 'transcription';
  const kinds: Kind[] = [
    'speech',
    'speech',
    'voices',
    'speech',
    'unauthorized',
    'speech',
    'bad_json',
    'voices',
    'unsupported',
    'too_large',
  ];
  return kinds[i % kinds.length]!;
}

async function send(url: string, i: number): Promise<{ kind: Kind; status: number }> {
  const kind = kindOf(i);
  const auth = { Authorization: `Bearer ${KEY}` };
  const json = { ...auth, 'Content-Type': 'application/json' };
  let res: Response;
  switch (kind) {
    case 'voices':
      res = await fetch(`${url}/v1/voices`, { headers: auth });
      break;
    case 'speech':
      res = await fetch(`${url}/v1/speech`, {
        method: 'POST',
        headers: json,
        body: JSON.stringify({
          model: 'svc-tts-1',
          voice: 'en_US-fixture',
          input: `Request number ${i}. Another sentence follows it.`,
          format: FORMATS[i % FORMATS.length],
        }),
      });
      break;
    case 'transcription': {
      const form = new FormData();
      form.set('model', 'svc-stt-1');
      form.set('file', new Blob([shortClip]), 'clip.wav');
      res = await fetch(`${url}/v1/transcriptions`, { method: 'POST', headers: auth, body: form });
      break;
    }
    case 'unauthorized':
      res = await fetch(`${url}/v1/voices`, { headers: { Authorization: 'Bearer wrong' } });
      break;
    case 'bad_json':
      res = await fetch(`${url}/v1/speech`, { method: 'POST', headers: json, body: '{"model": ' });
      break;
    case 'unsupported': {
      const form = new FormData();
      form.set('model', 'svc-stt-1');
      form.set('file', new Blob([Buffer.from('this is not audio at all, just text')]), 'notes.txt');
      res = await fetch(`${url}/v1/transcriptions`, { method: 'POST', headers: auth, body: form });
      break;
    }
    case 'too_large':
      res = await fetch(`${url}/v1/speech`, {
        method: 'POST',
        headers: json,
        body: JSON.stringify({ input: 'x'.repeat(300_000) }),
      });
      break;
  }
  await res.arrayBuffer();
  return { kind, status: res.status };
}

const EXPECTED: Record<Kind, number> = {
  voices: 200,
  speech: 200,
  transcription: 200,
  unauthorized: 401,
  bad_json: 400,
  unsupported: 415,
  too_large: 413,
};

describe('voxmill serve under a long mixed load', () => {
  it(
    `${REQUESTS} mixed requests: every answer as expected, RSS levels off`,
    async () => {
      const config = join(temp, 'soak.json');
      writeFileSync(
        config,
        JSON.stringify({
          apiKeys: [KEY],
          models: { 'svc-stt-1': fixture('models/ggml-tiny.en-random.bin') },
          vadModel: null,
          voiceDirs: [fixture('voices')],
          idleUnloadMs: 0,
          maxQueue: 64,
          tts: { maxQueue: 64 },
          http: { limits: { maxConcurrentRequestsPerClient: 64 } },
        }),
      );
      const served = await startServe(['-c', config, '--quiet'], {}, (child) => children.push(child), {
        inspect: true,
      });
      const pid = served.child.pid as number;
      const series: { requests: number; rssMb: number }[] = [];
      const wrong: string[] = [];
      let next = 0;
      let done = 0;
      const worker = (until: number) => async () => {
        while (next < until) {
          const i = next++;
          const { kind, status } = await send(served.url, i);
          if (status !== EXPECTED[kind]) wrong.push(`#${i} ${kind}: ${status}`);
          done++;
          if (done % SAMPLE_EVERY === 0) series.push({ requests: done, rssMb: rssOf(pid) / 2 ** 20 });
        }
      };
      // Sends requests up to index `until` from the 4 clients; resolves with the seconds that took.
      const load = async (until: number) => {
        const started = performance.now();
        await Promise.all(Array.from({ length: CONCURRENCY }, worker(until)));
        return (performance.now() - started) / 1000;
      };
      // Seconds of load, the idle waits left out.
      let seconds = await load(WARM_UP);
      const warmMb = (await settledRss(served)) / 2 ** 20;
      seconds += await load(REQUESTS);
      const settledMb = (await settledRss(served)) / 2 ** 20;
      mkdirSync(dirname(out), { recursive: true });
      writeFileSync(
        out,
        `${JSON.stringify({ requests: REQUESTS, concurrency: CONCURRENCY, seconds, series, warmMb, settledMb }, null, 2)}\n`,
      );

      expect(wrong).toEqual([]);
      // Level: idle after the run, the server holds less than 8 % of its RSS or 20 MB (whichever is larger) more than
      // it held idle after the warm-up: a leak of about 7 KB per request or more over CI's 3,000 requests after it (one
      // of 8.5 KB was seen before), of 2.7 KB over `npm run soak`'s 7,500. Measured here (2026-12-03) without a leak,
      // the end settled between 14 MB lower and 13 MB higher than the warm-up, near 230 MB whatever the run's length:
      // the level is reached, not a slope (BENCHMARKS.md, "Soak"); with its garbage collected before each idle reading
      // (`inspect`), -4.0 to +0.6 MB in 5 runs. Idle readings, not the samples under load: those swing by 50-100 MB
      // with the syntheses in flight at the moment (4 at a time), and the largest samples of the two halves of a
      // 2,000-request run differed by 22 MB on a run that settled lower than it started (CI, 2026-12-03).
      expect(settledMb - warmMb).toBeLessThan(Math.max(20, warmMb * 0.08));
    },
    scaledMs(1_800_000),
  );
});
