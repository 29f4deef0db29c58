// SSML conformance with real weights: each element's effect on en_US-joe-medium, measured (durations of the audio,
// what real Whisper tiny.en hears), with noise_scale and noise_w 0 so that two syntheses of the same sentences
// differ only by what the element does. The table goes to test/accuracy/results/ssml.json (git-ignored) and
// BENCHMARKS.md "SSML".
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Speech } from '../../dist/index.js';
import { joeSpeech } from '../helpers/joe-speech.js';
import { repoRoot } from '../helpers/paths.js';
import { requireRealModel } from '../helpers/real-models.js';
import { normalizeEnglish } from '../helpers/wer.js';

const tinyEn = requireRealModel('whisper-tiny.en');
const joe = requireRealModel('piper-joe-medium');
const resultsFile = join(repoRoot, 'test', 'accuracy', 'results', 'ssml.json');

describe.skipIf(tinyEn.skip || joe.skip)(
  `SSML conformance with en_US-joe-medium ${tinyEn.reason || joe.reason}`,
  () => {
    let speech: Speech;
    let voice: string;
    const table: Array<{ element: string; measured: string }> = [];
    beforeAll(async () => {
      ({ speech, voice } = await joeSpeech(joe.path as string, { 'svc-stt-1': tinyEn.path as string }));
    });
    afterAll(async () => {
      await speech?.close();
      mkdirSync(dirname(resultsFile), { recursive: true });
      writeFileSync(resultsFile, `${JSON.stringify(table, null, 2)}\n`);
    });

    const synth = (input: string) =>
      speech.synthesizeToBuffer({ voice, input, format: 'wav', noiseScale: 0, noiseW: 0, sentenceSilence: 0 });
    const seconds = async (input: string) => (await synth(input)).duration;
    const heard = async (input: string) => {
      const text = (await speech.transcribe((await synth(input)).audio, { model: 'svc-stt-1', language: 'en' })).text;
      return normalizeEnglish(text);
    };

    it('<break>: a pause of exactly its time (time) or its strength', async () => {
      const plain = await seconds('<speak>The doors open. The show begins.</speak>');
      for (const [element, expected] of [
        ['<break time="500ms"/>', 0.5],
        ['<break time="1.5s"/>', 1.5],
        ['<break strength="strong"/>', 0.4],
        ['<break strength="x-weak"/>', 0.1],
      ] as const) {
        const added = (await seconds(`<speak>The doors open.${element}The show begins.</speak>`)) - plain;
        table.push({ element, measured: `adds ${added.toFixed(3)} s between two sentences (asked ${expected} s)` });
        expect(Math.abs(added - expected), element).toBeLessThanOrEqual(0.02);
      }
      // Inside a sentence the sentence is cut there: the break's time, plus what speaking the halves as two phrases adds
      // (measured: 0.37 s of the voice's own phrase-final lengthening and edges).
      const inside =
        (await seconds('<speak>The doors <break time="1s"/> open.</speak>')) -
        (await seconds('<speak>The doors open.</speak>'));
      table.push({ element: '<break time="1s"/> inside a sentence', measured: `adds ${inside.toFixed(3)} s` });
      expect(inside).toBeGreaterThan(1);
      expect(inside).toBeLessThan(1.6);
    });

    it('<s> and <p>: sentence edges (the pause between sentences, the text heard the same)', async () => {
      const withPause = (input: string) =>
        speech.synthesizeToBuffer({ voice, input, format: 'wav', noiseScale: 0, noiseW: 0 }).then((a) => a.duration);
      const added =
        (await withPause('<speak><p>Good morning</p><p>see you soon</p></speak>')) -
        (await withPause('<speak>Good morning see you soon</speak>'));
      table.push({
        element: '<p>…</p><p>…</p>',
        measured: `adds ${added.toFixed(3)} s (a 0.2 s sentence pause and the end of a sentence)`,
      });
      expect(added).toBeGreaterThan(0.15);
      expect(await heard('<speak><s>Good morning</s><s>see you soon</s></speak>')).toBe('good morning see you soon');
    });

    it('<say-as>, <sub>, <phoneme>: what the recognizer hears', async () => {
      for (const [element, input, expected] of [
        [
          'say-as characters',
          '<speak>The code is <say-as interpret-as="characters">cat</say-as>.</speak>',
          /^the code is c a t$/,
        ],
        [
          'say-as cardinal',
          '<speak>We sold <say-as interpret-as="cardinal">1234</say-as> tickets.</speak>',
          /^we sold 1234 tickets$/,
        ],
        ['say-as ordinal', '<speak>She came <say-as interpret-as="ordinal">3</say-as>.</speak>', /^she came 3rd$/],
        ['say-as digits', '<speak>Room <say-as interpret-as="digits">907</say-as>.</speak>', /^room (9 0 7|907)$/],
        [
          'say-as telephone',
          '<speak>Call <say-as interpret-as="telephone">555-0123</say-as>.</speak>',
          /^call (5 5 5 0 1 2 3|555 0?123)$/,
        ],
        [
          'say-as date',
          '<speak>It is due <say-as interpret-as="date" format="ymd">2026-11-24</say-as>.</speak>',
          // tiny.en writes the spoken "twenty-fourth" as "24th" or "24" from one level of the same audio to the next,
          // and "due" as its homophone "do" with the shortened context for short clips: the date is what is checked.
          /^it is (due|do) november 24(th)? 2026$/,
        ],
        [
          'sub',
          '<speak>Open the <sub alias="World Wide Web">WWW</sub> page.</speak>',
          /^open the world wide web page$/,
        ],
        [
          'phoneme',
          '<speak>I like <phoneme alphabet="ipa" ph="təmˈeɪɾoʊ">potato</phoneme> soup.</speak>',
          /^i like tomato soup$/,
        ],
      ] as const) {
        const text = await heard(input);
        table.push({ element, measured: `heard "${text}"` });
        expect(text, element).toMatch(expected);
      }
    });

    it('<prosody rate>: the duration follows the rate; <emphasis> changes nothing', async () => {
      const sentence = 'The keeper climbed the stairs to wind the clock.';
      const plain = await seconds(`<speak>${sentence}</speak>`);
      for (const [rate, low, high] of [
        ['x-slow', 1.5, 2.1],
        ['slow', 1.15, 1.45],
        ['fast', 0.7, 0.9],
        ['200%', 0.45, 0.7],
      ] as const) {
        const ratio = (await seconds(`<speak><prosody rate="${rate}">${sentence}</prosody></speak>`)) / plain;
        table.push({ element: `<prosody rate="${rate}">`, measured: `${ratio.toFixed(3)}x the duration` });
        expect(ratio, rate).toBeGreaterThan(low);
        expect(ratio, rate).toBeLessThan(high);
      }
      const emphasis = await seconds(`<speak><emphasis level="strong">${sentence}</emphasis></speak>`);
      table.push({
        element: '<emphasis>',
        measured: `${(emphasis / plain).toFixed(3)}x the duration (accepted, no effect)`,
      });
      expect(emphasis).toBe(plain);
    });
  },
);
