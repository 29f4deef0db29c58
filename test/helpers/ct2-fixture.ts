// Synthetic CTranslate2 Whisper models for the ct2-to-ggml tests: the variables of a WhisperSpec (fused self-attention
// QKV, fused cross-attention KV, scalars) with tiny dimensions, written in CTranslate2's model.bin layout
// (python/ctranslate2/specs/model_spec.py `_serialize`), optionally quantized to int8 the way CTranslate2 does it.
// It also reads the ggml files the converter writes back (the header through scripts/lib/whisper-ggml.mjs, which the
// converter writes it with; the tensor values independently).
import {
  elementCount,
  GGML_F16,
  type Hparams,
  readWhisperGgmlHeader,
  typeSize,
} from '../../scripts/lib/whisper-ggml.mjs';

export type Ct2Dtype = 'float32' | 'int8' | 'int16' | 'int32' | 'float16' | 'bfloat16';
const DTYPE_IDS: Record<Ct2Dtype, number> = { float32: 0, int8: 1, int16: 2, int32: 3, float16: 4, bfloat16: 5 };
const ITEM_SIZE: Record<Ct2Dtype, number> = { float32: 4, int8: 1, int16: 2, int32: 4, float16: 2, bfloat16: 2 };

/** One variable as stored: its bytes already in `dtype`. */
export interface Ct2Variable {
  name: string;
  shape: number[];
  dtype: Ct2Dtype;
  data: Uint8Array;
}

/** A float variable before it is stored. */
export interface FloatVariable {
  shape: number[];
  values: Float32Array;
}

export interface WhisperDims {
  state: number;
  heads: number;
  audioCtx: number;
  textCtx: number;
  mels: number;
  vocab: number;
  encoderLayers: number;
  decoderLayers: number;
}

export const elements = elementCount;

function hash32(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

/** Deterministic values k / 1024 with |k| <= 1000: exact in float16, different for every variable and index. */
function halfExactValues(name: string, count: number): Float32Array {
  const values = new Float32Array(count);
  let state = hash32(name) || 1;
  for (let i = 0; i < count; i++) {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    state >>>= 0;
    values[i] = ((state % 2001) - 1000) / 1024;
  }
  return values;
}

/** Every float variable of a CTranslate2 WhisperSpec, as the Transformers converter names and fuses them. */
export function whisperFloats(dims: WhisperDims): Map<string, FloatVariable> {
  const n = dims.state;
  const floats = new Map<string, FloatVariable>();
  const add = (name: string, shape: number[]) =>
    floats.set(name, { shape, values: halfExactValues(name, elements(shape)) });
  const linear = (prefix: string, out: number, inp: number) => {
    add(`${prefix}/weight`, [out, inp]);
    add(`${prefix}/bias`, [out]);
  };
  const norm = (prefix: string) => {
    add(`${prefix}/gamma`, [n]);
    add(`${prefix}/beta`, [n]);
  };
  // Whisper's key projection has no bias: the converter fuses zeros in its place.
  const zeroKeyBias = (name: string, first: number) => floats.get(name)?.values.fill(0, first, first + n);

  add('encoder/conv1/weight', [n, dims.mels, 3]);
  add('encoder/conv1/bias', [n]);
  add('encoder/conv2/weight', [n, n, 3]);
  add('encoder/conv2/bias', [n]);
  add('encoder/position_encodings/encodings', [dims.audioCtx, n]);
  norm('encoder/layer_norm');
  for (let i = 0; i < dims.encoderLayers; i++) {
    const layer = `encoder/layer_${i}`;
    linear(`${layer}/self_attention/linear_0`, 3 * n, n);
    zeroKeyBias(`${layer}/self_attention/linear_0/bias`, n);
    linear(`${layer}/self_attention/linear_1`, n, n);
    norm(`${layer}/self_attention/layer_norm`);
    linear(`${layer}/ffn/linear_0`, 4 * n, n);
    linear(`${layer}/ffn/linear_1`, n, 4 * n);
    norm(`${layer}/ffn/layer_norm`);
  }
  add('decoder/embeddings/weight', [dims.vocab, n]);
  add('decoder/position_encodings/encodings', [dims.textCtx, n]);
  norm('decoder/layer_norm');
  for (let i = 0; i < dims.decoderLayers; i++) {
    const layer = `decoder/layer_${i}`;
    linear(`${layer}/self_attention/linear_0`, 3 * n, n);
    zeroKeyBias(`${layer}/self_attention/linear_0/bias`, n);
    linear(`${layer}/self_attention/linear_1`, n, n);
    norm(`${layer}/self_attention/layer_norm`);
    linear(`${layer}/attention/linear_0`, n, n);
    linear(`${layer}/attention/linear_1`, 2 * n, n);
    zeroKeyBias(`${layer}/attention/linear_1/bias`, 0);
    linear(`${layer}/attention/linear_2`, n, n);
    norm(`${layer}/attention/layer_norm`);
    linear(`${layer}/ffn/linear_0`, 4 * n, n);
    linear(`${layer}/ffn/linear_1`, n, 4 * n);
    norm(`${layer}/ffn/layer_norm`);
  }
  return floats;
}

const scratch = new Float32Array(1);
const scratchBits = new Uint32Array(scratch.buffer);

/** float -> binary16 bits, written independently of the converter (via numbers, not bit tricks on the mantissa). */
export function referenceHalfBits(value: number): number {
  scratch[0] = value;
  const bits = scratchBits[0] ?? 0;
  const sign = (bits >>> 16) & 0x8000;
  const v = Math.abs(scratch[0] ?? 0);
  if (Number.isNaN(v)) return sign | 0x7e00;
  if (v >= 65520) return sign | 0x7c00;
  if (v < 2 ** -14) {
    // Subnormal: multiples of 2^-24, ties to even.
    const q = v / 2 ** -24;
    let m = Math.floor(q);
    const rest = q - m;
    if (rest > 0.5 || (rest === 0.5 && m % 2 === 1)) m += 1;
    return sign | m;
  }
  const exponent = Math.floor(Math.log2(v));
  const e = v / 2 ** exponent >= 2 ? exponent + 1 : v / 2 ** exponent < 1 ? exponent - 1 : exponent;
  const q = (v / 2 ** e - 1) * 1024;
  let m = Math.floor(q);
  const rest = q - m;
  if (rest > 0.5 || (rest === 0.5 && m % 2 === 1)) m += 1;
  return sign | (((e + 15) << 10) + m);
}

/** binary16 bits -> float. */
export function halfBitsToNumber(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exponent = (h >>> 10) & 0x1f;
  const mantissa = h & 0x3ff;
  if (exponent === 0) return sign * mantissa * 2 ** -24;
  if (exponent === 31) return mantissa ? Number.NaN : sign * Number.POSITIVE_INFINITY;
  return sign * (1 + mantissa / 1024) * 2 ** (exponent - 15);
}

/** Stores floats as `dtype` (float16 via round to nearest even). */
export function storeFloats(name: string, variable: FloatVariable, dtype: 'float32' | 'float16'): Ct2Variable {
  if (dtype === 'float32') {
    const copy = new Float32Array(variable.values);
    return { name, shape: variable.shape, dtype, data: new Uint8Array(copy.buffer) };
  }
  const halves = new Uint16Array(variable.values.length);
  variable.values.forEach((v, i) => {
    halves[i] = referenceHalfBits(v);
  });
  return { name, shape: variable.shape, dtype, data: new Uint8Array(halves.buffer) };
}

/**
 * CTranslate2's int8 quantization (model_spec.py `_quantize`): per row (a 3-D conv weight flattened to rows),
 * scale = 127 / max|row| (127 for an all-zero row), q = rint(w * scale). Returns the weight and `<name>_scale`.
 */
export function quantizeInt8(name: string, variable: FloatVariable): [Ct2Variable, Ct2Variable] {
  const rows = variable.shape[0] ?? 1;
  const perRow = variable.values.length / rows;
  const q = new Int8Array(variable.values.length);
  const scales = new Float32Array(rows);
  for (let r = 0; r < rows; r++) {
    let amax = 0;
    for (let i = r * perRow; i < (r + 1) * perRow; i++) amax = Math.max(amax, Math.abs(variable.values[i] ?? 0));
    const scale = Math.fround(127 / (amax === 0 ? 127 : amax));
    scales[r] = scale;
    for (let i = r * perRow; i < (r + 1) * perRow; i++) {
      const x = Math.fround((variable.values[i] ?? 0) * scale);
      // numpy's rint rounds halves to even.
      const floor = Math.floor(x);
      const rounded = x - floor === 0.5 ? (floor % 2 === 0 ? floor : floor + 1) : Math.round(x);
      q[i] = rounded;
    }
  }
  return [
    { name, shape: variable.shape, dtype: 'int8', data: new Uint8Array(q.buffer) },
    { name: `${name}_scale`, shape: [rows], dtype: 'float32', data: new Uint8Array(scales.buffer) },
  ];
}

export function scalar(name: string, dtype: 'int8' | 'int16', value: number): Ct2Variable {
  const data = new Uint8Array(ITEM_SIZE[dtype]);
  const view = new DataView(data.buffer);
  if (dtype === 'int8') view.setInt8(0, value);
  else view.setInt16(0, value, true);
  return { name, shape: [], dtype, data };
}

/** The non-float variables a real WhisperSpec model.bin carries besides the weights. */
export function whisperScalars(dims: WhisperDims): Ct2Variable[] {
  return [
    scalar('decoder/activation', 'int8', 1),
    scalar('decoder/alibi', 'int8', 0),
    scalar('decoder/alignment_heads', 'int16', 0),
    scalar('decoder/alignment_layer', 'int16', 0),
    scalar('decoder/num_heads', 'int16', dims.heads),
    scalar('decoder/pre_norm', 'int8', 1),
    scalar('decoder/scale_embeddings', 'int8', 0),
    scalar('decoder/start_from_zero_embedding', 'int8', 0),
    scalar('encoder/num_heads', 'int16', dims.heads),
  ];
}

export interface Ct2WriteOptions {
  version?: number;
  spec?: string;
  revision?: number;
  /** [alias, target] pairs. */
  aliases?: [string, string][];
}

/** A model.bin: variables sorted by name as CTranslate2 writes them, then the aliases. */
export function ct2ModelBin(variables: Ct2Variable[], options: Ct2WriteOptions = {}): Buffer {
  const { version = 6, spec = 'WhisperSpec', revision = 3, aliases = [] } = options;
  const chunks: Buffer[] = [];
  const u8 = (v: number) => chunks.push(Buffer.from([v]));
  const u16 = (v: number) => {
    const b = Buffer.alloc(2);
    b.writeUInt16LE(v);
    chunks.push(b);
  };
  const u32 = (v: number) => {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(v);
    chunks.push(b);
  };
  const string = (s: string) => {
    const bytes = Buffer.from(s, 'utf8');
    u16(bytes.length + 1);
    chunks.push(bytes, Buffer.from([0]));
  };
  u32(version);
  if (version >= 2) {
    string(spec);
    u32(revision);
  }
  const sorted = [...variables].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  u32(sorted.length);
  for (const v of sorted) {
    string(v.name);
    u8(v.shape.length);
    for (const d of v.shape) u32(d);
    if (version >= 4) {
      u8(DTYPE_IDS[v.dtype]);
      u32(v.data.byteLength);
    } else {
      u8(ITEM_SIZE[v.dtype]);
      u32(v.data.byteLength / ITEM_SIZE[v.dtype]);
    }
    chunks.push(Buffer.from(v.data.buffer, v.data.byteOffset, v.data.byteLength));
  }
  if (version >= 3) {
    u32(aliases.length);
    for (const [alias, target] of aliases) {
      string(alias);
      string(target);
    }
  }
  return Buffer.concat(chunks);
}

// --- ggml -------------------------------------------------------------------------------------------------

export interface GgmlTensor {
  name: string;
  /** ggml order: fastest-varying first. */
  ne: number[];
  /** GGML_F32 (0) or GGML_F16 (1). */
  type: number;
  /** The stored bytes. */
  data: Buffer;
}

export interface GgmlFile {
  magic: number;
  hparams: Hparams;
  /** n_mel, n_fft and the filters, as stored. */
  mel: Buffer;
  tokens: Buffer[];
  tensors: GgmlTensor[];
}

export function readGgml(file: Buffer, path = 'ggml file'): GgmlFile {
  const { hparams, mel, tokens, tensorsStart } = readWhisperGgmlHeader(file, path);
  const tensors: GgmlTensor[] = [];
  let offset = tensorsStart;
  while (offset < file.length) {
    const dims = file.readInt32LE(offset);
    const nameLength = file.readInt32LE(offset + 4);
    const type = file.readInt32LE(offset + 8);
    const ne: number[] = [];
    for (let i = 0; i < dims; i++) ne.push(file.readInt32LE(offset + 12 + 4 * i));
    const nameStart = offset + 12 + 4 * dims;
    const name = file.toString('utf8', nameStart, nameStart + nameLength);
    const dataStart = nameStart + nameLength;
    const dataEnd = dataStart + elements(ne) * typeSize(type);
    if (dataEnd > file.length) throw new Error(`${path}: ggml tensor ${name} runs past the end of the file`);
    tensors.push({ name, ne, type, data: file.subarray(dataStart, dataEnd) });
    offset = dataEnd;
  }
  return { magic: file.readUInt32LE(0), hparams, mel, tokens, tensors };
}

/** A tensor's values as floats (f16 widened exactly). */
export function tensorValues(tensor: GgmlTensor): Float32Array {
  const count = elements(tensor.ne);
  const out = new Float32Array(count);
  for (let i = 0; i < count; i++) {
    out[i] =
      tensor.type === GGML_F16 ? halfBitsToNumber(tensor.data.readUInt16LE(2 * i)) : tensor.data.readFloatLE(4 * i);
  }
  return out;
}

/** GPT-2's byte-to-unicode map (the text form of byte-level BPE tokens in vocabulary.txt). */
export function byteEncoder(): string[] {
  const table: string[] = [];
  let shifted = 0;
  for (let b = 0; b < 256; b++) {
    const printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
    table.push(String.fromCodePoint(printable ? b : 256 + shifted++));
  }
  return table;
}
