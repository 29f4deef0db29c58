// How whisper decoded a segment, from its tokens: what OpenAI's verbose_json reports for each segment.
import { deflateSync } from 'node:zlib';
import type { NativeSegment } from '../native.js';
import type { SegmentDecoding } from './types.js';

/** UTF-8 bytes over zlib-compressed bytes (openai-whisper's `compression_ratio`); 0 for empty text. */
export function compressionRatio(text: string): number {
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length === 0) return 0;
  return bytes.length / deflateSync(bytes).length;
}

export function segmentDecoding(segment: NativeSegment, text: string): SegmentDecoding {
  const tokens = segment.tokens.filter((token) => !token.special);
  const logprobs = tokens.map((token) => Math.log(Math.max(token.p, Number.MIN_VALUE)));
  return {
    tokens: tokens.map((token) => token.id),
    avgLogprob: logprobs.length === 0 ? 0 : logprobs.reduce((sum, value) => sum + value, 0) / logprobs.length,
    compressionRatio: compressionRatio(text),
    noSpeechProb: segment.noSpeechProb,
  };
}
