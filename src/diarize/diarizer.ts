// The engine side of the diarization worker: one lazily started thread, jobs one at a time through a bounded
// queue, audio handed over in shared memory, cancellation by message, a dead worker replaced.
import { DiarizationError } from '../errors.js';
import { abortReason } from '../util/job.js';
import { closeWorker, compiledWorkerUrl, type LiveWorker, spawnOnnxWorker } from '../util/onnx-worker.js';
import { WorkQueue } from '../util/queue.js';
import type { Region } from './pipeline.js';
import type { SpeakerTurn } from './turn.js';
import type { DiarizeSettings, FromDiarizeWorker } from './worker-protocol.js';

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
  private readonly pending = new Map<number, { resolve(turns: SpeakerTurn[]): void; reject(error: unknown): void }>();

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
      const waiter = this.pending.get(message.id);
      if (!waiter) return;
      this.pending.delete(message.id);
      if (message.type === 'result') waiter.resolve(message.turns);
      else waiter.reject(new DiarizationError(message.message, { code: message.code }));
    });
    const lose = (why: string) => {
      if (this.live !== live) return;
      this.live = undefined;
      for (const [id, waiter] of this.pending) {
        this.pending.delete(id);
        waiter.reject(new DiarizationError(`diarization worker ${why}`, { code: 'DIARIZATION_WORKER_DIED' }));
      }
    };
    live.thread.on('error', (error) => lose(`crashed: ${error.message}`));
    live.thread.on('exit', (code) => lose(`exited (code ${code})`));
    this.live = live;
    return live;
  }

  /** Speaker turns of 16 kHz mono PCM over the given speech regions. */
  async run(
    samples: Float32Array,
    regions: Region[],
    settings: DiarizeSettings,
    embeddingModel: string | undefined,
    signal?: AbortSignal,
  ): Promise<SpeakerTurn[]> {
    const lease = this.queue.admit();
    try {
      await lease.acquire(signal);
      const shared = await toShared(samples);
      signal?.throwIfAborted();
      const live = this.worker();
      const id = nextId++;
      const result = new Promise<SpeakerTurn[]>((resolve, reject) => this.pending.set(id, { resolve, reject }));
      live.thread.ref();
      const onAbort = () => {
        live.thread.postMessage({ type: 'cancel', id });
        const waiter = this.pending.get(id);
        this.pending.delete(id);
        waiter?.reject(abortReason(signal));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      try {
        live.thread.postMessage({ type: 'diarize', id, samples: shared, regions, settings, embeddingModel });
        return await result;
      } finally {
        signal?.removeEventListener('abort', onAbort);
        live.thread.unref();
      }
    } finally {
      lease.release();
    }
  }

  get active(): number {
    return this.queue.active;
  }

  async close(): Promise<void> {
    const live = this.live;
    this.live = undefined;
    for (const [id, waiter] of this.pending) {
      this.pending.delete(id);
      waiter.reject(new DiarizationError('the speech engine was closed', { code: 'SPEECH_CLOSED' }));
    }
    if (live) await closeWorker(live);
  }
}
