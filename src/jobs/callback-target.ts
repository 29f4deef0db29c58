// Where a job's callback may go. A callback URL comes from a client, and the server makes the request: without a
// check any key holder could aim it at the server's loopback, its private network or a cloud metadata service. The
// URL must be https (unless allowed), its host is resolved once and refused when any address is in a refused class
// (src/util/ip-address.ts), and the connection then goes to the address that was checked, never through a second
// lookup, so a name that resolves to a public address for the check and to 127.0.0.1 a moment later gains nothing.
// The operator's `callbackHosts` lets chosen hosts through (callbacks inside a private network on purpose).
import { ADDRCONFIG } from 'node:dns';
import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { CallbackUrlRefusedError, InvalidOptionTypeError, InvalidOptionValueError } from '../errors.js';
import {
  type AddressRange,
  addressInRange,
  parseAddressRange,
  type RefusedAddressClass,
  refusedAddressClass,
} from '../util/ip-address.js';

/** One resolved address, as `dns.promises.lookup(host, { all: true })` gives them. */
export interface ResolvedAddress {
  address: string;
  family: number;
}

/** Resolves a host name to its addresses (default: the system resolver, `dns.promises.lookup` with `all`). */
export type CallbackLookup = (hostname: string) => Promise<readonly ResolvedAddress[]>;

/** A `callbackHosts` entry, parsed: a host name, every subdomain of one (`*.example.com`), or an address range. */
export type CallbackHostRule =
  | { kind: 'name'; name: string }
  | { kind: 'suffix'; suffix: string }
  | { kind: 'range'; range: AddressRange };

/** What decides where callbacks may go. */
export interface CallbackPolicy {
  /** Plain http:// callbacks to any host (default false: https only, except for hosts on `hosts`). */
  allowHttp: boolean;
  /** `callbackHosts`, parsed. */
  hosts: readonly CallbackHostRule[];
  lookup: CallbackLookup;
  /** Longest wait for the lookup, in ms. */
  timeoutMs: number;
}

/** A callback URL, checked: where to connect (the checked address) and what to ask for there. */
export interface CallbackTarget {
  url: URL;
  /** The host without IPv6 brackets, for the Host header and TLS's server name. */
  hostname: string;
  /** Every address of the host, each checked: the connection may use any (Node tries them in turn). */
  addresses: readonly { address: string; family: 4 | 6 }[];
}

export const systemLookup: CallbackLookup = (hostname) =>
  dnsLookup(hostname, { all: true, verbatim: true, hints: ADDRCONFIG });

const HOST_NAME = /^(?=.{1,253}$)([a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)(\.[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)*$/;

function normalName(name: string): string {
  return name.toLowerCase().replace(/\.$/, '');
}

/** Parses `callbackHosts`: names, `*.` wildcards, addresses and CIDR ranges; a bad entry names its index. */
export function parseCallbackHosts(param: string, value: unknown): CallbackHostRule[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw new InvalidOptionTypeError(param, 'an array of host names or address ranges', value);
  if (value.length > 1000) throw new InvalidOptionValueError(param, 'at most 1000 entries', `${value.length} entries`);
  return value.map((entry, i): CallbackHostRule => {
    const at = `${param}[${i}]`;
    if (typeof entry !== 'string') throw new InvalidOptionTypeError(at, 'a string', entry);
    const text = entry.trim();
    const range = parseAddressRange(text);
    if (range) return { kind: 'range', range };
    const name = normalName(text);
    if (name.startsWith('*.') && HOST_NAME.test(name.slice(2))) return { kind: 'suffix', suffix: name.slice(1) };
    if (HOST_NAME.test(name) && !/^[\d.]+$/.test(name)) return { kind: 'name', name };
    throw new InvalidOptionValueError(
      at,
      'a host name (hooks.internal), a wildcard (*.internal.example), an address (10.0.0.7) or a range (10.0.0.0/8)',
      entry,
    );
  });
}

function nameListed(hostname: string, rules: readonly CallbackHostRule[]): boolean {
  const name = normalName(hostname);
  return rules.some(
    (rule) => (rule.kind === 'name' && rule.name === name) || (rule.kind === 'suffix' && name.endsWith(rule.suffix)),
  );
}

function addressListed(address: string, rules: readonly CallbackHostRule[]): boolean {
  return rules.some((rule) => rule.kind === 'range' && addressInRange(address, rule.range));
}

/** A callback URL's syntax: http or https, with a host, at most 2048 characters (no lookup). */
export function parseCallbackUrl(param: string, value: string): URL {
  let url: URL | undefined;
  try {
    url = value.length <= 2048 ? new URL(value) : undefined;
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:') || url.hostname === '') {
    throw new CallbackUrlRefusedError(param, 'an http:// or https:// URL of at most 2048 characters', value);
  }
  if (url.username !== '' || url.password !== '') {
    throw new CallbackUrlRefusedError(param, 'a URL without credentials (user:password@)', redactCredentials(value));
  }
  return url;
}

/** The URL with any `user:password@` replaced, for messages: a refused URL is echoed, its secrets are not. */
export function redactCredentials(value: string): string {
  return value.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/?#@]*@/i, '$1***@');
}

/**
 * Lookups running at once. The system resolver runs on libuv's pool of 4 threads, which file reads share, and a lookup
 * that times out here still holds its thread until the resolver gives up: hostile names (a zone whose server never
 * answers) may take at most these, and wait their turn within the same time limit.
 */
const MAX_LOOKUPS = 2;
let lookupsRunning = 0;
const lookupTurns: (() => void)[] = [];

async function resolveWithin(policy: CallbackPolicy, hostname: string): Promise<readonly ResolvedAddress[]> {
  let timer: NodeJS.Timeout | undefined;
  let waiting: (() => void) | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer in ${policy.timeoutMs} ms`)), policy.timeoutMs);
  });
  const lookup = async () => {
    if (lookupsRunning >= MAX_LOOKUPS) {
      await new Promise<void>((resolve) => {
        waiting = resolve;
        lookupTurns.push(resolve);
      });
    }
    lookupsRunning++;
    const answer = policy.lookup(hostname);
    // The thread is given back when the resolver answers, not when this caller stops waiting.
    void answer
      .then(
        () => undefined,
        () => undefined,
      )
      .finally(() => {
        lookupsRunning--;
        lookupTurns.shift()?.();
      });
    return answer;
  };
  try {
    return await Promise.race([lookup(), timeout]);
  } finally {
    clearTimeout(timer);
    // Timed out while waiting its turn: it takes none.
    const at = waiting ? lookupTurns.indexOf(waiting) : -1;
    if (at >= 0) lookupTurns.splice(at, 1);
  }
}

/**
 * Checks `value` against the policy and resolves its host once: the address to connect to, or a
 * {@link CallbackUrlRefusedError} saying why not (http, a refused address class, a name that does not resolve).
 */
export async function resolveCallbackTarget(
  param: string,
  value: string,
  policy: CallbackPolicy,
): Promise<CallbackTarget> {
  const url = parseCallbackUrl(param, value);
  const hostname = url.hostname.replace(/^\[(.*)\]$/, '$1');
  const listedName = isIP(hostname) === 0 && nameListed(hostname, policy.hosts);
  const refuse = (expected: string): never => {
    throw new CallbackUrlRefusedError(param, expected, value);
  };
  if (url.protocol === 'http:' && !policy.allowHttp && !listedName && !addressListed(hostname, policy.hosts)) {
    refuse('an https:// URL (plain http only to hosts on callbackHosts, or with callbacks.allowHttp)');
  }
  let addresses: readonly ResolvedAddress[];
  if (isIP(hostname) !== 0) {
    addresses = [{ address: hostname, family: isIP(hostname) }];
  } else {
    try {
      addresses = await resolveWithin(policy, hostname);
    } catch (error) {
      return refuse(`a URL whose host resolves (${hostname}: ${(error as Error).message})`);
    }
    if (addresses.length === 0) refuse(`a URL whose host resolves (${hostname} has no address)`);
  }
  if (!listedName) {
    // Every address, not only the one connected to: a name may list a public and a private address.
    for (const { address } of addresses) {
      const refused: RefusedAddressClass | undefined = refusedAddressClass(address);
      if (refused && !addressListed(address, policy.hosts)) {
        const what = address === hostname ? address : `${hostname} (${address})`;
        refuse(`a URL whose host is a public address, or is on callbackHosts: ${what} is a ${refused} address`);
      }
    }
  }
  return {
    url,
    hostname,
    addresses: addresses.map(({ address, family }) => ({ address, family: family === 6 ? 6 : 4 })),
  };
}
