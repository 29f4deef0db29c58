// `Speech.transcribe()`: one transcription from request to result. Checks the call against the model id's defaults,
// takes a place in the model's queue (failing fast when full), decodes while earlier work still runs, and, with
// `diarize`, finds speakers on their own worker while whisper transcribes, then labels segments and words.
import type { AudioInput } from '../audio/decode.js';
import { attachSpeakers } from '../diarize/attach.js';
import type { DiarizationService } from '../diarize/service.js';
import { normalizeTranscribeOptions } from '../stt/request.js';
import type { SpeechTranscribeOptions, Transcription } from '../stt/types.js';
import { nativeVadParams } from '../stt/whisper-model.js';
import { DEFAULT_STT_MODEL } from '../tiers.js';
import { type CpuBudget, type CpuGrant, SHORT_WORK_SECONDS } from '../util/cpu-budget.js';
import { untilAborted } from '../util/job.js';
import { objectOption } from '../util/validate.js';
import type { AudioAdmission } from './audio-admission.js';
import type { ResolvedSpeechConfig } from './config.js';
import { DIARIZE_SAMPLE_COPIES, diarizationModels } from './diarize-flow.js';
import { decodeKnownSpeakers } from './known-speakers.js';
import type { ModelLocator } from './model-locator.js';
import type { ModelRegistry } from './model-registry.js';

/** What the transcribe flow works with. */
export interface TranscribeFlowContext {
  config: ResolvedSpeechConfig;
  locator: ModelLocator;
  registry: ModelRegistry;
  admission: AudioAdmission;
  diarization: DiarizationService;
  cpu: CpuBudget;
}

export async function transcribeInput(
  context: TranscribeFlowContext,
  input: AudioInput,
  options: SpeechTranscribeOptions,
): Promise<Transcription> {
  const { config, locator, registry, admission } = context;
  const raw = objectOption('options', options);
  const slot = registry.slot(raw.model ?? DEFAULT_STT_MODEL);
  const normalized = normalizeTranscribeOptions(raw, slot.config);
  // No call may decode more than the engine allows.
  normalized.maxDurationSeconds = Math.min(normalized.maxDurationSeconds ?? Infinity, config.maxDurationSeconds);
  // A call that says nothing about VAD gets the engine's default: 'auto' is on when the VAD model is installed.
  if (raw.vad === undefined) {
    if (config.vad === 'auto') {
      if (config.vadModel !== null && locator.isInstalled(config.vadModel)) normalized.vad = {};
    } else if (config.vad) normalized.vad = config.vad;
  }
  const vadModelPath =
    normalized.vad && normalized.vad.model === undefined && config.vadModel !== null
      ? locator.requireInstalled('vad', config.vadModel)
      : undefined;
  const vad = nativeVadParams(normalized.vad, vadModelPath);
  // Without VAD, the skip guard measures the speech of the stretches it suspects with the VAD model when installed.
  const speechModel =
    !vad && normalized.skipGuard && config.vadModel !== null && locator.isInstalled(config.vadModel)
      ? locator.requireInstalled('vad', config.vadModel)
      : undefined;
  const { signal } = normalized;
  // Fail before decoding when the model file is missing (the error says how to install it).
  registry.requireAvailable(slot);
  const speakers = normalized.speakers;
  const models = speakers ? diarizationModels(context, speakers, 'diarize.knownSpeakers') : undefined;

  // Take a place first (fails fast when full), then decode while earlier jobs still run.
  const lease = slot.queue.admit();
  registry.keepLoaded(slot);
  // An aborted call answers at once, but its slot stays taken until whisper has really stopped.
  let nativeWork: Promise<void> | undefined;
  let stopDiarizing: (() => void) | undefined;
  let releaseAudio: (() => void) | undefined;
  let releaseVoices: (() => void) | undefined;
  let cpu: CpuGrant | undefined;
  try {
    const { audio, release } = await admission.decode(input, {
      maxDurationSeconds: normalized.maxDurationSeconds,
      copies: normalized.diarize ? DIARIZE_SAMPLE_COPIES : 1,
      stereo: normalized.diarize,
      allowEmpty: true,
      signal,
    });
    releaseAudio = release;
    const known =
      speakers && models
        ? await decodeKnownSpeakers(speakers.knownSpeakers, 'diarize.knownSpeakers', {
            admission,
            findSpeech: (samples) => context.diarization.speechOfClip(samples, models, signal),
            maxDurationSeconds: normalized.maxDurationSeconds,
            signal,
          })
        : undefined;
    releaseVoices = known?.release;
    const counts = speakers?.counts;
    const voices = known?.voices ?? [];
    const tinydiarize = normalized.params.tinydiarize === true;
    // Speakers are found on their own worker thread while whisper transcribes; if the transcription fails, the
    // diarization is cancelled with it.
    const diarizing = new AbortController();
    const onAbort = () => diarizing.abort(signal?.reason);
    signal?.addEventListener('abort', onAbort, { once: true });
    stopDiarizing = () => {
      signal?.removeEventListener('abort', onAbort);
      diarizing.abort(new Error('the transcription ended'));
    };
    const early =
      counts && models && !tinydiarize && audio.samples.length > 0
        ? context.diarization.diarize(audio, counts, models, diarizing.signal, voices)
        : undefined;
    early?.catch(() => undefined); // awaited below; a transcription failure must not leave it unhandled
    await lease.acquire(signal);
    const model = await untilAborted(registry.load(slot), signal);
    // Threads from the engine's budget: as many as are free when this call's turn comes, up to `threads`.
    // Elastic: while no short work waits, a lone call is lent the budget's extra thread (every core computes), and
    // gives it back at its next graph pass when some arrives.
    cpu = await context.cpu.acquire({
      threads: normalized.params.threads,
      short: audio.duration <= SHORT_WORK_SECONDS,
      elastic: true,
      ...(signal ? { signal } : {}),
    });
    normalized.params.threads = cpu.threads;
    const transcription = await model.transcribeDecoded(
      audio,
      normalized,
      vad,
      (settled) => {
        nativeWork = settled;
      },
      cpu,
      speechModel,
    );
    // Whisper has finished: its threads go back now, before waiting for the speakers, whose worker takes threads from
    // the same budget (holding them here would deadlock a budget of one thread).
    cpu.release();
    if (counts && models) {
      // Audio with no samples has no speakers to find (and transcribed to empty text).
      const diarization =
        audio.samples.length === 0
          ? { turns: [] }
          : await (early ??
              context.diarization.diarizeTinydiarize(
                audio,
                transcription.segments ?? [],
                counts,
                models,
                diarizing.signal,
                voices,
              ));
      attachSpeakers(transcription, transcription.words ?? [], diarization.turns);
      if (normalized.timestamps !== 'word') delete transcription.words;
    }
    return transcription;
  } finally {
    stopDiarizing?.();
    const done = () => {
      cpu?.release();
      releaseAudio?.();
      releaseVoices?.();
      lease.release();
      registry.scheduleUnload(slot);
    };
    if (nativeWork) void nativeWork.then(done);
    else done();
  }
}
