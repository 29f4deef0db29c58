// Speaker labels of a live transcription (`createTranscriber({ diarize })`): each ended utterance diarized with the
// speaker-embedding model (on the diarization service's live worker), and each of its speakers' voices placed among
// the voices heard so far in that stream (LiveSpeakers).
import { LiveSpeakers } from '../diarize/live-speakers.js';
import { InvalidOptionValueError } from '../errors.js';
import { LIVE_SPEAKER_THRESHOLDS, type NormalizedLiveTranscriberOptions } from '../stt/live-options.js';
import type { UtteranceSpeaker } from '../stt/live-transcriber.js';
import { type DiarizeFlowContext, diarizationModels } from './diarize-flow.js';

/**
 * The labeller of one live transcription. The threshold's default follows the model's front end, known from the
 * first answer.
 * @throws InvalidOptionValueError naming `diarize` when no speaker-embedding model is configured or installed;
 *   ModelNotFoundError when the configured one is missing.
 */
export function liveSpeakerLabels(
  context: Pick<DiarizeFlowContext, 'config' | 'locator' | 'diarization'>,
  options: NonNullable<NormalizedLiveTranscriberOptions['diarize']>,
): UtteranceSpeaker {
  const { embedding } = diarizationModels(context, { knownSpeakers: [] }, 'diarize');
  if (embedding === undefined) {
    // The built-in features are normalized per recording: they cannot compare voices across utterances.
    throw new InvalidOptionValueError(
      'diarize',
      'given only when a speaker-embedding model is configured (diarization.embeddingModel) or installed; none is',
      true,
    );
  }
  let speakers: LiveSpeakers | undefined;
  // Within an utterance the file pipeline tells its speakers apart (a turn with no pause is one utterance);
  // across utterances each local speaker's voice is placed among the stream's (LiveSpeakers).
  const counts = { minSpeakers: 1, maxSpeakers: options.maxSpeakers, numSpeakers: undefined };
  return async (samples, signal) => {
    const found = await context.diarization.utteranceSpeakers(samples, counts, embedding, signal);
    speakers ??= new LiveSpeakers({
      threshold: options.threshold ?? LIVE_SPEAKER_THRESHOLDS[found.frontEnd],
      maxSpeakers: options.maxSpeakers,
      minSeconds: options.minSeconds,
    });
    const stream = speakers;
    return () => stream.label(found.turns, found.voices);
  };
}
