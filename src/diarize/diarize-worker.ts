// The diarization worker thread: features and clustering, which would hold the event loop for a second or more on
// long audio, around optional speaker embeddings (the model runs on the addon's ONNX Runtime, as native jobs:
// src/util/onnx-model.ts); and who spoke in one utterance of a live transcription (`utterance`), on the same models.
import { type MessagePort, parentPort, workerData } from 'node:worker_threads';
import type { SpeechRegion } from '../audio/speech-regions.js';
import { type NativeTensor, useAddonAt } from '../native.js';
import { OnnxFailure, OnnxModel } from '../util/onnx-model.js';
import { exitWhenSettled } from '../util/worker-thread.js';
import { centroids } from './clustering.js';
import { clusteringSettings } from './config.js';
import { SAMPLE_RATE } from './features.js';
import { clipWindows, diarizePcm, type EmbeddingWindow } from './pipeline.js';
import { diarizeWithSegmentation, type SegmentationRunner } from './segmentation-pipeline.js';
import { segmentationRunner } from './segmenter.js';
import type { KnownSpeakerVector } from './speaker-clusters.js';
import { frontEndFor, type SpeakerFrontEndKind } from './speaker-front-end.js';
import type { DiarizeSettings } from './types.js';
import { EMBEDDING_BATCH, embedWindows } from './window-embedder.js';
import type { DiarizeWorkerData, FromDiarizeWorker, ToDiarizeWorker } from './worker-protocol.js';

if (!parentPort) throw new Error('diarize-worker must run in a worker thread');
const port: MessagePort = parentPort;
const data = workerData as DiarizeWorkerData;
useAddonAt(data.addon);

class Cancelled extends Error {}
class JobError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

const sessions = new Map<string, OnnxModel>();
const cancelled = new Set<number>();
let shuttingDown = false;
/** Ids of jobs queued or running. */
const known = new Set<number>();

async function sessionFor(path: string, what = 'speaker-embedding model'): Promise<OnnxModel> {
  const cached = sessions.get(path);
  if (cached) return cached;
  try {
    const session = await OnnxModel.load(path, { intraOpThreads: data.intraOpThreads, memoryArena: true });
    sessions.set(path, session);
    return session;
  } catch (error) {
    throw new JobError('MODEL_LOAD_FAILED', `cannot load ${what} ${path}: ${(error as Error).message}`);
  }
}

/**
 * Chunks per segmentation call. Measured on the 10-minute file: one chunk a call is as fast as eight (RTF 0.054
 * against 0.054) and its memory arena 178 MB smaller (peak RSS 491 against 669 MB).
 */
const SEGMENTATION_BATCH = 1;
/** Pieces per encoder call in the segmentation pipeline (see embedPieces). */
const SEGMENT_EMBEDDING_BATCH = 4;

/** The segmentation model at `path`, loaded once per worker, as the pipeline's runner. */
async function segmenter(path: string): Promise<SegmentationRunner> {
  return segmentationRunner(await sessionFor(path, 'speaker segmentation model'), path);
}

/**
 * The model at `path` with the front end its input asks for: a function giving each window's embedding, and which
 * front end it is (the clustering threshold's default depends on it).
 */
async function embedder(path: string, checkpoint: () => Promise<void>) {
  const session = await sessionFor(path);
  const input = session.inputs[0];
  const inputName = input?.name ?? '';
  const outputName = session.outputs[0]?.name ?? '';
  const shape = input?.shape ?? [];
  // -1: a dimension the model leaves open.
  const last = shape.length > 0 && (shape[shape.length - 1] as number) >= 0 ? shape[shape.length - 1] : undefined;
  // A model exported with a fixed batch of 1 (the shape [1, T, 80] this library once asked for) gets one window a call.
  const batchLimit = shape[0] === 1 ? 1 : EMBEDDING_BATCH;
  const frontEnd = frontEndFor(typeof last === 'number' ? last : undefined, inputName);
  if (!frontEnd) {
    throw new JobError(
      'MODEL_LOAD_FAILED',
      `speaker-embedding model ${path} takes ${String(last)} features per frame; voxmill feeds 80 (Kaldi fbank) or 40 (GE2E mels)`,
    );
  }
  const run = async (features: Float32Array, batch: number, frames: number, dimension: number) => {
    let output: NativeTensor | undefined;
    try {
      const results = await session.run(
        [{ name: inputName, type: 'float32', dims: [batch, frames, dimension], data: features }],
        [outputName],
      );
      output = results.get(outputName);
    } catch (error) {
      const message = error instanceof OnnxFailure ? error.message : (error as Error).message;
      throw new JobError('DIARIZATION_FAILED', `speaker-embedding model ${path} failed: ${message}`);
    }
    if (output?.type !== 'float32' || output.data.length % batch !== 0) {
      throw new JobError('DIARIZATION_FAILED', `${path} returned no float32 embedding per window`);
    }
    return output.data;
  };
  const embed = (samples: Float32Array, windows: EmbeddingWindow[]) =>
    embedWindows(samples, windows, frontEnd, run, checkpoint, batchLimit);
  // The segmentation pipeline's pieces are up to 3 s, twice a window: smaller batches keep the encoder's memory
  // arena (sized by its largest batch) near the window pipeline's, at the same speed (a batch saves CAM++ about 5 %).
  const embedPieces = (samples: Float32Array, windows: EmbeddingWindow[]) =>
    embedWindows(samples, windows, frontEnd, run, checkpoint, Math.min(batchLimit, SEGMENT_EMBEDDING_BATCH));
  return { embed, embedPieces, kind: frontEnd.kind };
}

function post(message: FromDiarizeWorker): void {
  port.postMessage(message);
}

let exiting: Promise<never> | undefined;

/** Releases every session and ends the thread. Once: a second shutdown message waits for the first. */
function exitCleanly(): Promise<never> {
  exiting ??= (async () => {
    for (const [key, session] of sessions) {
      sessions.delete(key);
      session.release();
    }
    return exitWhenSettled();
  })();
  return exiting;
}

type Embed = (samples: Float32Array, windows: EmbeddingWindow[]) => Promise<Float32Array[]>;

/** A voice: the mean of the embeddings of windows over its speech (the windows as one cluster: their centroid). */
async function voiceOf(
  embed: Embed,
  samples: Float32Array,
  speech: readonly SpeechRegion[],
  settings: Pick<DiarizeSettings, 'windowSeconds' | 'hopSeconds'>,
): Promise<Float32Array> {
  const windows = speech.flatMap((region) => clipWindows(region, settings));
  const vectors = await embed(samples, windows);
  const [vector = new Float32Array(0)] = centroids(vectors, new Int32Array(vectors.length), 1);
  return vector;
}

/** One job at a time: a cancelled job may still be finishing when the next one arrives. */
let chain: Promise<void> = Promise.resolve();
let queued = 0;

/** How often, at most, a job tells the engine it is alive (the engine's stall timeout is minutes). */
const HEARTBEAT_MS = 1000;

type Job = Extract<ToDiarizeWorker, { type: 'diarize' | 'utterance' }>;

/** Runs a job, answering its result or its error (cancelled: ABORTED). */
async function runJob(message: Job): Promise<void> {
  const { id } = message;
  let lastHeartbeat = performance.now();
  post({ type: 'progress', id });
  // Lets cancel messages in between stages; a cancelled job stops at the next one.
  const checkpoint = async () => {
    if (performance.now() - lastHeartbeat >= HEARTBEAT_MS) {
      lastHeartbeat = performance.now();
      post({ type: 'progress', id });
    }
    await new Promise<void>((resolve) => setImmediate(resolve));
    if (cancelled.has(id) || shuttingDown) throw new Cancelled();
  };
  try {
    if (cancelled.has(id) || shuttingDown) throw new Cancelled();
    const embeddingModel = message.type === 'utterance' ? message.embeddingModel : message.models.embedding;
    const model = embeddingModel === undefined ? undefined : await embedder(embeddingModel, checkpoint);
    const embed = model?.embed;
    const segmentationModel = message.type === 'diarize' && embed ? message.models.segmentation : undefined;
    const settings = clusteringSettings(message.settings, model?.kind ?? 'features', segmentationModel !== undefined);
    if (message.type === 'utterance') {
      const { samples } = message;
      const whole = { start: 0, end: samples.length / SAMPLE_RATE };
      const turns = await diarizePcm(samples, [whole], { ...settings, embed, checkpoint });
      const voices: Record<string, Float32Array> = {};
      for (const label of new Set(turns.map((t) => t.speaker))) {
        const speech = turns.filter((t) => t.speaker === label);
        voices[label] = await voiceOf(embed as Embed, samples, speech, message.settings);
      }
      const frontEnd = (model as { kind: SpeakerFrontEndKind }).kind;
      post({ type: 'utterance-speakers', id, speakers: { turns, voices, frontEnd } });
      return;
    }
    const knownSpeakers: KnownSpeakerVector[] = [];
    // The engine sends known voices only with an embedding model.
    for (const { name, samples, speech } of embed ? message.knownVoices : []) {
      const vector = await voiceOf(embed as Embed, samples, speech, message.settings);
      knownSpeakers.push({ name, vector });
    }
    const turns =
      embed && segmentationModel !== undefined
        ? await diarizeWithSegmentation(message.samples, message.regions, {
            ...settings,
            segment: await segmenter(segmentationModel),
            segmentationBatch: SEGMENTATION_BATCH,
            embed: (model as { embedPieces: Embed }).embedPieces,
            knownSpeakers,
            checkpoint,
          })
        : await diarizePcm(message.samples, message.regions, { ...settings, embed, knownSpeakers, checkpoint });
    post({ type: 'result', id, turns });
  } catch (error) {
    if (error instanceof Cancelled) post({ type: 'error', id, code: 'ABORTED', message: 'diarization was cancelled' });
    else {
      const code = error instanceof JobError ? error.code : 'DIARIZATION_FAILED';
      post({ type: 'error', id, code, message: (error as Error).message });
    }
  } finally {
    cancelled.delete(id);
  }
}

port.on('message', (message: ToDiarizeWorker) => {
  if (message.type === 'cancel') {
    // Only jobs still queued or running can be cancelled; a late cancel is dropped.
    if (known.has(message.id)) cancelled.add(message.id);
    return;
  }
  if (message.type === 'shutdown') {
    shuttingDown = true;
    if (queued === 0) void exitCleanly();
    return;
  }
  known.add(message.id);
  queued++;
  chain = chain.then(async () => {
    await runJob(message);
    known.delete(message.id);
    queued--;
    if (shuttingDown && queued === 0) await exitCleanly();
  });
});
