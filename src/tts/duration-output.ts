// Word timings need each phoneme's length, which a Piper voice computes but does not return: its VITS graph rounds
// the duration predictor's output up to whole frames (`w_ceil = ceil(exp(logw) * mask * length_scale)`, a Ceil node
// whose result feeds the CumSum that builds the alignment path) and decodes 256 samples per frame. This adds that
// tensor to the graph's outputs, in memory, by appending one ValueInfoProto to the GraphProto: the weights are
// skipped by their length, never decoded. src/tts/edited-voice.ts caches the edited model beside the voice.
import {
  FLOAT,
  GRAPH_NODE,
  GRAPH_OUTPUT,
  MODEL_GRAPH,
  NODE_INPUT,
  NODE_OP_TYPE,
  NODE_OUTPUT,
  TENSOR_ELEM_TYPE,
  TYPE_TENSOR,
  VALUE_INFO_NAME,
  VALUE_INFO_TYPE,
  valueInfoName,
} from '../util/onnx-fields.js';
import {
  fieldsOf,
  lengthField,
  ProtobufError,
  type ProtobufField,
  stringOf,
  varintField,
} from '../util/protobuf-fields.js';

/** Bumped when the edit changes, so caches made by an older edit are made again. */
export const DURATION_EDIT_VERSION = 1;

export class DurationGraphError extends Error {}

interface GraphNode {
  opType: string;
  inputs: string[];
  outputs: string[];
}

/** The model with the phoneme durations added as an output, and that output's name. */
export interface DurationModel {
  output: string;
  model: Buffer;
}

/**
 * Adds the frame count of each phoneme id (float32 `[1, 1, ids]`) to a Piper voice's outputs. Throws
 * DurationGraphError when the graph has no such tensor (not a VITS export, or one made differently).
 */
export function addDurationOutput(model: Uint8Array): DurationModel {
  let graph: ProtobufField | undefined;
  try {
    for (const field of fieldsOf(model)) if (field.field === MODEL_GRAPH) graph = field;
  } catch (error) {
    throw new DurationGraphError(`not an ONNX model: ${(error as ProtobufError).message}`);
  }
  if (!graph) throw new DurationGraphError('the ONNX model has no graph');
  const nodes: GraphNode[] = [];
  const outputs = new Set<string>();
  try {
    for (const field of fieldsOf(model, graph.valueStart, graph.end)) {
      if (field.field === GRAPH_NODE) nodes.push(nodeOf(model, field));
      else if (field.field === GRAPH_OUTPUT) outputs.add(valueInfoName(model, field));
    }
  } catch (error) {
    if (error instanceof ProtobufError) throw new DurationGraphError(`malformed ONNX graph: ${error.message}`);
    throw error;
  }
  const output = durationTensor(nodes);
  if (output === undefined) {
    throw new DurationGraphError('the voice has no phoneme durations (no Ceil feeding a CumSum in its graph)');
  }
  if (outputs.has(output)) return { output, model: Buffer.from(model.buffer, model.byteOffset, model.byteLength) };
  const tensorType = lengthField(TYPE_TENSOR, varintField(TENSOR_ELEM_TYPE, FLOAT));
  const valueInfo = Buffer.concat([lengthField(VALUE_INFO_NAME, output), lengthField(VALUE_INFO_TYPE, tensorType)]);
  const graphBytes = Buffer.concat([model.subarray(graph.valueStart, graph.end), lengthField(GRAPH_OUTPUT, valueInfo)]);
  return {
    output,
    model: Buffer.concat([
      model.subarray(0, graph.keyStart),
      lengthField(MODEL_GRAPH, graphBytes),
      model.subarray(graph.end),
    ]),
  };
}

function nodeOf(model: Uint8Array, node: ProtobufField): GraphNode {
  const result: GraphNode = { opType: '', inputs: [], outputs: [] };
  for (const field of fieldsOf(model, node.valueStart, node.end)) {
    if (field.field === NODE_INPUT) result.inputs.push(stringOf(model, field));
    else if (field.field === NODE_OUTPUT) result.outputs.push(stringOf(model, field));
    else if (field.field === NODE_OP_TYPE) result.opType = stringOf(model, field);
  }
  return result;
}

/** The output of the Ceil node that a CumSum reads: Piper's w_ceil. */
function durationTensor(nodes: readonly GraphNode[]): string | undefined {
  const cumSumInputs = new Set(nodes.filter((n) => n.opType === 'CumSum').flatMap((n) => n.inputs));
  return nodes.find((n) => n.opType === 'Ceil' && n.outputs.some((o) => cumSumInputs.has(o)))?.outputs[0];
}
