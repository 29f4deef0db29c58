// The engine side of the diarization worker (diarizations, and utterances of live transcriptions): jobs one at a time
// through a bounded queue, audio handed over in
// shared memory, on one WorkerClient (started lazily, cancel by id, a dead or stalled worker replaced).

import type { SpeechRegion } from '../audio/speech-regions.js';
import { ClosedError, DiarizationError } from '../errors.js';
import { addonPath } from '../native.js';
import { untilAborted } from '../util/job.js';
import { WorkQueue } from '../util/queue.js';
import { WorkerClient, type WorkerErrors } from '../util/worker-client.js';
import { workerScriptUrl } from '../util/worker-thread.js';
import { DEFAULT_DIARIZATION_STALL_TIMEOUT_MS } from './config.js';
import { SAMPLE_RATE } from './features.js';
import type { SpeakerTurn } from './turn.js';
import type { DiarizeSettings, KnownVoice, SpeakerModels, UtteranceSpeakers } from './types.js';
import type { DiarizeWorkerData, FromDiarizeWorker, ToDiarizeWorker } from './worker-protocol.js';

export interface DiarizerOptions {
  intraOpThreads: number;
  maxQueue: number;
  /**
   * A job that gets no message from the worker for this long per hour of audio (an hour at least) fails with
   * DIARIZATION_WORKER_STALLED. Default DEFAULT_DIARIZATION_STALL_TIMEOUT_MS (diarization config).
   */
  stallTimeoutMs?: number;
  workerUrl?: URL;
}

const diarizationWorkerErrors: WorkerErrors = {
  died: (message) => new DiarizationError(message, { code: 'DIARIZATION_WORKER_DIED' }),
  stalled: (message) => new DiarizationError(message, { code: 'DIARIZATION_WORKER_STALLED' }),
};

// Samples are copied into shared memory in slices this long, yielding between them, so a long file never holds
// the event loop (a 2-hour file is 460 MB of float32).
const COPY_SLICE = 1 << 20;

async function toShared(samples: Float32Array): Promise<Float32Array> {
  const shared = new Float32Array(new SharedArrayBuffer(samples.byteLength));
  for (let offset = 0; offset < samples.length; offset += COPY_SLICE) {
    shared.set(samples.subarray(offset, offset + COPY_SLICE), offset);
    if (offset + COPY_SLICE < samples.length) await new Promise<void>((resolve) => setImmediate(resolve));
  }
  return shared;
}

let nextId = 1;

/**
 * Silence from the worker after which a live utterance's job fails: heartbeats come every second, and the first job
 * loads the model (GE2E: under a second; a large WeSpeaker model a few).
 */
export const UTTERANCE_STALL_TIMEOUT_MS = 30_000;

export class Diarizer {
  private readonly client: WorkerClient<ToDiarizeWorker, FromDiarizeWorker>;
  private readonly queue: WorkQueue;
  private closed = false;

  private readonly stallPerHourMs: number;

  constructor(options: DiarizerOptions) {
    this.stallPerHourMs = options.stallTimeoutMs ?? DEFAULT_DIARIZATION_STALL_TIMEOUT_MS;
    this.queue = new WorkQueue('diarization', { concurrency: 1, maxQueue: options.maxQueue });
    this.client = new WorkerClient({
      script: () =>
        options.workerUrl ??
        workerScriptUrl(
          new URL('./diarize-worker.js', import.meta.url),
          (message) => new DiarizationError(message, { code: 'DIARIZATION_WORKER_MISSING' }),
        ),
      data: { intraOpThreads: options.intraOpThreads, addon: addonPath() } satisfies DiarizeWorkerData,
      name: 'diarization worker',
      errors: diarizationWorkerErrors,
      stallTimeoutMs: this.stallPerHourMs,
      isHeartbeat: (message) => message.type === 'progress',
    });
  }

  /**
   * Speaker turns of 16 kHz mono PCM over the given speech regions. An abort answers at once with the signal's
   * reason; the queue slot stays taken until the worker has really stopped (at its next checkpoint), so jobs never
   * overlap in the worker.
   */
  async run(
    samples: Float32Array,
    regions: SpeechRegion[],
    settings: DiarizeSettings,
    models: SpeakerModels,
    signal?: AbortSignal,
    knownVoices: KnownVoice[] = [],
  ): Promise<SpeakerTurn[]> {
    const hours = samples.length / (SAMPLE_RATE * 3600);
    return this.#job(
      Math.round(this.stallPerHourMs * Math.max(1, hours)),
      signal,
      async (id) => ({
        type: 'diarize',
        id,
        samples: await toShared(samples),
        regions,
        settings,
        models,
        knownVoices,
      }),
      (message) => (message.type === 'result' ? message.turns : undefined),
    );
  }

  /**
   * Who spoke in one utterance (live transcription): the pipeline over it with an embedding model, and each local
   * speaker's voice. A live job that hears nothing from the worker for UTTERANCE_STALL_TIMEOUT_MS fails (and the
   * worker is replaced): every live stream on this worker waits for it.
   */
  async utterance(
    samples: Float32Array,
    settings: DiarizeSettings,
    embeddingModel: string,
    signal?: AbortSignal,
  ): Promise<UtteranceSpeakers> {
    return this.#job(
      UTTERANCE_STALL_TIMEOUT_MS,
      signal,
      (id) => ({ type: 'utterance', id, samples, settings, embeddingModel }),
      (message) => (message.type === 'utterance-speakers' ? message.speakers : undefined),
    );
  }

  /** Queues a job, sends it when its turn comes, and answers what `answer` takes from the worker's reply. */
  async #job<T>(
    stallTimeoutMs: number,
    signal: AbortSignal | undefined,
    build: (id: number) => ToDiarizeWorker | Promise<ToDiarizeWorker>,
    answerOf: (message: FromDiarizeWorker) => T | undefined,
  ): Promise<T> {
    if (this.closed) throw new ClosedError();
    const lease = this.queue.admit();
    let reply: Promise<unknown> | undefined;
    try {
      await lease.acquire(signal);
      const id = nextId++;
      const message = await build(id);
      signal?.throwIfAborted();
      if (this.closed) throw new ClosedError();
      const answer = this.client.request(id, message, stallTimeoutMs).then((reply) => {
        const value = answerOf(reply);
        if (value !== undefined) return value;
        if (reply.type === 'error') throw new DiarizationError(reply.message, { code: reply.code });
        // Heartbeats never get here (the client keeps them).
        throw new DiarizationError(`unexpected ${reply.type} message`, { code: 'DIARIZATION_FAILED' });
      });
      reply = answer.catch(() => undefined);
      const onAbort = () => this.client.cancel(id);
      signal?.addEventListener('abort', onAbort, { once: true });
      try {
        return await untilAborted(answer, signal);
      } finally {
        signal?.removeEventListener('abort', onAbort);
      }
    } finally {
      if (reply) void reply.then(() => lease.release());
      else lease.release();
    }
  }

  get active(): number {
    return this.queue.active;
  }

  /** Fails queued and running jobs with ClosedError, and lets the worker exit after its current call. */
  async close(): Promise<void> {
    this.closed = true;
    this.queue.close(new ClosedError());
    await this.client.close();
  }
}
