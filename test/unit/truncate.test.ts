// Quoted values in error messages are cut without splitting a character.
import { describe, expect, it } from 'vitest';
import { InvalidOptionValueError } from '../../src/index.js';
import { truncateText } from '../../src/util/truncate.js';

describe('truncateText', () => {
  it('keeps short text, cuts long text to max units with ..., never inside a surrogate pair', () => {
    expect(truncateText('hello', 5)).toBe('hello');
    expect(truncateText('abcdefgh', 6)).toBe('abc...');
    // '😀' is two UTF-16 units: a cut after its first unit drops it whole.
    expect(truncateText('ab😀cdefg', 6)).toBe('ab...');
    expect(truncateText('abc😀defgh', 8)).toBe('abc😀...');
  });

  it('error messages quoting a long value stay well-formed UTF-16 whatever the cut', () => {
    for (let prefix = 70; prefix < 80; prefix++) {
      const value = `${'x'.repeat(prefix)}${'😀'.repeat(20)}`;
      const { message } = new InvalidOptionValueError('input', 'shorter', value);
      expect(message.isWellFormed(), `prefix ${prefix}`).toBe(true);
    }
  });
});
