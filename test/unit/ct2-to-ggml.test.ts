// scripts/models/ct2-to-ggml.mjs: a CTranslate2 Whisper directory becomes the ggml file whisper.cpp's own converter
// would write. Synthetic CTranslate2 models (test/helpers/ct2-fixture.ts) with one encoder and one decoder layer and
// a 4-wide state are converted against the shared for-tests header, and the result is read back tensor by tensor.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  byteEncoder,
  type Ct2Variable,
  type Ct2WriteOptions,
  ct2ModelBin,
  elements,
  type FloatVariable,
  type GgmlFile,
  halfBitsToNumber,
  quantizeInt8,
  readGgml,
  referenceHalfBits,
  storeFloats,
  tensorValues,
  type WhisperDims,
  whisperFloats,
  whisperScalars,
} from '../helpers/ct2-fixture.js';
import { repoRoot, sharedModel } from '../helpers/paths.js';

interface ConvertOptions {
  ct2Dir: string;
  out: string;
  reference: string;
  vocabulary?: 'auto' | 'ct2' | 'reference';
  ftype?: 'f16' | 'f32';
}
interface ConvertResult {
  out: string;
  bytes: number;
  hparams: Record<string, number>;
  tensors: number;
  vocabulary: 'ct2' | 'reference';
  warnings: string[];
}
interface Converter {
  convertCt2ToGgml(options: ConvertOptions): Promise<ConvertResult>;
  float32ToFloat16Bits(value: number): number;
  float16BitsToFloat32(bits: number): number;
}

const script = join(repoRoot, 'scripts', 'models', 'ct2-to-ggml.mjs');
const { convertCt2ToGgml, float32ToFloat16Bits, float16BitsToFloat32 } = (await import(
  pathToFileURL(script).href
)) as Converter;

const referenceEn = sharedModel('whisper/for-tests-ggml-tiny.en.bin');
const referenceMulti = sharedModel('whisper/for-tests-ggml-tiny.bin');
const referenceFile = readGgml(readFileSync(referenceEn));

const DIMS: WhisperDims = {
  state: 4,
  heads: 2,
  audioCtx: 6,
  textCtx: 5,
  mels: 80,
  vocab: 51864,
  encoderLayers: 1,
  decoderLayers: 1,
};
const F32 = 0;
const F16 = 1;

interface Expected {
  name: string;
  source: string;
  /** [first row, row count] of a fused source. */
  rows?: [number, number];
  ne: number[];
  type: number;
}

/** The ggml tensors in convert-pt-to-ggml.py's order (the OpenAI checkpoints' key order) and their sources. */
function expectedLayout(n: number): Expected[] {
  const list: Expected[] = [];
  const add = (name: string, source: string, ne: number[], type: number, rows?: [number, number]) =>
    list.push({ name, source, ne, type, ...(rows ? { rows } : {}) });
  const norm = (name: string, source: string) => {
    add(`${name}.weight`, `${source}/gamma`, [n], F32);
    add(`${name}.bias`, `${source}/beta`, [n], F32);
  };
  const mlp = (name: string, source: string) => {
    add(`${name}.0.weight`, `${source}/linear_0/weight`, [n, 4 * n], F16);
    add(`${name}.0.bias`, `${source}/linear_0/bias`, [4 * n], F32);
    add(`${name}.2.weight`, `${source}/linear_1/weight`, [4 * n, n], F16);
    add(`${name}.2.bias`, `${source}/linear_1/bias`, [n], F32);
  };
  const selfAttention = (name: string, source: string) => {
    add(`${name}.query.weight`, `${source}/linear_0/weight`, [n, n], F16, [0, n]);
    add(`${name}.query.bias`, `${source}/linear_0/bias`, [n], F32, [0, n]);
    add(`${name}.key.weight`, `${source}/linear_0/weight`, [n, n], F16, [n, n]);
    add(`${name}.value.weight`, `${source}/linear_0/weight`, [n, n], F16, [2 * n, n]);
    add(`${name}.value.bias`, `${source}/linear_0/bias`, [n], F32, [2 * n, n]);
    add(`${name}.out.weight`, `${source}/linear_1/weight`, [n, n], F16);
    add(`${name}.out.bias`, `${source}/linear_1/bias`, [n], F32);
  };
  const crossAttention = (name: string, source: string) => {
    add(`${name}.query.weight`, `${source}/linear_0/weight`, [n, n], F16);
    add(`${name}.query.bias`, `${source}/linear_0/bias`, [n], F32);
    add(`${name}.key.weight`, `${source}/linear_1/weight`, [n, n], F16, [0, n]);
    add(`${name}.value.weight`, `${source}/linear_1/weight`, [n, n], F16, [n, n]);
    add(`${name}.value.bias`, `${source}/linear_1/bias`, [n], F32, [n, n]);
    add(`${name}.out.weight`, `${source}/linear_2/weight`, [n, n], F16);
    add(`${name}.out.bias`, `${source}/linear_2/bias`, [n], F32);
  };
  add('decoder.positional_embedding', 'decoder/position_encodings/encodings', [n, DIMS.textCtx], F32);
  add('encoder.positional_embedding', 'encoder/position_encodings/encodings', [n, DIMS.audioCtx], F32);
  add('decoder.token_embedding.weight', 'decoder/embeddings/weight', [n, DIMS.vocab], F16);
  norm('decoder.blocks.0.mlp_ln', 'decoder/layer_0/ffn/layer_norm');
  mlp('decoder.blocks.0.mlp', 'decoder/layer_0/ffn');
  norm('decoder.blocks.0.attn_ln', 'decoder/layer_0/self_attention/layer_norm');
  selfAttention('decoder.blocks.0.attn', 'decoder/layer_0/self_attention');
  norm('decoder.blocks.0.cross_attn_ln', 'decoder/layer_0/attention/layer_norm');
  crossAttention('decoder.blocks.0.cross_attn', 'decoder/layer_0/attention');
  norm('decoder.ln', 'decoder/layer_norm');
  add('encoder.conv1.weight', 'encoder/conv1/weight', [3, DIMS.mels, n], F16);
  add('encoder.conv1.bias', 'encoder/conv1/bias', [1, n], F32);
  add('encoder.conv2.weight', 'encoder/conv2/weight', [3, n, n], F16);
  add('encoder.conv2.bias', 'encoder/conv2/bias', [1, n], F32);
  norm('encoder.blocks.0.mlp_ln', 'encoder/layer_0/ffn/layer_norm');
  mlp('encoder.blocks.0.mlp', 'encoder/layer_0/ffn');
  norm('encoder.blocks.0.attn_ln', 'encoder/layer_0/self_attention/layer_norm');
  selfAttention('encoder.blocks.0.attn', 'encoder/layer_0/self_attention');
  norm('encoder.ln_post', 'encoder/layer_norm');
  return list;
}

/** The rows of a source variable a tensor is cut from. */
function slice(variable: FloatVariable, rows: [number, number] | undefined): Float32Array {
  if (!rows) return variable.values;
  const perRow = elements(variable.shape.slice(1));
  return variable.values.subarray(rows[0] * perRow, (rows[0] + rows[1]) * perRow);
}

/** The first place two value lists differ (undefined when equal): a failure reports one value, not a 200k-entry diff. */
function firstDifference(
  actual: ArrayLike<number>,
  expected: ArrayLike<number>,
): { index: number; actual?: number; expected?: number } | undefined {
  const same = (a: number | undefined, b: number | undefined) =>
    a === b || (Number.isNaN(a) && Number.isNaN(b)) || false;
  for (let i = 0; i < Math.max(actual.length, expected.length); i++) {
    if (!same(actual[i], expected[i])) return { index: i, actual: actual[i], expected: expected[i] };
  }
  return undefined;
}

function storeAll(floats: Map<string, FloatVariable>, dtype: 'float16' | 'float32'): Ct2Variable[] {
  return [...floats].map(([name, variable]) => storeFloats(name, variable, dtype));
}

let dir: string;
let ct2Dir: string;
let out: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'voxmill-ct2-'));
  ct2Dir = join(dir, 'ct2');
  out = join(dir, 'out', 'ggml-model.bin');
  await mkdir(ct2Dir);
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function writeModel(variables: Ct2Variable[], options: Ct2WriteOptions = {}): Promise<Buffer> {
  const bytes = ct2ModelBin([...variables, ...whisperScalars(DIMS)], options);
  await writeFile(join(ct2Dir, 'model.bin'), bytes);
  return bytes;
}

async function convert(options: Partial<ConvertOptions> = {}): Promise<{ result: ConvertResult; ggml: GgmlFile }> {
  const result = await convertCt2ToGgml({ ct2Dir, out, reference: referenceEn, ...options });
  return { result, ggml: readGgml(readFileSync(options.out ?? out)) };
}

async function leftovers(): Promise<string[]> {
  return existsSync(join(dir, 'out')) ? readdir(join(dir, 'out')) : [];
}

describe('convertCt2ToGgml: structure', () => {
  it('writes the hparams from the weights, the reference mel filters and vocabulary, every tensor in order', async () => {
    const floats = whisperFloats(DIMS);
    await writeModel(storeAll(floats, 'float16'), {
      aliases: [['decoder/projection/weight', 'decoder/embeddings/weight']],
    });
    const { result, ggml } = await convert();

    expect(ggml.magic).toBe(0x67676d6c);
    expect(ggml.hparams).toEqual({
      n_vocab: 51864,
      n_audio_ctx: 6,
      n_audio_state: 4,
      n_audio_head: 2,
      n_audio_layer: 1,
      n_text_ctx: 5,
      n_text_state: 4,
      n_text_head: 2,
      n_text_layer: 1,
      n_mels: 80,
      ftype: 1,
    });
    expect(ggml.mel.equals(referenceFile.mel)).toBe(true);
    expect(ggml.tokens.length).toBe(referenceFile.tokens.length);
    expect(ggml.tokens.every((token, i) => token.equals(referenceFile.tokens[i] ?? Buffer.alloc(0)))).toBe(true);
    expect(result.vocabulary).toBe('reference');
    expect(result.warnings).toEqual([]);

    const layout = expectedLayout(DIMS.state);
    expect(ggml.tensors.map((t) => t.name)).toEqual(layout.map((e) => e.name));
    expect(result.tensors).toBe(layout.length);
    for (const [i, expected] of layout.entries()) {
      const tensor = ggml.tensors[i]!;
      expect({ name: tensor.name, ne: tensor.ne, type: tensor.type }).toEqual({
        name: expected.name,
        ne: expected.ne,
        type: expected.type,
      });
      expect(
        firstDifference(tensorValues(tensor), slice(floats.get(expected.source)!, expected.rows)),
        expected.name,
      ).toBe(undefined);
    }
    expect(result.bytes).toBe(readFileSync(out).length);
    expect(await leftovers()).toEqual(['ggml-model.bin']);
  });

  it('un-fuses q, k and v by rows: the key rows are the fused matrix middle third, the key bias is dropped', async () => {
    const floats = whisperFloats(DIMS);
    await writeModel(storeAll(floats, 'float16'));
    const { ggml } = await convert();
    const n = DIMS.state;
    const tensor = (name: string) => tensorValues(ggml.tensors.find((t) => t.name === name)!);
    const fused = floats.get('encoder/layer_0/self_attention/linear_0/weight')!.values;
    expect(Array.from(tensor('encoder.blocks.0.attn.query.weight'))).toEqual(Array.from(fused.subarray(0, n * n)));
    expect(Array.from(tensor('encoder.blocks.0.attn.key.weight'))).toEqual(
      Array.from(fused.subarray(n * n, 2 * n * n)),
    );
    expect(Array.from(tensor('encoder.blocks.0.attn.value.weight'))).toEqual(Array.from(fused.subarray(2 * n * n)));
    const kv = floats.get('decoder/layer_0/attention/linear_1/weight')!.values;
    expect(Array.from(tensor('decoder.blocks.0.cross_attn.key.weight'))).toEqual(Array.from(kv.subarray(0, n * n)));
    expect(Array.from(tensor('decoder.blocks.0.cross_attn.value.weight'))).toEqual(Array.from(kv.subarray(n * n)));
    expect(ggml.tensors.some((t) => t.name.includes('key.bias'))).toBe(false);
  });

  it('warns when a dropped key bias is not zero (it cancels in the softmax, so the output is unchanged)', async () => {
    const floats = whisperFloats(DIMS);
    floats.get('decoder/layer_0/attention/linear_1/bias')!.values[1] = 0.5;
    await writeModel(storeAll(floats, 'float16'));
    const { result } = await convert();
    expect(result.warnings).toEqual([expect.stringContaining('decoder/layer_0/attention/linear_1/bias')]);
  });

  it('writes every tensor f32 with ftype f32, as convert-pt-to-ggml.py does with use-f32', async () => {
    const floats = whisperFloats(DIMS);
    await writeModel(storeAll(floats, 'float16'));
    const { ggml } = await convert({ ftype: 'f32' });
    expect(ggml.hparams.ftype).toBe(0);
    expect(ggml.tensors.every((t) => t.type === F32)).toBe(true);
    const embedding = ggml.tensors.find((t) => t.name === 'decoder.token_embedding.weight')!;
    expect(Array.from(tensorValues(embedding).subarray(0, 64))).toEqual(
      Array.from(floats.get('decoder/embeddings/weight')!.values.subarray(0, 64)),
    );
  });

  it('follows aliases: a variable stored once under another name', async () => {
    const floats = whisperFloats(DIMS);
    const gamma = floats.get('decoder/layer_0/attention/layer_norm/gamma')!;
    floats.set('decoder/layer_0/ffn/layer_norm/gamma', gamma);
    const stored = storeAll(floats, 'float16').filter((v) => v.name !== 'decoder/layer_0/ffn/layer_norm/gamma');
    await writeModel(stored, {
      aliases: [['decoder/layer_0/ffn/layer_norm/gamma', 'decoder/layer_0/attention/layer_norm/gamma']],
    });
    const { ggml } = await convert();
    const mlpLn = ggml.tensors.find((t) => t.name === 'decoder.blocks.0.mlp_ln.weight')!;
    expect(Array.from(tensorValues(mlpLn))).toEqual(Array.from(gamma.values));
  });

  it('reads binary version 3 (item sizes instead of dtypes) like version 6', async () => {
    const floats = whisperFloats(DIMS);
    await writeModel(storeAll(floats, 'float32'));
    const { ggml: v6 } = await convert();
    await writeModel(storeAll(floats, 'float32'), { version: 3 });
    const { ggml: v3 } = await convert();
    expect(v3.tensors.map((t) => t.data.toString('hex'))).toEqual(v6.tensors.map((t) => t.data.toString('hex')));
  });
});

describe('convertCt2ToGgml: values', () => {
  it('rounds float32 weights to float16 to nearest, ties to even; float32 tensors keep their bits', async () => {
    const floats = whisperFloats(DIMS);
    const specials = [
      1 + 2 ** -11, // tie: down to 1 (even)
      1 + 3 * 2 ** -11, // tie: up to 1 + 2^-9 (even)
      1 + 2 ** -11 + 2 ** -20, // above the tie: up
      65504,
      65519, // below the tie: the largest half
      65520, // tie with 65536: infinity
      -1e6,
      2 ** -24, // the smallest subnormal
      2 ** -25, // tie with 0: 0
      3 * 2 ** -26, // above the tie: 2^-24
      -0,
      Number.NaN,
      0.1,
      -2 / 3,
    ];
    const weight = floats.get('encoder/layer_0/ffn/linear_0/weight')!;
    weight.values.set(specials);
    const bias = floats.get('encoder/layer_0/ffn/linear_0/bias')!;
    bias.values.set([0.1, -2 / 3, 1e-30, 3.4e38]);
    await writeModel(storeAll(floats, 'float32'));
    const { ggml } = await convert();

    const mlp0 = ggml.tensors.find((t) => t.name === 'encoder.blocks.0.mlp.0.weight')!;
    const halves = Array.from({ length: specials.length }, (_, i) => mlp0.data.readUInt16LE(2 * i));
    expect(halves.map((h) => h.toString(16))).toEqual(
      [
        0x3c00, 0x3c02, 0x3c01, 0x7bff, 0x7bff, 0x7c00, 0xfc00, 0x0001, 0x0000, 0x0001, 0x8000, 0x7e00, 0x2e66, 0xb955,
      ].map((h) => h.toString(16)),
    );
    const rest = weight.values.subarray(specials.length);
    for (let i = 0; i < rest.length; i++) {
      expect(mlp0.data.readUInt16LE(2 * (specials.length + i))).toBe(referenceHalfBits(rest[i]!));
    }
    const mlp0Bias = ggml.tensors.find((t) => t.name === 'encoder.blocks.0.mlp.0.bias')!;
    expect(mlp0Bias.data.equals(Buffer.from(new Float32Array(bias.values).buffer))).toBe(true);
  });

  it('dequantizes int8 weights with their per-row scales (linear, conv and embedding)', async () => {
    const floats = whisperFloats(DIMS);
    const quantized = new Set([
      'encoder/conv1/weight',
      'encoder/layer_0/self_attention/linear_0/weight',
      'decoder/layer_0/attention/linear_1/weight',
      'decoder/embeddings/weight',
    ]);
    const variables: Ct2Variable[] = [];
    const int8 = new Map<string, Int8Array>();
    const scales = new Map<string, Float32Array>();
    for (const [name, variable] of floats) {
      if (quantized.has(name)) {
        const [q, scale] = quantizeInt8(name, variable);
        variables.push(q, scale);
        int8.set(name, new Int8Array(q.data.buffer));
        scales.set(name, new Float32Array(scale.data.buffer));
      } else {
        variables.push(storeFloats(name, variable, 'float16'));
      }
    }
    await writeModel(variables);
    const { ggml } = await convert();

    const dequantized = (name: string, rows?: [number, number]) => {
      const shape = floats.get(name)!.shape;
      const perRow = elements(shape.slice(1));
      const q = int8.get(name)!;
      const scale = scales.get(name)!;
      const [first, count] = rows ?? [0, shape[0]!];
      return Array.from({ length: count * perRow }, (_, i) => {
        const index = first * perRow + i;
        return halfBitsToNumber(referenceHalfBits(Math.fround(q[index]! / scale[Math.floor(index / perRow)]!)));
      });
    };
    for (const expected of expectedLayout(DIMS.state).filter((e) => quantized.has(e.source))) {
      const tensor = ggml.tensors.find((t) => t.name === expected.name)!;
      expect(tensor.type).toBe(F16);
      const values = tensorValues(tensor);
      expect(firstDifference(values, dequantized(expected.source, expected.rows)), expected.name).toBe(undefined);
      // And within half a quantization step (plus the f16 rounding) of the original weights.
      const original = slice(floats.get(expected.source)!, expected.rows);
      const perRow = elements(floats.get(expected.source)!.shape.slice(1));
      let worst = 0;
      values.forEach((v, i) => {
        const row = Math.floor(i / perRow) + (expected.rows?.[0] ?? 0);
        const bound = 1 / scales.get(expected.source)![row]! / 2 + Math.abs(original[i]!) * 2 ** -11 + 1e-7;
        worst = Math.max(worst, Math.abs(v - original[i]!) / bound);
      });
      expect(worst, expected.name).toBeLessThanOrEqual(1);
    }
  });

  it('float16 conversion: every finite half round-trips and every midpoint between neighbours rounds to even', () => {
    for (let h = 0; h < 0x10000; h++) {
      const exponent = (h >>> 10) & 0x1f;
      if (exponent === 0x1f) continue;
      if (float32ToFloat16Bits(float16BitsToFloat32(h)) !== h)
        throw new Error(`half ${h.toString(16)} does not round-trip`);
    }
    for (let h = 0; h < 0x7bff; h++) {
      const mid = (float16BitsToFloat32(h) + float16BitsToFloat32(h + 1)) / 2;
      const even = h % 2 === 0 ? h : h + 1;
      if (float32ToFloat16Bits(mid) !== even) throw new Error(`midpoint above ${h.toString(16)} rounds wrong`);
      if (float32ToFloat16Bits(-mid) !== (even | 0x8000))
        throw new Error(`midpoint below -${h.toString(16)} rounds wrong`);
    }
    expect(float32ToFloat16Bits(Number.POSITIVE_INFINITY)).toBe(0x7c00);
    expect(float32ToFloat16Bits(Number.NEGATIVE_INFINITY)).toBe(0xfc00);
    expect(Number.isNaN(float16BitsToFloat32(float32ToFloat16Bits(Number.NaN)))).toBe(true);
    expect(float32ToFloat16Bits(65519.99)).toBe(0x7bff);
  });
});

describe('convertCt2ToGgml: model.bin in parts', () => {
  it('reads model.bin.part1..3 (cut inside a header and inside a tensor) as one file', async () => {
    const floats = whisperFloats(DIMS);
    const bytes = await writeModel(storeAll(floats, 'float16'));
    await convert();
    const whole = readFileSync(out);
    await rm(join(ct2Dir, 'model.bin'));
    const cuts = [23, Math.floor(bytes.length / 2) + 1, bytes.length];
    let start = 0;
    for (const [i, end] of cuts.entries()) {
      await writeFile(join(ct2Dir, `model.bin.part${i + 1}`), bytes.subarray(start, end));
      start = end;
    }
    await rm(out);
    await convert();
    expect(readFileSync(out).equals(whole)).toBe(true);
  });

  it('names a missing part', async () => {
    const bytes = await writeModel(storeAll(whisperFloats(DIMS), 'float16'));
    await rm(join(ct2Dir, 'model.bin'));
    await writeFile(join(ct2Dir, 'model.bin.part1'), bytes.subarray(0, 100));
    await writeFile(join(ct2Dir, 'model.bin.part3'), bytes.subarray(100));
    await expect(convert()).rejects.toMatchObject({
      code: 'CT2_MODEL_PARTS',
      message: expect.stringContaining('model.bin.part2 is missing'),
    });
  });

  it('rejects bytes after the last record (a wrong or extra part)', async () => {
    const bytes = await writeModel(storeAll(whisperFloats(DIMS), 'float16'));
    await rm(join(ct2Dir, 'model.bin'));
    await writeFile(join(ct2Dir, 'model.bin.part1'), bytes);
    await writeFile(join(ct2Dir, 'model.bin.part2'), Buffer.from('surplus'));
    await expect(convert()).rejects.toMatchObject({ code: 'CT2_TRAILING_DATA' });
  });
});

describe('convertCt2ToGgml: vocabulary', () => {
  const encoder = byteEncoder();
  const asText = (bytes: Uint8Array) => Array.from(bytes, (b) => encoder[b]).join('');
  const replacement = Buffer.from('\ufffd', 'utf8');
  // Tokens the October 2022 reference stores as U+FFFD (a byte of a multi-byte character): give them raw bytes.
  const lossy = referenceFile.tokens.flatMap((token, i) => (token.equals(replacement) ? [i] : [])).slice(0, 3);

  async function writeVocabulary(tokens: Buffer[]): Promise<void> {
    const timestamps = Array.from({ length: 20 }, (_, i) => `<|${(i * 0.02).toFixed(2)}|>`);
    await writeFile(join(ct2Dir, 'vocabulary.txt'), `${[...tokens.map(asText), ...timestamps].join('\n')}\n`);
  }

  it('takes the raw token bytes from vocabulary.txt when each agrees with the reference', async () => {
    expect(lossy.length).toBe(3);
    const raw = referenceFile.tokens.map((token) => Buffer.from(token));
    lossy.forEach((index, k) => {
      raw[index] = Buffer.from([0xe2 + k, 0x80]);
    });
    await writeVocabulary(raw);
    await writeModel(storeAll(whisperFloats(DIMS), 'float16'));
    const { result, ggml } = await convert();
    expect(result.vocabulary).toBe('ct2');
    expect(ggml.tokens.length).toBe(referenceFile.tokens.length);
    expect(ggml.tokens.every((token, i) => token.equals(raw[i]!))).toBe(true);
    expect(ggml.mel.equals(referenceFile.mel)).toBe(true);

    const { result: copied, ggml: fromReference } = await convert({ vocabulary: 'reference' });
    expect(copied.vocabulary).toBe('reference');
    expect(fromReference.tokens[lossy[0]!]!.equals(replacement)).toBe(true);
  });

  it('rejects a vocabulary.txt that is not the reference vocabulary', async () => {
    const raw = referenceFile.tokens.map((token) => Buffer.from(token));
    raw[500] = Buffer.from('surely not');
    await writeVocabulary(raw);
    await writeModel(storeAll(whisperFloats(DIMS), 'float16'));
    await expect(convert()).rejects.toMatchObject({
      code: 'VOCABULARY_MISMATCH',
      message: expect.stringContaining('token 500'),
    });
    await expect(convert({ vocabulary: 'ct2', out: join(dir, 'other.bin') })).rejects.toMatchObject({
      code: 'VOCABULARY_MISMATCH',
    });
  });

  it("requires a vocabulary file with vocabulary: 'ct2'", async () => {
    await writeModel(storeAll(whisperFloats(DIMS), 'float16'));
    await expect(convert({ vocabulary: 'ct2' })).rejects.toMatchObject({ code: 'VOCABULARY_MISSING' });
  });
});

describe('convertCt2ToGgml: errors', () => {
  it('names a directory without model.bin', async () => {
    await expect(convert()).rejects.toMatchObject({
      code: 'CT2_MODEL_MISSING',
      message: expect.stringContaining('has no model.bin'),
    });
    expect(await leftovers()).toEqual([]);
  });

  it('names a truncated model.bin, and leaves neither a partial nor a previous output touched', async () => {
    const bytes = await writeModel(storeAll(whisperFloats(DIMS), 'float16'));
    await writeFile(join(ct2Dir, 'model.bin'), bytes.subarray(0, bytes.length - 1000));
    await mkdir(join(dir, 'out'));
    await writeFile(out, 'previous');
    await expect(convert()).rejects.toMatchObject({
      code: 'CT2_TRUNCATED',
      message: expect.stringMatching(/is truncated: the data of \S+ needs \d+ bytes at offset \d+, the file has \d+/),
    });
    expect(await leftovers()).toEqual(['ggml-model.bin']);
    expect(readFileSync(out, 'utf8')).toBe('previous');
  });

  it('names an unknown binary version', async () => {
    await writeModel(storeAll(whisperFloats(DIMS), 'float16'), { version: 7 });
    await expect(convert()).rejects.toMatchObject({
      code: 'CT2_VERSION',
      message: expect.stringContaining('unknown CTranslate2 binary version 7'),
    });
  });

  it('rejects a model that is not a Whisper model', async () => {
    await writeModel(storeAll(whisperFloats(DIMS), 'float16'), { spec: 'TransformerSpec' });
    await expect(convert()).rejects.toMatchObject({ code: 'CT2_SPEC' });
  });

  it('names a missing tensor and what it was needed for', async () => {
    const variables = storeAll(whisperFloats(DIMS), 'float16').filter(
      (v) => v.name !== 'decoder/layer_0/attention/linear_1/weight',
    );
    await writeModel(variables);
    await expect(convert()).rejects.toMatchObject({
      code: 'CT2_VARIABLE_MISSING',
      message: expect.stringContaining('lacks the variable decoder/layer_0/attention/linear_1/weight'),
    });
    expect(await leftovers()).toEqual([]);
  });

  it('names a shape mismatch', async () => {
    const floats = whisperFloats(DIMS);
    floats.set('encoder/layer_0/self_attention/linear_0/weight', {
      shape: [2 * DIMS.state, DIMS.state],
      values: new Float32Array(2 * DIMS.state * DIMS.state),
    });
    await writeModel(storeAll(floats, 'float16'));
    await expect(convert()).rejects.toMatchObject({
      code: 'CT2_SHAPE',
      message: expect.stringContaining(
        'encoder/layer_0/self_attention/linear_0/weight has shape [8,4], expected [12,4]',
      ),
    });
  });

  it('needs the scale of an int8 weight', async () => {
    const floats = whisperFloats(DIMS);
    const variables = [...floats].map(([name, variable]) =>
      name === 'encoder/conv2/weight' ? quantizeInt8(name, variable)[0] : storeFloats(name, variable, 'float16'),
    );
    await writeModel(variables);
    await expect(convert()).rejects.toMatchObject({
      code: 'CT2_VARIABLE_MISSING',
      message: expect.stringContaining('encoder/conv2/weight_scale'),
    });
  });

  it('refuses a reference whose n_vocab or n_mels differ from the weights', async () => {
    await writeModel(storeAll(whisperFloats(DIMS), 'float16'));
    await expect(convert({ reference: referenceMulti })).rejects.toMatchObject({
      code: 'REFERENCE_MISMATCH',
      message: expect.stringContaining('n_vocab = 51864'),
    });
    await writeModel(storeAll(whisperFloats({ ...DIMS, mels: 128 }), 'float16'));
    await expect(convert()).rejects.toMatchObject({
      code: 'REFERENCE_MISMATCH',
      message: expect.stringContaining('n_mels = 128'),
    });
  });

  it('accepts a stored output projection equal to the embeddings, refuses a different one (whisper.cpp ties them)', async () => {
    const floats = whisperFloats(DIMS);
    const embeddings = floats.get('decoder/embeddings/weight')!;
    floats.set('decoder/projection/weight', embeddings);
    await writeModel(storeAll(floats, 'float16'));
    await convert();
    floats.set('decoder/projection/weight', { shape: embeddings.shape, values: embeddings.values.map((v) => v / 2) });
    await writeModel(storeAll(floats, 'float16'));
    await expect(convert()).rejects.toMatchObject({ code: 'CT2_UNSUPPORTED' });
  });

  it('refuses a reference that is not a ggml file', async () => {
    await writeModel(storeAll(whisperFloats(DIMS), 'float16'));
    const bogus = join(dir, 'bogus.bin');
    await writeFile(bogus, Buffer.alloc(4096));
    await expect(convert({ reference: bogus })).rejects.toMatchObject({ code: 'REFERENCE_INVALID' });
  });
});

describe('ct2-to-ggml CLI', () => {
  const run = (args: string[]) => spawnSync(process.execPath, [script, ...args], { encoding: 'utf8' });

  it('converts, and says what it wrote', async () => {
    await writeModel(storeAll(whisperFloats(DIMS), 'float16'));
    const { status, stdout } = run(['--ct2', ct2Dir, '--reference', referenceEn, '--out', out]);
    expect(status).toBe(0);
    expect(stdout).toContain(`wrote ${out}`);
    expect(readGgml(readFileSync(out)).tensors.length).toBe(expectedLayout(DIMS.state).length);
  });

  it('exits 2 with the usage when an argument is missing, 1 with the reason when conversion fails', () => {
    const usage = run(['--ct2', ct2Dir]);
    expect(usage.status).toBe(2);
    expect(usage.stderr).toContain('usage: node scripts/models/ct2-to-ggml.mjs --ct2 <dir>');
    const failed = run(['--ct2', ct2Dir, '--reference', referenceEn, '--out', out]);
    expect(failed.status).toBe(1);
    expect(failed.stderr).toContain('has no model.bin');
  });
});
