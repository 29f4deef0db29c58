#!/usr/bin/env node
// The linux-arm64 smoke run (scripts/arm64/test.sh --smoke; CI runs it): under the arm64 Node, with the arm64 addon
// (VOXMILL_ADDON_PATH) and real weights, the whole library once:
//   1. the addon loads and ggml runs its NEON code;
//   2. Whisper tiny.en transcribes jfk.wav (word error rate against the reference transcript);
//   3. the Piper voice joe-medium speaks a sentence (ONNX Runtime's arm64 build), and tiny.en understands it;
//   4. pyannote_sample.wav is diarized with the GE2E speaker encoder and scored against its reference.
// Each step prints its time; any check that fails exits 1 naming it.
import { readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { performance } from 'node:perf_hooks';
import { distEntry, readReferences, realModels, referenceWer, sharedAudio, sharedDir } from '../../bench/lib.mjs';

const { cpuInfo, createSpeech, parseRttm, scoreDiarization, versions } = await import(distEntry);

// Bounds: what tiny.en and the GE2E pipeline reach on x64 (accuracy tier), with room for the arithmetic of another
// instruction set; a broken NEON path or a misread model lands far outside them.
const MAX_JFK_WER = 0.1;
const MAX_SPOKEN_WER = 0.2;
const MAX_DER = 0.2;
const SENTENCE = 'The quick brown fox jumps over the lazy dog near the river bank.';

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

const models = realModels(['whisper-tiny.en', 'piper-joe-medium', 'speaker-ge2e']);
const cpu = cpuInfo();
check(process.arch === 'arm64', `running on arm64 (process.arch ${process.arch})`);
check(cpu.instructionSets.includes('NEON'), `ggml runs NEON code (${versions().system.trim()})`);

// Emulated, whisper runs 100-200x slower than on the host (jfk.wav: 72 s on 2 threads with the full 30 s window, 31 s
// with an encoder context fitted to the clip, against 0.3 s natively). The smoke decodes with the fitted context and
// without DTW alignment (its word times are not checked here), on both cores.
const FAST = { fittedContextSeconds: 12 };
const speech = createSpeech({
  models: { 'svc-stt-1': { model: models['whisper-tiny.en'], dtw: false } },
  cpuThreads: 2,
  vadModel: `${sharedDir}/models/whisper/ggml-silero-v6.2.0.bin`,
  voiceDirs: [dirname(models['piper-joe-medium'])],
  diarization: { embeddingModel: models['speaker-ge2e'] },
});
const summary = { arch: process.arch, instructionSets: cpu.instructionSets, blas: cpu.blas };
try {
  const jfk = await step('transcribe jfk.wav (11 s)', () => speech.transcribe(sharedAudio('jfk.wav'), FAST));
  summary.jfkWer = referenceWer(jfk.text, readReferences().get('jfk.wav'));
  check(summary.jfkWer <= MAX_JFK_WER, `jfk.wav WER ${(summary.jfkWer * 100).toFixed(1)} % <= ${MAX_JFK_WER * 100} %`);

  const spoken = await step('synthesize a sentence (joe-medium)', () =>
    speech.synthesizeToBuffer({ voice: 'en_US-joe', input: SENTENCE, format: 'wav' }),
  );
  check(spoken.audio.length > 44 + 16_000, `the voice spoke ${spoken.audio.length} bytes of WAV`);
  const heard = await step('transcribe the spoken sentence', () => speech.transcribe(spoken.audio, FAST));
  summary.spokenWer = referenceWer(heard.text, SENTENCE);
  check(
    summary.spokenWer <= MAX_SPOKEN_WER,
    `tiny.en understands the voice: "${heard.text.trim()}" WER ${(summary.spokenWer * 100).toFixed(1)} %`,
  );

  const diarized = await step('diarize pyannote_sample.wav (30 s, GE2E)', () =>
    speech.diarize(sharedAudio('pyannote_sample.wav')),
  );
  const reference = parseRttm(readFileSync(sharedAudio('pyannote_sample.rttm'), 'utf8')).get('sample') ?? [];
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
console.log(JSON.stringify(summary));
if (failures.length > 0) {
  console.error(`arm64 smoke: ${failures.length} check(s) failed`);
  process.exitCode = 1;
}
