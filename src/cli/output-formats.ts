// Renders a transcription for the terminal or as subtitle files.
import { toSrt, toVtt } from '../stt/subtitles.js';
import type { Transcription } from '../stt/types.js';

export const OUTPUT_FORMATS = ['text', 'json', 'srt', 'vtt'] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];

/** `srt` and `vtt` need segments: ask for them with timestamps `segment`. */
export function renderTranscription(result: Transcription, format: OutputFormat): string {
  switch (format) {
    case 'json':
      return `${JSON.stringify(result, null, 2)}\n`;
    case 'srt':
      return toSrt(result.segments ?? []);
    case 'vtt':
      return toVtt(result.segments ?? []);
    default:
      return `${result.text}\n`;
  }
}
