// The whisper.cpp ggml file format, once: what scripts/make-fixtures.mjs (random-weight fixture models),
// scripts/models/ct2-to-ggml.mjs (the CTranslate2 converter) and test/helpers/ct2-fixture.ts (reading the
// converter's output back) share.
//
// A whisper ggml file (whisper.cpp's whisper_model_load, models/convert-pt-to-ggml.py) is, little-endian:
//   u32 magic 'ggml'; the hparams as i32 in HPARAM_NAMES order;
//   the mel filters: i32 n_mel, i32 n_fft, n_mel x n_fft f32;
//   the vocabulary: i32 token count, then per token a u32 byte length and the bytes;
//   the tensors to the end of the file: i32 n_dims, i32 name length, i32 type, n_dims x i32 ne (fastest-varying
//   first), the name, the data (f32 or f16).

export const GGML_MAGIC = 0x67676d6c;
/** ggml's type ids for the two types whisper models are written in. */
export const GGML_F32 = 0;
export const GGML_F16 = 1;

/** The hparams, in the order the file stores them. */
export const HPARAM_NAMES = Object.freeze([
  'n_vocab',
  'n_audio_ctx',
  'n_audio_state',
  'n_audio_head',
  'n_audio_layer',
  'n_text_ctx',
  'n_text_state',
  'n_text_head',
  'n_text_layer',
  'n_mels',
  'ftype',
]);

/** Bytes of the magic and the hparams: where the mel filter block starts. */
export const HEADER_BYTES = 4 + 4 * HPARAM_NAMES.length;

/** A malformed ggml file; the message names the file and what is wrong with it. */
export class WhisperGgmlError extends Error {
  constructor(path, message) {
    super(message);
    this.name = 'WhisperGgmlError';
    this.path = path;
  }
}

export const elementCount = (ne) => ne.reduce((x, y) => x * y, 1);

/** Bytes of one element of a tensor of ggml type `type` (f32 or f16). */
export function typeSize(type) {
  if (type === GGML_F32) return 4;
  if (type === GGML_F16) return 2;
  throw new RangeError(`ggml type ${type} is neither f32 (${GGML_F32}) nor f16 (${GGML_F16})`);
}

/** The magic and the hparams (`hparams` has every name of HPARAM_NAMES). */
export function ggmlHeader(hparams) {
  const head = Buffer.alloc(HEADER_BYTES);
  head.writeUInt32LE(GGML_MAGIC, 0);
  HPARAM_NAMES.forEach((name, i) => {
    head.writeInt32LE(hparams[name], 4 + 4 * i);
  });
  return head;
}

/** One tensor's record before its data. `ne` is ggml order: fastest-varying first (numpy's shape reversed). */
export function tensorHeader(name, ne, type) {
  const nameBytes = Buffer.from(name, 'utf8');
  const header = Buffer.alloc(12 + 4 * ne.length + nameBytes.length);
  header.writeInt32LE(ne.length, 0);
  header.writeInt32LE(nameBytes.length, 4);
  header.writeInt32LE(type, 8);
  ne.forEach((n, i) => {
    header.writeInt32LE(n, 12 + 4 * i);
  });
  nameBytes.copy(header, 12 + 4 * ne.length);
  return header;
}

/** A tensor's whole record: header and data. */
export const tensorRecordBytes = (name, ne, type) =>
  12 + 4 * ne.length + Buffer.byteLength(name, 'utf8') + elementCount(ne) * typeSize(type);

/**
 * Reads everything before the tensors of the whisper ggml file held in `file` (a Buffer; `path` names it in
 * errors): `hparams` by name, `melRows` and `melColumns` (n_mel, n_fft), `mel` (the filter block as stored,
 * n_mel and n_fft included), `tokens` (each token's bytes), `vocabulary` (the vocabulary block as stored, count
 * included), and `tensorsStart`, the offset of the first tensor. The buffers are views of `file`. Throws a
 * WhisperGgmlError for a bad magic or a file that ends inside the header, filters or vocabulary.
 */
export function readWhisperGgmlHeader(file, path) {
  const need = (end, what) => {
    if (end > file.length) {
      throw new WhisperGgmlError(
        path,
        `${path} is truncated in its ${what}: it needs ${end} bytes, the file has ${file.length}`,
      );
    }
  };
  need(HEADER_BYTES, 'header');
  const magic = file.readUInt32LE(0);
  if (magic !== GGML_MAGIC) {
    throw new WhisperGgmlError(
      path,
      `${path} is not a whisper.cpp ggml file: its magic is 0x${magic.toString(16)}, expected 0x${GGML_MAGIC.toString(16)}`,
    );
  }
  const hparams = Object.fromEntries(HPARAM_NAMES.map((name, i) => [name, file.readInt32LE(4 + 4 * i)]));
  const melStart = HEADER_BYTES;
  need(melStart + 8, 'mel filters');
  const melRows = file.readInt32LE(melStart);
  const melColumns = file.readInt32LE(melStart + 4);
  if (melRows < 0 || melColumns < 0) {
    throw new WhisperGgmlError(path, `${path} has a mel filter block of ${melRows} x ${melColumns}`);
  }
  const melEnd = melStart + 8 + 4 * melRows * melColumns;
  need(melEnd + 4, 'mel filters');
  const tokenCount = file.readInt32LE(melEnd);
  if (tokenCount < 0) throw new WhisperGgmlError(path, `${path} has a vocabulary of ${tokenCount} tokens`);
  const tokens = [];
  let offset = melEnd + 4;
  for (let i = 0; i < tokenCount; i++) {
    need(offset + 4, 'vocabulary');
    const length = file.readUInt32LE(offset);
    need(offset + 4 + length, 'vocabulary');
    tokens.push(file.subarray(offset + 4, offset + 4 + length));
    offset += 4 + length;
  }
  return {
    hparams,
    melRows,
    melColumns,
    mel: file.subarray(melStart, melEnd),
    tokens,
    vocabulary: file.subarray(melEnd, offset),
    tensorsStart: offset,
  };
}

// --- float16 ----------------------------------------------------------------------------------------------

const scratchF32 = new Float32Array(1);
const scratchU32 = new Uint32Array(scratchF32.buffer);

/** IEEE binary32 bits -> binary16 bits, rounding to nearest, ties to even (numpy's astype(float16)). */
export function halfBitsOfFloatBits(x) {
  const sign = (x >>> 16) & 0x8000;
  const exponent = (x >>> 23) & 0xff;
  const mantissa = x & 0x7fffff;
  if (exponent === 0xff) return sign | 0x7c00 | (mantissa === 0 ? 0 : 0x200 | (mantissa >>> 13));
  const e = exponent - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    // Subnormal half (or zero): the value is m * 2^-24 with m = significand >> (14 - e).
    if (e < -10) return sign;
    const significand = mantissa | 0x800000;
    const shift = 14 - e;
    const half = 1 << (shift - 1);
    const rest = significand & ((1 << shift) - 1);
    let m = significand >>> shift;
    if (rest > half || (rest === half && (m & 1) === 1)) m += 1;
    return sign | m;
  }
  let h = (e << 10) | (mantissa >>> 13);
  const rest = mantissa & 0x1fff;
  // A carry out of the mantissa lands in the exponent, which is the right answer, up to infinity.
  if (rest > 0x1000 || (rest === 0x1000 && (h & 1) === 1)) h += 1;
  return sign | h;
}

/** The binary16 bits nearest to `value` (ties to even). */
export function float32ToFloat16Bits(value) {
  scratchF32[0] = value;
  return halfBitsOfFloatBits(scratchU32[0]);
}

/** binary16 bits -> binary32 bits, exact; NaN payloads are kept. */
function floatBitsOfHalfBits(h) {
  const sign = (h & 0x8000) << 16;
  const exponent = (h >>> 10) & 0x1f;
  let mantissa = h & 0x3ff;
  if (exponent === 0x1f) return (sign | 0x7f800000 | (mantissa << 13)) >>> 0;
  if (exponent === 0) {
    if (mantissa === 0) return sign >>> 0;
    let e = -14;
    while ((mantissa & 0x400) === 0) {
      mantissa <<= 1;
      e -= 1;
    }
    return (sign | ((e + 127) << 23) | ((mantissa & 0x3ff) << 13)) >>> 0;
  }
  return (sign | ((exponent - 15 + 127) << 23) | (mantissa << 13)) >>> 0;
}

let halfTable;
/** All 65,536 halves as floats, indexed by their bits; made on first use. */
export function halfToFloatTable() {
  if (!halfTable) {
    const bits = new Uint32Array(65536);
    for (let h = 0; h < 65536; h++) bits[h] = floatBitsOfHalfBits(h);
    halfTable = new Float32Array(bits.buffer);
  }
  return halfTable;
}

/** The float value of binary16 bits. */
export function float16BitsToFloat32(h) {
  return halfToFloatTable()[h & 0xffff];
}
