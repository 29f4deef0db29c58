// The loaded Piper voices: one ONNX model per voice file and graph (the graph that also returns phoneme durations for
// word timings, the int8 one for `precision: 'int8'`: edited-voice.ts), loaded on first use, shared by every
// synthesis of that voice, and released after `sessionIdleMs` without use. Loading and inference are native jobs (src/util/onnx-model.ts): nothing here blocks
// the event loop.
import { rm, stat } from 'node:fs/promises';
import { SynthesisError } from '../errors.js';
import {
  OnnxFailure,
  OnnxModel,
  type OnnxModelOptions,
  optimizedCacheFor,
  removeStaleOptimizedCopies,
} from '../util/onnx-model.js';
import { DurationGraphError } from './duration-output.js';
import { editedVoiceModel, type VoiceEdits } from './edited-voice.js';
import { QuantizeGraphError } from './voice-quantize.js';

export interface VoiceSessionsOptions extends OnnxModelOptions {
  /** Release a voice after this many ms unused; 0 keeps it. */
  sessionIdleMs: number;
}

/** A loaded voice: its model, the name of its duration output when it has one (the timed graph), its precision. */
export interface VoiceSession {
  model: OnnxModel;
  durations: string | undefined;
  /** false where int8 was asked for and the voice has no convolution weights to quantize (it runs in float). */
  int8: boolean;
}

interface Entry {
  loading: Promise<VoiceSession>;
  session: VoiceSession | undefined;
  lastUsed: number;
  /** Syntheses using it now: a voice in use is never released. */
  users: number;
}

/** A voice held by one synthesis, what its load cost (0 when it was loaded already), and how to let it go. */
export interface HeldVoice {
  session: VoiceSession;
  loadMs: number;
  graphEditMs: number;
  release(): void;
}

// Idle voices are looked for at a fraction of the idle time, and, when that time is shorter than the check's least
// period, also sessionIdleMs after each synthesis (the edge profile's 1 ms: the voice goes before the next run starts).
const SWEEP_MIN_MS = 1000;

export class VoiceSessions {
  readonly #options: VoiceSessionsOptions;
  readonly #entries = new Map<string, Entry>();
  /** Voices whose graph has no durations, by path, with the file identity that was checked. */
  readonly #withoutDurations = new Map<string, string>();
  /** Voices whose graph cannot be quantized, by path, with the file identity that was checked. */
  readonly #withoutInt8 = new Map<string, string>();
  readonly #timer: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(options: VoiceSessionsOptions) {
    this.#options = options;
    if (options.sessionIdleMs > 0) {
      const period = Math.max(SWEEP_MIN_MS, Math.min(60_000, options.sessionIdleMs / 4));
      this.#timer = setInterval(() => this.#releaseIdle(), period);
      this.#timer.unref();
    }
  }

  /** Voices loaded now. */
  get loaded(): number {
    return [...this.#entries.values()].filter((entry) => entry.session !== undefined).length;
  }

  /**
   * The voice's session, loaded on first use, held until the returned release(). With `timed`, the session runs the
   * graph with its phoneme durations as an extra output (duration-output.ts); a plain request uses that one too when
   * it is loaded and the plain one is not. With `int8`, the graph with int8 convolutions (voice-quantize.ts), or the
   * float one where the voice cannot be quantized.
   */
  async acquire(modelPath: string, timed: boolean, int8: boolean, signal?: AbortSignal): Promise<HeldVoice> {
    if (this.#closed) throw new SynthesisError('the text-to-speech engine is closed', { code: 'ENGINE_CLOSED' });
    const plainKey = `${modelPath}\u0000${int8 ? 'int8' : 'fp32'}`;
    const timedKey = `${plainKey}\u0000timed`;
    const key = timed || (this.#entries.has(timedKey) && !this.#entries.has(plainKey)) ? timedKey : plainKey;
    const edits: VoiceEdits = { timed: key === timedKey, int8 };
    let entry = this.#entries.get(key);
    let loadMs = 0;
    let graphEditMs = 0;
    if (!entry) {
      const started = performance.now();
      const loading = this.#load(modelPath, edits, (ms) => {
        graphEditMs = ms;
      });
      entry = { loading, session: undefined, lastUsed: Date.now(), users: 0 };
      this.#entries.set(key, entry);
      const current = entry;
      loading.then(
        (session) => {
          current.session = session;
          loadMs = performance.now() - started - graphEditMs;
        },
        () => {
          // A failed load is not cached: the next request tries again.
          if (this.#entries.get(key) === current) this.#entries.delete(key);
        },
      );
    }
    const held = entry;
    held.users++;
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      held.users--;
      held.lastUsed = Date.now();
      const idle = this.#options.sessionIdleMs;
      if (idle > 0 && idle < SWEEP_MIN_MS && held.users === 0) setTimeout(() => this.#releaseIdle(), idle).unref();
    };
    try {
      const session = await held.loading;
      signal?.throwIfAborted();
      held.lastUsed = Date.now();
      return { session, loadMs, graphEditMs, release };
    } catch (error) {
      release();
      throw error;
    }
  }

  /** Releases every voice (runs in flight finish first) and refuses new ones. */
  close(): void {
    this.#closed = true;
    clearInterval(this.#timer);
    for (const entry of this.#entries.values()) entry.session?.model.release();
    this.#entries.clear();
  }

  #releaseIdle(): void {
    const cutoff = Date.now() - this.#options.sessionIdleMs;
    for (const [key, entry] of this.#entries) {
      if (entry.session && entry.users === 0 && entry.lastUsed <= cutoff) {
        this.#entries.delete(key);
        entry.session.model.release();
      }
    }
  }

  async #load(modelPath: string, edits: VoiceEdits, onGraphEdit: (ms: number) => void): Promise<VoiceSession> {
    const started = performance.now();
    let { source, int8 } = await this.#editedSource(modelPath, edits);
    if (source !== modelPath) onGraphEdit(performance.now() - started);
    const { timed } = edits;
    let model: OnnxModel;
    try {
      model = await this.#loadModel(source, modelPath);
    } catch (error) {
      // A cached edit that does not load (torn, or made by an older edit with a bug) is removed; an int8 graph ONNX
      // Runtime refuses leaves the voice in float, any other edit is made again, once.
      if (typeof source !== 'string' || source === modelPath) throw error;
      await rm(source, { force: true }).catch(() => {});
      if (int8) this.#withoutInt8.set(modelPath, await fileIdentity(modelPath));
      ({ source, int8 } = await this.#editedSource(modelPath, { timed, int8: false }));
      model = await this.#loadModel(source, modelPath);
    }
    for (const name of ['input', 'input_lengths', 'scales']) {
      if (!model.hasInput(name)) {
        model.release();
        throw new SynthesisError(`${modelPath} is not a Piper voice: it has no input "${name}"`, {
          code: 'MODEL_LOAD_FAILED',
        });
      }
    }
    let durations: string | undefined;
    if (timed) {
      const extra = model.outputs.map((output) => output.name).filter((name) => name !== 'output');
      if (extra.length !== 1) {
        model.release();
        throw new SynthesisError(
          `${modelPath} cannot give word timings: its edited graph has outputs ${model.outputs.map((o) => o.name).join(', ')}`,
          { code: 'TTS_NO_WORD_TIMES' },
        );
      }
      durations = extra[0];
    }
    return { model, durations, int8 };
  }

  async #loadModel(source: string | Uint8Array, modelPath: string): Promise<OnnxModel> {
    const optimizedCache = typeof source === 'string' ? await optimizedCacheFor(source) : undefined;
    try {
      const model = await OnnxModel.load(source, {
        intraOpThreads: this.#options.intraOpThreads,
        memoryArena: this.#options.memoryArena,
        name: modelPath,
        ...(optimizedCache ? { optimizedCache } : {}),
      });
      if (optimizedCache) void removeStaleOptimizedCopies(source as string, optimizedCache);
      return model;
    } catch (error) {
      const message = error instanceof OnnxFailure ? error.message : (error as Error).message;
      throw new SynthesisError(`cannot load voice model ${modelPath}: ${message}`, { code: 'MODEL_LOAD_FAILED' });
    }
  }

  /**
   * The voice's graph with `edits` (a cached file, or bytes); SynthesisError TTS_NO_WORD_TIMES when it has no
   * durations. A voice that cannot be quantized is used in float (`int8` false), and not tried again until its file
   * changes.
   */
  async #editedSource(modelPath: string, edits: VoiceEdits): Promise<{ source: string | Uint8Array; int8: boolean }> {
    if (!edits.timed && !edits.int8) return { source: modelPath, int8: false };
    const identity = await fileIdentity(modelPath);
    if (edits.timed && this.#withoutDurations.get(modelPath) === identity && identity !== '') {
      throw new SynthesisError(`${modelPath} cannot give word timings: its graph has no phoneme durations`, {
        code: 'TTS_NO_WORD_TIMES',
      });
    }
    const int8 = edits.int8 && !(this.#withoutInt8.get(modelPath) === identity && identity !== '');
    try {
      const edited = await editedVoiceModel(modelPath, { timed: edits.timed, int8 });
      return { source: 'path' in edited ? edited.path : edited.bytes, int8 };
    } catch (error) {
      if (error instanceof QuantizeGraphError) {
        this.#withoutInt8.set(modelPath, identity);
        return this.#editedSource(modelPath, { timed: edits.timed, int8: false });
      }
      if (error instanceof DurationGraphError) {
        this.#withoutDurations.set(modelPath, identity);
        throw new SynthesisError(`${modelPath} cannot give word timings: ${error.message}`, {
          code: 'TTS_NO_WORD_TIMES',
        });
      }
      throw new SynthesisError(`cannot read voice model ${modelPath}: ${(error as Error).message}`, {
        code: 'MODEL_LOAD_FAILED',
      });
    }
  }
}

/** A voice file's size and time ('' when it cannot be read: the load then says why). */
async function fileIdentity(path: string): Promise<string> {
  try {
    const info = await stat(path);
    return `${info.size}:${info.mtimeMs}`;
  } catch {
    return '';
  }
}
