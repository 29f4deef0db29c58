// Field numbers of onnx.proto that the graph edits use (src/tts/duration-output.ts, src/tts/voice-quantize.ts), on
// the protobuf reader of protobuf-fields.ts, and the one lookup both need.
import { fieldsOf, type ProtobufField, stringOf } from './protobuf-fields.js';

export const MODEL_GRAPH = 7;
export const MODEL_OPSET_IMPORT = 8;
export const OPSET_DOMAIN = 1;
export const OPSET_VERSION = 2;
export const GRAPH_NODE = 1;
export const GRAPH_INITIALIZER = 5;
export const GRAPH_INPUT = 11;
export const GRAPH_OUTPUT = 12;
export const GRAPH_VALUE_INFO = 13;
export const NODE_INPUT = 1;
export const NODE_OUTPUT = 2;
export const NODE_NAME = 3;
export const NODE_OP_TYPE = 4;
export const NODE_ATTRIBUTE = 5;
export const NODE_DOMAIN = 7;
export const ATTRIBUTE_NAME = 1;
export const ATTRIBUTE_I = 3;
export const ATTRIBUTE_G = 6;
export const ATTRIBUTE_GRAPHS = 11;
export const ATTRIBUTE_TYPE = 20;
export const ATTRIBUTE_TYPE_INT = 2;
export const VALUE_INFO_NAME = 1;
export const VALUE_INFO_TYPE = 2;
export const TYPE_TENSOR = 1;
export const TENSOR_ELEM_TYPE = 1;
export const TENSOR_DIMS = 1;
export const TENSOR_DATA_TYPE = 2;
export const TENSOR_FLOAT_DATA = 4;
export const TENSOR_NAME = 8;
export const TENSOR_RAW_DATA = 9;
export const TENSOR_EXTERNAL_DATA = 13;
export const TENSOR_DATA_LOCATION = 14;
/** TensorProto.DataType values. */
export const FLOAT = 1;
export const UINT8 = 2;

/** The name of a ValueInfoProto (a graph's input, output or value_info entry). */
export function valueInfoName(model: Uint8Array, info: ProtobufField): string {
  for (const field of fieldsOf(model, info.valueStart, info.end)) {
    if (field.field === VALUE_INFO_NAME) return stringOf(model, field);
  }
  return '';
}
