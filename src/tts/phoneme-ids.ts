// Phonemes -> model input ids, with Piper's conventions (piper-phonemize `phonemes_to_ids`): the sentence start
// symbol `^`, a pad `_` after it and after every phoneme, then the end symbol `$`. Phonemes the voice does not
// know are dropped and counted, as Piper does.

/** The id tables of one voice, in the form the worker receives (plain arrays survive structured clone). */
export interface PhonemeTables {
  /** [code point, ids] pairs from `phoneme_id_map`. */
  readonly idMap: ReadonlyArray<readonly [number, readonly number[]]>;
  /** [code point, replacement code points] pairs from `phoneme_map`. */
  readonly phonemeMap: ReadonlyArray<readonly [number, readonly number[]]>;
}

const PAD = '_'.codePointAt(0) as number;
const BOS = '^'.codePointAt(0) as number;
const EOS = '$'.codePointAt(0) as number;

/** Converts one sentence of phoneme code points. `missing` counts the code points the voice has no id for. */
export class PhonemeIdEncoder {
  private readonly idMap: Map<number, readonly number[]>;
  private readonly phonemeMap: Map<number, readonly number[]>;
  readonly missing = new Map<number, number>();

  constructor(tables: PhonemeTables) {
    this.idMap = new Map(tables.idMap);
    this.phonemeMap = new Map(tables.phonemeMap);
  }

  encode(phonemes: readonly number[]): number[] {
    const pad = this.idMap.get(PAD) as readonly number[];
    const ids: number[] = [...(this.idMap.get(BOS) as readonly number[]), ...pad];
    for (const phoneme of phonemes) {
      for (const mapped of this.phonemeMap.get(phoneme) ?? [phoneme]) {
        const known = this.idMap.get(mapped);
        if (known === undefined) {
          this.missing.set(mapped, (this.missing.get(mapped) ?? 0) + 1);
          continue;
        }
        ids.push(...known, ...pad);
      }
    }
    ids.push(...(this.idMap.get(EOS) as readonly number[]));
    return ids;
  }

  /** Whether `ids` holds no phoneme, only `^ _ $` (espeak gives such sentences for lone punctuation). */
  isEmpty(ids: readonly number[]): boolean {
    const frame = [BOS, PAD, EOS].reduce((sum, symbol) => sum + (this.idMap.get(symbol)?.length ?? 0), 0);
    return ids.length <= frame;
  }
}
