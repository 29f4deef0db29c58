// `Speech.diarize()`: who spoke when, without transcribing. Checks the call, finds the models, decodes under the
// engine's audio budget, and hands the samples to the diarization service.
import type { AudioInput } from '../audio/decode.js';
import { SPEAKER_KEYS, type SpeakerRequest, speakerRequest } from '../diarize/request.js';
import type { DiarizationModels, DiarizationService } from '../diarize/service.js';
import type { Diarization, DiarizeOptions } from '../diarize/types.js';
import { InvalidOptionValueError, ModelNotFoundError } from '../errors.js';
import { listCatalog } from '../models/catalog.js';
import { numberOption, objectOption, rejectUnknownKeys, signalOption } from '../util/validate.js';
import type { AudioAdmission } from './audio-admission.js';
import type { ResolvedSpeechConfig } from './config.js';
import { decodeKnownSpeakers } from './known-speakers.js';
import type { ModelLocator } from './model-locator.js';

/** Copies of the 16 kHz samples a diarizing call holds: the mix, the two sides, the diarization worker's copy. */
export const DIARIZE_SAMPLE_COPIES = 4;

/** What the diarize flow works with. */
export interface DiarizeFlowContext {
  config: ResolvedSpeechConfig;
  locator: ModelLocator;
  admission: AudioAdmission;
  diarization: DiarizationService;
}

/**
 * The VAD model, the speaker-embedding model (configured, or with `'auto'` the first installed catalog one) and the
 * segmentation model (likewise, and only with an embedding model), as installed paths.
 * @throws ModelNotFoundError saying which model is missing and how to install it.
 */
export function diarizationModels(
  { config, locator }: Pick<DiarizeFlowContext, 'config' | 'locator'>,
  request: Pick<SpeakerRequest, 'knownSpeakers'>,
  param: string,
): DiarizationModels {
  if (config.vadModel === null) {
    throw new ModelNotFoundError('diarization needs the Silero VAD model, but vadModel is null');
  }
  const configured = config.diarization.embeddingModel;
  const embedding =
    configured === 'auto'
      ? listCatalog().find((entry) => entry.kind === 'speaker-embedding' && locator.isInstalled(entry.id))?.id
      : (configured ?? undefined);
  // Known speakers are recognized by comparing voices, which only an embedding model can do across recordings (the
  // built-in features are normalized per recording).
  if (request.knownSpeakers.length > 0 && embedding === undefined) {
    throw new InvalidOptionValueError(
      param,
      'given only when a speaker-embedding model is configured (diarization.embeddingModel) or installed; none is',
      request.knownSpeakers,
    );
  }
  const configuredSegmentation = config.diarization.segmentationModel;
  const segmentation =
    configuredSegmentation === 'auto'
      ? embedding === undefined
        ? undefined
        : listCatalog().find((entry) => entry.kind === 'speaker-segmentation' && locator.isInstalled(entry.id))?.id
      : (configuredSegmentation ?? undefined);
  // The segmentation model finds local speakers; telling them apart across chunks takes speaker embeddings.
  if (segmentation !== undefined && embedding === undefined) {
    throw new InvalidOptionValueError(
      'diarization.segmentationModel',
      'used only with a speaker-embedding model (diarization.embeddingModel), and none is configured or installed',
      segmentation,
    );
  }
  return {
    vad: locator.requireInstalled('vad', config.vadModel),
    embedding: embedding === undefined ? undefined : locator.requireInstalled('diarization.embeddingModel', embedding),
    segmentation:
      segmentation === undefined ? undefined : locator.requireInstalled('diarization.segmentationModel', segmentation),
  };
}

export async function diarizeInput(
  context: DiarizeFlowContext,
  input: AudioInput,
  options: DiarizeOptions,
): Promise<Diarization> {
  const { config } = context;
  const raw = objectOption('options', options);
  rejectUnknownKeys('options', raw, [...SPEAKER_KEYS, 'maxDurationSeconds', 'signal']);
  const request = speakerRequest(raw);
  const signal = signalOption('signal', raw.signal);
  const maxDurationSeconds = Math.min(
    numberOption('maxDurationSeconds', raw.maxDurationSeconds, 0.001, 1e7) ?? config.maxDurationSeconds,
    config.maxDurationSeconds,
  );
  const models = diarizationModels(context, request, 'knownSpeakers');
  const known = await decodeKnownSpeakers(request.knownSpeakers, 'knownSpeakers', {
    admission: context.admission,
    findSpeech: (samples) => context.diarization.speechOfClip(samples, models, signal),
    maxDurationSeconds,
    signal,
  });
  try {
    const { audio, release } = await context.admission.decode(input, {
      maxDurationSeconds,
      copies: DIARIZE_SAMPLE_COPIES,
      stereo: true,
      allowEmpty: false,
      signal,
    });
    try {
      return await context.diarization.diarize(audio, request.counts, models, signal, known.voices);
    } finally {
      release();
    }
  } finally {
    known.release();
  }
}
