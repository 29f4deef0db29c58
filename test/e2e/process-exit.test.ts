// process.exit() while a transcription runs: the process ends. It used to hang for ever when the transcription
// reported progress: at its end the pool thread waited for the main thread to deliver its last events, and
// process.exit() waits for every pool thread without running the event loop again (voxmill worker hung on SIGTERM).
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
// The computation's time, and so the bounds on it, grow with this machine's slowdown.
import { scaledMs } from '../../scripts/lib/machine-speed.mjs';
import { fixture, repoRoot, sharedAudio } from '../helpers/paths.js';

const script = `
import { createSpeech } from ${JSON.stringify(join(repoRoot, 'dist', 'index.js'))};
const speech = createSpeech({ models: { tiny: ${JSON.stringify(fixture('models/ggml-tiny.en-random.bin'))} }, vad: false });
let exiting = false;
void speech.transcribe(${JSON.stringify(sharedAudio('jfk.wav'))}, {
  model: 'tiny', threads: 1,
  onProgress: () => { if (!exiting) { exiting = true; process.exit(0); } },
  onSegment: () => undefined,
});
`;

describe('process.exit() during a transcription', () => {
  it('ends the process once the running computation stops', async () => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: 'ignore' });
    const started = performance.now();
    const timer = setTimeout(() => child.kill('SIGKILL'), scaledMs(60_000));
    const code = await new Promise<number | string | null>((resolve) =>
      child.once('exit', (exitCode, signal) => resolve(exitCode ?? signal)),
    );
    clearTimeout(timer);
    expect(code).toBe(0);
    // The computation under way finishes (about a second on one thread), then the process is gone.
    expect(performance.now() - started).toBeLessThan(scaledMs(30_000));
  });
});
