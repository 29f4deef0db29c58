// Text -> speech -> text with real weights: the Piper voice en_US-joe-medium speaks, real Whisper tiny.en listens,
// and the word error rate against the text that was spoken says whether the voice is intelligible. A wrong
// phoneme-id map, a wrong `scales` order, a bad resampler or a broken encoder all show up here as a high WER.
//
// Targets (issue "Real models in the loop"):
// - the 30 sentences of test/accuracy/sentences.ts through the library (voice defaults, WAV): corpus WER <= 10%;
// - POST /v1/speech in every format (mp3, opus, wav, pcm16) at 8, 16, 24 and 48 kHz (in CI each format and each rate
//   once), and at speed 0.75 and 1.5: each response transcribed, WER <= 15% each.
//
// The sentences are scored with the same English normalizer as the STT accuracy test, so "5 p.m." and "five PM"
// count as the same words. Per-case texts and rates go to test/accuracy/results/tts-roundtrip.json (git-ignored).
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSpeechHandler, type Speech } from '../../dist/index.js';
import { wavFile } from '../helpers/hostile-audio.js';
import { joeSpeech } from '../helpers/joe-speech.js';
import { repoRoot } from '../helpers/paths.js';
import { requireRealModel } from '../helpers/real-models.js';
import { ciSample } from '../helpers/test-scope.js';
import { corpusWer, type WerResult, wordErrorRate } from '../helpers/wer.js';
import { ACCURACY_SENTENCES } from './sentences.mjs';

const tinyEn = requireRealModel('whisper-tiny.en');
const joe = requireRealModel('piper-joe-medium');
const resultsFile = join(repoRoot, 'test', 'accuracy', 'results', 'tts-roundtrip.json');

// Three sentences with a number, a question and a comma: long enough that one misheard word stays under 15%.
const PARAGRAPH =
  'The library opens at nine in the morning and closes at six. Could you bring the blue folder from my desk? ' +
  'We will meet again next week to finish the report.';
const FORMATS = ['mp3', 'opus', 'wav', 'pcm16'] as const;
const RATES = [8000, 16000, 24000, 48000] as const;
const SPEEDS = [0.75, 1.5] as const;

interface CaseResult extends WerResult {
  name: string;
  text: string;
  seconds: number;
}

const skip = tinyEn.skip || joe.skip;
describe.skipIf(skip)(
  `TTS -> STT round trip: en_US-joe-medium spoken, tiny.en listening ${tinyEn.reason || joe.reason}`,
  () => {
    let speech: Speech;
    let voice: string;
    let server: Server;
    let baseUrl: string;
    const results: Record<string, CaseResult[]> = {};

    beforeAll(async () => {
      ({ speech, voice } = await joeSpeech(joe.path as string, { 'svc-stt-1': tinyEn.path as string }));
      server = createServer(createSpeechHandler({ speech, auth: false }));
      await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
      baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    });

    afterAll(async () => {
      await new Promise((closed) => server?.close(closed));
      await speech?.close();
      mkdirSync(dirname(resultsFile), { recursive: true });
      writeFileSync(resultsFile, `${JSON.stringify(results, null, 2)}\n`);
    });

    async function heard(audio: Uint8Array, spoken: string, name: string, seconds: number): Promise<CaseResult> {
      const transcript = await speech.transcribe(audio, { model: 'svc-stt-1', language: 'en' });
      // The voice reads what is in brackets; the normalizer drops bracketed text (Whisper's "(laughs)"), so the
      // reference loses the brackets themselves, not their words.
      const reference = spoken.replace(/[()[\]{}]/g, ' ');
      return { name, text: transcript.text, seconds, ...wordErrorRate(reference, transcript.text) };
    }

    it('the 30 sentences through the library: corpus WER <= 10%', async () => {
      const cases: CaseResult[] = [];
      for (const [index, sentence] of ACCURACY_SENTENCES.entries()) {
        const spoken = await speech.synthesizeToBuffer({ voice, input: sentence, format: 'wav' });
        cases.push(await heard(spoken.audio, sentence, `sentence ${index + 1}`, spoken.duration));
      }
      results.sentences = cases;
      expect(corpusWer(cases)).toBeLessThanOrEqual(0.1);
    });

    async function speakOverHttp(body: Record<string, unknown>): Promise<Buffer> {
      const response = await fetch(`${baseUrl}/v1/speech`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'svc-tts-1', voice, input: PARAGRAPH, ...body }),
      });
      const bytes = Buffer.from(await response.arrayBuffer());
      if (response.status !== 200)
        throw new Error(`POST /v1/speech ${JSON.stringify(body)}: ${response.status} ${bytes}`);
      return bytes;
    }

    // In CI each format once and each rate once (mp3 at 8 kHz, opus at 16, wav at 24, pcm16 at 48); every
    // combination with `npm run test:accuracy:full`.
    const httpCases = [
      ...ciSample(
        FORMATS.flatMap((format, f) => RATES.map((rate, r) => ({ format, sample_rate: rate, diagonal: f === r }))),
        (c) => c.diagonal,
      ).map(({ format, sample_rate }) => ({ format, sample_rate })),
      ...SPEEDS.map((speed) => ({ format: 'wav' as const, speed })),
    ];
    it.each(httpCases)('POST /v1/speech %o stays intelligible: WER <= 15%', async (request) => {
      const bytes = await speakOverHttp(request);
      // Raw pcm16 carries no rate: wrap it in a WAV header so the decoder knows it.
      const audio =
        request.format === 'pcm16'
          ? wavFile({ format: 1, rate: (request as { sample_rate: number }).sample_rate, channels: 1, bits: 16 }, bytes)
          : bytes;
      const result = await heard(audio, PARAGRAPH, JSON.stringify(request), 0);
      results.http ??= [];
      results.http.push(result);
      expect(result.wer, `heard: "${result.text}"`).toBeLessThanOrEqual(0.15);
    });
  },
);
