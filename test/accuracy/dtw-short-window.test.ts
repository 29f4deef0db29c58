// whisper.cpp's DTW word timing asserts (abort(): the whole process dies) on a decoding window of 7 audio tokens or
// fewer, which a real model reaches on 110-150 ms of speech: measured, 120 ms of jfk.wav with the real tiny.en and
// word timestamps killed the process. CMakeLists.txt compiles whisper.cpp with a guard that skips DTW for such a
// window. Each clip runs in a child process, so a regression fails the test with its exit status instead of taking
// the test runner down; a live transcription's commit of such a clip (what a realtime client can send) is checked too.
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { repoRoot, sharedAudio } from '../helpers/paths.js';
import { requireRealModel } from '../helpers/real-models.js';

const tinyEn = requireRealModel('whisper-tiny.en');

const child = `
import { createSpeech } from ${JSON.stringify(`${repoRoot}/dist/index.js`)};
import { readFileSync } from 'node:fs';
const [model, wav, lengths, live] = process.argv.slice(1);
const bytes = readFileSync(wav);
const data = bytes.indexOf('data', 12);
const pcm = new Int16Array(bytes.buffer.slice(bytes.byteOffset + data + 8));
const speech = createSpeech({ models: { 'svc-stt-1': model }, vadModel: null });
const texts = [];
for (const ms of lengths.split(',').map(Number)) {
  for (const offset of [16000, 48000, 80000, 120000]) {
    const samples = Float32Array.from(pcm.subarray(offset, offset + ms * 16), (v) => v / 32768);
    if (live === 'live') {
      const transcriber = speech.createTranscriber({ vad: false, interimIntervalMs: 0 });
      const final = new Promise((resolve) => transcriber.once('final', resolve));
      transcriber.write(samples);
      await transcriber.commit();
      texts.push((await final).text);
      transcriber.end();
    } else {
      texts.push((await speech.transcribe(samples, { timestamps: 'word', vad: false })).text);
    }
  }
}
await speech.close();
console.log(JSON.stringify(texts));
`;

function run(lengths: number[], mode: 'file' | 'live') {
  const result = spawnSync(
    process.execPath,
    ['--input-type=module', '-e', child, tinyEn.path as string, sharedAudio('jfk.wav'), lengths.join(','), mode],
    { encoding: 'utf8', timeout: 240_000 },
  );
  return { status: result.status, signal: result.signal, stderr: result.stderr.slice(-2000), stdout: result.stdout };
}

describe.skipIf(tinyEn.skip)('whisper.cpp DTW on windows of a few audio tokens (real tiny.en)', () => {
  it('transcribes 105-160 ms clips of speech with word timestamps without aborting the process', () => {
    const result = run([105, 110, 120, 130, 140, 150, 160], 'file');
    expect(result).toMatchObject({ status: 0, signal: null });
    expect(JSON.parse(result.stdout.trim().split('\n').at(-1) as string)).toHaveLength(28);
  }, 300_000);

  it('a live transcription committed after 120-140 ms of speech gives a final, not an abort', () => {
    const result = run([120, 130, 140], 'live');
    expect(result).toMatchObject({ status: 0, signal: null });
  }, 300_000);
});
