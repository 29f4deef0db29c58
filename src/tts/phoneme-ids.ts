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
    return this.encodeWithSources(phonemes).ids;
  }

  /**
   * The ids, and for each id the index of the phoneme it came from (-1 for the start, end and pad symbols), so a
   * duration per id can be traced back to the phonemes (word timings).
   */
  encodeWithSources(phonemes: readonly number[]): { ids: number[]; sources: number[] } {
    const pad = this.idMap.get(PAD) as readonly number[];
    const ids: number[] = [...(this.idMap.get(BOS) as readonly number[]), ...pad];
    const sources: number[] = ids.map(() => -1);
    phonemes.forEach((phoneme, index) => {
      for (const mapped of this.phonemeMap.get(phoneme) ?? [phoneme]) {
        const known = this.idMap.get(mapped);
        if (known === undefined) {
          this.missing.set(mapped, (this.missing.get(mapped) ?? 0) + 1);
          continue;
        }
        ids.push(...known, ...pad);
        for (let i = 0; i < known.length; i++) sources.push(index);
        for (let i = 0; i < pad.length; i++) sources.push(-1);
      }
    });
    const end = this.idMap.get(EOS) as readonly number[];
    ids.push(...end);
    for (let i = 0; i < end.length; i++) sources.push(-1);
    return { ids, sources };
  }

  /** Whether `ids` holds no phoneme, only `^ _ $` (espeak gives such sentences for lone punctuation). */
  isEmpty(ids: readonly number[]): boolean {
    const frame = [BOS, PAD, EOS].reduce((sum, symbol) => sum + (this.idMap.get(symbol)?.length ?? 0), 0);
    return ids.length <= frame;
  }
}
