// POST /v1/transcriptions: a multipart form with one audio file -> the transcription as JSON (both in openapi.json).
import { ANNOTATION_POLICIES, TIMESTAMP_GRANULARITIES } from '../../stt/request.js';
import type { AnnotationPolicy, TimestampGranularity } from '../../stt/types.js';
import { formBoolean, invalidField, missingField, uploadDecodeError } from '../form-fields.js';
import { HttpError } from '../http-error.js';
import { readTranscriptionForm } from '../multipart.js';
import { sendJson } from '../respond.js';
import type { RouteContext } from './context.js';

const FIELDS = [
  'model',
  'language',
  'timestamps',
  'diarize',
  'vad',
  'suppress_non_speech',
  'condition_on_previous_text',
  'repetition_guard',
  'annotations',
] as const;

/** Boolean form fields and the transcription option each one sets; omitted ones leave the server's default. */
const GUARD_FIELDS = {
  vad: 'vad',
  suppress_non_speech: 'suppressNonSpeech',
  condition_on_previous_text: 'conditionOnPreviousText',
  repetition_guard: 'repetitionGuard',
} as const;
const FILE_FIELD = 'file';

export async function transcriptionsRoute({ req, res, options, signal }: RouteContext): Promise<void> {
  const form = await readTranscriptionForm(req, {
    fieldNames: FIELDS,
    fileField: FILE_FIELD,
    maxFileBytes: options.maxFileBytes,
    audioFormats: options.audioFormats,
    uploadDir: options.uploadDir,
    signal,
  });
  try {
    // An empty optional field is an HTML form's way of leaving it out.
    const field = (name: (typeof FIELDS)[number]) => form.fields.get(name) || undefined;
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
    const guards: Record<string, boolean> = {};
    for (const [name, option] of Object.entries(GUARD_FIELDS)) {
      const value = formBoolean(name, field(name as keyof typeof GUARD_FIELDS));
      if (value !== undefined) guards[option] = value;
    }
    const annotations = field('annotations');
    if (annotations !== undefined && !(ANNOTATION_POLICIES as readonly string[]).includes(annotations)) {
      throw invalidField('annotations', `one of ${ANNOTATION_POLICIES.join(', ')}`, annotations);
    }
    const { container } = form.file;
    const transcription = await options.speech
      .transcribe(form.file.data ?? (form.file.path as string), {
        model,
        timestamps: timestamps as TimestampGranularity,
        diarize: formBoolean('diarize', field('diarize')) ?? false,
        ...(language === undefined ? {} : { language }),
        ...guards,
        ...(annotations === undefined ? {} : { annotations: annotations as AnnotationPolicy }),
        maxDurationSeconds: options.maxAudioSeconds,
        signal,
      })
      .catch((error: unknown) => {
        throw uploadDecodeError(error, container, FILE_FIELD);
      });
    sendJson(res, 200, transcription);
  } finally {
    // Removal is `rm --force`; a failure here (a vanished directory) must not turn an answered request into one.
    await form.file?.dispose().catch(() => undefined);
  }
}
