// POST /v1/transcriptions: a multipart form with one audio file -> the transcription as JSON (both in openapi.json).
import { uploadDecodeError } from '../form-fields.js';
import { readTranscriptionForm } from '../multipart.js';
import { sendJson } from '../respond.js';
import type { RouteContext } from './context.js';
import { FILE_FIELD, TRANSCRIPTION_FIELDS, transcriptionOptionsOf } from './transcription-form.js';

export async function transcriptionsRoute({ req, res, options, signal }: RouteContext): Promise<void> {
  const form = await readTranscriptionForm(req, {
    fieldNames: TRANSCRIPTION_FIELDS,
    fileField: FILE_FIELD,
    maxFileBytes: options.maxFileBytes,
    audioFormats: options.audioFormats,
    uploadDir: options.uploadDir,
    signal,
  });
  try {
    const transcribeOptions = transcriptionOptionsOf(form, options);
    const file = form.file as NonNullable<typeof form.file>;
    const transcription = await options.speech
      .transcribe(file.data ?? (file.path as string), { ...transcribeOptions, signal })
      .catch((error: unknown) => {
        throw uploadDecodeError(error, file.container, FILE_FIELD);
      });
    sendJson(res, 200, transcription);
  } finally {
    // Removal is `rm --force`; a failure here (a vanished directory) must not turn an answered request into one.
    await form.file?.dispose().catch(() => undefined);
  }
}
