// The address classes callbacks may never reach, checked on the addresses themselves: nothing here connects anywhere,
// so the private, link-local and metadata ranges are covered without aiming at an address off this machine.
import { describe, expect, it } from 'vitest';
import { addressBytes, addressInRange, parseAddressRange, refusedAddressClass } from '../../src/util/ip-address.js';

describe('refusedAddressClass', () => {
  it.each([
    // loopback, in IPv4, IPv6 and every IPv6 form that carries 127.x
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['::1', 'loopback'],
    ['0:0:0:0:0:0:0:1', 'loopback'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['64:ff9b::127.0.0.1', 'loopback'],
    ['2002:7f00:1::', 'loopback'],
    // unspecified
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'unspecified'],
    ['::', 'unspecified'],
    ['::ffff:0.0.0.0', 'unspecified'],
    // private networks, carrier-grade NAT (Alibaba Cloud's metadata at 100.100.100.200)
    ['10.0.0.1', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['100.64.0.1', 'private'],
    ['100.100.100.200', 'private'],
    ['::ffff:10.1.2.3', 'private'],
    ['::ffff:192.168.0.1', 'private'],
    ['fec0::1', 'private'],
    ['64:ff9b:1::a', 'private'],
    // link-local: the cloud metadata service (AWS, GCP, Azure) and IPv6's fe80::/10
    ['169.254.169.254', 'link-local'],
    ['::ffff:169.254.169.254', 'link-local'],
    ['::ffff:a9fe:a9fe', 'link-local'],
    ['fe80::1', 'link-local'],
    ['febf::1', 'link-local'],
    // unique-local (AWS's IPv6 metadata at fd00:ec2::254)
    ['fd00:ec2::254', 'unique-local'],
    ['fc00::1', 'unique-local'],
    // multicast
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['ff02::1', 'multicast'],
    ['::ffff:224.0.0.251', 'multicast'],
    // reserved, documentation, benchmarking, broadcast, IPv4-compatible, Teredo
    ['255.255.255.255', 'reserved'],
    ['240.0.0.1', 'reserved'],
    ['192.0.0.170', 'reserved'],
    ['192.0.2.1', 'reserved'],
    ['198.18.0.1', 'reserved'],
    ['198.51.100.7', 'reserved'],
    ['203.0.113.9', 'reserved'],
    ['2001:db8::1', 'reserved'],
    ['2001:0:4136:e378::1', 'reserved'],
    ['100::1', 'reserved'],
    ['::8.8.8.8', 'reserved'],
    ['::2', 'unspecified'],
    ['::0.0.0.7', 'unspecified'],
    ['::ffff:0:127.0.0.1', 'loopback'],
    ['::ffff:0:10.0.0.1', 'private'],
    ['not an address', 'reserved'],
  ])('%s is %s', (address, expected) => {
    expect(refusedAddressClass(address)).toBe(expected);
  });

  it.each([
    '8.8.8.8',
    '1.1.1.1',
    '93.184.215.14',
    '172.32.0.1',
    '172.15.255.255',
    '100.128.0.1',
    '169.253.0.1',
    '192.169.0.1',
    '2606:4700:4700::1111',
    '2a00:1450:4001::200e',
    '::ffff:8.8.8.8',
    '64:ff9b::8.8.8.8',
    '2002:808:808::1',
  ])('%s is public', (address) => {
    expect(refusedAddressClass(address)).toBeUndefined();
  });
});

describe('addressBytes and ranges', () => {
  it('reads every IPv6 spelling to the same bytes', () => {
    const loopback = Array.from(addressBytes('::1') as Uint8Array);
    expect(Array.from(addressBytes('0:0:0:0:0:0:0:1') as Uint8Array)).toEqual(loopback);
    expect(Array.from(addressBytes('[::1]') as Uint8Array)).toEqual(loopback);
    expect(Array.from(addressBytes('::ffff:1.2.3.4') as Uint8Array)).toEqual(
      Array.from(addressBytes('::ffff:102:304') as Uint8Array),
    );
    expect(addressBytes('1.2.3')).toBeUndefined();
    expect(addressBytes('example.com')).toBeUndefined();
  });

  it('matches ranges, IPv4-mapped addresses against IPv4 ranges too', () => {
    const tenSlash8 = parseAddressRange('10.0.0.0/8');
    expect(tenSlash8).toBeDefined();
    expect(addressInRange('10.200.3.4', tenSlash8 as never)).toBe(true);
    expect(addressInRange('::ffff:10.200.3.4', tenSlash8 as never)).toBe(true);
    expect(addressInRange('11.0.0.1', tenSlash8 as never)).toBe(false);
    const one = parseAddressRange('127.0.0.1');
    expect(addressInRange('127.0.0.1', one as never)).toBe(true);
    expect(addressInRange('127.0.0.2', one as never)).toBe(false);
    const ula = parseAddressRange('fd00::/8');
    expect(addressInRange('fd12::1', ula as never)).toBe(true);
    expect(addressInRange('fe80::1', ula as never)).toBe(false);
    expect(addressInRange('10.0.0.1', ula as never)).toBe(false);
    expect(parseAddressRange('10.0.0.0/33')).toBeUndefined();
    expect(parseAddressRange('10.0.0.0/8/1')).toBeUndefined();
    expect(parseAddressRange('::/129')).toBeUndefined();
    expect(parseAddressRange('hooks.internal')).toBeUndefined();
  });
});
