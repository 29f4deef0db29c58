// How whisper decoded a segment, from its tokens: what OpenAI's verbose_json reports for each segment.
import { deflateSync } from 'node:zlib';
import type { NativeSegment } from '../native.js';
import type { SegmentDecoding, TokenLogprob } from './types.js';

/** UTF-8 bytes over zlib-compressed bytes (openai-whisper's `compression_ratio`); 0 for empty text. */
export function compressionRatio(text: string): number {
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length === 0) return 0;
  return bytes.length / deflateSync(bytes).length;
}

export function segmentDecoding(segment: NativeSegment, text: string): SegmentDecoding {
  const ids: number[] = [];
  const tokenLogprobs: TokenLogprob[] = [];
  // tokenBytes holds every token's bytes back to back, special ones included.
  let offset = 0;
  for (const token of segment.tokens) {
    const bytes = segment.tokenBytes.subarray(offset, offset + token.byteLength);
    offset += token.byteLength;
    if (token.special) continue;
    ids.push(token.id);
    tokenLogprobs.push({
      token: bytes.toString('utf8'),
      bytes: [...bytes],
      logprob: Math.log(Math.max(token.p, Number.MIN_VALUE)),
    });
  }
  const sum = tokenLogprobs.reduce((total, item) => total + item.logprob, 0);
  return {
    tokens: ids,
    avgLogprob: tokenLogprobs.length === 0 ? 0 : sum / tokenLogprobs.length,
    compressionRatio: compressionRatio(text),
    noSpeechProb: segment.noSpeechProb,
    tokenLogprobs,
  };
}
