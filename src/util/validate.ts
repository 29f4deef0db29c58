// Option checks that name the option and what was received (in the manner of sharp's lib/is).
import { InvalidOptionTypeError, InvalidOptionValueError } from '../errors.js';
import { didYouMean } from './did-you-mean.js';

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

export function objectOption(param: string, value: unknown): Record<string, unknown> {
  if (value === undefined) return {};
  if (!isPlainObject(value)) throw new InvalidOptionTypeError(param, 'an object', value);
  return value;
}

/** The first key of `value` that is not one of `known` (a key set to undefined is not there), if any. */
export function unknownKey(value: Record<string, unknown>, known: readonly string[]): string | undefined {
  return Object.keys(value).find((key) => !known.includes(key) && value[key] !== undefined);
}

/** Rejects keys the caller did not mean (a typo like `timestamp` should not be silently ignored). */
export function rejectUnknownKeys(param: string, value: Record<string, unknown>, known: readonly string[]): void {
  const key = unknownKey(value, known);
  if (key !== undefined) {
    const error = new InvalidOptionValueError(`${param}.${key}`, `one of the known options (${known.join(', ')})`, key);
    const hint = didYouMean(key, known);
    if (hint) error.message += `; ${hint}`;
    throw error;
  }
}

export function enumOption<T extends string>(param: string, value: unknown, allowed: readonly T[]): T | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw new InvalidOptionTypeError(param, `a string (${allowed.join(' | ')})`, value);
  if (!allowed.includes(value as T)) throw new InvalidOptionValueError(param, `one of ${allowed.join(', ')}`, value);
  return value as T;
}

export function booleanOption(param: string, value: unknown): boolean | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'boolean') throw new InvalidOptionTypeError(param, 'a boolean', value);
  return value;
}

/** A number from `min` to `max`; without them, any number (its range is checked elsewhere). */
export function numberOption(
  param: string,
  value: unknown,
  min = Number.NEGATIVE_INFINITY,
  max = Number.POSITIVE_INFINITY,
): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || Number.isNaN(value)) throw new InvalidOptionTypeError(param, 'a number', value);
  if (value < min || value > max) throw new InvalidOptionValueError(param, `between ${min} and ${max}`, value);
  return value;
}

export function integerOption(param: string, value: unknown, min: number, max: number): number | undefined {
  const n = numberOption(param, value, min, max);
  if (n !== undefined && !Number.isInteger(n)) throw new InvalidOptionValueError(param, 'an integer', n);
  return n;
}

export function stringOption(param: string, value: unknown, maxLength = Number.POSITIVE_INFINITY): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw new InvalidOptionTypeError(param, 'a string', value);
  if (value.length > maxLength) {
    throw new InvalidOptionValueError(param, `at most ${maxLength} characters`, `${value.length} characters`);
  }
  return value;
}

export function functionOption<F extends (...args: never[]) => unknown>(param: string, value: unknown): F | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'function') throw new InvalidOptionTypeError(param, 'a function', value);
  return value as F;
}

export function signalOption(param: string, value: unknown): AbortSignal | undefined {
  if (value === undefined) return undefined;
  if (!(value instanceof AbortSignal)) throw new InvalidOptionTypeError(param, 'an AbortSignal', value);
  return value;
}
