// IP addresses as bytes, and the address classes a server must never be talked into calling on a client's behalf
// (server-side request forgery): its own loopback, the private networks around it, link-local (where cloud metadata
// services answer, 169.254.169.254), unique-local, multicast, unspecified and reserved ranges, also when an IPv6
// address carries one of those IPv4 addresses inside it (IPv4-mapped ::ffff:127.0.0.1, NAT64, 6to4).
import { isIP } from 'node:net';

/** Why an address is refused. */
export type RefusedAddressClass =
  | 'loopback'
  | 'private'
  | 'link-local'
  | 'unique-local'
  | 'multicast'
  | 'unspecified'
  | 'reserved';

/** An address's 4 (IPv4) or 16 (IPv6) bytes; undefined when `text` is not an IP address. */
export function addressBytes(text: string): Uint8Array | undefined {
  const address = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
  const version = isIP(address);
  if (version === 4) return Uint8Array.from(address.split('.', 4), Number);
  if (version !== 6) return undefined;
  let rest = address.split('%', 1)[0] as string;
  // A dotted IPv4 tail (::ffff:1.2.3.4) becomes two hexadecimal groups.
  const lastColon = rest.lastIndexOf(':');
  if (rest.includes('.', lastColon)) {
    const [a, b, c, d] = rest
      .slice(lastColon + 1)
      .split('.')
      .map(Number) as [number, number, number, number];
    rest = `${rest.slice(0, lastColon + 1)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', tail] = rest.split('::');
  const headGroups = head === '' ? [] : head.split(':');
  const tailGroups = tail === undefined || tail === '' ? [] : tail.split(':');
  const groups = [...headGroups, ...Array(8 - headGroups.length - tailGroups.length).fill('0'), ...tailGroups];
  const bytes = new Uint8Array(16);
  groups.forEach((group, i) => {
    const value = Number.parseInt(group, 16);
    bytes[2 * i] = value >> 8;
    bytes[2 * i + 1] = value & 0xff;
  });
  return bytes;
}

/** The IPv4 address an IPv6 address stands for (IPv4-mapped, -compatible, NAT64's 64:ff9b::/96, 6to4), if any. */
export function embeddedIpv4(bytes: Uint8Array): Uint8Array | undefined {
  if (bytes.length !== 16) return undefined;
  const zeros = (from: number, to: number) => bytes.subarray(from, to).every((byte) => byte === 0);
  // ::ffff:a.b.c.d (mapped), ::a.b.c.d (compatible, deprecated) and ::ffff:0:a.b.c.d (SIIT, translated).
  if (zeros(0, 10) && ((bytes[10] === 0xff && bytes[11] === 0xff) || zeros(10, 12))) return bytes.slice(12);
  if (zeros(0, 8) && bytes[8] === 0xff && bytes[9] === 0xff && zeros(10, 12)) return bytes.slice(12);
  if (bytes[0] === 0 && bytes[1] === 0x64 && bytes[2] === 0xff && bytes[3] === 0x9b && zeros(4, 12)) {
    return bytes.slice(12);
  }
  if (bytes[0] === 0x20 && bytes[1] === 0x02) return bytes.slice(2, 6);
  return undefined;
}

function ipv4Class([a = 0, b = 0, c = 0]: Uint8Array): RefusedAddressClass | undefined {
  if (a === 0) return 'unspecified'; // 0.0.0.0/8, "this network": Linux connects 0.0.0.0 to itself
  if (a === 127) return 'loopback';
  if (a === 10 || (a === 172 && (b & 0xf0) === 16) || (a === 192 && b === 168)) return 'private';
  if (a === 100 && (b & 0xc0) === 64) return 'private'; // 100.64.0.0/10, carrier-grade NAT (and Alibaba's metadata)
  if (a === 169 && b === 254) return 'link-local';
  if (a >= 224 && a <= 239) return 'multicast';
  if (a >= 240) return 'reserved'; // 240.0.0.0/4 and the broadcast address
  if (a === 192 && b === 0 && (c === 0 || c === 2)) return 'reserved'; // IETF assignments, documentation
  if (a === 198 && (b & 0xfe) === 18) return 'reserved'; // benchmarking
  if ((a === 198 && b === 51 && c === 100) || (a === 203 && b === 0 && c === 113)) return 'reserved';
  return undefined;
}

function ipv6Class(bytes: Uint8Array): RefusedAddressClass | undefined {
  const [a = 0, b = 0] = bytes;
  if (bytes.every((byte) => byte === 0)) return 'unspecified';
  if (bytes.subarray(0, 15).every((byte) => byte === 0) && bytes[15] === 1) return 'loopback';
  if (a === 0xff) return 'multicast';
  if (a === 0xfe && (b & 0xc0) === 0x80) return 'link-local';
  if (a === 0xfe && (b & 0xc0) === 0xc0) return 'private'; // site-local, deprecated
  if ((a & 0xfe) === 0xfc) return 'unique-local';
  if (a === 0x20 && b === 0x01 && bytes[2] === 0x0d && bytes[3] === 0xb8) return 'reserved'; // documentation
  if (a === 0x20 && b === 0x01 && bytes[2] === 0 && bytes[3] === 0) return 'reserved'; // Teredo: the IPv4 is hidden
  if (a === 0x01 && b === 0 && bytes.subarray(2, 8).every((byte) => byte === 0)) return 'reserved'; // discard-only
  if (a === 0 && b === 0x64 && bytes[2] === 0xff && bytes[3] === 0x9b && bytes[4] === 0 && bytes[5] === 1) {
    return 'private'; // 64:ff9b:1::/48, NAT64 for local use
  }
  return undefined;
}

/**
 * The class that makes `address` unsafe to call, or undefined for a public address. An IPv6 address that carries an
 * IPv4 one is judged by that IPv4 address, and the IPv4-compatible form (::a.b.c.d) is refused whatever it carries.
 */
export function refusedAddressClass(address: string): RefusedAddressClass | undefined {
  const bytes = addressBytes(address);
  if (!bytes) return 'reserved';
  if (bytes.length === 4) return ipv4Class(bytes);
  const own = ipv6Class(bytes);
  if (own) return own;
  const inner = embeddedIpv4(bytes);
  if (!inner) return undefined;
  // The compatible form (::/96, :: and ::1 aside) is not routed: refused whatever it carries.
  const compatible = bytes.subarray(0, 12).every((byte) => byte === 0);
  return compatible ? (ipv4Class(inner) ?? 'reserved') : ipv4Class(inner);
}

/** An address range: `10.0.0.0/8`, `fd00::/8`, or one address (all its bits). */
export interface AddressRange {
  bytes: Uint8Array;
  prefix: number;
}

/** Parses `address` or `address/prefix`; undefined when it is neither. */
export function parseAddressRange(text: string): AddressRange | undefined {
  const [address = '', prefixText, extra] = text.split('/');
  const bytes = addressBytes(address);
  if (!bytes || extra !== undefined) return undefined;
  const bits = bytes.length * 8;
  const prefix = prefixText === undefined ? bits : /^\d{1,3}$/.test(prefixText) ? Number(prefixText) : Number.NaN;
  if (!(prefix <= bits)) return undefined;
  // An IPv4-mapped range (::ffff:10.0.0.0/104) is the IPv4 range it maps, so it matches both spellings.
  const mapped = bytes.length === 16 && bytes.subarray(0, 10).every((byte) => byte === 0) && bytes[10] === 0xff;
  if (mapped && bytes[11] === 0xff && prefix >= 96) return { bytes: bytes.slice(12), prefix: prefix - 96 };
  return { bytes, prefix };
}

/** Whether `address` lies in `range`; an IPv4-mapped IPv6 address also matches IPv4 ranges. */
export function addressInRange(address: string, range: AddressRange): boolean {
  let bytes = addressBytes(address);
  if (bytes && bytes.length === 16 && range.bytes.length === 4) {
    const mapped = bytes.subarray(0, 10).every((byte) => byte === 0) && bytes[10] === 0xff && bytes[11] === 0xff;
    bytes = mapped ? bytes.slice(12) : undefined;
  }
  if (!bytes || bytes.length !== range.bytes.length) return false;
  for (let bit = 0; bit < range.prefix; bit++) {
    const mask = 0x80 >> (bit % 8);
    if (((bytes[bit >> 3] as number) & mask) !== ((range.bytes[bit >> 3] as number) & mask)) return false;
  }
  return true;
}
