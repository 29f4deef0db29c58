// `voxmill serve` after bursts of 50 concurrent mixed requests: its memory returns to where it was. The answers
// themselves are checked in `npm test` (test/http/serve.test.ts); the RSS reading is here, where nothing else runs.
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { fixture, sharedModel } from '../helpers/paths.js';
import { mixedBurst, settledRss, startServe } from '../helpers/serve-process.js';

const KEY = 'sk-burst';
const tinyEn = fixture('models/ggml-tiny.en-random.bin');
const temp = mkdtempSync(join(tmpdir(), 'voxmill-burst-'));
const children: ChildProcessWithoutNullStreams[] = [];
afterAll(() => {
  for (const child of children) child.kill('SIGKILL');
  rmSync(temp, { recursive: true, force: true });
});

describe('voxmill serve under bursts', () => {
  it('two more bursts of 50 concurrent mixed requests after warming up grow RSS by less than 10 %', async () => {
    const config = join(temp, 'burst.json');
    writeFileSync(
      config,
      JSON.stringify({
        apiKeys: [KEY],
        models: { 'svc-stt-1': tinyEn, 'svc-stt-1-flash': { model: tinyEn, maxQueue: 3 } },
        vadModel: sharedModel('whisper/ggml-silero-v6.2.0.bin'),
        voiceDirs: [fixture('voices')],
        tts: { maxQueue: 64 },
        idleUnloadMs: 0,
        // One key is one client: its share of the slots is raised to all of them (load, not fairness).
        http: { limits: { maxConcurrentRequestsPerClient: 64 } },
      }),
    );
    const served = await startServe(['-c', config, '--quiet'], {}, (child) => children.push(child), {
      inspect: true,
    });
    // Warm-up, twice: workers started, models loaded, allocator pools grown (one burst left them still growing by
    // up to 11 % on a loaded 2-core machine). The readings collect V8's garbage first (`inspect`): without that, a
    // reading taken before the memory reducer gave 20 MB back against one taken after it put two runs in
    // thirteen over the line here (+12.0, +12.3 %; the rest -3.0 to +4.6 %) and one in CI (+12.6 %, 2026-12-03);
    // with it, -3.0 to +3.5 % in ten runs.
    await mixedBurst(served.url, KEY);
    await mixedBurst(served.url, KEY);
    const before = await settledRss(served);
    for (let burst = 0; burst < 2; burst++) {
      const statuses = (await mixedBurst(served.url, KEY)).map((res) => res.status);
      expect(statuses.filter((status) => status === 200).length).toBeGreaterThanOrEqual(40);
    }
    const after = await settledRss(served);
    // Growth is what a leak shows; a process that gives memory back is fine.
    expect((after - before) / before).toBeLessThan(0.1);
  });
});
