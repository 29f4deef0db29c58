// Renders a transcription for the terminal or as subtitle files.
import { toSrt, toVtt } from '../stt/subtitles.js';
import type { Segment, Transcription } from '../stt/types.js';

export const OUTPUT_FORMATS = ['text', 'json', 'srt', 'vtt'] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];

/**
 * `srt` and `vtt` need segments (timestamps `segment`, or `word` with `segmentDecoding`): a transcription with text
 * but no segments is refused rather than written as an empty subtitle file.
 */
export function renderTranscription(result: Transcription, format: OutputFormat): string {
  switch (format) {
    case 'json':
      return `${JSON.stringify(result, null, 2)}\n`;
    case 'srt':
      return toSrt(subtitleSegments(result, format));
    case 'vtt':
      return toVtt(subtitleSegments(result, format));
    default:
      return `${result.text}\n`;
  }
}

function subtitleSegments(result: Transcription, format: OutputFormat): readonly Segment[] {
  if (result.segments === undefined && result.text.trim() !== '') {
    throw new Error(`${format} needs the transcription's segments; transcribe with timestamps 'segment'`);
  }
  return result.segments ?? [];
}
