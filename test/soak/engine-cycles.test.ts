// Engines made and closed over and over while syntheses and speaker embeddings are in flight, with the CPU busy: the
// native runs (espeak-ng, ONNX Runtime) outlive their engine's close() and must end quietly, never abort the process,
// never leak threads or memory. Worker threads brought two process aborts of this kind before synthesis moved into the
// addon (Node aborting when a worker's isolate went while V8 compiled for it; onnxruntime-node's session wrapper
// throwing out of a terminated worker). VOXMILL_ENGINE_CYCLES sets the cycles (default: 150 in CI, 1,000 with
// VOXMILL_TEST_FULL=1, as `npm run soak` runs it). The counts (cycles, work finished and cut, RSS, threads) go to
// test/soak/results/engine-cycles.json (git-ignored) for BENCHMARKS.md.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scaledMs } from '../../scripts/lib/machine-speed.mjs';
import { createSpeech, decodeAudio } from '../../src/index.js';
import { fixture, repoRoot, sharedAudio, sharedModel } from '../helpers/paths.js';
import { ciScoped } from '../helpers/test-scope.js';

const resultsFile = join(repoRoot, 'test', 'soak', 'results', 'engine-cycles.json');
const CYCLES = Number(process.env.VOXMILL_ENGINE_CYCLES ?? ciScoped(1000, 150));
const rssMb = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))?.[1]) / 1024;
const threads = () => readdirSync('/proc/self/task').length;
const TEXT = 'A sentence for the heavy voice, long enough to be inside ONNX Runtime when the engine closes. '.repeat(3);

// One busy loop per core, in child processes: the native runs finish late and in every order.
let load: ChildProcess[] = [];
beforeAll(() => {
  load = Array.from({ length: availableParallelism() }, () =>
    spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }),
  );
});
afterAll(() => {
  for (const child of load) child.kill('SIGKILL');
});

describe('engines closed with native work in flight, under CPU load', () => {
  it(`${CYCLES} create/close cycles with a synthesis and a diarization running: no abort, flat RSS, same threads`, async () => {
    const pcm = (await decodeAudio(sharedAudio('pyannote_sample.wav'))).samples;
    const options = {
      voiceDirs: [fixture('bench-voices'), fixture('voices')],
      vadModel: sharedModel('whisper/ggml-silero-v6.2.0.bin'),
      diarization: { embeddingModel: fixture('embeddings/fixture-speaker-embedding.onnx') },
      cpuThreads: 2,
    };
    // Warm-up cycles: libuv's pool, the addon, ONNX Runtime and espeak-ng loaded once for the process.
    const cycle = async (index: number) => {
      const speech = createSpeech(options);
      const synthesis = speech.synthesizeToBuffer({ voice: 'en_US-fixture_heavy', input: TEXT, format: 'pcm16' });
      const diarization = speech.diarize(pcm.slice(), { numSpeakers: 2 });
      // Handled now: one may fail while the cycle waits on the other.
      for (const work of [synthesis, diarization]) work.catch(() => undefined);
      // Close at a different point of the work every cycle: before the voice loads, during a run, between sentences;
      // every tenth cycle after its synthesis has finished (under load nothing finishes within 40 ms).
      if (index % 10 === 9) await synthesis.catch(() => undefined);
      else await new Promise((resolve) => setTimeout(resolve, index % 40));
      await speech.close();
      const outcomes = await Promise.allSettled([synthesis, diarization]);
      for (const outcome of outcomes) {
        if (outcome.status === 'rejected') expect(outcome.reason).toMatchObject({ code: 'SPEECH_CLOSED' });
      }
      return outcomes.filter((outcome) => outcome.status === 'fulfilled').length;
    };
    for (let i = 0; i < 10; i++) await cycle(i);
    const before = { rss: rssMb(), threads: threads() };
    let finished = 0;
    let rssAtTenth = 0;
    for (let i = 0; i < CYCLES; i++) {
      finished += await cycle(i);
      if (i === Math.floor(CYCLES / 10)) rssAtTenth = rssMb();
    }
    // Native runs still finishing after their engine closed (a voice still loading keeps ONNX Runtime's threads until
    // it has loaded and been let go) end within moments; waited for, up to a deadline that grows on slow machines.
    const deadline = Date.now() + scaledMs(20_000);
    while (threads() > before.threads && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 100));
    const after = { rss: rssMb(), threads: threads() };
    mkdirSync(dirname(resultsFile), { recursive: true });
    writeFileSync(
      resultsFile,
      `${JSON.stringify({ cycles: CYCLES, finished, cut: 2 * CYCLES - finished, before, rssAtTenth, after }, null, 1)}\n`,
    );
    // Some work finishes before its close, most is cut: both paths ran.
    expect(finished).toBeGreaterThan(0);
    expect(finished).toBeLessThan(2 * CYCLES);
    // Flat: from a tenth of the way to the end, less growth than one more voice session would take.
    expect(after.rss - rssAtTenth).toBeLessThan(40);
    expect(after.threads).toBeLessThanOrEqual(before.threads);
  });
});
