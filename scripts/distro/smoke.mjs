#!/usr/bin/env node
// The smoke run of one distribution in the matrix (scripts/distro/matrix.sh), inside its root filesystem, in an app
// where voxmill and its platform package were installed from the release's tarballs:
//   1. the addon loads (and says FFmpeg is built in);
//   2. one file of each input format decodes to jfk's 11 s;
//   3. Whisper tiny.en transcribes jfk.wav (word error rate against the reference);
//   4. the Piper voice joe-medium speaks a sentence in each output format;
//   5. pyannote_sample.wav is diarized with the GE2E encoder and scored against its reference turns.
// Each step's time and result go to stdout as one JSON line at the end; exit 1 when a check fails.
//
//   node smoke.mjs <inputs.json> [--quick] [--expect-cpu <target>]
//     inputs.json     matrix.sh writes it: the paths of the audio, the models and the reference
//     --quick         steps 1 to 3 only (matrix.sh's run on an emulated CPU without AVX2, where each takes a minute)
//     --expect-cpu    the addon loaded must be this build (cpuInfo().target: portable, x86-64-v2)
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';

const inputs = JSON.parse(readFileSync(process.argv[2] ?? '', 'utf8'));
const quick = process.argv.includes('--quick');
const expectCpu = process.argv.includes('--expect-cpu') ? process.argv[process.argv.indexOf('--expect-cpu') + 1] : '';
const voxmillEntry = createRequire(`${process.cwd()}/package.json`).resolve('voxmill');
const started = performance.now();
const { cpuInfo, createSpeech, decodeAudio, parseRttm, scoreDiarization, versions } = await import(
  pathToFileURL(voxmillEntry).href
);
const result = { steps: [], failures: [] };
const seconds = (from) => Math.round((performance.now() - from) / 100) / 10;
async function step(name, run) {
  const from = performance.now();
  try {
    const detail = await run();
    result.steps.push({ name, seconds: seconds(from), ok: true, ...detail });
  } catch (error) {
    result.steps.push({ name, seconds: seconds(from), ok: false, error: String(error?.message ?? error) });
    result.failures.push(name);
  }
}
const words = (text) =>
  text
    .toLowerCase()
    .replace(/[^a-z0-9' ]+/g, ' ')
    .split(/\s+/)
    .filter(Boolean);
/** Word error rate: word edits (Levenshtein) over the reference's words. */
function wer(text, reference) {
  const [a, b] = [words(text), words(reference)];
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(previous[j] + 1, row[j - 1] + 1, previous[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = row;
  }
  return previous[b.length] / b.length;
}
const expect = (ok, what) => {
  if (!ok) throw new Error(what);
};

await step('load', async () => {
  const v = versions();
  expect(v.ffmpegLinkage === 'static', `FFmpeg is ${v.ffmpegLinkage}, not built in`);
  const cpu = cpuInfo().target;
  expect(!expectCpu || cpu === expectCpu, `the addon loaded is the ${cpu} build, not ${expectCpu}`);
  return { importSeconds: seconds(started), ffmpeg: v.ffmpeg, whisper: v.whisper, cpu };
});
await step('decode every input format', async () => {
  const durations = {};
  for (const file of inputs.formats) {
    const { samples } = await decodeAudio(readFileSync(file));
    durations[file.split('/').pop()] = Math.round((samples.length / 16000) * 10) / 10;
    expect(samples.length / 16000 > 10.5 && samples.length / 16000 < 11.5, `${file} decoded to ${samples.length}`);
  }
  return { durations };
});
const speech = createSpeech({
  models: { 'svc-stt-1': { model: inputs.tinyEn } },
  vadModel: inputs.vad,
  cpuThreads: 2,
  voiceDirs: [dirname(inputs.voice)],
  diarization: { embeddingModel: inputs.ge2e },
});
try {
  await step('transcribe jfk.wav (tiny.en)', async () => {
    const { text } = await speech.transcribe(inputs.jfk);
    const rate = wer(text, inputs.jfkReference);
    expect(rate <= 0.1, `WER ${rate} for "${text}"`);
    return { wer: rate };
  });
  if (!quick) await later();
} finally {
  await speech.close();
}
console.log(JSON.stringify(result));
process.exitCode = result.failures.length > 0 ? 1 : 0;

/** Steps 4 and 5. */
async function later() {
  await step('speak a sentence in every output format (joe-medium)', async () => {
    const bytes = {};
    for (const format of ['mp3', 'opus', 'aac', 'flac', 'wav', 'pcm16']) {
      const { audio } = await speech.synthesizeToBuffer({
        voice: 'en_US-joe',
        input: 'The quick brown fox jumps over the lazy dog.',
        format,
      });
      bytes[format] = audio.length;
      expect(audio.length > 4000, `${format}: ${audio.length} bytes`);
    }
    return { bytes };
  });
  await step('diarize pyannote_sample.wav (GE2E)', async () => {
    const { samples } = await decodeAudio(readFileSync(inputs.pyannote));
    const diarized = await speech.diarize(samples);
    const reference = parseRttm(readFileSync(inputs.pyannoteRttm, 'utf8')).get('sample') ?? [];
    const { der } = scoreDiarization(reference, diarized.turns);
    expect(diarized.speakers.length === 2 && der <= 0.2, `${diarized.speakers.length} speakers, DER ${der}`);
    return { der: Math.round(der * 1000) / 1000, speakers: diarized.speakers.length };
  });
}
