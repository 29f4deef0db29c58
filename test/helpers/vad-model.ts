// Silero VAD model files (whisper.cpp's ggml layout) taken apart and put together again, for the tests that damage
// them (test/native/native-hardening.test.ts) and the soak tier's leak check.

export interface TensorRecord {
  name: string;
  type: number;
  ne: number[];
  data: Buffer;
}

export function parseVadModel(file: Buffer): { header: Buffer; records: TensorRecord[] } {
  let p = 8 + file.readInt32LE(4) + (3 + 19) * 4;
  const header = file.subarray(0, p);
  const records: TensorRecord[] = [];
  while (p < file.length) {
    const dims = file.readInt32LE(p);
    const nameLength = file.readInt32LE(p + 4);
    const type = file.readInt32LE(p + 8);
    p += 12;
    const ne: number[] = [];
    for (let d = 0; d < dims; d++, p += 4) ne.push(file.readInt32LE(p));
    const name = file.subarray(p, p + nameLength).toString('latin1');
    p += nameLength;
    const bytes = ne.reduce((a, b) => a * b, 1) * (type === 0 ? 4 : 2);
    records.push({ name, type, ne, data: file.subarray(p, p + bytes) });
    p += bytes;
  }
  return { header, records };
}

export function writeVadModel(header: Buffer, records: TensorRecord[]): Buffer {
  const parts: Buffer[] = [header];
  for (const r of records) {
    const head = Buffer.alloc(12 + 4 * r.ne.length);
    head.writeInt32LE(r.ne.length, 0);
    head.writeInt32LE(Buffer.byteLength(r.name, 'latin1'), 4);
    head.writeInt32LE(r.type, 8);
    for (const [i, n] of r.ne.entries()) head.writeInt32LE(n, 12 + 4 * i);
    parts.push(head, Buffer.from(r.name, 'latin1'), r.data);
  }
  return Buffer.concat(parts);
}
