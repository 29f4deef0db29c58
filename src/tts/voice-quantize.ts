// int8 voices: dynamic quantization of a Piper voice's convolution weights, as ONNX Runtime's own
// `quantize_dynamic(op_types_to_quantize=['Conv'])` makes it, done here so no Python is needed. Every Conv whose
// weight is a float initializer becomes
//
//   DynamicQuantizeLinear(x) -> xq, xs, xz        (once per distinct input; the activations' range, per run)
//   ConvInteger(xq, wq, xz, wz) -> int32           (the Conv's own attributes)
//   Cast(float) * (xs * ws) [+ bias]               (back to float; the bias reshaped to broadcast over time)
//
// with the weight quantized once, per tensor, to uint8 over [min(w, 0), max(w, 0)]. A VITS voice is almost all
// convolution weights: en_US-joe-medium goes from 63 MB to 19 MB and synthesizes about 1.25 times as fast on one
// thread, with its words as well understood (BENCHMARKS.md, "int8 voices"). The graph is edited as protobuf fields
// (src/util/protobuf-fields.ts); only the Conv weights are decoded. Work yields to the event loop between tensors.
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import {
  ATTRIBUTE_G,
  ATTRIBUTE_GRAPHS,
  ATTRIBUTE_I,
  ATTRIBUTE_NAME,
  ATTRIBUTE_TYPE,
  ATTRIBUTE_TYPE_INT,
  FLOAT,
  GRAPH_INITIALIZER,
  GRAPH_INPUT,
  GRAPH_NODE,
  GRAPH_OUTPUT,
  GRAPH_VALUE_INFO,
  MODEL_GRAPH,
  MODEL_OPSET_IMPORT,
  NODE_ATTRIBUTE,
  NODE_DOMAIN,
  NODE_INPUT,
  NODE_NAME,
  NODE_OP_TYPE,
  NODE_OUTPUT,
  OPSET_DOMAIN,
  OPSET_VERSION,
  TENSOR_DATA_LOCATION,
  TENSOR_DATA_TYPE,
  TENSOR_DIMS,
  TENSOR_EXTERNAL_DATA,
  TENSOR_FLOAT_DATA,
  TENSOR_NAME,
  TENSOR_RAW_DATA,
  UINT8,
  valueInfoName,
} from '../util/onnx-fields.js';
import {
  fieldsOf,
  lengthField,
  lengthHeader,
  ProtobufError,
  type ProtobufField,
  packedVarints,
  stringOf,
  varintField,
} from '../util/protobuf-fields.js';

/** Bumped when the edit changes, so caches made by an older edit are made again. */
export const QUANTIZE_EDIT_VERSION = 1;

/** DynamicQuantizeLinear came with opset 11. */
const MIN_OPSET = 11;

export class QuantizeGraphError extends Error {}

interface Node {
  field: ProtobufField;
  name: string;
  opType: string;
  domain: string;
  inputs: string[];
  outputs: string[];
  /** The attribute fields' bytes, to copy onto the ConvInteger. */
  attributes: Uint8Array[];
  hasSubgraph: boolean;
}

interface Initializer {
  field: ProtobufField;
  dataType: number;
  dims: number[];
  /** Where its float values lie: raw_data, packed float_data, or fixed32 float_data fields one by one. */
  data: ProtobufField[];
  external: boolean;
}

/** What quantizeConvWeights did. */
export interface QuantizedVoice {
  /** The edited model, in parts to write one after the other (or concatenate). */
  parts: Uint8Array[];
  /** Conv nodes now ConvInteger. */
  convs: number;
  /** Bytes of float weights replaced by uint8 ones. */
  floatBytes: number;
}

/**
 * The model with every Conv on a float initializer weight quantized to int8. Throws QuantizeGraphError when the bytes
 * are not an ONNX model, its opset is older than 11, or it has no such Conv.
 */
export async function quantizeConvWeights(model: Uint8Array): Promise<QuantizedVoice> {
  let graph: ProtobufField | undefined;
  let opset = 0;
  try {
    for (const field of fieldsOf(model)) {
      if (field.field === MODEL_GRAPH) graph = field;
      else if (field.field === MODEL_OPSET_IMPORT) opset = Math.max(opset, defaultDomainVersion(model, field));
    }
  } catch (error) {
    throw new QuantizeGraphError(`not an ONNX model: ${(error as ProtobufError).message}`);
  }
  if (!graph) throw new QuantizeGraphError('the ONNX model has no graph');
  if (opset < MIN_OPSET) throw new QuantizeGraphError(`the model's opset is ${opset}; int8 needs 11 or later`);
  const { nodes, initializers, fields, graphEnds, names } = readGraph(model, graph);

  // Who reads a tensor: nodes, and the graph's own inputs and outputs (an exporter may list its initializers as
  // inputs, which a caller could then feed: such a weight is neither quantized nor removed).
  const uses = new Map<string, number>();
  for (const node of nodes) for (const input of node.inputs) uses.set(input, (uses.get(input) ?? 0) + 1);
  for (const name of graphEnds) uses.set(name, (uses.get(name) ?? 0) + 1);
  // A subgraph (If, Loop) may read an initializer by name from outside: then no initializer is removed.
  const mayRemove = !nodes.some((node) => node.hasSubgraph);
  const targets = nodes.filter(
    (node) => quantizable(node, initializers) && !node.inputs.slice(1).some((name) => graphEnds.has(name)),
  );
  if (targets.length === 0) throw new QuantizeGraphError('the model has no Conv with float weights to quantize');
  // Every tensor and node this adds gets a name the graph does not have yet.
  const fresh = (wanted: string): string => {
    let name = wanted;
    for (let n = 1; names.has(name); n++) name = `${wanted}_${n}`;
    names.add(name);
    return name;
  };

  const added: Uint8Array[] = [];
  const replaced = new Map<ProtobufField, Uint8Array[]>();
  const quantizedInputs = new Map<string, { input: string; scale: string; zeroPoint: string }>();
  const quantizedWeights = new Map<string, { weight: string; scale: string; zeroPoint: string }>();
  const convUses = new Map<string, number>();
  let floatBytes = 0;
  for (const [index, node] of targets.entries()) {
    const [x, w, b] = node.inputs as [string, string, string | undefined];
    const tag = `voxmill_int8/${index}`;
    const out: Uint8Array[] = [];
    let input = quantizedInputs.get(x);
    if (!input) {
      input = { input: fresh(`${x}_q8`), scale: fresh(`${x}_q8s`), zeroPoint: fresh(`${x}_q8z`) };
      quantizedInputs.set(x, input);
      out.push(
        nodeBytes(
          fresh(`${tag}/quantize_input`),
          'DynamicQuantizeLinear',
          [x],
          [input.input, input.scale, input.zeroPoint],
        ),
      );
    }
    let weight = quantizedWeights.get(w);
    if (!weight) {
      const init = initializers.get(w) as Initializer;
      const values = floatsOf(model, init);
      floatBytes += values.length * 4;
      const { quantized, scale, zeroPoint } = quantizeTensor(values);
      weight = { weight: fresh(`${w}_q8`), scale: fresh(`${w}_q8s`), zeroPoint: fresh(`${w}_q8z`) };
      added.push(
        tensorBytes(weight.weight, UINT8, init.dims, quantized),
        tensorBytes(weight.scale, FLOAT, [], new Uint8Array(Float32Array.of(scale).buffer)),
        tensorBytes(weight.zeroPoint, UINT8, [], Uint8Array.of(zeroPoint)),
      );
      quantizedWeights.set(w, weight);
      // The largest weight of a voice takes a few ms; the loop stays responsive between them.
      await yieldToLoop();
    }
    convUses.set(w, (convUses.get(w) ?? 0) + 1);
    const output = node.outputs[0] as string;
    const integer = fresh(`${tag}/int32`);
    const asFloat = fresh(`${tag}/float`);
    const scale = fresh(`${tag}/scale`);
    const scaled = b ? fresh(`${tag}/scaled`) : output;
    out.push(
      nodeBytes(
        fresh(`${tag}/conv`),
        'ConvInteger',
        [input.input, weight.weight, input.zeroPoint, weight.zeroPoint],
        [integer],
        node.attributes,
      ),
      nodeBytes(fresh(`${tag}/cast`), 'Cast', [integer], [asFloat], [intAttribute('to', FLOAT)]),
      nodeBytes(fresh(`${tag}/scales`), 'Mul', [input.scale, weight.scale], [scale]),
      nodeBytes(fresh(`${tag}/rescale`), 'Mul', [asFloat, scale], [scaled]),
    );
    if (b) {
      // Conv adds its bias per output channel; a plain Add needs it shaped [channels, 1, ...] to broadcast.
      const bias = initializers.get(b) as Initializer;
      const reshaped = fresh(`${tag}/bias`);
      const floats = floatsOf(model, bias);
      const dims = [
        floats.length,
        ...new Array<number>(Math.max(0, (initializers.get(w) as Initializer).dims.length - 2)).fill(1),
      ];
      added.push(
        tensorBytes(reshaped, FLOAT, dims, new Uint8Array(floats.buffer, floats.byteOffset, floats.byteLength)),
      );
      out.push(nodeBytes(fresh(`${tag}/bias_add`), 'Add', [scaled, reshaped], [output]));
      convUses.set(b, (convUses.get(b) ?? 0) + 1);
    }
    replaced.set(node.field, out);
  }

  // Float weights and biases no node reads any more leave the model.
  const removable = new Set<ProtobufField>();
  if (mayRemove) {
    for (const [name, count] of convUses) {
      if (uses.get(name) === count) removable.add((initializers.get(name) as Initializer).field);
    }
  }
  const graphParts: Uint8Array[] = [];
  for (const field of fields) {
    const replacement = replaced.get(field);
    if (replacement) graphParts.push(...replacement.map((node) => lengthField(GRAPH_NODE, node)));
    else if (removable.has(field)) continue;
    else graphParts.push(model.subarray(field.keyStart, field.end));
  }
  for (const tensor of added) graphParts.push(lengthField(GRAPH_INITIALIZER, tensor));
  const graphLength = graphParts.reduce((sum, part) => sum + part.byteLength, 0);
  return {
    parts: [
      model.subarray(0, graph.keyStart),
      lengthHeader(MODEL_GRAPH, graphLength),
      ...graphParts,
      model.subarray(graph.end),
    ],
    convs: targets.length,
    floatBytes,
  };
}

/** Uint8 per tensor, asymmetric over a range that holds 0 (what ONNX Runtime's quantizer does for QUInt8). */
export function quantizeTensor(values: Float32Array): { quantized: Uint8Array; scale: number; zeroPoint: number } {
  let min = 0;
  let max = 0;
  for (const value of values) {
    if (value < min) min = value;
    else if (value > max) max = value;
  }
  const scale = max > min ? (max - min) / 255 : 1;
  const zeroPoint = Math.min(255, Math.max(0, Math.round(-min / scale)));
  const quantized = new Uint8Array(values.length);
  for (let i = 0; i < values.length; i++) {
    quantized[i] = Math.min(255, Math.max(0, Math.round((values[i] as number) / scale) + zeroPoint));
  }
  return { quantized, scale: Math.fround(scale), zeroPoint };
}

/** The graph's nodes, initializers, fields in order, input and output names, and every name a tensor or node has. */
function readGraph(model: Uint8Array, graph: ProtobufField) {
  const nodes: Node[] = [];
  const initializers = new Map<string, Initializer>();
  const fields: ProtobufField[] = [];
  const graphEnds = new Set<string>();
  const names = new Set<string>();
  try {
    for (const field of fieldsOf(model, graph.valueStart, graph.end)) {
      fields.push(field);
      if (field.field === GRAPH_NODE) {
        const node = nodeOf(model, field);
        nodes.push(node);
        for (const name of [node.name, ...node.inputs, ...node.outputs]) names.add(name);
      } else if (field.field === GRAPH_INITIALIZER) {
        const init = initializerOf(model, field);
        initializers.set(init.name, init.initializer);
        names.add(init.name);
      } else if (field.field === GRAPH_INPUT || field.field === GRAPH_OUTPUT || field.field === GRAPH_VALUE_INFO) {
        const name = valueInfoName(model, field);
        names.add(name);
        if (field.field !== GRAPH_VALUE_INFO) graphEnds.add(name);
      }
    }
  } catch (error) {
    if (error instanceof ProtobufError) throw new QuantizeGraphError(`malformed ONNX graph: ${error.message}`);
    throw error;
  }
  return { nodes, initializers, fields, graphEnds, names };
}

function quantizable(node: Node, initializers: ReadonlyMap<string, Initializer>): boolean {
  if (node.opType !== 'Conv' || (node.domain !== '' && node.domain !== 'ai.onnx')) return false;
  if (node.inputs.length < 2 || node.inputs.length > 3 || node.outputs.length !== 1) return false;
  const weight = initializers.get(node.inputs[1] as string);
  if (!isFloatTensor(weight) || weight.dims.length < 3) return false;
  const bias = node.inputs[2];
  if (bias === undefined || bias === '') return node.inputs.length === 2 || bias === '';
  const b = initializers.get(bias);
  return isFloatTensor(b) && b.dims.length === 1 && b.dims[0] === weight.dims[0];
}

function isFloatTensor(init: Initializer | undefined): init is Initializer {
  return init !== undefined && init.dataType === FLOAT && !init.external && init.data.length > 0;
}

function nodeOf(model: Uint8Array, field: ProtobufField): Node {
  const node: Node = {
    field,
    name: '',
    opType: '',
    domain: '',
    inputs: [],
    outputs: [],
    attributes: [],
    hasSubgraph: false,
  };
  for (const part of fieldsOf(model, field.valueStart, field.end)) {
    if (part.field === NODE_INPUT) node.inputs.push(stringOf(model, part));
    else if (part.field === NODE_OUTPUT) node.outputs.push(stringOf(model, part));
    else if (part.field === NODE_NAME) node.name = stringOf(model, part);
    else if (part.field === NODE_OP_TYPE) node.opType = stringOf(model, part);
    else if (part.field === NODE_DOMAIN) node.domain = stringOf(model, part);
    else if (part.field === NODE_ATTRIBUTE) {
      node.attributes.push(model.subarray(part.valueStart, part.end));
      for (const inner of fieldsOf(model, part.valueStart, part.end)) {
        if (inner.field === ATTRIBUTE_G || inner.field === ATTRIBUTE_GRAPHS) node.hasSubgraph = true;
      }
    }
  }
  return node;
}

function initializerOf(model: Uint8Array, field: ProtobufField): { name: string; initializer: Initializer } {
  let name = '';
  const initializer: Initializer = { field, dataType: 0, dims: [], data: [], external: false };
  for (const part of fieldsOf(model, field.valueStart, field.end)) {
    if (part.field === TENSOR_NAME) name = stringOf(model, part);
    else if (part.field === TENSOR_DATA_TYPE) initializer.dataType = part.varint;
    else if (part.field === TENSOR_DIMS) {
      if (part.wireType === 0) initializer.dims.push(part.varint);
      else for (const dim of packedVarints(model, part)) initializer.dims.push(dim);
    } else if (part.field === TENSOR_RAW_DATA || part.field === TENSOR_FLOAT_DATA) initializer.data.push(part);
    else if (part.field === TENSOR_EXTERNAL_DATA || (part.field === TENSOR_DATA_LOCATION && part.varint === 1)) {
      initializer.external = true;
    }
  }
  return { name, initializer };
}

/** A float tensor's values, copied to aligned memory (the model's bytes may sit at any offset). */
function floatsOf(model: Uint8Array, init: Initializer): Float32Array {
  const total = init.data.reduce((sum, part) => sum + (part.end - part.valueStart), 0);
  const bytes = new Uint8Array(total);
  let at = 0;
  for (const part of init.data) {
    bytes.set(model.subarray(part.valueStart, part.end), at);
    at += part.end - part.valueStart;
  }
  const values = new Float32Array(bytes.buffer, 0, Math.floor(total / 4));
  const expected = init.dims.reduce((product, dim) => product * dim, 1);
  if (values.length !== expected) {
    throw new QuantizeGraphError(`a weight holds ${values.length} values where its shape says ${expected}`);
  }
  return values;
}

function defaultDomainVersion(model: Uint8Array, field: ProtobufField): number {
  let domain = '';
  let version = 0;
  for (const part of fieldsOf(model, field.valueStart, field.end)) {
    if (part.field === OPSET_DOMAIN) domain = stringOf(model, part);
    else if (part.field === OPSET_VERSION) version = part.varint;
  }
  return domain === '' || domain === 'ai.onnx' ? version : 0;
}

function nodeBytes(name: string, opType: string, inputs: string[], outputs: string[], attributes: Uint8Array[] = []) {
  return Buffer.concat([
    ...inputs.map((input) => lengthField(NODE_INPUT, input)),
    ...outputs.map((output) => lengthField(NODE_OUTPUT, output)),
    lengthField(NODE_NAME, name),
    lengthField(NODE_OP_TYPE, opType),
    ...attributes.map((attribute) => lengthField(NODE_ATTRIBUTE, attribute)),
  ]);
}

function intAttribute(name: string, value: number): Uint8Array {
  return Buffer.concat([
    lengthField(ATTRIBUTE_NAME, name),
    varintField(ATTRIBUTE_I, value),
    varintField(ATTRIBUTE_TYPE, ATTRIBUTE_TYPE_INT),
  ]);
}

function tensorBytes(name: string, dataType: number, dims: readonly number[], data: Uint8Array): Uint8Array {
  return Buffer.concat([
    ...dims.map((dim) => varintField(TENSOR_DIMS, dim)),
    varintField(TENSOR_DATA_TYPE, dataType),
    lengthField(TENSOR_NAME, name),
    lengthField(TENSOR_RAW_DATA, data),
  ]);
}
