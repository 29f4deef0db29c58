// The engine side of the diarization worker: one lazily started thread, jobs one at a time through a bounded
// queue, audio handed over in shared memory, cancellation by message, a dead worker replaced.

import type { SpeechRegion } from '../audio/speech-regions.js';
import { ClosedError, DiarizationError } from '../errors.js';
import { untilAborted } from '../util/job.js';
import { closeWorker, compiledWorkerUrl, type LiveWorker, spawnOnnxWorker } from '../util/onnx-worker.js';
import { WorkQueue } from '../util/queue.js';
import type { SpeakerTurn } from './turn.js';
import type { DiarizeSettings } from './types.js';
import type { FromDiarizeWorker } from './worker-protocol.js';

export interface DiarizerOptions {
  intraOpThreads: number;
  maxQueue: number;
  workerUrl?: URL;
}

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

export class Diarizer {
  private live: LiveWorker | undefined;
  private readonly queue: WorkQueue;
  /** Jobs sent to the worker, answered by its reply (or an Error when it died or the engine closed). */
  private readonly pending = new Map<number, (reply: FromDiarizeWorker | Error) => void>();
  private closed = false;

  constructor(private readonly options: DiarizerOptions) {
    this.queue = new WorkQueue('diarization', { concurrency: 1, maxQueue: options.maxQueue });
  }

  private worker(): LiveWorker {
    if (this.live) return this.live;
    const url =
      this.options.workerUrl ??
      compiledWorkerUrl(
        new URL('./diarize-worker.js', import.meta.url),
        'diarize/diarize-worker.js',
        (message) => new DiarizationError(message, { code: 'DIARIZATION_WORKER_MISSING' }),
      );
    const live = spawnOnnxWorker(url, { intraOpThreads: this.options.intraOpThreads });
    live.thread.on('message', (message: FromDiarizeWorker) => {
      const answer = this.pending.get(message.id);
      this.pending.delete(message.id);
      answer?.(message);
    });
    const lose = (why: string) => {
      if (this.live !== live) return;
      this.live = undefined;
      this.answerAll(new DiarizationError(`diarization worker ${why}`, { code: 'DIARIZATION_WORKER_DIED' }));
    };
    live.thread.on('error', (error) => lose(`crashed: ${error.message}`));
    live.thread.on('exit', (code) => lose(`exited (code ${code})`));
    this.live = live;
    return live;
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
    embeddingModel: string | undefined,
    signal?: AbortSignal,
  ): Promise<SpeakerTurn[]> {
    if (this.closed) throw new ClosedError();
    const lease = this.queue.admit();
    let reply: Promise<FromDiarizeWorker | Error> | undefined;
    try {
      await lease.acquire(signal);
      const shared = await toShared(samples);
      signal?.throwIfAborted();
      if (this.closed) throw new ClosedError();
      const live = this.worker();
      const id = nextId++;
      reply = new Promise((resolve) => this.pending.set(id, resolve));
      const answer = reply.then((message) => {
        if (message instanceof Error) throw message;
        if (message.type === 'result') return message.turns;
        throw new DiarizationError(message.message, { code: message.code });
      });
      const onAbort = () => live.thread.postMessage({ type: 'cancel', id });
      signal?.addEventListener('abort', onAbort, { once: true });
      live.thread.ref();
      try {
        live.thread.postMessage({ type: 'diarize', id, samples: shared, regions, settings, embeddingModel });
        return await untilAborted(answer, signal);
      } finally {
        signal?.removeEventListener('abort', onAbort);
        answer.catch(() => undefined);
        void reply.then(() => live.thread.unref());
      }
    } finally {
      if (reply) void reply.then(() => lease.release());
      else lease.release();
    }
  }

  get active(): number {
    return this.queue.active;
  }

  private answerAll(error: Error): void {
    for (const [id, answer] of this.pending) {
      this.pending.delete(id);
      answer(error);
    }
  }

  /** Fails queued and running jobs with ClosedError, and lets the worker exit after its current call. */
  async close(): Promise<void> {
    this.closed = true;
    this.queue.close(new ClosedError());
    const live = this.live;
    this.live = undefined;
    this.answerAll(new ClosedError());
    if (live) await closeWorker(live);
  }
}
