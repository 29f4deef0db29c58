// The Speech facade composed from fakes: no addon, no model files, no worker threads. Checks what the engine adds
// around its pieces (tier defaults, lazy shared loads, queues, the decoded-audio budget, idle unloading, errors
// that keep their domain, closing) in milliseconds.
import { afterEach, describe, expect, it, vi } from 'vitest';
// Waits for the fakes' calls grow with this machine's slowdown.
import { scaledMs } from '../../scripts/lib/machine-speed.mjs';
import type { DecodedAudio } from '../../src/audio/decode.js';
import type { SpeechDependencies, TtsService } from '../../src/engine/dependencies.js';
import type { SttModel, SttModelLoader } from '../../src/engine/model-registry.js';
import {
  ClosedError,
  DiarizationError,
  InvalidOptionTypeError,
  InvalidOptionValueError,
  ModelNotFoundError,
  QueueFullError,
  TranscriptionError,
} from '../../src/errors.js';
import { Speech, type SpeechOptions } from '../../src/index.js';
import type { NativeVadParams } from '../../src/native.js';
import type { NormalizedTranscribeOptions } from '../../src/stt/request.js';
import type { Transcription } from '../../src/stt/types.js';

const SECOND = 16_000;

function audioOf(seconds: number, stereo = false): DecodedAudio {
  const samples = new Float32Array(Math.round(seconds * SECOND));
  return {
    samples,
    sampleRate: SECOND,
    duration: seconds,
    source: { container: 'wav', codec: 'pcm_s16le', sampleRate: SECOND, channels: stereo ? 2 : 1, bitRate: 0 },
  };
}

/** A model that answers once `release()` is called (or at once), recording what it was asked. */
class FakeModel implements SttModel {
  loaded = true;
  readonly info = { path: '/fake', type: 'base' } as unknown as SttModel['info'];
  readonly calls: NormalizedTranscribeOptions[] = [];
  readonly vads: (NativeVadParams | undefined)[] = [];
  disposed = 0;
  #gate: Promise<void> | undefined;
  #open: (() => void) | undefined;

  hold(): void {
    this.#gate = new Promise((resolve) => {
      this.#open = resolve;
    });
  }

  release(): void {
    this.#open?.();
    this.#gate = undefined;
  }

  async transcribeDecoded(
    audio: DecodedAudio,
    options: NormalizedTranscribeOptions,
    vad?: NativeVadParams,
  ): Promise<Transcription> {
    this.calls.push(options);
    this.vads.push(vad);
    await this.#gate;
    return {
      text: ' hello there',
      language: 'en',
      duration: audio.duration,
      segments: [{ id: 0, start: 0, end: audio.duration, text: ' hello there' }],
      words: [
        { word: ' hello', start: 0, end: audio.duration / 2 },
        { word: ' there', start: audio.duration / 2, end: audio.duration },
      ],
    };
  }

  dispose(): void {
    this.disposed++;
    this.loaded = false;
  }
}

interface Harness {
  speech: Speech;
  models: FakeModel[];
  loads: Array<{
    path: string;
    options: { gpu: boolean; dtw: boolean; decoderPrecision: 'int8' | 'full'; greedyInt8Vocabulary: boolean };
  }>;
  decodes: number;
  tts: { closed: number; calls: number };
}

const engines: Speech[] = [];
afterEach(async () => {
  await Promise.all(engines.splice(0).map((speech) => speech.close()));
  vi.useRealTimers();
});

function harness(options: SpeechOptions = {}, overrides: Partial<SpeechDependencies> = {}, seconds = 2): Harness {
  const state: Omit<Harness, 'speech'> = { models: [], loads: [], decodes: 0, tts: { closed: 0, calls: 0 } };
  const load: SttModelLoader = async (path, loadOptions) => {
    state.loads.push({ path, options: loadOptions });
    const model = new FakeModel();
    state.models.push(model);
    return model;
  };
  const tts: TtsService = {
    synthesize: async () => {
      state.tts.calls++;
      throw new Error('not used');
    },
    synthesizeToBuffer: async () => {
      state.tts.calls++;
      return { audio: Buffer.from('RIFF') } as unknown as Awaited<ReturnType<TtsService['synthesizeToBuffer']>>;
    },
    live: async () => {
      state.tts.calls++;
      throw new Error('not used');
    },
    status: () => ({ workers: 1, active: 0, pending: 0, replacedWorkers: 0, voices: 0 }),
    close: async () => {
      state.tts.closed++;
    },
  };
  const dependencies: SpeechDependencies = {
    decodeAudio: async (_input, decodeOptions) => {
      state.decodes++;
      return audioOf(
        Math.min(seconds, decodeOptions.maxDurationSeconds ?? Infinity),
        decodeOptions.channels === 'stereo',
      );
    },
    loadSttModel: load,
    detectSpeechRegions: async (samples) => [{ start: 0, end: samples.length / SECOND }],
    createSpeakerWorker: () => ({
      run: async (_samples, regions) => [
        { start: regions[0]?.start ?? 0, end: regions[0]?.end ?? 0, speaker: 'speaker_1' },
      ],
      // One speaker per utterance, its voice the sign of the first sample: two speakers a test can tell apart.
      utterance: async (samples: Float32Array) => {
        // A level of exactly 0.5 makes the speaker worker fail.
        if (samples[0] === 0.5) throw new DiarizationError('the speaker model failed', { code: 'DIARIZATION_FAILED' });
        return {
          turns: [{ start: 0, end: samples.length / SECOND, speaker: 'speaker_1' }],
          voices: { speaker_1: (samples[0] ?? 0) >= 0 ? Float32Array.of(1, 0) : Float32Array.of(0, 1) },
          frontEnd: 'ge2e' as const,
        };
      },
      close: async () => undefined,
    }),
    createTtsService: () => tts,
    createSpeechDetector: () => {
      throw new Error('not used');
    },
    // Every file exists but speaker-embedding models (else diarization would pick one up by itself).
    fileExists: (path) => !/speaker-embedding|wespeaker|3dspeaker|campplus|eres2net/i.test(path),
    ...overrides,
  };
  const speech = new Speech({ modelsDir: '/models', vadModel: 'silero-v6.2.0', ...options }, dependencies);
  engines.push(speech);
  return { speech, ...state };
}

/**
 * Loads both model ids, holds a transcription on the first and starts one on the second while it runs (20 ms later, scaled);
 * `finish` lets the first end and waits for both.
 */
async function secondCallWhileFirstRuns(h: Harness) {
  await h.speech.loadModel('svc-stt-1');
  await h.speech.loadModel('svc-stt-1-flash');
  const [first, second] = h.models as [FakeModel, FakeModel];
  first.hold();
  const running = h.speech.transcribe(new Float32Array(SECOND));
  await vi.waitFor(() => expect(first.calls).toHaveLength(1), { timeout: scaledMs(1000) });
  const waiting = h.speech.transcribe(new Float32Array(SECOND), { model: 'svc-stt-1-flash' });
  await new Promise((resolve) => setTimeout(resolve, scaledMs(20)));
  const finish = async () => {
    first.release();
    await Promise.all([running, waiting]);
  };
  return { first, second, finish };
}

describe('Speech (fakes)', () => {
  it('gives each tier its defaults: svc-stt-1 beam 5 with DTW, svc-stt-1-flash greedy without', async () => {
    const h = harness();
    await h.speech.transcribe(new Float32Array(SECOND));
    await h.speech.transcribe(new Float32Array(SECOND), { model: 'svc-stt-1-flash' });
    expect(h.loads.map((load) => load.options.dtw)).toEqual([true, false]);
    expect(h.models[0]?.calls[0]?.params.beamSize).toBe(5);
    expect(h.models[1]?.calls[0]?.params.beamSize).toBe(0); // greedy
    expect(h.loads[0]?.path.startsWith('/models/')).toBe(true);
  });

  it('decodes any other id as svc-stt-1 does (beam 5, DTW), however the model is named; its config overrides', async () => {
    const h = harness({ models: { 'my-tiny': 'tiny.en', 'my-fast': { model: 'tiny.en', beamSize: 1, dtw: false } } });
    await h.speech.transcribe(new Float32Array(SECOND), { model: 'my-tiny' });
    await h.speech.transcribe(new Float32Array(SECOND), { model: 'my-fast' });
    expect(h.loads.map((load) => load.options.dtw)).toEqual([true, false]);
    expect(h.models[0]?.calls[0]?.params.beamSize).toBe(5);
    expect(h.models[1]?.calls[0]?.params.beamSize).toBe(0);
  });

  it("loads each id's decoder in full precision unless its config says int8, and names a bad value", async () => {
    const h = harness({ models: { 'my-int8': { model: 'tiny.en', decoderPrecision: 'int8' } } });
    await h.speech.transcribe(new Float32Array(SECOND));
    await h.speech.transcribe(new Float32Array(SECOND), { model: 'my-int8' });
    expect(h.loads.map((load) => load.options.decoderPrecision)).toEqual(['full', 'int8']);
    expect(() => harness({ models: { x: { model: 'tiny.en', decoderPrecision: 'f16' as never } } })).toThrow(
      /models\.x\.decoderPrecision/,
    );
  });

  it("makes each id's int8 greedy vocabulary copy unless its config says not to, and names a bad value", async () => {
    const h = harness({ models: { 'my-lean': { model: 'tiny.en', greedyInt8Vocabulary: false } } });
    await h.speech.transcribe(new Float32Array(SECOND));
    await h.speech.transcribe(new Float32Array(SECOND), { model: 'my-lean' });
    expect(h.loads.map((load) => load.options.greedyInt8Vocabulary)).toEqual([true, false]);
    expect(() => harness({ models: { x: { model: 'tiny.en', greedyInt8Vocabulary: 1 as never } } })).toThrow(
      /models\.x\.greedyInt8Vocabulary/,
    );
  });

  it('turns the VAD on by default when its model is installed, with 300 ms padding, and off when it is not', async () => {
    const installed = harness();
    await installed.speech.transcribe(new Float32Array(SECOND));
    await installed.speech.transcribe(new Float32Array(SECOND), { vad: false });
    expect(installed.models[0]?.vads.map((v) => v?.speechPadMs)).toEqual([300, undefined]);
    const missing = harness({}, { fileExists: (path) => !path.includes('silero') });
    await missing.speech.transcribe(new Float32Array(SECOND));
    expect(missing.models[0]?.vads).toEqual([undefined]);
    await expect(missing.speech.transcribe(new Float32Array(SECOND), { vad: true })).rejects.toThrow(/not installed/);
    const off = harness({ vad: false });
    await off.speech.transcribe(new Float32Array(SECOND));
    expect(off.models[0]?.vads).toEqual([undefined]);
    expect(() => harness({ vad: 'on' as never })).toThrow(/vad/);
  });

  it('loads a model once for concurrent calls, and retries a load that failed', async () => {
    let fail = true;
    const model = new FakeModel();
    let loads = 0;
    const h = harness(
      {},
      {
        loadSttModel: async () => {
          loads++;
          if (fail) throw new Error('disk hiccup');
          return model;
        },
      },
    );
    await expect(h.speech.transcribe(new Float32Array(SECOND))).rejects.toThrow('disk hiccup');
    fail = false;
    await Promise.all([h.speech.transcribe(new Float32Array(SECOND)), h.speech.transcribe(new Float32Array(SECOND))]);
    expect(loads).toBe(2);
    expect(model.calls).toHaveLength(2);
  });

  it('names unknown and missing models before decoding anything', async () => {
    const h = harness({}, { fileExists: () => false });
    await expect(h.speech.transcribe(new Float32Array(SECOND), { model: 'nope' })).rejects.toThrow(ModelNotFoundError);
    await expect(h.speech.transcribe(new Float32Array(SECOND), { model: 7 as unknown as string })).rejects.toThrow(
      InvalidOptionTypeError,
    );
    await expect(h.speech.transcribe(new Float32Array(SECOND))).rejects.toThrow(/npx voxmill models pull/);
    expect(h.decodes).toBe(0);
    expect(h.speech.status().map((s) => [s.id, s.installed, s.loaded])).toEqual([
      ['svc-stt-1', false, false],
      ['svc-stt-1-flash', false, false],
    ]);
  });

  it.each([
    // One call at a time, none waiting: the second is refused.
    ['concurrency + maxQueue', { concurrency: 1, maxQueue: 0 }, 2],
    // Room to run both, but 1 MiB holds 16 s of 16 kHz float32 and each call decodes 10 s.
    ['the decoded-audio budget (maxDecodedBytes)', { concurrency: 2, maxDecodedBytes: 1024 * 1024 }, 10],
  ] as const)('refuses work beyond %s with QueueFullError until the running call ends', async (_, options, seconds) => {
    const h = harness(options, {}, seconds);
    await h.speech.loadModel('svc-stt-1');
    const model = h.models[0] as FakeModel;
    model.hold();
    const first = h.speech.transcribe(new Float32Array(SECOND));
    await vi.waitFor(() => expect(model.calls).toHaveLength(1), { timeout: scaledMs(1000) });
    await expect(h.speech.transcribe(new Float32Array(SECOND))).rejects.toThrow(QueueFullError);
    model.release();
    await first;
    await expect(h.speech.transcribe(new Float32Array(SECOND))).resolves.toMatchObject({ text: ' hello there' });
  });

  it.each([
    ['waits for the budget when its audio is long', 60, 0],
    ['borrows the extra thread when its audio is short', 3, 1],
  ] as const)('shares one CPU budget across models: a second call %s', async (_, seconds, runningAtOnce) => {
    const h = harness({ cpuThreads: 2, threads: 2, concurrency: 1 }, {}, seconds);
    const { first, second, finish } = await secondCallWhileFirstRuns(h);
    expect(first.calls[0]?.params.threads).toBe(2);
    expect(second.calls).toHaveLength(runningAtOnce);
    await finish();
    // Long work waited and got the whole budget; short work ran at once on the one borrowed thread.
    expect(second.calls[0]?.params.threads).toBe(runningAtOnce ? 1 : 2);
  });

  it('runs one call at a time with maxConcurrentRuns 1, even short work that could borrow a thread', async () => {
    const h = harness({ cpuThreads: 2, threads: 1, concurrency: 1, maxConcurrentRuns: 1 }, {}, 3);
    const { second, finish } = await secondCallWhileFirstRuns(h);
    // A thread is free and the call is short, but one run is computing.
    expect(second.calls).toHaveLength(0);
    await finish();
    expect(second.calls).toHaveLength(1);
  });

  it('diarizes with maxConcurrentRuns 1: the speaker worker and whisper take turns', async () => {
    const h = harness({ cpuThreads: 2, maxConcurrentRuns: 1 }, {}, 60);
    const result = await h.speech.transcribe(new Float32Array(SECOND), { diarize: true });
    expect(result.segments?.[0]?.speaker).toBe('speaker_1');
  });

  it('unloads a model after idleUnloadMs without work, and loads it again when used', async () => {
    vi.useFakeTimers();
    const h = harness({ idleUnloadMs: 1000 });
    await h.speech.transcribe(new Float32Array(SECOND));
    expect(h.speech.status()[0]?.loaded).toBe(true);
    await vi.advanceTimersByTimeAsync(1001);
    expect(h.models[0]?.disposed).toBe(1);
    expect(h.speech.status()[0]?.loaded).toBe(false);
    await h.speech.transcribe(new Float32Array(SECOND));
    expect(h.loads).toHaveLength(2);
  });

  it('labels segments and words with speakers when diarize is true', async () => {
    const h = harness();
    const result = await h.speech.transcribe(new Float32Array(SECOND), { diarize: true, timestamps: 'word' });
    expect(result.segments?.[0]?.speaker).toBe('speaker_1');
    expect(result.words?.every((word) => word.speaker === 'speaker_1')).toBe(true);
  });

  it('diarizes long audio on a budget of one thread: the transcription gives its thread back before waiting', async () => {
    // 60 s is not short work, so the speaker worker cannot borrow: it needs the thread the transcription held. The
    // VAD answers after the transcription has taken that thread, as a real one does.
    const h = harness(
      { cpuThreads: 1 },
      {
        detectSpeechRegions: async (samples) => {
          await new Promise((resolve) => setTimeout(resolve, 30));
          return [{ start: 0, end: samples.length / SECOND }];
        },
      },
      60,
    );
    const result = await h.speech.transcribe(new Float32Array(SECOND), { diarize: true });
    expect(result.segments?.[0]?.speaker).toBe('speaker_1');
  });

  it('labels live finals with speakers (diarize) through the embedding model, and names diarize without one', async () => {
    const h = harness({ diarization: { embeddingModel: '/models/ge2e.onnx' } });
    const live = h.speech.createTranscriber({ vad: false, interimIntervalMs: 0, diarize: { maxSpeakers: 4 } });
    const finals: Array<{ speaker?: string }> = [];
    live.on('final', (event: { speaker?: string }) => finals.push(event));
    // The fake voice is the sign of an utterance's first sample: A, B, A.
    for (const level of [0.1, -0.1, 0.1]) {
      live.write(new Float32Array(2 * SECOND).fill(level));
      await live.commit();
    }
    live.end();
    await new Promise((resolve) => live.once('finish', resolve));
    expect(finals.map((f) => f.speaker)).toEqual(['speaker_1', 'speaker_2', 'speaker_1']);

    // A speaker worker that fails costs that utterance its labels, not its text; the stream goes on.
    const failing = h.speech.createTranscriber({ vad: false, interimIntervalMs: 0, diarize: true });
    const after: Array<{ text: string; speaker?: string; speakerError?: Error; turns?: unknown[] }> = [];
    failing.on('final', (event: (typeof after)[number]) => after.push(event));
    for (const level of [0.5, -0.1]) {
      failing.write(new Float32Array(2 * SECOND).fill(level));
      await failing.commit();
    }
    failing.end();
    await new Promise((resolve) => failing.once('finish', resolve));
    expect(after[0]).toMatchObject({ text: ' hello there', turns: [], speakerError: { code: 'DIARIZATION_FAILED' } });
    expect(after[0]?.speaker).toBeUndefined();
    // The failed one took no label: the next voice is the stream's first speaker.
    expect(after[1]?.speaker).toBe('speaker_1');

    const none = harness();
    expect(() => none.speech.createTranscriber({ vad: false, diarize: true })).toThrow(InvalidOptionValueError);
    expect(() => none.speech.createTranscriber({ vad: false, diarize: true })).toThrow(/diarize.*speaker-embedding/);
    expect(() => h.speech.createTranscriber({ vad: false, diarize: 'yes' as never })).toThrow(InvalidOptionTypeError);
    expect(() => h.speech.createTranscriber({ vad: false, diarize: { maxSpeakers: 0 } })).toThrow(
      /diarize\.maxSpeakers/,
    );
    expect(() => h.speech.createTranscriber({ vad: false, diarize: { speakers: 2 } as never })).toThrow(
      /diarize\.speakers/,
    );
  });

  it('reports a VAD failure inside diarize() as a DiarizationError with the cause kept', async () => {
    const vadFailure = new TranscriptionError('VAD failed: bad model');
    const h = harness({}, { detectSpeechRegions: async () => Promise.reject(vadFailure) });
    const error = await h.speech.diarize(new Float32Array(SECOND)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DiarizationError);
    expect((error as DiarizationError).message).toBe('VAD failed: bad model');
    expect((error as DiarizationError).cause).toBe(vadFailure);
  });

  it('diarize() answers turns, speakers, duration and method', async () => {
    const h = harness();
    await expect(h.speech.diarize(new Float32Array(SECOND))).resolves.toEqual({
      turns: [{ start: 0, end: 2, speaker: 'speaker_1' }],
      speakers: ['speaker_1'],
      duration: 2,
      method: 'features',
    });
  });

  it('diarize() uses installed catalog speaker-embedding and segmentation models by default, and none when told null', async () => {
    const recording = { fileExists: () => true };
    const installed = harness({}, recording);
    await expect(installed.speech.diarize(new Float32Array(SECOND))).resolves.toMatchObject({ method: 'segmentation' });
    const noSegmentation = harness({ diarization: { segmentationModel: null } }, recording);
    await expect(noSegmentation.speech.diarize(new Float32Array(SECOND))).resolves.toMatchObject({
      method: 'embedding',
    });
    // Without an embedding model the segmentation model is not picked up by itself...
    const off = harness({ diarization: { embeddingModel: null } }, recording);
    await expect(off.speech.diarize(new Float32Array(SECOND))).resolves.toMatchObject({ method: 'features' });
    // ...and asking for one anyway is an error naming the option.
    const both = harness({ diarization: { embeddingModel: null, segmentationModel: 'seg.onnx' } }, recording);
    await expect(both.speech.diarize(new Float32Array(SECOND))).rejects.toMatchObject({
      name: 'InvalidOptionValueError',
      param: 'diarization.segmentationModel',
    });
  });

  it('starts text-to-speech only when used, and closes everything once', async () => {
    const h = harness();
    expect(h.speech.ttsStatus().workers).toBe(0);
    await h.speech.synthesizeToBuffer({ voice: 'v', input: 'hi' });
    expect(h.speech.ttsStatus().workers).toBe(1);
    await h.speech.transcribe(new Float32Array(SECOND));
    await h.speech.close();
    await h.speech.close();
    expect(h.tts.closed).toBe(2);
    expect(h.models[0]?.disposed).toBe(1);
    await expect(h.speech.transcribe(new Float32Array(SECOND))).rejects.toThrow(ClosedError);
    await expect(h.speech.diarize(new Float32Array(SECOND))).rejects.toThrow(ClosedError);
    await expect(h.speech.synthesize({ voice: 'v', input: 'hi' })).rejects.toThrow(ClosedError);
  });

  it('validates its configuration with errors naming the option', () => {
    expect(() => harness({ models: { 'svc-stt-1': { model: 'base', beamSize: 99 } } })).toThrow(
      /models\.svc-stt-1\.beamSize/,
    );
    expect(() => harness({ nope: 1 } as SpeechOptions)).toThrow(/nope/);
    expect(() => harness({ cpuThreads: 0 })).toThrow(/cpuThreads/);
    expect(() => harness({ maxConcurrentRuns: 0 })).toThrow(/maxConcurrentRuns/);
  });
});
