// G.711 (ITU-T) µ-law and A-law bytes to 16-bit linear PCM, as telephone systems and OpenAI's realtime clients send
// them at 8 kHz.

/** µ-law bytes to 16-bit samples. */
export function decodeMuLaw(bytes: Uint8Array): Int16Array {
  const out = new Int16Array(bytes.length);
  for (let i = 0; i < bytes.length; i++) {
    const u = ~(bytes[i] as number) & 0xff;
    const exponent = (u >> 4) & 0x07;
    const magnitude = ((((u & 0x0f) << 3) + 0x84) << exponent) - 0x84;
    out[i] = u & 0x80 ? -magnitude : magnitude;
  }
  return out;
}

/** A-law bytes to 16-bit samples. */
export function decodeALaw(bytes: Uint8Array): Int16Array {
  const out = new Int16Array(bytes.length);
  for (let i = 0; i < bytes.length; i++) {
    const a = (bytes[i] as number) ^ 0x55;
    const exponent = (a >> 4) & 0x07;
    const mantissa = a & 0x0f;
    const magnitude = exponent === 0 ? (mantissa << 4) + 8 : ((mantissa << 4) + 0x108) << (exponent - 1);
    out[i] = a & 0x80 ? magnitude : -magnitude;
  }
  return out;
}
