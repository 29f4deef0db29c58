// A synthesis worker thread: phonemizes with piper-phonemize and runs the voice's ONNX session, sentence by
// sentence, posting each sentence's audio as soon as it exists. Both block their thread (a session.run() of
// 200 ms let a 10 ms timer fire once on the main thread), which is why they live here.
//
// Flow control: the engine grants credit, one sentence per unit; the worker stops and waits when it has none,
// so a slow consumer never makes audio pile up. Between sentences the worker yields to its message queue, so
// a cancel stops it before the next sentence.

import { stat } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { type MessagePort, parentPort, workerData } from 'node:worker_threads';
import type * as Ort from 'onnxruntime-common';
import { StreamResampler } from '../audio/resample.js';
import { loadOnnxRuntime } from '../util/onnx-runtime.js';
import { exitWhenSettled, insideOnnxRuntime as insideOnnx } from '../util/onnx-worker.js';
import { DurationGraphError, timedVoiceModel } from './duration-output.js';
import { PhonemeIdEncoder } from './phoneme-ids.js';
import type { SpokenWord } from './types.js';
import { type TextWord, wordOfEachPhoneme, wordsOf } from './word-alignment.js';
import { ChunkWordTimer } from './word-times.js';
import type {
  ChunkPart,
  FromWorker,
  SynthJob,
  SynthStats,
  SynthWorkerData,
  ToWorker,
  VoiceSettings,
} from './worker-protocol.js';

interface Phonemizer {
  phonemize(text: string, voice: string): number[][] | null;
}

const require = createRequire(import.meta.url);
const settings = workerData as SynthWorkerData;
const inOnnxRuntimeCount = new Int32Array(settings.inOnnxRuntime);
/** Every ONNX Runtime call goes through this, so the engine never terminates this thread inside one. */
const insideOnnxRuntime = <T>(call: () => Promise<T>) => insideOnnx(inOnnxRuntimeCount, call);
if (!parentPort) throw new Error('synth-worker must run in a worker thread');
const port: MessagePort = parentPort;

// Loaded on first use so a worker that only lists or fails early does not pay for them.
let ort: typeof Ort | undefined;
let phonemizer: Phonemizer | undefined;

class FatalError extends Error {}
class JobError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

interface CachedSession {
  session: Ort.InferenceSession;
  lastUsed: number;
  inputs: ReadonlySet<string>;
  /** The output with each phoneme id's frames, when the session runs the edited graph (word timings). */
  durations: string | undefined;
}
const sessions = new Map<string, CachedSession>();

/** The configured ONNX Runtime; a missing one fails the job that needed it, not the worker. */
function loadRuntime(): typeof Ort {
  try {
    return loadOnnxRuntime(settings.onnxRuntime, settings.intraOpThreads).ort;
  } catch (error) {
    throw new JobError('MODEL_LOAD_FAILED', (error as Error).message);
  }
}

interface LoadedSession {
  cached: CachedSession;
  loadMs: number;
  graphEditMs: number;
}

/**
 * The voice's session, loaded on first use. With `durations`, the session runs the voice's graph with its phoneme
 * durations as an extra output (duration-output.ts); that session also serves requests without word timings, and a
 * plain session is replaced by it when a request first asks. Called only between jobs' sentences of one job at a
 * time, so a session replaced here is never running.
 */
async function sessionFor(modelPath: string, durations: boolean): Promise<LoadedSession> {
  const existing = sessions.get(modelPath);
  if (existing && (!durations || existing.durations !== undefined)) {
    existing.lastUsed = Date.now();
    return { cached: existing, loadMs: 0, graphEditMs: 0 };
  }
  ort ??= loadRuntime();
  let graphEditMs = 0;
  let source: string | Uint8Array = modelPath;
  if (durations) {
    const started = performance.now();
    source = await timedSource(modelPath);
    graphEditMs = performance.now() - started;
  }
  const started = performance.now();
  const session = await createSession(modelPath, source);
  let durationOutput: string | undefined;
  if (durations) {
    const extra = session.outputNames.filter((name) => name !== 'output');
    if (extra.length !== 1) {
      await insideOnnxRuntime(() => session.release());
      throw new JobError(
        'TTS_NO_WORD_TIMES',
        `${modelPath} cannot give word timings: its edited graph has outputs ${session.outputNames.join(', ')}`,
      );
    }
    durationOutput = extra[0];
  }
  // The session with durations replaces the plain one only once it exists: a failure above leaves the plain one.
  if (existing) {
    sessions.delete(modelPath);
    await insideOnnxRuntime(() => existing.session.release());
  }
  const cached = { session, lastUsed: Date.now(), inputs: new Set(session.inputNames), durations: durationOutput };
  sessions.set(modelPath, cached);
  return { cached, loadMs: performance.now() - started, graphEditMs };
}

/** Voices whose graph has no durations, by path and file identity: not read and parsed again on every request. */
const withoutDurations = new Map<string, string>();

/** The voice with its durations as an output (a cached file, or bytes), or JobError TTS_NO_WORD_TIMES. */
async function timedSource(modelPath: string): Promise<string | Uint8Array> {
  let identity = '';
  try {
    const info = await stat(modelPath);
    identity = `${info.size}:${info.mtimeMs}`;
  } catch {
    // timedVoiceModel reports the missing file.
  }
  const known = withoutDurations.get(modelPath);
  if (known !== undefined && known === identity) {
    throw new JobError(
      'TTS_NO_WORD_TIMES',
      `${modelPath} cannot give word timings: its graph has no phoneme durations`,
    );
  }
  try {
    const timed = await timedVoiceModel(modelPath);
    return 'path' in timed ? timed.path : timed.bytes;
  } catch (error) {
    if (error instanceof DurationGraphError) {
      withoutDurations.set(modelPath, identity);
      throw new JobError('TTS_NO_WORD_TIMES', `${modelPath} cannot give word timings: ${error.message}`);
    }
    throw new JobError('MODEL_LOAD_FAILED', `cannot read voice model ${modelPath}: ${(error as Error).message}`);
  }
}

async function createSession(modelPath: string, source: string | Uint8Array): Promise<Ort.InferenceSession> {
  const runtime = ort as typeof Ort;
  const options: Ort.InferenceSession.SessionOptions = {
    intraOpNumThreads: settings.intraOpThreads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
    enableCpuMemArena: settings.memoryArena,
    enableMemPattern: settings.memoryArena,
  };
  let session: Ort.InferenceSession;
  try {
    session = await insideOnnxRuntime(() =>
      typeof source === 'string'
        ? runtime.InferenceSession.create(source, options)
        : runtime.InferenceSession.create(source, options),
    );
  } catch (error) {
    throw new JobError('MODEL_LOAD_FAILED', `cannot load voice model ${modelPath}: ${(error as Error).message}`);
  }
  for (const name of ['input', 'input_lengths', 'scales']) {
    if (!session.inputNames.includes(name)) {
      await insideOnnxRuntime(() => session.release());
      throw new JobError('MODEL_LOAD_FAILED', `${modelPath} is not a Piper voice: it has no input "${name}"`);
    }
  }
  return session;
}

// Idle sessions give their memory back; checked at a fraction of the idle time, and, when that time is shorter than
// the check's least period, also sessionIdleMs after each job (the edge profile's 1 ms: the session goes before the
// next run starts, not up to a second later).
const SWEEP_MIN_MS = 1000;
function releaseIdleSessions(): void {
  const cutoff = Date.now() - settings.sessionIdleMs;
  for (const [path, cached] of sessions) {
    if (cached.lastUsed <= cutoff && !busy.has(path)) {
      sessions.delete(path);
      void insideOnnxRuntime(() => cached.session.release());
    }
  }
}
if (settings.sessionIdleMs > 0) {
  const timer = setInterval(releaseIdleSessions, Math.max(SWEEP_MIN_MS, Math.min(60_000, settings.sessionIdleMs / 4)));
  timer.unref();
}
function releaseSoonAfterJob(): void {
  if (settings.sessionIdleMs > 0 && settings.sessionIdleMs < SWEEP_MIN_MS) {
    setTimeout(releaseIdleSessions, settings.sessionIdleMs).unref();
  }
}
const busy = new Set<string>();

/** Words phonemized alone, per espeak voice (word timings phonemize every word of the text); bounded. */
const wordPhonemes = new Map<string, number[]>();
const MAX_CACHED_WORDS = 20_000;

function phonemizeWord(word: string, voice: string): number[] {
  const key = `${voice}\u0000${word}`;
  let phonemes = wordPhonemes.get(key);
  if (phonemes === undefined) {
    phonemes = phonemize(word, voice).flat();
    if (wordPhonemes.size >= MAX_CACHED_WORDS) wordPhonemes.clear();
    wordPhonemes.set(key, phonemes);
  }
  return phonemes;
}

const SPACE = 0x20;

/**
 * The sentences of a chunk made of parts: each text part phonemized, IPA parts taken as they are, joined into one
 * stream of sentences (a part goes on the sentence the previous part ended in, after a space).
 */
function phonemizeParts(parts: readonly ChunkPart[], voice: string): number[][] {
  const sentences: number[][] = [];
  for (const part of parts) {
    const pieces = 'ipa' in part ? [[...part.ipa].map((c) => c.codePointAt(0) as number)] : phonemize(part.text, voice);
    const [first, ...rest] = pieces;
    const last = sentences.at(-1);
    if (first && last) last.push(SPACE, ...first);
    else if (first) sentences.push(first);
    sentences.push(...rest);
  }
  return sentences;
}

/** The words of a chunk's parts; an IPA part is one word (its text) with its phonemes given. */
function partWords(parts: readonly ChunkPart[]): TextWord[] {
  return parts.flatMap((part) =>
    'ipa' in part
      ? [{ text: part.text, token: part.text, phonemes: [...part.ipa].map((c) => c.codePointAt(0) as number) }]
      : wordsOf(part.text),
  );
}

function phonemize(text: string, voice: string): number[][] {
  phonemizer ??= require('piper-phonemize') as Phonemizer;
  let sentences: number[][] | null;
  try {
    sentences = phonemizer.phonemize(text, voice);
  } catch (error) {
    throw new FatalError(`phonemizer failed: ${(error as Error).message}`);
  }
  if (sentences === null) throw new JobError('SYNTHESIS_FAILED', `espeak-ng has no voice "${voice}"`);
  return sentences;
}

/** The sentence's audio, and each id's frames when the session has the duration output. */
async function infer(
  cached: CachedSession,
  job: VoiceSettings,
  ids: number[],
  lengthScale: number,
): Promise<{ audio: Float32Array; frames: Float32Array | undefined }> {
  const runtime = ort as typeof Ort;
  const feeds: Record<string, Ort.Tensor> = {
    input: new runtime.Tensor('int64', BigInt64Array.from(ids, BigInt), [1, ids.length]),
    input_lengths: new runtime.Tensor('int64', BigInt64Array.of(BigInt(ids.length)), [1]),
    scales: new runtime.Tensor('float32', Float32Array.of(job.noiseScale, lengthScale, job.noiseW), [3]),
  };
  if (cached.inputs.has('sid')) {
    feeds.sid = new runtime.Tensor('int64', BigInt64Array.of(BigInt(job.sid ?? 0)), [1]);
  }
  let output: Ort.Tensor | undefined;
  let durations: Ort.Tensor | undefined;
  try {
    const results = await insideOnnxRuntime(() => cached.session.run(feeds));
    output = results.output ?? Object.values(results)[0];
    durations = cached.durations === undefined ? undefined : results[cached.durations];
  } catch (error) {
    throw new JobError('SYNTHESIS_FAILED', `ONNX Runtime failed on ${job.modelPath}: ${(error as Error).message}`);
  }
  if (output?.type !== 'float32') {
    throw new JobError('SYNTHESIS_FAILED', `${job.modelPath} returned no float32 audio`);
  }
  const frames =
    durations?.type === 'float32' && durations.size === ids.length ? (durations.data as Float32Array) : undefined;
  if (cached.durations !== undefined && frames === undefined) {
    throw new JobError('TTS_NO_WORD_TIMES', `${job.modelPath} returned no duration for each phoneme`);
  }
  return { audio: output.data as Float32Array, frames };
}

interface RunningJob {
  job: SynthJob;
  credit: number;
  cancelled: boolean;
  wake: (() => void) | undefined;
}
let running: RunningJob | undefined;
const queue: SynthJob[] = [];

function post(message: FromWorker, transfer?: ArrayBuffer[]): void {
  port.postMessage(message, transfer ?? []);
}

/** Resolves once the job has credit or was cancelled. */
function waitForCredit(state: RunningJob): Promise<void> {
  if (state.credit > 0 || state.cancelled) return Promise.resolve();
  return new Promise((resolve) => {
    state.wake = resolve;
  });
}

/** Lets credit and cancel messages in between sentences. */
const yieldToMessages = () => new Promise<void>((resolve) => setImmediate(resolve));

async function runJob(state: RunningJob): Promise<void> {
  const { job } = state;
  const stats: SynthStats = {
    sentences: 0,
    phonemeIds: 0,
    samples: 0,
    missingPhonemes: [],
    phonemizeMs: 0,
    inferenceMs: 0,
    sessionLoadMs: 0,
    graphEditMs: 0,
  };
  const voices: VoiceSettings[] = [job, ...(job.voices ?? [])];
  for (const voice of voices) busy.add(voice.modelPath);
  try {
    // Each voice's session and id encoder, made when its first chunk comes (the job's own at once).
    const loaded = new Map<VoiceSettings, { cached: CachedSession; encoder: PhonemeIdEncoder }>();
    const voiceOf = async (voice: VoiceSettings) => {
      let entry = loaded.get(voice);
      if (!entry) {
        const { cached, loadMs, graphEditMs } = await sessionFor(voice.modelPath, job.wordTimes);
        stats.sessionLoadMs += loadMs;
        stats.graphEditMs += graphEditMs;
        entry = { cached, encoder: new PhonemeIdEncoder(voice.tables) };
        loaded.set(voice, entry);
      }
      return entry;
    };
    await voiceOf(job);
    const silence = Math.round(job.sentenceSilenceSeconds * job.sampleRate);
    // The pause before the next sentence: none before the first, and an SSML <break> takes its place.
    let lead = 0;
    for (const chunk of job.chunks) {
      if (state.cancelled) return;
      if (typeof chunk !== 'string' && 'pause' in chunk) {
        await waitForCredit(state);
        if (state.cancelled) return;
        const samples = new Float32Array(Math.round(chunk.pause * job.sampleRate));
        stats.sentences++;
        stats.samples += samples.length;
        state.credit--;
        post({ type: 'audio', id: job.jobId, samples, ...(job.wordTimes ? { words: [] } : {}) }, [
          samples.buffer as ArrayBuffer,
        ]);
        lead = 0;
        await yieldToMessages();
        continue;
      }
      const {
        parts,
        lengthFactor,
        joined,
        voice: other,
      } = typeof chunk === 'string'
        ? { parts: [{ text: chunk }], lengthFactor: 1, joined: false, voice: undefined }
        : chunk;
      if (joined) lead = 0;
      const voice = other === undefined ? job : (job.voices?.[other] ?? job);
      const { cached, encoder } = await voiceOf(voice);
      let started = performance.now();
      const sentences = phonemizeParts(parts, voice.espeakVoice);
      const encoded = sentences.map((phonemes) => encoder.encodeWithSources(phonemes));
      let timer: ChunkWordTimer | undefined;
      if (job.wordTimes) {
        const words = partWords(parts);
        const wordOf = wordOfEachPhoneme(
          sentences,
          words.map((word) => word.phonemes ?? phonemizeWord(word.token, voice.espeakVoice)),
        );
        timer = new ChunkWordTimer(words, wordOf);
      }
      stats.phonemizeMs += performance.now() - started;
      const spoken = encoded.map(({ ids }) => !encoder.isEmpty(ids));
      const lastSpoken = spoken.lastIndexOf(true);
      for (let index = 0; index < encoded.length; index++) {
        if (!spoken[index]) continue;
        const { ids, sources } = encoded[index] as { ids: number[]; sources: number[] };
        await waitForCredit(state);
        if (state.cancelled) return;
        started = performance.now();
        const { audio, frames } = await infer(cached, voice, ids, voice.lengthScale * lengthFactor);
        stats.inferenceMs += performance.now() - started;
        cached.lastUsed = Date.now();
        // The pause goes before every sentence but the first, so the audio neither starts nor ends with it and
        // each sentence leaves as soon as it exists. Copying also takes the samples out of ONNX Runtime's buffer.
        // Another voice's audio is brought to the job's rate first.
        const samples = withSilenceBefore(resampled(audio, voice.sampleRate, job.sampleRate), lead);
        let words: SpokenWord[] | undefined;
        if (timer && frames) {
          const shift = lead / job.sampleRate;
          words = timer
            .sentence({
              index,
              sources,
              frames,
              samples: audio.length,
              leadSamples: 0,
              sampleRate: voice.sampleRate,
              last: index === lastSpoken,
            })
            .map((word) => ({ word: word.word, start: word.start + shift, end: word.end + shift }));
        }
        lead = silence;
        stats.sentences++;
        stats.phonemeIds += ids.length;
        stats.samples += samples.length;
        state.credit--;
        post({ type: 'audio', id: job.jobId, samples, ...(words ? { words } : {}) }, [samples.buffer as ArrayBuffer]);
        await yieldToMessages();
        if (state.cancelled) return;
      }
    }
    const missing = new Map<number, number>();
    for (const { encoder } of loaded.values()) {
      for (const [phoneme, count] of encoder.missing) missing.set(phoneme, (missing.get(phoneme) ?? 0) + count);
    }
    stats.missingPhonemes = [...missing];
    post({ type: 'done', id: job.jobId, stats });
  } finally {
    for (const voice of voices) busy.delete(voice.modelPath);
    releaseSoonAfterJob();
  }
}

/** Samples at another rate: the whole sentence through the streaming resampler, its tail flushed with silence. */
function resampled(samples: Float32Array, from: number, to: number): Float32Array {
  if (from === to) return samples;
  const resampler = new StreamResampler(from, to);
  const head = resampler.process(samples);
  // The filter lags its input by at most 16 zero crossings at the lower rate; this much silence pushes it all out.
  const tail = resampler.process(new Float32Array(Math.ceil((64 * from) / Math.min(from, to))));
  const length = Math.round((samples.length * to) / from);
  const out = new Float32Array(length);
  out.set(head.subarray(0, length));
  if (head.length < length) out.set(tail.subarray(0, length - head.length), head.length);
  return out;
}

function withSilenceBefore(samples: Float32Array, silence: number): Float32Array {
  const out = new Float32Array(silence + samples.length);
  out.set(samples, silence);
  return out;
}

let shuttingDown = false;

let exiting: Promise<never> | undefined;

/**
 * Releases every session and ends the thread; called only between jobs, never inside ONNX Runtime. Once: a second
 * shutdown message (close() after a stall gave up on this worker) waits for the first.
 */
function exitCleanly(): Promise<never> {
  exiting ??= (async () => {
    for (const [path, cached] of sessions) {
      sessions.delete(path);
      await insideOnnxRuntime(() => cached.session.release()).catch(() => undefined);
    }
    return exitWhenSettled();
  })();
  return exiting;
}

async function drain(): Promise<void> {
  while (!running && queue.length > 0 && !shuttingDown) {
    const job = queue.shift() as SynthJob;
    const state: RunningJob = { job, credit: job.credit, cancelled: false, wake: undefined };
    running = state;
    try {
      await runJob(state);
      if (state.cancelled) post({ type: 'cancelled', id: job.jobId });
    } catch (error) {
      const fatal = error instanceof FatalError;
      const code = error instanceof JobError ? error.code : 'SYNTHESIS_FAILED';
      post({ type: 'error', id: job.jobId, code, message: (error as Error).message, fatal });
      if (fatal) {
        // The WASM module is poisoned: stop taking work; the engine terminates this thread.
        port.close();
        return;
      }
    } finally {
      running = undefined;
    }
  }
  if (shuttingDown) await exitCleanly();
}

// espeak-ng loads its data on the first call (about 100 ms): do it now, before the first request waits for it.
setImmediate(() => {
  try {
    phonemize('', 'en-us');
  } catch {
    // A real job reports phonemizer failures.
  }
});

port.on('message', (message: ToWorker) => {
  switch (message.type) {
    case 'job':
      queue.push(message.job);
      void drain();
      break;
    case 'credit':
      if (running?.job.jobId === message.id) {
        running.credit += message.n;
        running.wake?.();
        running.wake = undefined;
      }
      break;
    case 'shutdown':
      shuttingDown = true;
      for (const job of queue.splice(0)) post({ type: 'cancelled', id: job.jobId });
      if (running) {
        running.cancelled = true;
        running.wake?.();
        running.wake = undefined;
      } else {
        void exitCleanly();
      }
      break;
    case 'cancel': {
      const index = queue.findIndex((job) => job.jobId === message.id);
      if (index >= 0) {
        queue.splice(index, 1);
        post({ type: 'cancelled', id: message.id });
      } else if (running?.job.jobId === message.id) {
        running.cancelled = true;
        running.wake?.();
        running.wake = undefined;
      }
      break;
    }
  }
});
