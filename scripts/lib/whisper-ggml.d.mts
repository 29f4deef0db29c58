// Types of whisper-ggml.mjs, for the TypeScript tests that read ggml files with it.

export declare const GGML_MAGIC: number;
export declare const GGML_F32: 0;
export declare const GGML_F16: 1;
export declare const HPARAM_NAMES: readonly [
  'n_vocab',
  'n_audio_ctx',
  'n_audio_state',
  'n_audio_head',
  'n_audio_layer',
  'n_text_ctx',
  'n_text_state',
  'n_text_head',
  'n_text_layer',
  'n_mels',
  'ftype',
];
export type HparamName = (typeof HPARAM_NAMES)[number];
export type Hparams = Record<HparamName, number>;
export declare const HEADER_BYTES: number;

export declare class WhisperGgmlError extends Error {
  constructor(path: string, message: string);
  readonly path: string;
}

export declare function elementCount(ne: readonly number[]): number;
export declare function typeSize(type: number): number;
export declare function ggmlHeader(hparams: Hparams): Buffer;
export declare function tensorHeader(name: string, ne: readonly number[], type: number): Buffer;
export declare function tensorRecordBytes(name: string, ne: readonly number[], type: number): number;

export interface WhisperGgmlHeader {
  hparams: Hparams;
  melRows: number;
  melColumns: number;
  /** n_mel, n_fft and the filters, as stored. */
  mel: Buffer;
  tokens: Buffer[];
  /** The token count and the tokens, as stored. */
  vocabulary: Buffer;
  /** Offset of the first tensor record. */
  tensorsStart: number;
}
export declare function readWhisperGgmlHeader(file: Buffer, path: string): WhisperGgmlHeader;

export declare function halfBitsOfFloatBits(bits: number): number;
export declare function float32ToFloat16Bits(value: number): number;
export declare function halfToFloatTable(): Float32Array;
export declare function float16BitsToFloat32(bits: number): number;
