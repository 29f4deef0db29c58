#!/usr/bin/env node
// The linux-arm64 smoke run (scripts/arm64/test.sh --smoke; CI runs it): under the arm64 Node, with the arm64 addon
// (VOXMILL_ADDON_PATH) and real weights, the whole library once:
//   1. the addon loads and ggml runs its NEON code;
//   2. Whisper tiny.en transcribes jfk.wav (word error rate against the reference transcript);
//   3. the Piper voice joe-medium speaks a sentence (ONNX Runtime's arm64 build) into <out>/spoken.wav, which
//      scripts/arm64/smoke-listen.mjs has tiny.en transcribe on the host afterwards (natively: emulated, that
//      transcription took 50 s and checked nothing step 2 does not);
//   4. 16 s of pyannote_sample.wav with both speakers in it are diarized with the GE2E speaker encoder and scored
//      against the reference turns cut to the same stretch.
// Each step prints its time; any check that fails exits 1 naming it. The results go to <out>/smoke.json.
//
//   node scripts/arm64/smoke.mjs <out dir>
//
// Time limits. Emulated, everything runs 100-200x slower than on the host, and how much slower again depends on the
// host: measured on the reference machine, jfk.wav took 72-109 s and the first sentence of speech 52 s idle, 94 s
// with the machine busy. The synthesis worker's stall limit (tts.stallTimeoutMs, 120 s by default: a worker owed audio
// that sends nothing for that long is given up on) is what failed on a 2.5 GHz Intel Xeon: a fresh worker's first
// sentence sends nothing until it exists (the worker thread's start, espeak-ng's WebAssembly compiled under emulation,
// the voice's ONNX session and its inference, all emulated). Here every stall limit is EMULATED_STALL_MS grown by the
// host's measured slowdown (VOXMILL_SLOWDOWN, which scripts/arm64/test.sh measures on the host before it starts this).
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { distEntry, readReferences, realModels, referenceWer, sharedAudio, sharedDir } from '../../bench/lib.mjs';
import { scaledMs, slowdown } from '../lib/machine-speed.mjs';

const { cpuInfo, createSpeech, decodeAudio, parseRttm, scoreDiarization, versions } = await import(distEntry);

const out = resolve(process.argv[2] ?? '');
if (!process.argv[2]) {
  console.error('usage: node scripts/arm64/smoke.mjs <out dir>');
  process.exit(2);
}
mkdirSync(out, { recursive: true });

// Bounds: what tiny.en and the GE2E pipeline reach on x64 (accuracy tier), with room for the arithmetic of another
// instruction set; a broken NEON path or a misread model lands far outside them.
const MAX_JFK_WER = 0.1;
const MAX_DER = 0.2;
const SENTENCE = 'The quick brown fox jumps over the lazy dog near the river bank.';
/** Ten times the slowest first sentence measured on the reference machine (94 s, busy), before the host's slowdown. */
const EMULATED_STALL_MS = 900_000;
/** The stretch of pyannote_sample.wav diarized: both speakers take turns in it (6.69-21.78 s of the reference). */
const DIARIZED = { from: 6.5, to: 22.5 };

const failures = [];
const check = (ok, what) => {
  if (!ok) failures.push(what);
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
};
async function step(name, run) {
  const started = performance.now();
  const result = await run();
  console.log(`  ${name}: ${((performance.now() - started) / 1000).toFixed(1)} s`);
  return result;
}

/** The reference turns inside [from, to), cut to it and moved to start at 0. */
function cutTurns(turns, { from, to }) {
  return turns
    .filter((turn) => turn.end > from && turn.start < to)
    .map((turn) => ({ ...turn, start: Math.max(turn.start, from) - from, end: Math.min(turn.end, to) - from }));
}

const models = realModels(['whisper-tiny.en', 'piper-joe-medium', 'speaker-ge2e']);
const cpu = cpuInfo();
check(process.arch === 'arm64', `running on arm64 (process.arch ${process.arch})`);
check(cpu.instructionSets.includes('NEON'), `ggml runs NEON code (${versions().system.trim()})`);
const stallTimeoutMs = scaledMs(EMULATED_STALL_MS);
console.log(`  host slowdown ${slowdown()}: stall limits ${Math.round(stallTimeoutMs / 1000)} s`);

// jfk.wav: 72 s on 2 threads with the full 30 s window, 31 s with an encoder context fitted to the clip, against
// 0.3 s natively. The smoke decodes with the fitted context and without DTW alignment (its word times are not
// checked here), on both cores.
const FAST = { fittedContextSeconds: 12 };
const speech = createSpeech({
  models: { 'svc-stt-1': { model: models['whisper-tiny.en'], dtw: false } },
  cpuThreads: 2,
  vadModel: `${sharedDir}/models/whisper/ggml-silero-v6.2.0.bin`,
  voiceDirs: [dirname(models['piper-joe-medium'])],
  tts: { stallTimeoutMs },
  diarization: { embeddingModel: models['speaker-ge2e'], stallTimeoutMs },
});
const summary = { arch: process.arch, instructionSets: cpu.instructionSets, blas: cpu.blas, slowdown: slowdown() };
try {
  const jfk = await step('transcribe jfk.wav (11 s)', () => speech.transcribe(sharedAudio('jfk.wav'), FAST));
  summary.jfkWer = referenceWer(jfk.text, readReferences().get('jfk.wav'));
  check(summary.jfkWer <= MAX_JFK_WER, `jfk.wav WER ${(summary.jfkWer * 100).toFixed(1)} % <= ${MAX_JFK_WER * 100} %`);

  const spoken = await step('synthesize a sentence (joe-medium)', () =>
    speech.synthesizeToBuffer({ voice: 'en_US-joe', input: SENTENCE, format: 'wav' }),
  );
  check(spoken.audio.length > 44 + 16_000, `the voice spoke ${spoken.audio.length} bytes of WAV`);
  writeFileSync(join(out, 'spoken.wav'), spoken.audio);
  summary.spoken = { sentence: SENTENCE, seconds: spoken.duration };

  const decoded = await decodeAudio(sharedAudio('pyannote_sample.wav'));
  const stretch = decoded.samples.slice(DIARIZED.from * 16_000, DIARIZED.to * 16_000);
  const diarized = await step(`diarize ${DIARIZED.to - DIARIZED.from} s of pyannote_sample.wav (GE2E)`, () =>
    speech.diarize(stretch),
  );
  const reference = cutTurns(
    parseRttm(readFileSync(sharedAudio('pyannote_sample.rttm'), 'utf8')).get('sample') ?? [],
    DIARIZED,
  );
  summary.der = scoreDiarization(reference, diarized.turns).der;
  summary.speakers = diarized.speakers.length;
  check(diarized.speakers.length === 2, `two speakers found (${diarized.speakers.length})`);
  check(summary.der <= MAX_DER, `DER ${(summary.der * 100).toFixed(1)} % <= ${MAX_DER * 100} %`);
} catch (error) {
  failures.push(`threw: ${error.stack ?? error}`);
  console.log(`FAIL ${error.stack ?? error}`);
} finally {
  await speech.close();
}
writeFileSync(join(out, 'smoke.json'), `${JSON.stringify(summary, null, 2)}\n`);
console.log(JSON.stringify(summary));
if (failures.length > 0) {
  console.error(`arm64 smoke: ${failures.length} check(s) failed`);
  process.exitCode = 1;
}
