// Subtitle files from transcript segments: SubRip (.srt) and WebVTT (.vtt), as the CLI writes them and the
// OpenAI-compatible route returns them.
import type { Segment } from './types.js';

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

/** SubRip: numbered cues, `HH:MM:SS,mmm` times, a blank line between cues. */
export function toSrt(segments: readonly Segment[]): string {
  return cues(segments, ',')
    .map((cue, i) => `${i + 1}\n${cue}\n`)
    .join('\n');
}

/** WebVTT: the `WEBVTT` header, `HH:MM:SS.mmm` times, a blank line between cues. */
export function toVtt(segments: readonly Segment[]): string {
  return `WEBVTT\n\n${cues(segments, '.')
    .map((cue) => `${cue}\n`)
    .join('\n')}`;
}
