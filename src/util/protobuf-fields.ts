// The protobuf wire format, as far as reading a message's fields and appending length-delimited ones needs: enough
// to edit an ONNX model's graph (src/tts/duration-output.ts) without a protobuf library and without decoding the
// weights, which are skipped by their length.

/** Wire types (the low 3 bits of a field's key). */
export const WireType = { varint: 0, fixed64: 1, length: 2, fixed32: 5 } as const;

/** One field of a message: its number and wire type, and where its value lies in the buffer. */
export interface ProtobufField {
  field: number;
  wireType: number;
  /** Where the field's key starts (for cutting the field out or replacing it). */
  keyStart: number;
  /** Where the value starts: for a length-delimited field, after its length prefix. */
  valueStart: number;
  /** Where the value (and the field) ends. */
  end: number;
  /** A varint field's value (exact up to 2^53); 0 for the others. */
  varint: number;
}

export class ProtobufError extends Error {}

/** Reads a varint at `offset`; returns its value and the offset after it. */
function readVarint(bytes: Uint8Array, offset: number, limit: number): [number, number] {
  let value = 0;
  let scale = 1;
  for (let i = offset; i < limit && i < offset + 10; i++) {
    const byte = bytes[i] as number;
    value += (byte & 0x7f) * scale;
    if (byte < 0x80) return [value, i + 1];
    scale *= 128;
  }
  throw new ProtobufError(`truncated varint at byte ${offset}`);
}

/** The fields of the message in `bytes[start, end)`, in order; throws ProtobufError when it is not well formed. */
export function* fieldsOf(bytes: Uint8Array, start = 0, end = bytes.length): Generator<ProtobufField> {
  let offset = start;
  while (offset < end) {
    const keyStart = offset;
    const [key, afterKey] = readVarint(bytes, offset, end);
    const field = Math.floor(key / 8);
    const wireType = key % 8;
    if (field === 0) throw new ProtobufError(`field number 0 at byte ${keyStart}`);
    let valueStart = afterKey;
    let valueEnd: number;
    let varint = 0;
    switch (wireType) {
      case WireType.varint:
        [varint, valueEnd] = readVarint(bytes, afterKey, end);
        break;
      case WireType.fixed64:
        valueEnd = afterKey + 8;
        break;
      case WireType.fixed32:
        valueEnd = afterKey + 4;
        break;
      case WireType.length: {
        const [length, afterLength] = readVarint(bytes, afterKey, end);
        valueStart = afterLength;
        valueEnd = afterLength + length;
        break;
      }
      default:
        throw new ProtobufError(`unsupported wire type ${wireType} at byte ${keyStart}`);
    }
    if (valueEnd > end) throw new ProtobufError(`field ${field} at byte ${keyStart} runs past its message`);
    yield { field, wireType, keyStart, valueStart, end: valueEnd, varint };
    offset = valueEnd;
  }
}

/** A length-delimited field's value as UTF-8 text. */
export function stringOf(bytes: Uint8Array, field: ProtobufField): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset + field.valueStart, field.end - field.valueStart).toString('utf8');
}

/** Encodes a non-negative integer as a varint. */
export function encodeVarint(value: number): Buffer {
  const out: number[] = [];
  let rest = value;
  while (rest >= 0x80) {
    out.push((rest % 128) | 0x80);
    rest = Math.floor(rest / 128);
  }
  out.push(rest);
  return Buffer.from(out);
}

/** A varint field. */
export function varintField(field: number, value: number): Buffer {
  return Buffer.concat([encodeVarint(field * 8 + WireType.varint), encodeVarint(value)]);
}

/** A length-delimited field holding `value` (a string as UTF-8, or an encoded message). */
export function lengthField(field: number, value: string | Uint8Array): Buffer {
  const bytes = typeof value === 'string' ? Buffer.from(value, 'utf8') : value;
  return Buffer.concat([encodeVarint(field * 8 + WireType.length), encodeVarint(bytes.length), bytes]);
}

/** The values of a packed repeated varint field (a run of varints with no keys). */
export function* packedVarints(bytes: Uint8Array, field: ProtobufField): Generator<number> {
  let offset = field.valueStart;
  while (offset < field.end) {
    const [value, next] = readVarint(bytes, offset, field.end);
    yield value;
    offset = next;
  }
}

/** A length-delimited field's key and length, for a value written after it in parts. */
export function lengthHeader(field: number, length: number): Buffer {
  return Buffer.concat([encodeVarint(field * 8 + WireType.length), encodeVarint(length)]);
}
