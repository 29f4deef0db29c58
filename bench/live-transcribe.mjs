#!/usr/bin/env node
// Live transcription (issue 17) with the real Whisper tiny.en (npm run models:test), default live settings (an
// utterance ends after 500 ms of silence, 200 ms padding, interim every 1000 ms):
// - jfk.wav streamed at real time in 20 ms chunks of 16-bit PCM: from the moment the last speech sample was written
//   (the end of detectSpeechRegions' last region) to the final text of that utterance, and from the first speech
//   sample written to the first interim text; and the first again with interims off; repeated.
// - Accuracy: the English clips with a reference transcript in ../shared/audio/transcripts.tsv (jfk, the LibriSpeech
//   and LJ Speech clips, gb0) streamed as fast as allowed; WER of the finals joined, against speech.transcribe() of
//   the same file in the same run (same engine, model and tier defaults), both against the reference.
//
//   node bench/live-transcribe.mjs [--repeats 3]
import { join } from 'node:path';
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
  readReferences,
  realModels,
  runMain,
  sharedAudio,
  sharedDir,
  spread,
  toPcm16,
  transcriptWords,
  wordEdits,
  writeResults,
} from './lib.mjs';

const { settings } = benchArgs('node bench/live-transcribe.mjs [flags]', {
  repeats: flag.integer('real-time runs of jfk.wav', 3),
});
const CLIPS = [
  'jfk.wav',
  '1089-134686-0000.flac',
  '1089-134686-0001.flac',
  '1089-134691-0000.flac',
  '1089-134691-0001.flac',
  '2830-3980-0043.wav',
  '4507-16021-0012.wav',
  '8455-210777-0068.wav',
  'LJ001-0001.wav',
  'LJ001-0002.mp3',
  'LJ001-0007.flac',
  'gb0.wav',
];

async function realTime(speech, samples, regions, options = {}) {
  const live = speech.createTranscriber(options);
  const speechStart = regions[0].start;
  const speechEnd = regions.at(-1).end;
  let written = 0; // seconds of audio written
  let startWrittenAt;
  let endWrittenAt;
  let firstInterimAt;
  let lastFinalAt;
  live.on('interim', () => {
    firstInterimAt ??= performance.now();
  });
  live.on('final', (event) => {
    if (event.end >= speechEnd - 0.5) lastFinalAt ??= performance.now();
  });
  const bytes = toPcm16(samples);
  const chunk = 640; // 20 ms
  const started = performance.now();
  for (let i = 0; i < bytes.length; i += chunk) {
    // Paced by the clock, not by sleeps, so the delays do not add up.
    const due = started + (i / 2 / 16000) * 1000;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    if (!live.write(bytes.subarray(i, i + chunk))) await new Promise((resolve) => live.once('drain', resolve));
    written = (i + chunk) / 2 / 16000;
    if (startWrittenAt === undefined && written >= speechStart) startWrittenAt = performance.now();
    if (endWrittenAt === undefined && written >= speechEnd) endWrittenAt = performance.now();
  }
  // Silence after the clip, as a microphone would keep sending, until the final arrives.
  const silence = Buffer.alloc(chunk);
  while (lastFinalAt === undefined) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    live.write(silence);
  }
  live.end();
  await new Promise((resolve) => live.once('finish', resolve));
  return {
    finalMs: lastFinalAt - endWrittenAt,
    interimMs: firstInterimAt === undefined ? null : firstInterimAt - startWrittenAt,
  };
}

async function streamed(speech, samples) {
  const live = speech.createTranscriber({ interimIntervalMs: 0 });
  const texts = [];
  live.on('final', (event) => texts.push(event.text));
  const bytes = toPcm16(samples);
  for (let i = 0; i < bytes.length; i += 640) {
    if (!live.write(bytes.subarray(i, i + 640))) await new Promise((resolve) => live.once('drain', resolve));
  }
  live.end();
  await new Promise((resolve) => live.once('finish', resolve));
  return texts.join(' ');
}

async function main() {
  ensureDist();
  const voxmill = await import(pathToFileURL(distEntry).href);
  const model = realModels(['whisper-tiny.en'])['whisper-tiny.en'];
  const vadModel = join(sharedDir, 'models', 'whisper', 'ggml-silero-v6.2.0.bin');
  const speech = voxmill.createSpeech({ vadModel, models: { 'svc-stt-1': model } });
  const references = readReferences();
  try {
    const { samples: jfk } = await voxmill.decodeAudio(sharedAudio('jfk.wav'));
    const regions = await voxmill.detectSpeechRegions(jfk, { model: vadModel });
    await speech.transcribe(jfk); // warm-up: model load
    const timings = [];
    const quiet = [];
    for (let i = 0; i < settings.repeats; i++) {
      timings.push(await realTime(speech, jfk, regions));
      quiet.push(await realTime(speech, jfk, regions, { interimIntervalMs: 0 }));
    }
    // Interims need an utterance longer than one interval plus one decode: the first 20 s of gb0 (a speech).
    const { samples: gb0 } = await voxmill.decodeAudio(sharedAudio('gb0.wav'));
    const gb0Start = gb0.subarray(0, 20 * 16000);
    const gb0Regions = await voxmill.detectSpeechRegions(gb0Start, { model: vadModel });
    const speechInterims = [];
    for (let i = 0; i < settings.repeats; i++) speechInterims.push(await realTime(speech, gb0Start, gb0Regions));
    const rows = [];
    for (const clip of CLIPS) {
      const reference = transcriptWords(references.get(clip) ?? '');
      const { samples } = await voxmill.decodeAudio(sharedAudio(clip));
      const live = transcriptWords(await streamed(speech, samples));
      const file = transcriptWords((await speech.transcribe(sharedAudio(clip))).text);
      rows.push({
        clip,
        words: reference.length,
        liveEdits: wordEdits(reference, live),
        fileEdits: wordEdits(reference, file),
      });
    }
    const words = rows.reduce((a, r) => a + r.words, 0);
    const liveWer = rows.reduce((a, r) => a + r.liveEdits, 0) / words;
    const fileWer = rows.reduce((a, r) => a + r.fileEdits, 0) / words;
    const fmt = (values) =>
      `${median(values).toFixed(0)} ms (${spread(values)
        .map((v) => v.toFixed(0))
        .join('-')})`;
    console.log(`real tiny.en, ${settings.repeats} real-time runs of jfk.wav (20 ms chunks), medians (range):`);
    console.log(
      `- end of speech to final text: ${fmt(timings.map((t) => t.finalMs))} (500 ms of it is the VAD's silence)`,
    );
    const interims = timings.map((t) => t.interimMs).filter((ms) => ms !== null);
    console.log(
      `- first speech to first interim text: ${interims.length ? fmt(interims) : 'none'} (${interims.length} of ${timings.length} runs had one)`,
    );
    console.log(`- end of speech to final text without interims: ${fmt(quiet.map((t) => t.finalMs))}`);
    const gbInterims = speechInterims.map((t) => t.interimMs).filter((ms) => ms !== null);
    console.log(
      `- gb0.wav's first 20 s at real time: first speech to first interim text ${gbInterims.length ? fmt(gbInterims) : 'none'} (${gbInterims.length} of ${speechInterims.length} runs)`,
    );
    console.log(`| clip | words | WER streamed | WER file |`);
    console.log(`| --- | --: | --: | --: |`);
    for (const r of rows) {
      console.log(
        `| ${r.clip} | ${r.words} | ${((100 * r.liveEdits) / r.words).toFixed(1)} % | ${((100 * r.fileEdits) / r.words).toFixed(1)} % |`,
      );
    }
    console.log(
      `| all ${rows.length} clips | ${words} | ${(100 * liveWer).toFixed(2)} % | ${(100 * fileWer).toFixed(2)} % |`,
    );
    const out = writeResults('live-transcribe', {
      commit: gitCommit(),
      machine: machineFacts(),
      timings,
      withoutInterims: quiet,
      gb0Interims: speechInterims,
      rows,
      liveWer,
      fileWer,
    });
    console.log(`raw results: ${out}`);
  } finally {
    await speech.close();
  }
}

runMain('live-transcribe', main);
