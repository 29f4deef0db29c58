// Tells an upload's container from its first bytes, so the API accepts exactly the formats it is configured for.
// Never from the file name or the part's Content-Type.

/** Containers recognised by their bytes. */
export const AUDIO_CONTAINERS = ['wav', 'mp3', 'm4a', 'flac', 'ogg', 'webm', 'aac'] as const;
export type AudioContainer = (typeof AUDIO_CONTAINERS)[number];

/**
 * The upload formats accepted by default: the spec's wav, mp3, m4a, flac and ogg, and what browsers record
 * (MediaRecorder's webm; ADTS aac from mobile recorders), which the CLI and the library read as well.
 */
export const DEFAULT_AUDIO_CONTAINERS: readonly AudioContainer[] = AUDIO_CONTAINERS;

/** Bytes needed to tell the containers apart (an ID3v2 tag is skipped by its stated size, read from 10 bytes). */
export const SNIFF_BYTES = 12;

function ascii(bytes: Uint8Array, offset: number, text: string): boolean {
  for (let i = 0; i < text.length; i++) if (bytes[offset + i] !== text.charCodeAt(i)) return false;
  return true;
}

/** An MPEG audio frame header (layer I-III); ADTS AAC has the same sync but layer 00. */
function mpegFrame(bytes: Uint8Array, offset: number): 'mp3' | 'aac' | undefined {
  const b0 = bytes[offset];
  const b1 = bytes[offset + 1];
  if (b0 !== 0xff || b1 === undefined || (b1 & 0xe0) !== 0xe0) return undefined;
  const layer = (b1 >> 1) & 0x03;
  if (layer === 0) return (b1 & 0xf6) === 0xf0 ? 'aac' : undefined;
  return 'mp3';
}

/** The container of `head` (the upload's first bytes), or undefined when it is none of {@link AUDIO_CONTAINERS}. */
export function sniffAudioContainer(head: Uint8Array): AudioContainer | undefined {
  if (ascii(head, 0, 'RIFF') && (ascii(head, 8, 'WAVE') || ascii(head, 8, 'RF64'))) return 'wav';
  if (ascii(head, 0, 'RF64') && ascii(head, 8, 'WAVE')) return 'wav';
  if (ascii(head, 0, 'fLaC')) return 'flac';
  if (ascii(head, 0, 'OggS')) return 'ogg';
  if (ascii(head, 4, 'ftyp')) return 'm4a';
  if (head[0] === 0x1a && head[1] === 0x45 && head[2] === 0xdf && head[3] === 0xa3) return 'webm';
  // ID3v2 tags come before mp3 frames (and, rarely, before ADTS AAC, which is then still called mp3 here;
  // the decoder reads either).
  if (ascii(head, 0, 'ID3')) return 'mp3';
  return mpegFrame(head, 0);
}
