// What a built shared object is and what it needs, read from its bytes (and, for ELF's dynamic section and symbol
// versions, through binutils' readelf): its binary format and machine (ELF e_machine, Mach-O cputype, PE Machine),
// the libraries it loads, which of those a bare system lacks, and the highest GLIBC_ (glibc) and GLIBCXX_ (libstdc++)
// symbol versions it needs, with the ceilings a release holds Linux binaries to. It only answers:
// scripts/release/platform-packages.mjs decides from these answers what it refuses to pack.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';

/** The highest GLIBC_ symbol version a Linux package's addon and ONNX Runtime library may need. */
export const GLIBC_CEILING = '2.28';

/**
 * The highest GLIBCXX_ symbol version (libstdc++) they may need: gcc 8's, the libstdc++ of the systems GLIBC_CEILING
 * stands for (Debian 10, RHEL 8). A release addon built with zig's clang links libc++ in and needs none; one built
 * with gcc on Debian 12 needs GLIBCXX_3.4.29; the pinned ONNX Runtime library needs GLIBCXX_3.4.22.
 */
export const GLIBCXX_CEILING = '3.4.25';

const FORMAT_NAMES = { elf: 'ELF', macho: 'Mach-O', pe: 'PE' };
const MACHINE_FIELDS = { elf: 'machine', macho: 'cputype', pe: 'machine' };
const MACHINE_NAMES = {
  elf: { 3: 'i386', 40: 'arm', 62: 'x86-64', 183: 'aarch64' },
  macho: { 7: 'i386', 12: 'arm', 16777223: 'x86_64', 16777228: 'arm64' },
  pe: { 332: 'i386', 452: 'arm', 34404: 'x64', 43620: 'arm64' },
};

/** "ELF machine 0x3e, x86-64": a binary's format and machine, for messages. */
export function describeMachine({ format, machine }) {
  const name = MACHINE_NAMES[format]?.[machine];
  return `${FORMAT_NAMES[format]} ${MACHINE_FIELDS[format]} 0x${machine.toString(16)}${name ? `, ${name}` : ''}`;
}

/**
 * The binary format and machine of a shared object, from its header: { format: 'elf' | 'macho' | 'pe', machine }, or
 * a reason it is none this script packs (not 64-bit little-endian, a universal Mach-O file, not a binary at all).
 */
export function binaryMachine(bytes) {
  if (bytes.length >= 4 && bytes.readUInt32BE(0) === 0x7f454c46) {
    if (bytes.length < 20) return 'a truncated ELF file';
    if (bytes[4] !== 2 || bytes[5] !== 1) return 'not a 64-bit little-endian ELF file';
    return { format: 'elf', machine: bytes.readUInt16LE(18) };
  }
  if (bytes.length >= 4) {
    const magic = bytes.readUInt32LE(0);
    if (magic === 0xfeedfacf) {
      if (bytes.length < 32) return 'a truncated Mach-O file';
      return { format: 'macho', machine: bytes.readUInt32LE(4) };
    }
    if (magic === 0xfeedface) return 'a 32-bit Mach-O file';
    if (magic === 0xcffaedfe || magic === 0xcefaedfe) return 'a big-endian Mach-O file';
    // A universal file's header is big-endian: the count, then one entry per architecture (20 bytes, 32 for fat64).
    const fat = bytes.readUInt32BE(0);
    if (fat === 0xcafebabe || fat === 0xcafebabf) {
      const stride = fat === 0xcafebabe ? 20 : 32;
      const count = bytes.length >= 8 ? bytes.readUInt32BE(4) : 0;
      const types = [];
      for (let i = 0; i < Math.min(count, 8) && 8 + stride * (i + 1) <= bytes.length; i++) {
        types.push(`0x${bytes.readUInt32BE(8 + stride * i).toString(16)}`);
      }
      return `a universal (fat) Mach-O file (cputypes ${types.join(', ') || 'unknown'}): a package holds one architecture; build one per target, or take one out with lipo -thin`;
    }
    if (bytes.readUInt16LE(0) === 0x5a4d) {
      if (bytes.length < 0x40) return 'a truncated PE file';
      const pe = bytes.readUInt32LE(0x3c);
      if (pe + 6 > bytes.length || bytes.readUInt32BE(pe) !== 0x50450000) return 'an MZ file with no PE header';
      return { format: 'pe', machine: bytes.readUInt16LE(pe + 4) };
    }
  }
  return 'not an ELF, Mach-O or PE file';
}

// Mach-O load commands that name a library the file loads: LC_LOAD_DYLIB, LC_LOAD_WEAK_DYLIB, LC_REEXPORT_DYLIB,
// LC_LAZY_LOAD_DYLIB, LC_LOAD_UPWARD_DYLIB.
const DYLIB_COMMANDS = new Set([0xc, 0x80000018, 0x8000001f, 0x20, 0x80000023]);

/** The libraries a 64-bit Mach-O file loads, as its load commands name them (install names, often full paths). */
export function machoLibraries(bytes) {
  const count = bytes.readUInt32LE(16);
  const names = [];
  let at = 32;
  for (let i = 0; i < count; i++) {
    const size = bytes.readUInt32LE(at + 4);
    if (size < 8 || at + size > bytes.length) throw new Error(`a malformed Mach-O load command at ${at}`);
    if (DYLIB_COMMANDS.has(bytes.readUInt32LE(at))) {
      const from = at + bytes.readUInt32LE(at + 8);
      const end = bytes.indexOf(0, from);
      names.push(bytes.toString('utf8', from, end < 0 || end > at + size ? at + size : end));
    }
    at += size;
  }
  return names;
}

/** The DLLs a PE file imports: its import directory, then its delay-load directory (where node.exe usually is). */
export function peLibraries(bytes) {
  const coff = bytes.readUInt32LE(0x3c) + 4;
  const sections = bytes.readUInt16LE(coff + 2);
  const optional = coff + 20;
  const plus = bytes.readUInt16LE(optional) === 0x20b; // PE32+ (64-bit) or PE32
  const directories = optional + (plus ? 112 : 96);
  const directoryCount = bytes.readUInt32LE(optional + (plus ? 108 : 92));
  const table = optional + bytes.readUInt16LE(coff + 16);
  const offsetOf = (rva) => {
    for (let i = 0; i < sections; i++) {
      const section = table + 40 * i;
      const address = bytes.readUInt32LE(section + 12);
      const size = Math.max(bytes.readUInt32LE(section + 8), bytes.readUInt32LE(section + 16));
      if (rva >= address && rva < address + size) return rva - address + bytes.readUInt32LE(section + 20);
    }
    throw new Error(`a PE address 0x${rva.toString(16)} in no section`);
  };
  const names = [];
  // Directory 1: IMAGE_IMPORT_DESCRIPTOR, 20 bytes, the name's address at 12. Directory 13: the delay-load
  // descriptors, 32 bytes, the name's address at 4. A descriptor with no name ends each table.
  for (const [index, stride, nameAt] of [
    [1, 20, 12],
    [13, 32, 4],
  ]) {
    if (directoryCount <= index || bytes.readUInt32LE(directories + 8 * index) === 0) continue;
    for (let at = offsetOf(bytes.readUInt32LE(directories + 8 * index)); ; at += stride) {
      const name = bytes.readUInt32LE(at + nameAt);
      if (name === 0) break;
      const from = offsetOf(name);
      names.push(bytes.toString('latin1', from, bytes.indexOf(0, from)));
    }
  }
  return names;
}

/** The shared libraries a binary names: ELF's DT_NEEDED (through binutils' readelf), Mach-O's and PE's from the file. */
export function neededLibraries(file, bytes = readFileSync(file)) {
  const found = binaryMachine(bytes);
  if (typeof found === 'string') throw new Error(`${file} is ${found}`);
  if (found.format === 'macho') return machoLibraries(bytes);
  if (found.format === 'pe') return peLibraries(bytes);
  const readelf = spawnSync('readelf', ['-d', file], { encoding: 'utf8' });
  if (readelf.status !== 0) throw new Error(`readelf -d ${file} failed: ${readelf.stderr ?? readelf.error?.message}`);
  return [...readelf.stdout.matchAll(/\(NEEDED\)\s+Shared library: \[([^\]]+)\]/g)].map((match) => match[1]);
}

/**
 * The libraries `file` loads from its own folder, `dir` (a release's bundled OpenBLAS, found by its run path $ORIGIN):
 * its NEEDED entries that are files in `dir`, and theirs in turn (libscipy_openblas.so's libgfortran, libquadmath's),
 * each once, in the order found. ELF only (other formats bundle nothing yet), read with readelf where it can.
 */
export function besideLibraries(file, dir = dirname(file)) {
  const found = [];
  const queue = [file];
  while (queue.length > 0) {
    const next = queue.shift();
    const bytes = readFileSync(next);
    if (binaryMachine(bytes)?.format !== 'elf') continue;
    let needed;
    try {
      needed = neededLibraries(next, bytes);
    } catch (error) {
      // Without readelf nothing could be found, and a package would go out without its libraries: say so.
      if (spawnSync('readelf', ['--version']).error) throw error;
      continue; // a file readelf cannot read (a header-only test fixture): nothing beside it
    }
    for (const name of needed) {
      if (found.includes(name) || !existsSync(join(dir, name))) continue;
      found.push(name);
      queue.push(join(dir, name));
    }
  }
  return found;
}

/** Of the libraries a binary names, those a bare system of its kind lacks. */
export function foreignLibraries(format, names) {
  if (format === 'macho') return names.filter((name) => !/^\/(usr\/lib|System\/Library)\//.test(name));
  if (format === 'pe') {
    return names.filter((name) =>
      /^(av(codec|format|util|device|filter)|sw(resample|scale)|postproc|(lib)?(openblas|mp3lame|opus)|libgfortran|cudart|cublas|vulkan-1)/i.test(
        name,
      ),
    );
  }
  return names.filter((name) => /^lib(av|sw|openblas|scipy_openblas|gfortran|quadmath|cu|vulkan)/.test(basename(name)));
}

/** Compares two dotted versions number by number (2.3 < 2.28 < 2.35; a missing number is 0): negative, 0, positive. */
export function compareVersions(a, b) {
  const [x, y] = [String(a).split('.').map(Number), String(b).split('.').map(Number)];
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    const difference = (x[i] ?? 0) - (y[i] ?? 0);
    if (difference !== 0) return difference;
  }
  return 0;
}

/**
 * What `readelf -V --dyn-syms -W` says an ELF file needs of one versioned library, by its symbol versions' prefix
 * (GLIBC: glibc; GLIBCXX: libstdc++): the highest version of its version needs ('none' when it has none) and the
 * undefined symbols bound to that version. GLIBC_ never matches GLIBCXX_ or the reverse.
 */
export function parseVersionNeeds(readelfText, prefix) {
  const number = String.raw`(\d+(?:\.\d+)+)\b`;
  const versions = [
    ...new Set([...readelfText.matchAll(new RegExp(`Name: ${prefix}_${number}`, 'g'))].map((m) => m[1])),
  ];
  const highest = versions.sort(compareVersions).at(-1) ?? 'none';
  const symbols = new Set();
  for (const match of readelfText.matchAll(new RegExp(String.raw`\sUND\s+([^@\s]+)@@?${prefix}_${number}`, 'g'))) {
    if (match[2] === highest) symbols.add(match[1]);
  }
  return { highest, symbols: [...symbols].sort() };
}

/** What `readelf -V --dyn-syms -W` says an ELF file needs of glibc (GLIBC_ versions). */
export function parseGlibcNeeds(readelfText) {
  return parseVersionNeeds(readelfText, 'GLIBC');
}

/** What `readelf -V --dyn-syms -W` says an ELF file needs of libstdc++ (GLIBCXX_ versions). */
export function parseGlibcxxNeeds(readelfText) {
  return parseVersionNeeds(readelfText, 'GLIBCXX');
}

/** `readelf -V --dyn-syms -W` of an ELF file: its version needs and dynamic symbols. */
function readelfVersions(file) {
  const readelf = spawnSync('readelf', ['-V', '--dyn-syms', '-W', file], {
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  if (readelf.status !== 0) throw new Error(`readelf -V ${file} failed: ${readelf.stderr ?? readelf.error?.message}`);
  return readelf.stdout;
}

/** What an ELF file needs of glibc and of libstdc++, from one run of binutils' readelf: { glibc, glibcxx }. */
export function libcNeeds(file) {
  const text = readelfVersions(file);
  return { glibc: parseGlibcNeeds(text), glibcxx: parseGlibcxxNeeds(text) };
}

/** The highest GLIBC_ version an ELF file needs and the symbols that need it, through binutils' readelf. */
export function glibcNeeds(file) {
  return parseGlibcNeeds(readelfVersions(file));
}

/** The highest GLIBC_x.y symbol version an ELF file needs ('none' when it needs none). */
export function highestGlibc(file) {
  return glibcNeeds(file).highest;
}

/** "needs GLIBC_2.35 (hypot), above GLIBC_2.28"; null when the needs are not above the ceiling. */
function aboveCeiling(prefix, { highest, symbols }, ceiling) {
  if (highest === 'none' || compareVersions(highest, ceiling) <= 0) return null;
  const named = symbols.length > 0 ? ` (${symbols.slice(0, 4).join(', ')}${symbols.length > 4 ? ', ...' : ''})` : '';
  return `needs ${prefix}_${highest}${named}, above ${prefix}_${ceiling}`;
}

/** Why these needs are above the ceiling ("needs GLIBC_2.35 (hypot), above GLIBC_2.28"); null when they are not. */
export function glibcAboveCeiling(needs, ceiling = GLIBC_CEILING) {
  return aboveCeiling('GLIBC', needs, ceiling);
}

/** Why these libstdc++ needs are above the ceiling ("needs GLIBCXX_3.4.29 (...), above GLIBCXX_3.4.25"); or null. */
export function glibcxxAboveCeiling(needs, ceiling = GLIBCXX_CEILING) {
  return aboveCeiling('GLIBCXX', needs, ceiling);
}
