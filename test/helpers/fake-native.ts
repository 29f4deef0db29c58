// Builders for native-shaped data, so result shaping is tested without the addon or a model.
import type { NativeSegment, NativeToken } from '../../src/native.js';

export interface TokenSpec {
  text: string;
  start?: number;
  end?: number;
  dtw?: number;
  special?: boolean;
  bytes?: Uint8Array;
}

export function segment(start: number, end: number, tokens: TokenSpec[], text?: string): NativeSegment {
  const parts = tokens.map((t) => t.bytes ?? Buffer.from(t.text, 'utf8'));
  const natives: NativeToken[] = tokens.map((t, i) => ({
    id: t.special ? 50256 + i : i,
    p: 0.9,
    start: t.start ?? start,
    end: t.end ?? end,
    dtw: t.dtw ?? -1,
    special: t.special ?? false,
    byteLength: parts[i]!.byteLength,
  }));
  return {
    start,
    end,
    text:
      text ??
      tokens
        .filter((t) => !t.special)
        .map((t) => t.text)
        .join(''),
    speakerTurnNext: false,
    noSpeechProb: 0,
    tokenBytes: Buffer.concat(parts),
    tokens: natives,
  };
}

/** A segment whose words are tokens of their own (a leading space each), evenly timed. */
export function spoken(start: number, end: number, text: string): NativeSegment {
  const words = text.split(' ');
  const step = (end - start) / words.length;
  return segment(
    start,
    end,
    words.map((word, i) => ({ text: ` ${word}`, start: start + i * step, end: start + (i + 1) * step })),
  );
}
