// Every input with which scripts/fuzz.sh once broke espeak-ng's memory safety (native/fuzz/regressions/phonemize/,
// each fixed in scripts/native-deps.mjs's ESPEAK_FIXES) goes through the addon's phonemizer as the fuzzer sent it:
// the text up to its last byte, which picks the voice. Here it must phonemize or fail with a coded error; under the
// ASan tier (scripts/test-asan.sh) an overflow fails the file.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isNativeError, native, nativeAssets } from '../../src/native.js';
import { repoRoot } from '../helpers/paths.js';

// native/fuzz/phonemize_fuzzer.cc's list, in its order.
const FUZZER_VOICES = ['en-us', 'de', 'fr', 'es', 'ru', 'cmn', 'ar', 'hi', 'vi', 'pt-br', 'ja', 'el'];
const folder = join(repoRoot, 'native', 'fuzz', 'regressions', 'phonemize');
const inputs = readdirSync(folder).filter((name) => name.startsWith('crash-'));

describe('phonemizer: the fuzzer findings', () => {
  it('has findings to replay', () => {
    expect(inputs.length).toBeGreaterThan(0);
  });

  it.each(inputs)('%s phonemizes or fails with a coded error', async (name) => {
    const bytes = readFileSync(join(folder, name));
    const voice = FUZZER_VOICES[(bytes.at(-1) ?? 0) % FUZZER_VOICES.length] as string;
    // As the harness: malformed UTF-8 becomes U+FFFD (TextDecoder does the same), and the text ends at a NUL.
    const text = new TextDecoder().decode(bytes.subarray(0, -1)).split('\0')[0] as string;
    const job = native().phonemize(nativeAssets().espeakData, voice, [text, text]);
    const outcome = await job.promise.then(
      (clauses) => clauses,
      (error: unknown) => error,
    );
    if (Array.isArray(outcome)) {
      expect(outcome).toHaveLength(2);
      // Phonemized twice in one call: espeak-ng's state from the first does not change the second.
      expect(outcome[1]).toEqual(outcome[0]);
    } else {
      expect(isNativeError(outcome)).toBe(true);
    }
  });
});
