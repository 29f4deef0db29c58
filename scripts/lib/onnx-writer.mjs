// A small protobuf encoder for the subset of ONNX (onnx/onnx.proto, proto2) that the fixture voices need:
// ModelProto, GraphProto, NodeProto, AttributeProto, TensorProto and ValueInfoProto. Every function returns the
// encoded bytes of one message (a Buffer), so messages nest by passing one function's result to another.
// Field numbers are noted next to each field. Repeated scalars are written unpacked (proto2's default).

// --- protobuf wire format ---------------------------------------------------------------------------------

const VARINT = 0; // wire type: int32, int64, enum
const I32 = 5; // wire type: fixed 32-bit (float)
const LEN = 2; // wire type: length-delimited (string, bytes, embedded message)

/** Base-128 varint; negative numbers are their 64-bit two's complement (10 bytes), as protobuf's int64. */
function varint(value) {
  let v = BigInt.asUintN(64, BigInt(value));
  const bytes = [];
  while (v > 0x7fn) {
    bytes.push(Number(v & 0x7fn) | 0x80);
    v >>= 7n;
  }
  bytes.push(Number(v));
  return Buffer.from(bytes);
}

const key = (field, wireType) => varint((field << 3) | wireType);

const intField = (field, value) => Buffer.concat([key(field, VARINT), varint(value)]);

function floatField(field, value) {
  const bytes = Buffer.alloc(4);
  bytes.writeFloatLE(value);
  return Buffer.concat([key(field, I32), bytes]);
}

function bytesField(field, data) {
  const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
  return Buffer.concat([key(field, LEN), varint(bytes.length), bytes]);
}

/** Length-delimited fields for each item: strings, byte buffers or already-encoded messages. */
const repeated = (field, items) => (items ?? []).map((item) => bytesField(field, item));

// --- ONNX -------------------------------------------------------------------------------------------------

/** TensorProto.DataType values for the element types used here. */
export const DataType = { float32: 1, int32: 6, int64: 7, float64: 11 };

// AttributeProto.AttributeType
const ATTR_FLOAT = 1;
const ATTR_INT = 2;
const ATTR_TENSOR = 4;
const ATTR_INTS = 7;

function dataType(type) {
  const code = DataType[type];
  if (code === undefined) throw new Error(`onnx-writer: unsupported element type ${type}`);
  return code;
}

/** Little-endian element bytes, as TensorProto.raw_data stores them. */
function rawData(type, values) {
  switch (type) {
    case 'float32':
      return Buffer.from(Float32Array.from(values).buffer);
    case 'float64':
      return Buffer.from(Float64Array.from(values).buffer);
    case 'int32':
      return Buffer.from(Int32Array.from(values).buffer);
    case 'int64':
      return Buffer.from(BigInt64Array.from(values, (v) => BigInt(v)).buffer);
    default:
      throw new Error(`onnx-writer: unsupported element type ${type}`);
  }
}

/**
 * TensorProto: a constant (initializer, or the value of a Constant node). `dims` [] is a scalar; `values`
 * has the product of `dims` elements, row-major.
 */
export function tensor(name, type, dims, values) {
  const count = dims.reduce((a, b) => a * b, 1);
  if (values.length !== count) throw new Error(`onnx-writer: ${name} has ${values.length} values, dims ${dims}`);
  return Buffer.concat([
    ...dims.map((d) => intField(1, d)), // dims = 1 (repeated int64)
    intField(2, dataType(type)), // data_type = 2
    bytesField(8, name), // name = 8
    bytesField(9, rawData(type, values)), // raw_data = 9
  ]);
}

/**
 * AttributeProto from a value: an integer number is INT, another number FLOAT, an array INTS, a Buffer (an
 * encoded tensor()) TENSOR. `{ float: 1 }`, `{ int: 1 }`, `{ ints: [] }` and `{ tensor: t }` say it explicitly.
 */
function attribute(name, value) {
  let v = value;
  if (typeof v === 'number') v = Number.isInteger(v) ? { int: v } : { float: v };
  else if (Array.isArray(v)) v = { ints: v };
  else if (Buffer.isBuffer(v)) v = { tensor: v };
  const fields = [bytesField(1, name)]; // name = 1
  if (v.float !== undefined)
    fields.push(floatField(2, v.float), intField(20, ATTR_FLOAT)); // f = 2, type = 20
  else if (v.int !== undefined)
    fields.push(intField(3, v.int), intField(20, ATTR_INT)); // i = 3
  else if (v.tensor !== undefined)
    fields.push(bytesField(5, v.tensor), intField(20, ATTR_TENSOR)); // t = 5
  else if (v.ints !== undefined)
    fields.push(...v.ints.map((i) => intField(8, i)), intField(20, ATTR_INTS)); // ints = 8
  else throw new Error(`onnx-writer: attribute ${name} has an unsupported value`);
  return Buffer.concat(fields);
}

/** NodeProto: one operator of the default domain. `name` defaults to the op type and first output. */
export function node(opType, inputs, outputs, attrs = {}, name = `${opType}_${outputs[0]}`) {
  return Buffer.concat([
    ...repeated(1, inputs), // input = 1 (repeated string; '' is an omitted optional input)
    ...repeated(2, outputs), // output = 2
    bytesField(3, name), // name = 3
    bytesField(4, opType), // op_type = 4
    ...repeated(
      5, // attribute = 5
      Object.entries(attrs).map(([attrName, value]) => attribute(attrName, value)),
    ),
  ]);
}

/**
 * ValueInfoProto of a tensor: `shape` lists dims, each a number (dim_value) or a string (dim_param, a symbolic
 * dimension).
 */
export function valueInfo(name, type, shape) {
  const dims = shape.map(
    (d) =>
      typeof d === 'number'
        ? intField(1, d) // TensorShapeProto.Dimension: dim_value = 1
        : bytesField(2, d), // dim_param = 2
  );
  const tensorShape = Buffer.concat(repeated(1, dims)); // TensorShapeProto: dim = 1
  const tensorType = Buffer.concat([
    intField(1, dataType(type)), // TypeProto.Tensor: elem_type = 1
    bytesField(2, tensorShape), // shape = 2
  ]);
  const typeProto = bytesField(1, tensorType); // TypeProto: tensor_type = 1
  return Buffer.concat([bytesField(1, name), bytesField(2, typeProto)]); // ValueInfoProto: name = 1, type = 2
}

/** GraphProto from encoded nodes (in topological order), initializers (tensor()) and inputs/outputs (valueInfo()). */
export function graph({ name, nodes, initializers = [], inputs, outputs, docString }) {
  return Buffer.concat([
    ...repeated(1, nodes), // node = 1
    bytesField(2, name), // name = 2
    ...repeated(5, initializers), // initializer = 5
    ...(docString ? [bytesField(10, docString)] : []), // doc_string = 10
    ...repeated(11, inputs), // input = 11
    ...repeated(12, outputs), // output = 12
  ]);
}

/** ModelProto around an encoded graph(): IR version 8, one opset import of the default domain. */
export function model({ graph: graphBytes, opset = 17, irVersion = 8, producerName = 'voxmill-fixtures', docString }) {
  const opsetImport = Buffer.concat([bytesField(1, ''), intField(2, opset)]); // OperatorSetIdProto: domain 1, version 2
  return Buffer.concat([
    intField(1, irVersion), // ir_version = 1
    bytesField(8, opsetImport), // opset_import = 8
    bytesField(2, producerName), // producer_name = 2
    ...(docString ? [bytesField(6, docString)] : []), // doc_string = 6
    bytesField(7, graphBytes), // graph = 7
  ]);
}
