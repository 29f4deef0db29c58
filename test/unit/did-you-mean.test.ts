// "Did you mean": the names containing the one given, else those a couple of edits away; nothing for far misses.
import { describe, expect, it } from 'vitest';
import { InvalidOptionValueError } from '../../src/errors.js';
import { closestNames, didYouMean } from '../../src/util/did-you-mean.js';
import { rejectUnknownKeys } from '../../src/util/validate.js';

describe('closestNames', () => {
  it('finds the names that contain it, shortest first, case aside', () => {
    expect(closestNames('joe', ['en_US-lessac', 'en_US-joe-medium', 'en_US-joe'])).toEqual([
      'en_US-joe',
      'en_US-joe-medium',
    ]);
    expect(closestNames('LESSAC', ['en_US-lessac'])).toEqual(['en_US-lessac']);
  });

  it('finds near misses by edits (a swap counts once) and none for a different word', () => {
    const options = ['language', 'timestamps', 'beamSize', 'prompt'];
    expect(closestNames('langauge', options)).toEqual(['language']);
    expect(closestNames('beamsize', options)).toEqual(['beamSize']);
    expect(closestNames('timestamp', options)).toEqual(['timestamps']);
    expect(closestNames('speed', options)).toEqual([]);
    expect(closestNames('', options)).toEqual([]);
    // Two letters never match by containment: every name holds an 'a'.
    expect(closestNames('ab', options)).toEqual([]);
  });

  it('says nothing when nothing is close, and names up to three', () => {
    expect(didYouMean('zzz', ['abc'])).toBe('');
    expect(didYouMean('fix', ['fix-a', 'fix-b', 'fix-c', 'fix-d'])).toBe('did you mean "fix-a" or "fix-b" or "fix-c"?');
  });
});

describe('rejectUnknownKeys', () => {
  it('suggests the option meant', () => {
    const call = () => rejectUnknownKeys('options', { beamsize: 2 }, ['beamSize', 'language']);
    expect(call).toThrow(InvalidOptionValueError);
    expect(call).toThrow(/options\.beamsize must be one of the known options .*; did you mean "beamSize"\?$/u);
    expect(() => rejectUnknownKeys('options', { speed: 1 }, ['beamSize'])).toThrow(/received "speed"$/u);
  });
});
