// int8 voices' graph edit (src/tts/voice-quantize.ts) on small models built here, run by onnxruntime-node (no addon):
// every Conv on a float weight becomes ConvInteger with its input quantized per run, and the output stays within
// quantization error of the float one; shared inputs are quantized once; grouped, bias-less and padded convolutions
// keep their attributes; models without such a Conv, of an old opset, or not ONNX at all are refused by type.
import { readFileSync } from 'node:fs';
import * as ort from 'onnxruntime-node';
import { describe, expect, it } from 'vitest';
import { QuantizeGraphError, quantizeConvWeights, quantizeTensor } from '../../src/tts/voice-quantize.js';
import { fieldsOf, lengthField, stringOf, varintField } from '../../src/util/protobuf-fields.js';
import { fixture } from '../helpers/paths.js';

const FLOAT = 1;

function tensor(name: string, dims: number[], values: Float32Array): Buffer {
  return Buffer.concat([
    ...dims.map((dim) => varintField(1, dim)),
    varintField(2, FLOAT),
    lengthField(8, name),
    lengthField(9, new Uint8Array(values.buffer, values.byteOffset, values.byteLength)),
  ]);
}

function valueInfo(name: string, dims: (number | string)[]): Buffer {
  const shape = Buffer.concat(
    dims.map((dim) => lengthField(1, typeof dim === 'number' ? varintField(1, dim) : lengthField(2, dim))),
  );
  const tensorType = Buffer.concat([varintField(1, FLOAT), lengthField(2, shape)]);
  return Buffer.concat([lengthField(1, name), lengthField(2, lengthField(1, tensorType))]);
}

function ints(name: string, values: number[]): Buffer {
  return Buffer.concat([lengthField(1, name), ...values.map((v) => varintField(8, v)), varintField(20, 7)]);
}

function int(name: string, value: number): Buffer {
  return Buffer.concat([lengthField(1, name), varintField(3, value), varintField(20, 2)]);
}

function node(opType: string, inputs: string[], outputs: string[], attributes: Buffer[] = []): Buffer {
  return Buffer.concat([
    ...inputs.map((input) => lengthField(1, input)),
    ...outputs.map((output) => lengthField(2, output)),
    lengthField(3, `${opType}_${outputs[0]}`),
    lengthField(4, opType),
    ...attributes.map((attribute) => lengthField(5, attribute)),
  ]);
}

/** Deterministic values in [-1, 1). */
function values(count: number, seed: number): Float32Array {
  let state = seed;
  return Float32Array.from({ length: count }, () => {
    state = (state * 1103515245 + 12345) % 2 ** 31;
    return state / 2 ** 30 - 1;
  });
}

/**
 * x [1, 8, T] -> Conv(k3, pad 1, bias) -> a; x -> Conv(k1, no bias) -> b; a -> Conv(group 4, k3, dilation 2,
 * pad 2, bias) -> c; output a + b + c [1, 8, T]. Two Convs read x; one is grouped.
 */
function convModel(opset = 17, extra: Buffer[] = []): Buffer {
  const graph = Buffer.concat([
    ...extra,
    lengthField(1, node('Conv', ['x', 'w1', 'b1'], ['a'], [ints('kernel_shape', [3]), ints('pads', [1, 1])])),
    lengthField(1, node('Conv', ['x', 'w2'], ['b'], [ints('kernel_shape', [1])])),
    lengthField(
      1,
      node(
        'Conv',
        ['a', 'w3', 'b3'],
        ['c'],
        [int('group', 4), ints('kernel_shape', [3]), ints('dilations', [2]), ints('pads', [2, 2])],
      ),
    ),
    lengthField(1, node('Add', ['a', 'b'], ['ab'])),
    lengthField(1, node('Add', ['ab', 'c'], ['y'])),
    lengthField(2, 'convs'),
    lengthField(5, tensor('w1', [8, 8, 3], values(192, 1))),
    lengthField(5, tensor('b1', [8], values(8, 2))),
    lengthField(5, tensor('w2', [8, 8, 1], values(64, 3))),
    lengthField(5, tensor('w3', [8, 2, 3], values(48, 4))),
    lengthField(5, tensor('b3', [8], values(8, 5))),
    lengthField(11, valueInfo('x', [1, 8, 'time'])),
    lengthField(12, valueInfo('y', [1, 8, 'time'])),
  ]);
  const opsetImport = Buffer.concat([lengthField(1, ''), varintField(2, opset)]);
  return Buffer.concat([varintField(1, 8), lengthField(8, opsetImport), lengthField(7, graph)]);
}

async function run(model: Uint8Array, input: Float32Array): Promise<Float32Array> {
  const session = await ort.InferenceSession.create(model);
  try {
    const result = await session.run({ x: new ort.Tensor('float32', input, [1, 8, input.length / 8]) });
    return result.y?.data as Float32Array;
  } finally {
    await session.release();
  }
}

/** The graph's node op types (counted) and initializer names. */
function graphOf(model: Uint8Array): { ops: Record<string, number>; initializers: string[]; outputs: string[] } {
  const ops: Record<string, number> = {};
  const initializers: string[] = [];
  const outputs: string[] = [];
  const graph = [...fieldsOf(model)].find((f) => f.field === 7);
  if (!graph) throw new Error('no graph');
  for (const field of fieldsOf(model, graph.valueStart, graph.end)) {
    if (field.field !== 1 && field.field !== 5) continue;
    for (const part of fieldsOf(model, field.valueStart, field.end)) {
      if (field.field === 1 && part.field === 4) ops[stringOf(model, part)] = (ops[stringOf(model, part)] ?? 0) + 1;
      if (field.field === 1 && part.field === 2) outputs.push(stringOf(model, part));
      if (field.field === 5 && part.field === 8) initializers.push(stringOf(model, part));
    }
  }
  return { ops, initializers, outputs };
}

describe('quantizeTensor', () => {
  it('maps 0 exactly and every value within half a step, over a range that holds 0', () => {
    const weights = Float32Array.from([0.5, -0.25, 0, 1.5, 0.75, 0.3]);
    const { quantized, scale, zeroPoint } = quantizeTensor(weights);
    expect(scale).toBeCloseTo(1.75 / 255, 8);
    weights.forEach((value, i) => {
      expect(Math.abs(((quantized[i] as number) - zeroPoint) * scale - value)).toBeLessThanOrEqual(scale / 2 + 1e-7);
    });
    expect(quantized[2]).toBe(zeroPoint);
    // All positive: the range still starts at 0 (zero point 0).
    expect(quantizeTensor(Float32Array.from([1, 2])).zeroPoint).toBe(0);
    // All zero: a scale of 1, nothing divided by 0.
    expect(quantizeTensor(new Float32Array(4))).toMatchObject({ scale: 1, zeroPoint: 0 });
  });
});

describe('quantizeConvWeights', () => {
  it('turns every Conv into ConvInteger, quantizing a shared input once, within quantization error of float', async () => {
    const model = convModel();
    const { parts, convs, floatBytes } = await quantizeConvWeights(model);
    const quantized = Buffer.concat(parts);
    expect(convs).toBe(3);
    expect(floatBytes).toBe((192 + 64 + 48) * 4);
    const before = graphOf(model);
    const after = graphOf(quantized);
    expect(before.ops).toMatchObject({ Conv: 3 });
    // x feeds two Convs, a one: two DynamicQuantizeLinear nodes.
    expect(after.ops).toMatchObject({ ConvInteger: 3, DynamicQuantizeLinear: 2, Cast: 3 });
    expect(after.ops.Conv).toBeUndefined();
    // The float weights and biases are gone; their uint8 forms are there.
    for (const name of ['w1', 'b1', 'w2', 'w3', 'b3']) expect(after.initializers).not.toContain(name);
    expect(after.initializers).toEqual(expect.arrayContaining(['w1_q8', 'w2_q8', 'w3_q8']));
    // Each tensor has one producer.
    expect(new Set(after.outputs).size).toBe(after.outputs.length);
    const input = values(8 * 50, 9);
    const [expected, got] = [await run(model, input), await run(quantized, input)];
    expect(got.length).toBe(expected.length);
    let peak = 0;
    let worst = 0;
    for (let i = 0; i < expected.length; i++) {
      peak = Math.max(peak, Math.abs(expected[i] as number));
      worst = Math.max(worst, Math.abs((got[i] as number) - (expected[i] as number)));
    }
    // 8-bit weights and activations: a few percent of the output's range at most.
    expect(worst / peak).toBeLessThan(0.05);
    expect(worst).toBeGreaterThan(0);
  });

  it('keeps a weight another node reads, leaves a weight the graph lists as an input, and never reuses a name', async () => {
    // w2 is also read by a Mul (kept as float beside its uint8 form); w3 is a graph input a caller may feed (its Conv
    // stays float); a tensor already named like the quantizer's first choice (x_q8) keeps its name and its producer.
    const model = convModel(17, [
      lengthField(1, node('Mul', ['w2', 'w2'], ['w2_squared'])),
      lengthField(1, node('Identity', ['x'], ['x_q8'])),
      lengthField(11, valueInfo('w3', [8, 2, 3])),
    ]);
    const { parts, convs } = await quantizeConvWeights(model);
    const quantized = Buffer.concat(parts);
    const after = graphOf(quantized);
    expect(convs).toBe(2);
    expect(after.ops).toMatchObject({ Conv: 1, ConvInteger: 2 });
    expect(after.initializers).toEqual(expect.arrayContaining(['w2', 'w3', 'b3', 'w2_q8']));
    expect(after.initializers).not.toContain('w1');
    expect(new Set(after.outputs).size).toBe(after.outputs.length);
    expect(after.outputs.filter((name) => name === 'x_q8')).toHaveLength(1);
    const input = values(8 * 20, 3);
    const session = await ort.InferenceSession.create(quantized);
    try {
      const result = await session.run({ x: new ort.Tensor('float32', input, [1, 8, 20]) });
      expect(result.y?.dims).toEqual([1, 8, 20]);
    } finally {
      await session.release();
    }
  });

  it('refuses models it cannot quantize with QuantizeGraphError, saying why', async () => {
    await expect(quantizeConvWeights(Buffer.from('not a model at all'))).rejects.toThrow(QuantizeGraphError);
    await expect(quantizeConvWeights(convModel(10))).rejects.toThrow(/opset is 10/);
    // The fixture voices are made of MatMul and Gather: nothing to quantize.
    const voice = readFileSync(fixture('voices/en_US-fixture-medium.onnx'));
    await expect(quantizeConvWeights(voice)).rejects.toThrow(/no Conv with float weights/);
  });
});
