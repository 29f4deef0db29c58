// An ONNX model on the addon's own ONNX Runtime (native/onnx_core.cc): Piper voices and speaker-embedding models.
// Loading and every run are native jobs on libuv's thread pool, so inference never blocks the event loop and no
// JavaScript worker thread is involved; an AbortSignal stops a run between ONNX kernels. The runtime is the library
// shipped beside the addon (src/native.ts nativeAssets), never the system's.
import { createHash } from 'node:crypto';
import { readdir, rm, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import {
  isNativeError,
  type NativeJob,
  type NativeOnnxSession,
  type NativeTensor,
  type NativeTensorFacts,
  native,
  nativeAssets,
} from '../native.js';
import { abortReason, untilAborted } from './job.js';
import { mayWriteIn } from './write-atomically.js';

export interface OnnxModelOptions {
  /** ONNX Runtime's intra-op threads for this model's runs. */
  intraOpThreads: number;
  /** ONNX Runtime's CPU memory arena and memory patterns. */
  memoryArena: boolean;
}

/**
 * Where a model file's optimized graph is kept between loads: a hidden file beside it named by the file's size and
 * time (the addon adds ONNX Runtime's version), or undefined when that folder cannot be written or is read-only. Older copies of the
 * same model are removed in the background once a load made a new one.
 */
export async function optimizedCacheFor(modelPath: string): Promise<string | undefined> {
  const dir = dirname(modelPath);
  if (!(await mayWriteIn(dir))) return undefined;
  try {
    const info = await stat(modelPath);
    const key = createHash('sha256').update(`${info.size}:${info.mtimeMs}`).digest('hex').slice(0, 16);
    return join(dir, `.${basename(modelPath)}.opt-${key}`);
  } catch {
    return undefined;
  }
}

/** Removes a model's optimized copies other than `kept` (its current one), quietly. */
export async function removeStaleOptimizedCopies(modelPath: string, kept: string): Promise<void> {
  const dir = dirname(modelPath);
  const prefix = `.${basename(modelPath)}.opt-`;
  for (const name of await readdir(dir).catch(() => [] as string[])) {
    if (name.startsWith(prefix) && !join(dir, name).startsWith(kept)) {
      await rm(join(dir, name), { force: true }).catch(() => {});
    }
  }
}

/** A failure of ONNX Runtime or of the addon, with the native code (MODEL_LOAD_FAILED, INFERENCE_FAILED, ...). */
export class OnnxFailure extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'OnnxFailure';
  }
}

/** Waits for a native job, aborting it with the signal; a failure becomes an OnnxFailure, an abort its reason. */
async function settle<T>(job: NativeJob<T>, signal: AbortSignal | undefined): Promise<T> {
  const onAbort = () => job.abort();
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    return await untilAborted(job.promise, signal);
  } catch (error) {
    if (signal?.aborted) throw abortReason(signal);
    if (isNativeError(error)) {
      if (error.code === 'ABORTED') throw abortReason(signal);
      throw new OnnxFailure(error.code, error.message);
    }
    throw error;
  } finally {
    signal?.removeEventListener('abort', onAbort);
  }
}

export class OnnxModel {
  readonly inputs: readonly NativeTensorFacts[];
  readonly outputs: readonly NativeTensorFacts[];
  #session: NativeOnnxSession | undefined;

  private constructor(session: NativeOnnxSession) {
    this.#session = session;
    const { inputs, outputs } = session.info();
    this.inputs = inputs;
    this.outputs = outputs;
  }

  /**
   * Loads a model from a file, or from its bytes (copied; `name` is what errors call it). Rejects with an
   * OnnxFailure (MODEL_LOAD_FAILED) naming the model and ONNX Runtime's reason.
   */
  static async load(
    source: string | Uint8Array,
    options: OnnxModelOptions & { name?: string; optimizedCache?: string },
    signal?: AbortSignal,
  ): Promise<OnnxModel> {
    signal?.throwIfAborted();
    const session = await settle(
      native().OnnxSession.load(source, { ...options, runtimePath: nativeAssets().onnxRuntime }),
      signal,
    );
    return new OnnxModel(session);
  }

  /** Whether the model takes an input of this name. */
  hasInput(name: string): boolean {
    return this.inputs.some((input) => input.name === name);
  }

  /** Runs the model; returns the outputs asked for (all when `outputs` is empty) by name. */
  async run(feeds: NativeTensor[], outputs: string[] = [], signal?: AbortSignal): Promise<Map<string, NativeTensor>> {
    signal?.throwIfAborted();
    const session = this.#session;
    if (!session) throw new OnnxFailure('MODEL_RELEASED', 'this model was released');
    const results = await settle(session.run(feeds, outputs), signal);
    return new Map(results.map((tensor) => [tensor.name, tensor]));
  }

  /** Lets the model go once the runs in flight end; later runs fail with MODEL_RELEASED. */
  release(): void {
    this.#session?.release();
    this.#session = undefined;
  }
}
