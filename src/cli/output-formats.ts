// Renders a transcription for the terminal or as subtitle files.
import type { Segment, Transcription } from '../stt/types.js';

export const OUTPUT_FORMATS = ['text', 'json', 'srt', 'vtt'] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];

function clock(seconds: number, separator: ',' | '.'): string {
  const ms = Math.max(0, Math.round(seconds * 1000));
  const h = Math.floor(ms / 3_600_000);
  const m = Math.floor((ms % 3_600_000) / 60_000);
  const s = Math.floor((ms % 60_000) / 1000);
  const pad = (n: number, width = 2) => String(n).padStart(width, '0');
  return `${pad(h)}:${pad(m)}:${pad(s)}${separator}${pad(ms % 1000, 3)}`;
}

function cues(segments: readonly Segment[], separator: ',' | '.'): string[] {
  return segments.map((s) => `${clock(s.start, separator)} --> ${clock(s.end, separator)}\n${s.text}`);
}

/** `srt` and `vtt` need segments: ask for them with timestamps `segment`. */
export function renderTranscription(result: Transcription, format: OutputFormat): string {
  switch (format) {
    case 'json':
      return `${JSON.stringify(result, null, 2)}\n`;
    case 'srt':
      return cues(result.segments ?? [], ',')
        .map((cue, i) => `${i + 1}\n${cue}\n`)
        .join('\n');
    case 'vtt':
      return `WEBVTT\n\n${cues(result.segments ?? [], '.')
        .map((cue) => `${cue}\n`)
        .join('\n')}`;
    default:
      return `${result.text}\n`;
  }
}
