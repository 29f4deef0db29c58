#!/usr/bin/env node
// Converts a faster-whisper / CTranslate2 Whisper model directory into a whisper.cpp ggml model file.
//
//   node scripts/models/ct2-to-ggml.mjs --ct2 <dir> --reference <ggml> --out <file> [--vocabulary auto|ct2|reference] [--f32]
//
// <dir> holds model.bin, or model.bin.part1, model.bin.part2, ... (read as one file, in numeric order), and
// usually vocabulary.txt. <ggml> is a whisper.cpp file (the header-only for-tests files are enough): a
// CTranslate2 directory has no mel filters, so they are copied from it, and its n_mels and n_vocab must agree with
// the weights. The hyperparameters come from the weights themselves.
//
// The layout is what whisper.cpp's models/convert-pt-to-ggml.py writes from OpenAI's checkpoints: their key order,
// the conv biases as [n, 1], 2-D and 3-D weights f16 except the two positional embeddings, everything else f32,
// ftype 1. The f16 weights of the faster-whisper models are the checkpoints' own f16 values, so Systran's tiny.en
// and base convert to the published ggml-tiny.en.bin and ggml-base.bin byte for byte.
//
// Vocabulary: the for-tests files were made in October 2022 by a converter that decoded every token as UTF-8 with
// errors='replace', so a token that is part of a multi-byte character reads there as U+FFFD. The published
// ggml files hold the raw bytes. With 'auto' (the default) the raw bytes come from the directory's
// vocabulary.txt (GPT-2 byte-to-unicode text, one token a line) after checking that every token agrees with the
// reference's; without a vocabulary file the reference's tokens are copied as they are.
//
// CTranslate2's model.bin (python/ctranslate2/specs/model_spec.py `_serialize`, src/models/model.cc): u32 binary
// version; from version 2 a name and a u32 spec revision; u32 variable count; per variable a name, u8 rank, rank x
// u32 dims, then (version >= 4) u8 dtype id and u32 byte count, or (older) u8 item size and u32 element count,
// then the data; from version 3 a u32 alias count and alias/target name pairs. Strings are a u16 length that
// counts a trailing NUL, the bytes and the NUL. Variables are in alphabetical order, so whisper.cpp's order is
// made by seeking: only the index is read first, then one slice of one tensor at a time.
import { mkdir, open, readdir, readFile, rename, rm } from 'node:fs/promises';
import { endianness } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import {
  elementCount,
  GGML_F16,
  GGML_F32,
  ggmlHeader,
  tensorHeader as ggmlTensorHeader,
  halfBitsOfFloatBits,
  halfToFloatTable,
  readWhisperGgmlHeader,
  tensorRecordBytes,
  WhisperGgmlError,
} from '../lib/whisper-ggml.mjs';

export { float16BitsToFloat32, float32ToFloat16Bits } from '../lib/whisper-ggml.mjs';

/** The binary versions CTranslate2 4.x writes and reads. */
const CT2_MAX_VERSION = 6;
/** Order of CTranslate2's DataType enum (include/ctranslate2/types.h). */
const CT2_DTYPES = ['float32', 'int8', 'int16', 'int32', 'float16', 'bfloat16'];
const ITEM_SIZE = { float32: 4, int8: 1, int16: 2, int32: 4, float16: 2, bfloat16: 2 };
/** Binary versions below 4 stored an item size instead of a dtype; float16 did not exist yet. */
const LEGACY_DTYPE_BY_ITEM_SIZE = { 1: 'int8', 2: 'int16', 4: 'float32' };
/** Source bytes converted per step: keeps memory flat whatever the tensor's size. */
const CHUNK_BYTES = 4 << 20;
const HEADER_WINDOW = 64 << 10;

export class Ct2ToGgmlError extends Error {
  constructor(code, message) {
    super(message);
    this.name = 'Ct2ToGgmlError';
    this.code = code;
  }
}

const fail = (code, message) => {
  throw new Ct2ToGgmlError(code, message);
};

// --- model.bin as one file over its parts -----------------------------------------------------------------

/** model.bin, or model.bin.part1..N; reads by absolute position across the parts. */
class ModelBin {
  static async open(ct2Dir) {
    let names;
    try {
      names = await readdir(ct2Dir);
    } catch (error) {
      fail('CT2_MODEL_MISSING', `cannot read the CTranslate2 directory ${ct2Dir}: ${error.message}`);
    }
    const parts = names
      .map((name) => /^model\.bin\.part(\d+)$/.exec(name))
      .filter((match) => match !== null)
      .map((match) => ({ name: match[0], index: Number(match[1]) }))
      .sort((a, b) => a.index - b.index);
    let files;
    if (names.includes('model.bin')) {
      if (parts.length > 0) {
        fail('CT2_MODEL_AMBIGUOUS', `${ct2Dir} holds both model.bin and ${parts[0].name}: keep one or the other`);
      }
      files = ['model.bin'];
    } else if (parts.length > 0) {
      parts.forEach((part, i) => {
        if (part.index !== i + 1) {
          fail(
            'CT2_MODEL_PARTS',
            `${ct2Dir}: model.bin.part${i + 1} is missing (parts found: ${parts.map((p) => p.index)})`,
          );
        }
      });
      files = parts.map((part) => part.name);
    } else {
      fail('CT2_MODEL_MISSING', `${ct2Dir} has no model.bin (nor model.bin.part1, model.bin.part2, ...)`);
    }
    const opened = [];
    try {
      let start = 0;
      for (const name of files) {
        const path = join(ct2Dir, name);
        const handle = await open(path, 'r');
        opened.push({ path, handle, start, size: 0 });
        const { size } = await handle.stat();
        opened[opened.length - 1].size = size;
        start += size;
      }
    } catch (error) {
      await Promise.all(opened.map((part) => part.handle.close()));
      throw error;
    }
    return new ModelBin(ct2Dir, opened);
  }

  constructor(dir, parts) {
    this.label = parts.length === 1 ? parts[0].path : `${join(dir, 'model.bin.part*')} (${parts.length} parts)`;
    this.parts = parts;
    const last = parts[parts.length - 1];
    this.size = last.start + last.size;
  }

  /** Fills `target` (a Uint8Array) from `position`; the caller has checked the range. */
  async readInto(target, position) {
    let done = 0;
    while (done < target.length) {
      const at = position + done;
      const part = this.parts.find((p) => at >= p.start && at < p.start + p.size);
      if (!part) fail('CT2_TRUNCATED', `${this.label} ends at byte ${this.size}, reading at ${at}`);
      const length = Math.min(target.length - done, part.start + part.size - at);
      const { bytesRead } = await part.handle.read(target, done, length, at - part.start);
      if (bytesRead === 0) fail('CT2_TRUNCATED', `${part.path} ended early at byte ${at - part.start}`);
      done += bytesRead;
    }
    return target;
  }

  async close() {
    await Promise.all(this.parts.map((part) => part.handle.close()));
  }
}

/** Sequential reads of the header fields through a window, so the index costs a few reads. */
class Cursor {
  constructor(file) {
    this.file = file;
    this.position = 0;
    this.window = new Uint8Array(0);
    this.windowStart = 0;
  }

  async bytes(count, what) {
    this.need(count, what);
    const offset = this.position - this.windowStart;
    if (offset < 0 || offset + count > this.window.length) {
      const length = Math.min(Math.max(count, HEADER_WINDOW), this.file.size - this.position);
      this.window = await this.file.readInto(new Uint8Array(length), this.position);
      this.windowStart = this.position;
    }
    const start = this.position - this.windowStart;
    this.position += count;
    return Buffer.from(this.window.buffer, this.window.byteOffset + start, count);
  }

  need(count, what) {
    if (this.position + count > this.file.size) {
      fail(
        'CT2_TRUNCATED',
        `${this.file.label} is truncated: ${what} needs ${count} bytes at offset ${this.position}, ` +
          `the file has ${this.file.size}`,
      );
    }
  }

  skip(count, what) {
    this.need(count, what);
    this.position += count;
  }

  u8 = async (what) => (await this.bytes(1, what)).readUInt8(0);
  u16 = async (what) => (await this.bytes(2, what)).readUInt16LE(0);
  u32 = async (what) => (await this.bytes(4, what)).readUInt32LE(0);

  async string(what) {
    const length = await this.u16(what);
    if (length === 0) fail('CT2_CORRUPT', `${this.file.label}: ${what} has an invalid string length 0`);
    const raw = await this.bytes(length, what);
    return raw.toString('utf8', 0, length - 1);
  }
}

/** The variable index of a model.bin: name -> { name, shape, dtype, offset, byteLength }, plus aliases. */
async function readIndex(file) {
  const cursor = new Cursor(file);
  const version = await cursor.u32('the binary version');
  if (version < 1 || version > CT2_MAX_VERSION) {
    fail(
      'CT2_VERSION',
      `${file.label}: unknown CTranslate2 binary version ${version} (this converter reads 1 to ${CT2_MAX_VERSION}); ` +
        'is this a CTranslate2 model.bin, with all its parts?',
    );
  }
  let spec = 'WhisperSpec';
  if (version >= 2) {
    spec = await cursor.string('the spec name');
    await cursor.u32('the spec revision');
  }
  if (spec !== 'WhisperSpec') fail('CT2_SPEC', `${file.label} holds a ${spec}, not a Whisper model (WhisperSpec)`);
  const count = await cursor.u32('the variable count');
  const variables = new Map();
  for (let i = 0; i < count; i++) {
    const name = await cursor.string(`the name of variable ${i + 1} of ${count}`);
    const rank = await cursor.u8(`the rank of ${name}`);
    const shape = [];
    for (let d = 0; d < rank; d++) shape.push(await cursor.u32(`the shape of ${name}`));
    let dtype;
    let byteLength;
    if (version >= 4) {
      const id = await cursor.u8(`the dtype of ${name}`);
      dtype = CT2_DTYPES[id];
      if (!dtype) fail('CT2_DTYPE', `${file.label}: variable ${name} has an unknown dtype id ${id}`);
      byteLength = await cursor.u32(`the size of ${name}`);
    } else {
      const itemSize = await cursor.u8(`the item size of ${name}`);
      dtype = LEGACY_DTYPE_BY_ITEM_SIZE[itemSize];
      if (!dtype) fail('CT2_DTYPE', `${file.label}: variable ${name} has an unknown item size ${itemSize}`);
      byteLength = (await cursor.u32(`the size of ${name}`)) * itemSize;
    }
    const elements = shape.reduce((a, b) => a * b, 1);
    if (byteLength !== elements * ITEM_SIZE[dtype]) {
      fail(
        'CT2_CORRUPT',
        `${file.label}: variable ${name} [${shape}] ${dtype} declares ${byteLength} bytes, expected ${elements * ITEM_SIZE[dtype]}`,
      );
    }
    variables.set(name, { name, shape, dtype, offset: cursor.position, byteLength });
    cursor.skip(byteLength, `the data of ${name}`);
  }
  const aliases = new Map();
  if (version >= 3) {
    const aliasCount = await cursor.u32('the alias count');
    for (let i = 0; i < aliasCount; i++) {
      const alias = await cursor.string(`alias ${i + 1} of ${aliasCount}`);
      aliases.set(alias, await cursor.string(`the target of alias ${alias}`));
    }
  }
  if (cursor.position !== file.size) {
    fail(
      'CT2_TRAILING_DATA',
      `${file.label} has ${file.size - cursor.position} bytes after its last record (at ${cursor.position}): ` +
        'wrong or extra parts?',
    );
  }
  return { version, variables, aliases };
}

/** Variable lookup that follows CTranslate2's aliases (and their `_scale` companions). */
class Variables {
  constructor(file, index) {
    this.file = file;
    this.index = index;
  }

  resolveName(name) {
    let current = name;
    for (let hops = 0; hops < 16; hops++) {
      if (this.index.variables.has(current)) return current;
      const target = this.index.aliases.get(current);
      if (target === undefined) break;
      current = target;
    }
    // model.cc aliases `<alias>_scale` to `<target>_scale` as well.
    if (name.endsWith('_scale')) {
      const base = this.resolveName(name.slice(0, -'_scale'.length));
      if (base !== undefined && this.index.variables.has(`${base}_scale`)) return `${base}_scale`;
    }
    return undefined;
  }

  has(name) {
    return this.resolveName(name) !== undefined;
  }

  get(name, forWhat) {
    const resolved = this.resolveName(name);
    if (resolved === undefined) {
      fail(
        'CT2_VARIABLE_MISSING',
        `${this.file.label} lacks the variable ${name}${forWhat ? ` (for ${forWhat})` : ''}`,
      );
    }
    return this.index.variables.get(resolved);
  }

  expectShape(name, shape, forWhat) {
    const variable = this.get(name, forWhat);
    if (variable.shape.length !== shape.length || variable.shape.some((n, i) => n !== shape[i])) {
      fail(
        'CT2_SHAPE',
        `${this.file.label}: ${name} has shape [${variable.shape}], expected [${shape}]${forWhat ? ` for ${forWhat}` : ''}`,
      );
    }
    return variable;
  }

  /** Whether `name` is absent, an alias of `other`, or stores the same bytes (compared a chunk at a time). */
  async sameAs(name, other) {
    const a = this.resolveName(name);
    const b = this.resolveName(other);
    if (a === undefined || a === b) return true;
    const x = this.get(a);
    const y = this.get(other);
    if (x.dtype !== y.dtype || x.byteLength !== y.byteLength) return false;
    for (let at = 0; at < x.byteLength; at += CHUNK_BYTES) {
      const length = Math.min(CHUNK_BYTES, x.byteLength - at);
      const chunkX = await this.file.readInto(new Uint8Array(length), x.offset + at);
      const chunkY = await this.file.readInto(new Uint8Array(length), y.offset + at);
      if (!Buffer.from(chunkX.buffer).equals(Buffer.from(chunkY.buffer))) return false;
    }
    return true;
  }

  async read(variable) {
    const bytes = new Uint8Array(variable.byteLength);
    return this.file.readInto(bytes, variable.offset);
  }

  async scalar(name) {
    const variable = this.get(name);
    if (variable.shape.length !== 0) fail('CT2_SHAPE', `${this.file.label}: ${name} should be a scalar`);
    const view = Buffer.from(await this.read(variable));
    switch (variable.dtype) {
      case 'int8':
        return view.readInt8(0);
      case 'int16':
        return view.readInt16LE(0);
      case 'int32':
        return view.readInt32LE(0);
      case 'float32':
        return view.readFloatLE(0);
      default:
        return fail('CT2_DTYPE', `${this.file.label}: ${name} is a ${variable.dtype} scalar`);
    }
  }

  /** Per-row dequantization scales of a quantized weight, or undefined for a float one. */
  async scales(variable) {
    if (variable.dtype !== 'int8' && variable.dtype !== 'int16') return undefined;
    const scaleVariable = this.get(`${variable.name}_scale`, `dequantizing the ${variable.dtype} ${variable.name}`);
    const rows = variable.shape[0] ?? 1;
    const count = scaleVariable.shape.reduce((a, b) => a * b, 1);
    if (count !== 1 && count !== rows) {
      fail(
        'CT2_SHAPE',
        `${this.file.label}: ${scaleVariable.name} has shape [${scaleVariable.shape}], expected [${rows}] or a scalar`,
      );
    }
    const values = decodeFloats(scaleVariable, await this.read(scaleVariable), undefined, 0, count);
    return count === 1 ? new Float32Array(rows).fill(values[0]) : values;
  }
}

// --- decoding and encoding --------------------------------------------------------------------------------

/**
 * `bytes` hold `rows` whole rows of `variable`, starting at row `firstRow`, as floats. Quantized rows are divided
 * by their scale, as CTranslate2 dequantizes (int8 = round(w * 127 / max|row|), scale = 127 / max|row|).
 */
function decodeFloats(variable, bytes, scales, firstRow, rows) {
  const count = bytes.length / ITEM_SIZE[variable.dtype];
  const buffer = bytes.buffer;
  const at = bytes.byteOffset;
  switch (variable.dtype) {
    case 'float32':
      return new Float32Array(buffer.slice(at, at + bytes.length));
    case 'float16': {
      const table = halfToFloatTable();
      const halves = new Uint16Array(buffer, at, count);
      const out = new Float32Array(count);
      for (let i = 0; i < count; i++) out[i] = table[halves[i]];
      return out;
    }
    case 'bfloat16': {
      const halves = new Uint16Array(buffer, at, count);
      const bits = new Uint32Array(count);
      for (let i = 0; i < count; i++) bits[i] = halves[i] << 16;
      return new Float32Array(bits.buffer);
    }
    case 'int8':
    case 'int16': {
      const ints = variable.dtype === 'int8' ? new Int8Array(buffer, at, count) : new Int16Array(buffer, at, count);
      const out = new Float32Array(count);
      const perRow = count / rows;
      for (let r = 0; r < rows; r++) {
        const scale = scales[firstRow + r];
        for (let i = r * perRow; i < (r + 1) * perRow; i++) out[i] = Math.fround(ints[i] / scale);
      }
      return out;
    }
    default:
      return fail('CT2_DTYPE', `${variable.name}: cannot convert ${variable.dtype} weights to floats`);
  }
}

function encode(variable, bytes, scales, firstRow, rows, ggmlType) {
  // Same-type copies keep the bits exactly (NaN payloads included).
  if (ggmlType === GGML_F16 && variable.dtype === 'float16') return bytes;
  if (ggmlType === GGML_F32 && variable.dtype === 'float32') return bytes;
  const floats = decodeFloats(variable, bytes, scales, firstRow, rows);
  if (ggmlType === GGML_F32) return new Uint8Array(floats.buffer, floats.byteOffset, floats.byteLength);
  const bits = new Uint32Array(floats.buffer, floats.byteOffset, floats.length);
  const halves = new Uint16Array(floats.length);
  for (let i = 0; i < bits.length; i++) halves[i] = halfBitsOfFloatBits(bits[i]);
  return new Uint8Array(halves.buffer);
}

// --- the reference ggml file ------------------------------------------------------------------------------

/** The reference's hparams, its mel filter block, and its vocabulary (count and tokens). */
async function readReference(path) {
  let file;
  try {
    file = await readFile(path);
  } catch (error) {
    fail('REFERENCE_INVALID', `cannot read the reference ggml file ${path}: ${error.message}`);
  }
  try {
    return readWhisperGgmlHeader(file, path);
  } catch (error) {
    if (error instanceof WhisperGgmlError) fail('REFERENCE_INVALID', error.message);
    throw error;
  }
}

// --- vocabulary -------------------------------------------------------------------------------------------

/** GPT-2's byte-level BPE alphabet: printable bytes stand for themselves, the rest are shifted past U+00FF. */
function byteDecoder() {
  const printable = (b) => (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
  const decoder = new Map();
  let shifted = 0;
  for (let b = 0; b < 256; b++) {
    decoder.set(String.fromCodePoint(printable(b) ? b : 256 + shifted++), b);
  }
  return decoder;
}

async function readCt2Vocabulary(ct2Dir) {
  const names = await readdir(ct2Dir);
  if (names.includes('vocabulary.json')) {
    const path = join(ct2Dir, 'vocabulary.json');
    return { path, tokens: JSON.parse(await readFile(path, 'utf8')) };
  }
  if (names.includes('vocabulary.txt')) {
    const path = join(ct2Dir, 'vocabulary.txt');
    const lines = (await readFile(path, 'utf8')).split('\n');
    if (lines[lines.length - 1] === '') lines.pop();
    return { path, tokens: lines.map((line) => (line.endsWith('\r') ? line.slice(0, -1) : line)) };
  }
  return undefined;
}

/**
 * The raw bytes of the reference's tokens, taken from the CTranslate2 vocabulary. Each must equal the
 * reference's token, either as it is or as the lossy UTF-8 decoding of the October 2022 converter leaves it.
 */
function rawTokens(vocabulary, reference) {
  const decoder = byteDecoder();
  const count = reference.tokens.length;
  if (vocabulary.tokens.length < count) {
    fail(
      'VOCABULARY_MISMATCH',
      `${vocabulary.path} has ${vocabulary.tokens.length} tokens, the reference's vocabulary ${count}`,
    );
  }
  const tokens = [];
  for (let i = 0; i < count; i++) {
    const text = vocabulary.tokens[i];
    const bytes = [];
    for (const char of text) {
      const byte = decoder.get(char);
      if (byte === undefined) {
        fail(
          'VOCABULARY_MISMATCH',
          `${vocabulary.path}: token ${i} (${JSON.stringify(text)}) is not byte-level BPE text`,
        );
      }
      bytes.push(byte);
    }
    const raw = Buffer.from(bytes);
    const expected = reference.tokens[i];
    if (!raw.equals(expected) && !Buffer.from(raw.toString('utf8'), 'utf8').equals(expected)) {
      fail(
        'VOCABULARY_MISMATCH',
        `${vocabulary.path}: token ${i} is ${JSON.stringify(raw.toString('latin1'))}, the reference has ` +
          `${JSON.stringify(expected.toString('latin1'))}: not the same vocabulary`,
      );
    }
    tokens.push(raw);
  }
  return tokens;
}

// --- the plan: which CTranslate2 rows become which ggml tensor --------------------------------------------

function countLayers(variables, prefix) {
  const names = [...variables.index.variables.keys(), ...variables.index.aliases.keys()];
  const layers = new Set();
  const pattern = new RegExp(`^${prefix}/layer_(\\d+)/`);
  for (const name of names) {
    const match = pattern.exec(name);
    if (match) layers.add(Number(match[1]));
  }
  for (let i = 0; i < layers.size; i++) {
    if (!layers.has(i))
      fail('CT2_VARIABLE_MISSING', `${prefix}/layer_${i} is missing (found ${[...layers].sort((x, y) => x - y)})`);
  }
  return layers.size;
}

async function readHparams(variables) {
  const conv1 = variables.get('encoder/conv1/weight');
  if (conv1.shape.length !== 3) fail('CT2_SHAPE', `encoder/conv1/weight has shape [${conv1.shape}], expected 3 dims`);
  const [nAudioState, nMels] = conv1.shape;
  const audioPositions = variables.get('encoder/position_encodings/encodings');
  const embeddings = variables.get('decoder/embeddings/weight');
  if (embeddings.shape.length !== 2) {
    fail('CT2_SHAPE', `decoder/embeddings/weight has shape [${embeddings.shape}], expected 2 dims`);
  }
  const [nVocab, nTextState] = embeddings.shape;
  const textPositions = variables.get('decoder/position_encodings/encodings');
  const hparams = {
    n_vocab: nVocab,
    n_audio_ctx: audioPositions.shape[0],
    n_audio_state: nAudioState,
    n_audio_head: await variables.scalar('encoder/num_heads'),
    n_audio_layer: countLayers(variables, 'encoder'),
    n_text_ctx: textPositions.shape[0],
    n_text_state: nTextState,
    n_text_head: await variables.scalar('decoder/num_heads'),
    n_text_layer: countLayers(variables, 'decoder'),
    n_mels: nMels,
  };
  variables.expectShape('encoder/position_encodings/encodings', [hparams.n_audio_ctx, nAudioState]);
  variables.expectShape('decoder/position_encodings/encodings', [hparams.n_text_ctx, nTextState]);
  for (const [state, heads] of [
    [nAudioState, hparams.n_audio_head],
    [nTextState, hparams.n_text_head],
  ]) {
    if (!(heads > 0) || state % heads !== 0) fail('CT2_SHAPE', `${heads} heads do not divide a state of ${state}`);
  }
  if (hparams.n_audio_layer === 0 || hparams.n_text_layer === 0) {
    fail('CT2_VARIABLE_MISSING', `no encoder or decoder layers (encoder/layer_0/..., decoder/layer_0/...)`);
  }
  return hparams;
}

/**
 * Every tensor whisper.cpp loads, in the order convert-pt-to-ggml.py writes them: the key order of the OpenAI
 * checkpoints' model_state_dict, which is not PyTorch's module order (both positional embeddings and the token
 * embedding first, then the decoder, then the encoder; in a block the MLP before the attention). With this order
 * the published ggml-tiny.en.bin and ggml-base.bin are reproduced byte for byte. `rows` picks a slice of a fused
 * CTranslate2 matrix.
 */
function plan(variables, hp, ftype) {
  const tensors = [];
  const weightType = ftype === 'f32' ? GGML_F32 : GGML_F16;
  const add = (name, source, expectedShape, { rows, shape, type } = {}) => {
    const variable = variables.expectShape(source, expectedShape, name);
    const [first, count] = rows ?? [0, variable.shape[0] ?? 1];
    const outShape = shape ?? [count, ...variable.shape.slice(1)];
    // convert-pt-to-ggml.py keeps 1-D tensors, the conv biases and the positional embeddings in f32.
    tensors.push({
      name,
      variable,
      first,
      count,
      shape: outShape,
      type: type ?? (outShape.length < 2 ? GGML_F32 : weightType),
    });
  };
  const norm = (name, source, n) => {
    add(`${name}.weight`, `${source}/gamma`, [n]);
    add(`${name}.bias`, `${source}/beta`, [n]);
  };
  // Whisper's key projections have no bias; CTranslate2 fuses them with zeros in their place.
  const selfAttention = (name, source, n) => {
    add(`${name}.query.weight`, `${source}/linear_0/weight`, [3 * n, n], { rows: [0, n] });
    add(`${name}.query.bias`, `${source}/linear_0/bias`, [3 * n], { rows: [0, n] });
    add(`${name}.key.weight`, `${source}/linear_0/weight`, [3 * n, n], { rows: [n, n] });
    add(`${name}.value.weight`, `${source}/linear_0/weight`, [3 * n, n], { rows: [2 * n, n] });
    add(`${name}.value.bias`, `${source}/linear_0/bias`, [3 * n], { rows: [2 * n, n] });
    add(`${name}.out.weight`, `${source}/linear_1/weight`, [n, n]);
    add(`${name}.out.bias`, `${source}/linear_1/bias`, [n]);
    return { keyBias: { source: `${source}/linear_0/bias`, rows: [n, n] } };
  };
  const crossAttention = (name, source, n) => {
    add(`${name}.query.weight`, `${source}/linear_0/weight`, [n, n]);
    add(`${name}.query.bias`, `${source}/linear_0/bias`, [n]);
    add(`${name}.key.weight`, `${source}/linear_1/weight`, [2 * n, n], { rows: [0, n] });
    add(`${name}.value.weight`, `${source}/linear_1/weight`, [2 * n, n], { rows: [n, n] });
    add(`${name}.value.bias`, `${source}/linear_1/bias`, [2 * n], { rows: [n, n] });
    add(`${name}.out.weight`, `${source}/linear_2/weight`, [n, n]);
    add(`${name}.out.bias`, `${source}/linear_2/bias`, [n]);
    return { keyBias: { source: `${source}/linear_1/bias`, rows: [0, n] } };
  };
  const mlp = (name, source, n) => {
    add(`${name}.0.weight`, `${source}/linear_0/weight`, [4 * n, n]);
    add(`${name}.0.bias`, `${source}/linear_0/bias`, [4 * n]);
    add(`${name}.2.weight`, `${source}/linear_1/weight`, [n, 4 * n]);
    add(`${name}.2.bias`, `${source}/linear_1/bias`, [n]);
  };

  const keyBiases = [];
  const a = hp.n_audio_state;
  const t = hp.n_text_state;
  add('decoder.positional_embedding', 'decoder/position_encodings/encodings', [hp.n_text_ctx, t], { type: GGML_F32 });
  add('encoder.positional_embedding', 'encoder/position_encodings/encodings', [hp.n_audio_ctx, a], { type: GGML_F32 });
  add('decoder.token_embedding.weight', 'decoder/embeddings/weight', [hp.n_vocab, t]);
  for (let i = 0; i < hp.n_text_layer; i++) {
    const block = `decoder.blocks.${i}`;
    const layer = `decoder/layer_${i}`;
    norm(`${block}.mlp_ln`, `${layer}/ffn/layer_norm`, t);
    mlp(`${block}.mlp`, `${layer}/ffn`, t);
    norm(`${block}.attn_ln`, `${layer}/self_attention/layer_norm`, t);
    keyBiases.push(selfAttention(`${block}.attn`, `${layer}/self_attention`, t).keyBias);
    norm(`${block}.cross_attn_ln`, `${layer}/attention/layer_norm`, t);
    keyBiases.push(crossAttention(`${block}.cross_attn`, `${layer}/attention`, t).keyBias);
  }
  norm('decoder.ln', 'decoder/layer_norm', t);
  add('encoder.conv1.weight', 'encoder/conv1/weight', [a, hp.n_mels, 3]);
  add('encoder.conv1.bias', 'encoder/conv1/bias', [a], { shape: [a, 1], type: GGML_F32 });
  add('encoder.conv2.weight', 'encoder/conv2/weight', [a, a, 3]);
  add('encoder.conv2.bias', 'encoder/conv2/bias', [a], { shape: [a, 1], type: GGML_F32 });
  for (let i = 0; i < hp.n_audio_layer; i++) {
    const block = `encoder.blocks.${i}`;
    const layer = `encoder/layer_${i}`;
    norm(`${block}.mlp_ln`, `${layer}/ffn/layer_norm`, a);
    mlp(`${block}.mlp`, `${layer}/ffn`, a);
    norm(`${block}.attn_ln`, `${layer}/self_attention/layer_norm`, a);
    keyBiases.push(selfAttention(`${block}.attn`, `${layer}/self_attention`, a).keyBias);
  }
  norm('encoder.ln_post', 'encoder/layer_norm', a);
  return { tensors, keyBiases };
}

// ggml lists dimensions fastest-varying first: numpy's shape reversed.
const tensorNe = (tensor) => [...tensor.shape].reverse();
const tensorHeader = (tensor) => ggmlTensorHeader(tensor.name, tensorNe(tensor), tensor.type);

// --- conversion -------------------------------------------------------------------------------------------

async function writeAll(handle, bytes) {
  let done = 0;
  while (done < bytes.length) {
    const { bytesWritten } = await handle.write(bytes, done, bytes.length - done);
    done += bytesWritten;
  }
}

async function writeTensor(handle, variables, tensor) {
  const { variable, first, count, type } = tensor;
  const rowElements = elementCount(variable.shape.slice(1));
  const rowBytes = rowElements * ITEM_SIZE[variable.dtype];
  const scales = await variables.scales(variable);
  const rowsPerChunk = Math.max(1, Math.floor(CHUNK_BYTES / rowBytes));
  await writeAll(handle, tensorHeader(tensor));
  for (let row = first; row < first + count; row += rowsPerChunk) {
    const rows = Math.min(rowsPerChunk, first + count - row);
    const bytes = await variables.file.readInto(new Uint8Array(rows * rowBytes), variable.offset + row * rowBytes);
    await writeAll(handle, encode(variable, bytes, scales, row, rows, type));
  }
}

/** Largest |value| of a slice of a 1-D variable: the dropped key biases should be zero. */
async function maxAbs(variables, source, [first, count]) {
  const variable = variables.get(source);
  const size = ITEM_SIZE[variable.dtype];
  const bytes = await variables.file.readInto(new Uint8Array(count * size), variable.offset + first * size);
  const scales = await variables.scales(variable);
  return decodeFloats(variable, bytes, scales, first, count).reduce((m, v) => Math.max(m, Math.abs(v)), 0);
}

/**
 * Converts the CTranslate2 Whisper model in `ct2Dir` into the whisper.cpp file `out` (written as `out.partial`,
 * then renamed). `reference`: a ggml file whose mel filters (and, without a CTranslate2 vocabulary, tokens) are
 * used. `vocabulary`: 'auto' | 'ct2' | 'reference'. `ftype`: 'f16' (whisper.cpp's default layout) or 'f32'.
 */
export async function convertCt2ToGgml({ ct2Dir, out, reference, vocabulary = 'auto', ftype = 'f16' }) {
  if (typeof ct2Dir !== 'string' || typeof out !== 'string' || typeof reference !== 'string') {
    throw new TypeError('convertCt2ToGgml needs { ct2Dir, out, reference } as strings');
  }
  if (!['auto', 'ct2', 'reference'].includes(vocabulary)) {
    throw new RangeError(`vocabulary must be 'auto', 'ct2' or 'reference', received ${JSON.stringify(vocabulary)}`);
  }
  if (!['f16', 'f32'].includes(ftype))
    throw new RangeError(`ftype must be 'f16' or 'f32', received ${JSON.stringify(ftype)}`);
  if (endianness() !== 'LE')
    throw new Error('ct2-to-ggml reads and writes little-endian files on little-endian hosts only');

  const ref = await readReference(reference);
  const file = await ModelBin.open(ct2Dir);
  const partial = `${out}.partial`;
  let handle;
  try {
    const variables = new Variables(file, await readIndex(file));
    const hp = await readHparams(variables);
    for (const name of ['n_mels', 'n_vocab']) {
      if (hp[name] !== ref.hparams[name]) {
        fail(
          'REFERENCE_MISMATCH',
          `the CTranslate2 model has ${name} = ${hp[name]}, the reference ${reference} ${ref.hparams[name]}: ` +
            'use a reference made for this model (e.g. for-tests-ggml-tiny.en.bin for English-only models, ' +
            'for-tests-ggml-tiny.bin for multilingual ones)',
        );
      }
    }
    if (ref.melRows !== hp.n_mels) {
      fail('REFERENCE_MISMATCH', `${reference} has ${ref.melRows} mel filters, the model n_mels = ${hp.n_mels}`);
    }
    // whisper.cpp ties the output projection to the token embedding; an untied one cannot be written.
    if (!(await variables.sameAs('decoder/projection/weight', 'decoder/embeddings/weight'))) {
      fail(
        'CT2_UNSUPPORTED',
        'decoder/projection/weight differs from decoder/embeddings/weight: whisper.cpp ties them',
      );
    }

    let tokens = ref.tokens;
    let vocabularySource = 'reference';
    if (vocabulary !== 'reference') {
      const ct2Vocabulary = await readCt2Vocabulary(ct2Dir);
      if (ct2Vocabulary) {
        tokens = rawTokens(ct2Vocabulary, ref);
        vocabularySource = 'ct2';
      } else if (vocabulary === 'ct2') {
        fail('VOCABULARY_MISSING', `${ct2Dir} has no vocabulary.txt or vocabulary.json`);
      }
    }

    const { tensors, keyBiases } = plan(variables, hp, ftype);
    const warnings = [];
    for (const keyBias of keyBiases) {
      const largest = await maxAbs(variables, keyBias.source, keyBias.rows);
      // q.(k + b) differs from q.k by the same amount for every key, so softmax drops it: harmless, but unusual.
      if (largest !== 0)
        warnings.push(`${keyBias.source}: the key bias (max |b| = ${largest}) is dropped; whisper has none`);
    }

    const written = { ...hp, ftype: ftype === 'f16' ? GGML_F16 : GGML_F32 };
    const head = ggmlHeader(written);
    const vocabularyBlock = [Buffer.alloc(4)];
    vocabularyBlock[0].writeInt32LE(tokens.length, 0);
    for (const token of tokens) {
      const length = Buffer.alloc(4);
      length.writeUInt32LE(token.length, 0);
      vocabularyBlock.push(length, token);
    }
    const vocabularyBytes = Buffer.concat(vocabularyBlock);
    let expectedSize = head.length + ref.mel.length + vocabularyBytes.length;
    for (const tensor of tensors) expectedSize += tensorRecordBytes(tensor.name, tensorNe(tensor), tensor.type);

    await mkdir(dirname(resolve(out)), { recursive: true });
    handle = await open(partial, 'w');
    await writeAll(handle, head);
    await writeAll(handle, ref.mel);
    await writeAll(handle, vocabularyBytes);
    for (const tensor of tensors) await writeTensor(handle, variables, tensor);
    await handle.sync();
    const { size } = await handle.stat();
    await handle.close();
    handle = undefined;
    if (size !== expectedSize) fail('WRITE_FAILED', `${partial}: wrote ${size} bytes, expected ${expectedSize}`);
    await rename(partial, out);
    return { out, bytes: size, hparams: written, tensors: tensors.length, vocabulary: vocabularySource, warnings };
  } catch (error) {
    if (handle) await handle.close().catch(() => {});
    await rm(partial, { force: true });
    throw error;
  } finally {
    await file.close();
  }
}

// --- CLI --------------------------------------------------------------------------------------------------

const USAGE =
  'usage: node scripts/models/ct2-to-ggml.mjs --ct2 <dir> --reference <ggml> --out <file> ' +
  '[--vocabulary auto|ct2|reference] [--f32]';

async function main(argv) {
  let args;
  try {
    ({ values: args } = parseArgs({
      args: argv,
      options: {
        ct2: { type: 'string' },
        reference: { type: 'string' },
        out: { type: 'string' },
        vocabulary: { type: 'string', default: 'auto' },
        f32: { type: 'boolean', default: false },
        help: { type: 'boolean', default: false },
      },
    }));
  } catch (error) {
    console.error(`ct2-to-ggml: ${error.message}\n${USAGE}`);
    return 2;
  }
  if (args.help) {
    console.log(USAGE);
    return 0;
  }
  if (!args.ct2 || !args.reference || !args.out) {
    console.error(`ct2-to-ggml: --ct2, --reference and --out are required\n${USAGE}`);
    return 2;
  }
  const started = performance.now();
  try {
    const result = await convertCt2ToGgml({
      ct2Dir: args.ct2,
      reference: args.reference,
      out: args.out,
      vocabulary: args.vocabulary,
      ftype: args.f32 ? 'f32' : 'f16',
    });
    for (const warning of result.warnings) console.error(`ct2-to-ggml: warning: ${warning}`);
    const seconds = ((performance.now() - started) / 1000).toFixed(2);
    console.log(
      `ct2-to-ggml: wrote ${result.out} (${result.bytes} bytes, ${result.tensors} tensors, vocabulary from ` +
        `${result.vocabulary}) in ${seconds} s`,
    );
    return 0;
  } catch (error) {
    console.error(`ct2-to-ggml: ${error instanceof Ct2ToGgmlError ? error.message : error.stack}`);
    return 1;
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  process.exitCode = await main(process.argv.slice(2));
}
