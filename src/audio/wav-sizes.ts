// A streamed WAV says 0xFFFFFFFF for its RIFF and data sizes (the length is not known when the header leaves). Once
// the whole file is in one buffer, the real sizes can be written in: the RIFF size after "RIFF", and the size of the
// "data" chunk, found by walking the chunks after "WAVE".

/** Writes the real RIFF and data sizes into a whole WAV file in place; anything that is not one is left alone. */
export function finalizeWavSizes(wav: Buffer): void {
  if (wav.length < 12 || wav.toString('latin1', 0, 4) !== 'RIFF' || wav.toString('latin1', 8, 12) !== 'WAVE') return;
  wav.writeUInt32LE(Math.min(0xffffffff, wav.length - 8), 4);
  for (let offset = 12; offset + 8 <= wav.length; ) {
    const id = wav.toString('latin1', offset, offset + 4);
    if (id === 'data') {
      wav.writeUInt32LE(Math.min(0xffffffff, wav.length - offset - 8), offset + 4);
      return;
    }
    const size = wav.readUInt32LE(offset + 4);
    // Chunks are padded to an even size.
    offset += 8 + size + (size % 2);
  }
}
