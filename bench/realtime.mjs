#!/usr/bin/env node
// The /v1/realtime WebSocket endpoint (issue 17) with the real Whisper tiny.en and the real Piper joe voice, over a
// real socket to createSpeechServer on 127.0.0.1 (client and server in one process; the client's share of the CPU is
// base64 and JSON of 20 ms chunks):
// - One session: jfk.wav resampled to 24 kHz (as OpenAI clients send) streamed at real time in 20 ms appends, server
//   VAD with 500 ms silence: from the moment the last speech sample was sent to the `completed` of that utterance,
//   from each utterance's `speech_stopped` (the VAD's end of speech) to its `completed`, and
//   from the first speech sample sent to the first interim (session.voxmill.interim_interval_ms 1000). Compared with
//   the library's LiveTranscriber fed the same way in the same run (bench/live-transcribe.mjs's method), so the
//   socket's own cost shows as the difference.
// - Speech: `voxmill.speech.append` of a two-sentence reply, time to the first audio delta; cancel to `done`.
// - N concurrent sessions (default 20), each streaming jfk.wav at real time from a staggered start: sessions
//   accepted and refused (maxSessions), utterances completed, errors by code, end-of-speech-to-completed latency
//   (median and worst) and the process's peak RSS (sampled every 50 ms).
//
//   node bench/realtime.mjs [--sessions 20] [--repeats 3] [--max-sessions 32]
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import WebSocket from 'ws';
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
  sharedAudio,
  sharedDir,
  spread,
  toPcm16,
  writeResults,
} from './lib.mjs';

const { settings } = benchArgs('node bench/realtime.mjs [flags]', {
  sessions: flag.integer('concurrent sessions', 20),
  repeats: flag.integer('single-session real-time runs', 3),
  maxSessions: flag.integer("the endpoint's maxSessions", 32),
});
const KEY = 'bench';
const CHUNK_MS = 20;

/** A connected socket that keeps every event with the time it arrived. */
function connect(url) {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url, { headers: { Authorization: `Bearer ${KEY}` } });
    const events = [];
    const waiters = [];
    socket.on('message', (data) => {
      const event = { ...JSON.parse(String(data)), at: performance.now() };
      events.push(event);
      for (const waiter of waiters.splice(0)) waiter();
    });
    const closed = new Promise((done) => socket.on('close', (code) => done(code)));
    /** Resolves with the first event that `test` accepts (already arrived or not). */
    const until = async (test, timeoutMs = 120_000) => {
      const deadline = performance.now() + timeoutMs;
      for (;;) {
        const found = events.find(test);
        if (found) return found;
        if (performance.now() > deadline) throw new Error(`timed out; events: ${events.map((e) => e.type)}`);
        await new Promise((wake) => {
          waiters.push(wake);
          setTimeout(wake, 100);
        });
      }
    };
    socket.once('open', () => resolve({ socket, events, until, closed }));
    socket.once('error', reject);
  });
}

/**
 * Streams `pcm` (24 kHz s16le) at real time in 20 ms appends, then silence until the utterance ending at `speechEnd`
 * (seconds) is completed. Returns the times the first speech and the last speech sample were sent.
 */
async function streamRealTime(client, pcm, speechStart, speechEnd) {
  const chunk = (24000 * 2 * CHUNK_MS) / 1000;
  const started = performance.now();
  let startSentAt;
  let endSentAt;
  const append = (bytes) =>
    client.socket.send(JSON.stringify({ type: 'input_audio_buffer.append', audio: bytes.toString('base64') }));
  for (let i = 0; i < pcm.length; i += chunk) {
    // Paced by the clock, so the delays do not add up.
    const wait = started + (i / 2 / 24000) * 1000 - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    append(pcm.subarray(i, i + chunk));
    const sent = (i + chunk) / 2 / 24000;
    if (startSentAt === undefined && sent >= speechStart) startSentAt = performance.now();
    if (endSentAt === undefined && sent >= speechEnd) endSentAt = performance.now();
  }
  const silence = Buffer.alloc(chunk);
  const lastDone = () =>
    client.events.some(
      (e) =>
        e.type === 'conversation.item.input_audio_transcription.completed' &&
        e.voxmill.audio_end_ms >= (speechEnd - 0.5) * 1000,
    );
  const deadline = performance.now() + 120_000;
  while (!lastDone() && client.socket.readyState === WebSocket.OPEN && performance.now() < deadline) {
    await new Promise((r) => setTimeout(r, CHUNK_MS));
    append(silence);
  }
  return { startSentAt, endSentAt };
}

async function oneSession(url, pcm, regions, interims) {
  const client = await connect(url);
  client.socket.send(
    JSON.stringify({
      type: 'session.update',
      session: {
        type: 'transcription',
        audio: { input: { format: { type: 'audio/pcm', rate: 24000 }, turn_detection: { type: 'server_vad' } } },
        voxmill: { interim_interval_ms: interims ? 1000 : 0 },
      },
    }),
  );
  await client.until((e) => e.type === 'session.updated');
  const speechEnd = regions.at(-1).end;
  const { startSentAt, endSentAt } = await streamRealTime(client, pcm, regions[0].start, speechEnd);
  const last = client.events.find(
    (e) =>
      e.type === 'conversation.item.input_audio_transcription.completed' &&
      e.voxmill.audio_end_ms >= (speechEnd - 0.5) * 1000,
  );
  const interim = client.events.find((e) => e.type === 'voxmill.input_audio_transcription.interim');
  client.socket.close();
  await client.closed;
  // The VAD's end of speech (`speech_stopped`, sent once its silence has lasted `silence_duration_ms`) to each
  // utterance's `completed`: the issue's "end-of-speech -> final" time, without the silence the VAD waits for.
  const stoppedAt = new Map(
    client.events.filter((e) => e.type === 'input_audio_buffer.speech_stopped').map((e) => [e.item_id, e.at]),
  );
  const afterStop = client.events
    .filter((e) => e.type === 'conversation.item.input_audio_transcription.completed' && stoppedAt.has(e.item_id))
    .map((e) => e.at - stoppedAt.get(e.item_id));
  return {
    finalMs: last ? last.at - endSentAt : null,
    afterStopMs: afterStop,
    interimMs: interim ? interim.at - startSentAt : null,
    text: client.events
      .filter((e) => e.type === 'conversation.item.input_audio_transcription.completed')
      .map((e) => e.transcript)
      .join(' '),
  };
}

async function speechTimings(url, voice) {
  const client = await connect(url);
  const sentAt = performance.now();
  client.socket.send(
    JSON.stringify({ type: 'voxmill.speech.append', voice, text: 'Sure, I can help with that. What time suits you?' }),
  );
  client.socket.send(JSON.stringify({ type: 'voxmill.speech.end' }));
  const first = await client.until((e) => e.type === 'voxmill.speech.audio.delta');
  await client.until((e) => e.type === 'voxmill.speech.done');
  // Barge-in: a long reply cancelled once its audio flows.
  client.events.length = 0;
  client.socket.send(JSON.stringify({ type: 'voxmill.speech.append', voice, text: 'This reply goes on. '.repeat(30) }));
  await client.until((e) => e.type === 'voxmill.speech.audio.delta');
  const cancelAt = performance.now();
  client.socket.send(JSON.stringify({ type: 'voxmill.speech.cancel' }));
  const done = await client.until((e) => e.type === 'voxmill.speech.done');
  client.socket.close();
  await client.closed;
  return { firstAudioMs: first.at - sentAt, cancelMs: done.at - cancelAt };
}

async function concurrent(url, pcm, regions, count) {
  const results = await Promise.all(
    Array.from({ length: count }, async (_, i) => {
      // Staggered by 0.5 s, as users arrive, so their utterances do not all end in the same instant.
      await new Promise((r) => setTimeout(r, i * 500));
      let client;
      try {
        client = await connect(url);
      } catch (error) {
        return { refused: `connect: ${error.message}` };
      }
      const first = await client.until((e) => e.type === 'session.created' || e.type === 'error');
      if (first.type === 'error') {
        await client.closed;
        return { refused: first.error.code };
      }
      client.socket.send(
        JSON.stringify({
          type: 'session.update',
          session: { type: 'transcription', audio: { input: { format: { type: 'audio/pcm', rate: 24000 } } } },
        }),
      );
      const { endSentAt } = await streamRealTime(client, pcm, regions[0].start, regions.at(-1).end);
      const completed = client.events.filter((e) => e.type === 'conversation.item.input_audio_transcription.completed');
      const errors = client.events.filter((e) => e.type === 'error').map((e) => e.error.code);
      const last = completed.find((e) => e.voxmill.audio_end_ms >= (regions.at(-1).end - 0.5) * 1000);
      client.socket.close();
      await client.closed;
      return { completed: completed.length, errors, finalMs: last ? last.at - endSentAt : null };
    }),
  );
  return results;
}

async function main() {
  ensureDist();
  const voxmill = await import(pathToFileURL(distEntry).href);
  const models = realModels(['whisper-tiny.en', 'piper-joe-medium']);
  const vadModel = join(sharedDir, 'models', 'whisper', 'ggml-silero-v6.2.0.bin');
  const { dirname } = await import('node:path');
  const speech = voxmill.createSpeech({
    vadModel,
    models: { 'svc-stt-1': models['whisper-tiny.en'] },
    voiceDirs: [dirname(models['piper-joe-medium'])],
    tts: { workers: 1 },
  });
  const server = voxmill.createSpeechServer({
    speech,
    auth: [KEY],
    // One key for every session here: the per-client limit would otherwise refuse all past a quarter.
    realtime: { maxSessions: settings.maxSessions, maxSessionsPerClient: settings.maxSessions },
  });
  const { port } = await server.listen(0, '127.0.0.1');
  const url = `ws://127.0.0.1:${port}/v1/realtime`;
  let peak = 0;
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 50);
  try {
    const { samples: jfk } = await voxmill.decodeAudio(sharedAudio('jfk.wav'));
    // OpenAI's clients send 24 kHz: the library's own resampler makes it.
    const { StreamResampler } = await import(pathToFileURL(join(distEntry, '..', 'audio', 'resample.js')).href);
    const pcm = toPcm16(new StreamResampler(16000, 24000).process(jfk));
    const regions = await voxmill.detectSpeechRegions(jfk, { model: vadModel });
    await speech.transcribe(jfk); // warm-up: model load
    const voice = (await speech.listVoices()).find((v) => v.id.includes('joe'))?.id;
    await speech.synthesizeToBuffer({ voice, input: 'Warm up.', format: 'pcm16' });

    const quiet = [];
    const withInterims = [];
    const library = [];
    for (let i = 0; i < settings.repeats; i++) {
      quiet.push(await oneSession(url, pcm, regions, false));
      withInterims.push(await oneSession(url, pcm, regions, true));
      library.push(await libraryRun(speech, pcm, regions));
    }
    const speechRuns = [];
    for (let i = 0; i < settings.repeats; i++) speechRuns.push(await speechTimings(url, voice));

    const rssBefore = process.memoryUsage().rss;
    peak = rssBefore;
    const crowd = await concurrent(url, pcm, regions, settings.sessions);
    const crowdPeak = peak;

    const fmt = (values) => {
      const kept = values.filter((v) => v !== null);
      if (kept.length === 0) return 'none';
      return `${median(kept).toFixed(0)} ms (${spread(kept)
        .map((v) => v.toFixed(0))
        .join('-')}${kept.length < values.length ? `, ${values.length - kept.length} runs without` : ''})`;
    };
    console.log(
      `real tiny.en over /v1/realtime, jfk.wav at 24 kHz in ${CHUNK_MS} ms appends at real time, medians (range):`,
    );
    console.log(`- end of speech to completed, interims off: ${fmt(quiet.map((r) => r.finalMs))}`);
    console.log(
      `- speech_stopped (the VAD's end of speech) to completed, every utterance, interims off: ${fmt(quiet.flatMap((r) => r.afterStopMs))}; ` +
        `interims on: ${fmt(withInterims.flatMap((r) => r.afterStopMs))}`,
    );
    console.log(`- the same through the library's LiveTranscriber: ${fmt(library.map((r) => r.finalMs))}`);
    console.log(`- end of speech to completed, interims every 1000 ms: ${fmt(withInterims.map((r) => r.finalMs))}`);
    console.log(`- first speech to first interim: ${fmt(withInterims.map((r) => r.interimMs))}`);
    console.log(`  text: ${quiet[0]?.text}`);
    console.log(`- speech: append to first audio delta ${fmt(speechRuns.map((r) => r.firstAudioMs))}`);
    console.log(`- speech: cancel to done ${fmt(speechRuns.map((r) => r.cancelMs))}`);
    const accepted = crowd.filter((r) => r.refused === undefined);
    const refused = crowd.filter((r) => r.refused !== undefined);
    const errorCodes = accepted.flatMap((r) => r.errors);
    console.log(
      `${settings.sessions} concurrent sessions (maxSessions ${settings.maxSessions}, started 0.5 s apart): ` +
        `${accepted.length} accepted, ${refused.length} refused (${[...new Set(refused.map((r) => r.refused))].join(', ') || 'none'}); ` +
        `utterances completed ${accepted.reduce((a, r) => a + r.completed, 0)} (${accepted.length} x ${quiet.length ? 'the single run' : '?'}); ` +
        `errors ${errorCodes.length ? errorCodes.join(', ') : 'none'}`,
    );
    console.log(`- end of speech to completed: ${fmt(accepted.map((r) => r.finalMs))}`);
    console.log(
      `- RSS: ${(rssBefore / 2 ** 20).toFixed(0)} MB before, peak ${(crowdPeak / 2 ** 20).toFixed(0)} MB during, ` +
        `${(process.memoryUsage().rss / 2 ** 20).toFixed(0)} MB after`,
    );
    const out = writeResults('realtime', {
      commit: gitCommit(),
      machine: machineFacts(),
      quiet,
      withInterims,
      library,
      speechRuns,
      crowd,
      rssBefore,
      crowdPeak,
    });
    console.log(`raw results: ${out}`);
  } finally {
    clearInterval(sampler);
    await server.shutdown();
  }
}

/** The library's LiveTranscriber fed the same 24 kHz audio the same way: the socket's cost is the difference. */
async function libraryRun(speech, pcm, regions) {
  const live = speech.createTranscriber({ sampleRate: 24000, interimIntervalMs: 0, vad: { speechPadMs: 300 } });
  const speechEnd = regions.at(-1).end;
  let lastFinalAt;
  live.on('final', (event) => {
    if (event.end >= speechEnd - 0.5) lastFinalAt ??= performance.now();
  });
  const chunk = (24000 * 2 * CHUNK_MS) / 1000;
  const started = performance.now();
  let endWrittenAt;
  for (let i = 0; i < pcm.length; i += chunk) {
    const wait = started + (i / 2 / 24000) * 1000 - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    live.write(pcm.subarray(i, i + chunk));
    if (endWrittenAt === undefined && (i + chunk) / 2 / 24000 >= speechEnd) endWrittenAt = performance.now();
  }
  while (lastFinalAt === undefined) {
    await new Promise((r) => setTimeout(r, CHUNK_MS));
    live.write(Buffer.alloc(chunk));
  }
  live.end();
  await new Promise((r) => live.once('finish', r));
  return { finalMs: lastFinalAt - endWrittenAt };
}

runMain('realtime', main);
