#!/usr/bin/env node
// The host's half of the linux-arm64 smoke (scripts/arm64/test.sh --smoke): real Whisper tiny.en, natively on this
// machine, transcribes the sentence the arm64 build spoke under qemu (scripts/arm64/smoke.mjs wrote it and the
// sentence to <out>), so the arm64 voice is checked by a recognizer without emulating one more transcription.
//
//   node scripts/arm64/smoke-listen.mjs <out dir>
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { distEntry, realModels, referenceWer } from '../../bench/lib.mjs';

const { createSpeech } = await import(distEntry);
const MAX_SPOKEN_WER = 0.2;

if (!process.argv[2]) {
  console.error('usage: node scripts/arm64/smoke-listen.mjs <out dir>');
  process.exit(2);
}
const out = resolve(process.argv[2]);
const { spoken } = JSON.parse(readFileSync(join(out, 'smoke.json'), 'utf8'));
if (!spoken) {
  console.error('arm64 smoke: the arm64 run spoke nothing to listen to');
  process.exit(1);
}
const models = realModels(['whisper-tiny.en']);
const speech = createSpeech({ models: { 'svc-stt-1': { model: models['whisper-tiny.en'], dtw: false } } });
try {
  const heard = await speech.transcribe(readFileSync(join(out, 'spoken.wav')), { language: 'en' });
  const wer = referenceWer(heard.text, spoken.sentence);
  const ok = wer <= MAX_SPOKEN_WER;
  console.log(
    `${ok ? 'ok  ' : 'FAIL'} tiny.en (on the host) understands the arm64 voice: "${heard.text.trim()}" ` +
      `WER ${(wer * 100).toFixed(1)} % <= ${MAX_SPOKEN_WER * 100} %`,
  );
  if (!ok) process.exitCode = 1;
} finally {
  await speech.close();
}
