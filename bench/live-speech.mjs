#!/usr/bin/env node
// Live speech (issue 17, streaming speech): text written as a language model streams it, with the real Piper voice
// en_US-joe-medium (npm run models:test), pcm16.
// - Time to first audio: from the write that completes the first sentence (the next token confirms where it ends)
//   to the first audio chunk, against the reference measured in the same run, alternating: synthesize() of that
//   sentence alone, from the call to its first byte.
// - Barge-in: from cancel(), given while a long answer is being spoken, to the end of the audio stream and to the
//   worker slot being free again (ttsStatus().active 0), how many sentences were started after it, and the next
//   reply's first audio asked for at once (the worker finishes the ONNX Runtime call it is in) against an idle one.
//
//   node bench/live-speech.mjs [--repeats 7]
//
// Results: bench/out/live-speech-<time>.json and a table on stdout.
import { dirname } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import {
  benchArgs,
  distEntry,
  ensureDist,
  flag,
  gitCommit,
  machineFacts,
  median,
  realModels,
  runMain,
  spread,
  writeResults,
} from './lib.mjs';

const { settings } = benchArgs('node bench/live-speech.mjs [flags]', {
  repeats: flag.integer('measurements of each kind', 7),
});

const FIRST = 'Sure, here is what I found about the weather tomorrow.';
// Tokens as a language model sends them: a few characters each.
const tokens = (text) => text.match(/.{1,4}/gsu) ?? [];
const LONG = 'The forecast says it will rain in the morning and clear up by the afternoon. '.repeat(20);

async function firstAudioLive(speech, voice) {
  const live = await speech.createLiveSpeech({ voice, format: 'pcm16' });
  const first = new Promise((resolve) => live.once('data', () => resolve(performance.now())));
  live.resume();
  for (const token of tokens(FIRST)) live.write(token);
  // The next token confirms the sentence's end: the clock starts here.
  const started = performance.now();
  live.write(' It');
  const at = await first;
  live.cancel();
  live.end();
  return at - started;
}

async function firstAudioWhole(speech, voice) {
  const started = performance.now();
  const stream = await speech.synthesize({ voice, input: FIRST, format: 'pcm16' });
  const at = await new Promise((resolve) => stream.once('data', () => resolve(performance.now())));
  stream.destroy();
  return at - started;
}

async function bargeIn(speech, voice) {
  const live = await speech.createLiveSpeech({ voice, format: 'pcm16', maxPendingSentences: 100 });
  live.write(LONG);
  let chunks = 0;
  const cancelled = new Promise((resolve) =>
    live.on('data', () => {
      // Half a second of audio in: the user starts talking.
      if (++chunks === 3) {
        const at = performance.now();
        const sentences = live.progress.sentences;
        live.cancel();
        resolve({ at, sentences });
      }
    }),
  );
  const ended = new Promise((resolve) => live.once('end', () => resolve(performance.now())));
  const { at, sentences } = await cancelled;
  const end = await ended;
  while (speech.ttsStatus().active > 0) await new Promise((resolve) => setTimeout(resolve, 1));
  const freed = performance.now();
  // The worker may still be inside ONNX Runtime for the sentence it was on (its audio is dropped): the next reply's
  // first audio, asked for at once, shows what that costs against an idle worker.
  const nextReplyMs = await firstAudioWhole(speech, voice);
  await new Promise((resolve) => setTimeout(resolve, 300));
  live.end();
  return { endMs: end - at, freedMs: freed - at, nextReplyMs, extraSentences: live.progress.sentences - sentences };
}

async function main() {
  ensureDist();
  const voxmill = await import(pathToFileURL(distEntry).href);
  const joe = realModels(['piper-joe-medium'])['piper-joe-medium'];
  const speech = voxmill.createSpeech({ voiceDirs: [dirname(joe)], tts: { workers: 1 } });
  try {
    const voice = (await speech.listVoices()).find((v) => v.id.includes('joe'))?.id;
    if (!voice) throw new Error(`no joe voice in ${dirname(joe)}`);
    await speech.synthesizeToBuffer({ voice, input: 'Warm up.', format: 'pcm16' });
    const live = [];
    const whole = [];
    for (let i = 0; i < settings.repeats; i++) {
      if (i % 2 === 0) {
        live.push(await firstAudioLive(speech, voice));
        whole.push(await firstAudioWhole(speech, voice));
      } else {
        whole.push(await firstAudioWhole(speech, voice));
        live.push(await firstAudioLive(speech, voice));
      }
    }
    const barge = [];
    for (let i = 0; i < settings.repeats; i++) barge.push(await bargeIn(speech, voice));
    const fmt = (values) =>
      `${median(values).toFixed(0)} ms (${spread(values)
        .map((v) => v.toFixed(0))
        .join('-')})`;
    console.log(`voice ${voice}, pcm16, ${settings.repeats} repeats, medians (range):`);
    console.log(`| measure | live speech | reference: synthesize() of the sentence alone | ratio |`);
    console.log(`| --- | --: | --: | --: |`);
    console.log(
      `| first complete sentence to first audio | ${fmt(live)} | ${fmt(whole)} | ${(median(whole) / median(live)).toFixed(2)} |`,
    );
    const endMs = barge.map((b) => b.endMs);
    const freedMs = barge.map((b) => b.freedMs);
    const extra = barge.map((b) => b.extraSentences);
    console.log(`| barge-in: cancel() to end of audio | ${fmt(endMs)} | | |`);
    console.log(`| barge-in: cancel() to worker free | ${fmt(freedMs)} | | |`);
    console.log(`| sentences started after cancel() | ${Math.max(...extra)} at most | | |`);
    const next = barge.map((b) => b.nextReplyMs);
    console.log(
      `| next reply's first audio right after cancel() | ${fmt(next)} | ${fmt(whole)} (idle worker) | ${(median(whole) / median(next)).toFixed(2)} |`,
    );
    const out = writeResults('live-speech', {
      commit: gitCommit(),
      machine: machineFacts(),
      voice,
      firstAudioMs: { live, whole },
      bargeIn: barge,
    });
    console.log(`raw results: ${out}`);
  } finally {
    await speech.close();
  }
}

runMain('live-speech', main);
