// The fields of POST /v1/transcriptions, read into transcription options: shared by that route and by
// POST /v1/jobs/transcriptions, which takes the same fields and runs them later.
import type { JobTranscribeOptions } from '../../jobs/types.js';
import { ANNOTATION_POLICIES, TIMESTAMP_GRANULARITIES } from '../../stt/request.js';
import type { AnnotationPolicy, TimestampGranularity } from '../../stt/types.js';
import { formBoolean, invalidField, missingField } from '../form-fields.js';
import { HttpError } from '../http-error.js';
import type { TranscriptionForm } from '../multipart.js';
import type { ResolvedHandlerOptions } from '../options.js';

export const TRANSCRIPTION_FIELDS = [
  'model',
  'language',
  'timestamps',
  'diarize',
  'vad',
  'suppress_non_speech',
  'condition_on_previous_text',
  'repetition_guard',
  'skip_guard',
  'annotations',
] as const;

/** Boolean form fields and the transcription option each one sets; omitted ones leave the server's default. */
const GUARD_FIELDS = {
  vad: 'vad',
  suppress_non_speech: 'suppressNonSpeech',
  condition_on_previous_text: 'conditionOnPreviousText',
  repetition_guard: 'repetitionGuard',
  skip_guard: 'skipGuard',
} as const;

export const FILE_FIELD = 'file';

/** The form's transcription options, each field checked and named in its error; the file must be there. */
export function transcriptionOptionsOf(
  form: TranscriptionForm,
  options: Pick<ResolvedHandlerOptions, 'speech' | 'maxAudioSeconds'>,
): JobTranscribeOptions {
  // An empty optional field is an HTML form's way of leaving it out.
  const field = (name: string) => form.fields.get(name) || undefined;
  const model = field('model');
  if (model === undefined) throw missingField('model');
  const models = options.speech.modelIds;
  if (!models.includes(model)) {
    throw new HttpError(400, 'model_not_found', `unknown model "${model}"; available: ${models.join(', ')}`, {
      param: 'model',
    });
  }
  if (!form.file) throw missingField(FILE_FIELD);
  const timestamps = field('timestamps') ?? 'segment';
  if (!(TIMESTAMP_GRANULARITIES as readonly string[]).includes(timestamps)) {
    throw invalidField('timestamps', `one of ${TIMESTAMP_GRANULARITIES.join(', ')}`, timestamps);
  }
  const language = field('language');
  const guards: Partial<Record<(typeof GUARD_FIELDS)[keyof typeof GUARD_FIELDS], boolean>> = {};
  for (const [name, option] of Object.entries(GUARD_FIELDS)) {
    const value = formBoolean(name, field(name));
    if (value !== undefined) guards[option] = value;
  }
  const annotations = field('annotations');
  if (annotations !== undefined && !(ANNOTATION_POLICIES as readonly string[]).includes(annotations)) {
    throw invalidField('annotations', `one of ${ANNOTATION_POLICIES.join(', ')}`, annotations);
  }
  return {
    model,
    timestamps: timestamps as TimestampGranularity,
    diarize: formBoolean('diarize', field('diarize')) ?? false,
    ...(language === undefined ? {} : { language }),
    ...guards,
    ...(annotations === undefined ? {} : { annotations: annotations as AnnotationPolicy }),
    maxDurationSeconds: options.maxAudioSeconds,
  };
}
