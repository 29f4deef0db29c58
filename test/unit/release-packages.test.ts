// The release refuses a platform package whose addon would not run where npm installs it.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  besideLibraries,
  binaryMachine,
  compareVersions,
  GLIBC_CEILING,
  GLIBCXX_CEILING,
  glibcAboveCeiling,
  glibcxxAboveCeiling,
  machoLibraries,
  parseGlibcNeeds,
  parseGlibcxxNeeds,
  peLibraries,
} from '../../scripts/release/binary-inspect.mjs';
import {
  assemble,
  CPU_VARIANTS,
  checkRelease,
  manifestDifferences,
  packageContents,
  packageName,
  platformListing,
  publishedManifest,
  refusal,
  releaseDisagreements,
  TARGETS,
  tarballMember,
  variantFile,
  voxmillFor,
  zigBuilt,
  zigWheel,
} from '../../scripts/release/platform-packages.mjs';

const scratch = mkdtempSync(join(tmpdir(), 'voxmill-release-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** The first bytes of a 64-bit little-endian ELF shared object for this e_machine. */
function elfHeader(machine: number): Buffer {
  const header = Buffer.alloc(64);
  header.writeUInt32BE(0x7f454c46, 0);
  header[4] = 2; // 64-bit
  header[5] = 1; // little-endian
  header.writeUInt16LE(machine, 18);
  return header;
}

/** A 64-bit Mach-O dylib for this cputype, loading each of `libraries` (LC_LOAD_DYLIB). */
function machoFile(cputype: number, libraries: string[] = []): Buffer {
  const commands = libraries.map((name) => {
    const size = Math.ceil((24 + name.length + 1) / 8) * 8;
    const command = Buffer.alloc(size);
    command.writeUInt32LE(0xc, 0); // LC_LOAD_DYLIB
    command.writeUInt32LE(size, 4);
    command.writeUInt32LE(24, 8); // the name's offset in the command
    command.write(name, 24, 'utf8');
    return command;
  });
  const header = Buffer.alloc(32);
  header.writeUInt32LE(0xfeedfacf, 0);
  header.writeUInt32LE(cputype, 4);
  header.writeUInt32LE(6, 12); // MH_DYLIB
  header.writeUInt32LE(commands.length, 16);
  header.writeUInt32LE(
    commands.reduce((sum, command) => sum + command.length, 0),
    20,
  );
  return Buffer.concat([header, ...commands]);
}

/** A PE32+ DLL for this Machine with one section at RVA 0x1000 (file 0x200) holding an import table of `dlls`. */
function peFile(machine: number, dlls: string[] = []): Buffer {
  const file = Buffer.alloc(0x600);
  file.write('MZ', 0, 'latin1');
  file.writeUInt32LE(0x80, 0x3c); // e_lfanew
  file.write('PE\0\0', 0x80, 'latin1');
  const coff = 0x84;
  file.writeUInt16LE(machine, coff);
  file.writeUInt16LE(1, coff + 2); // one section
  file.writeUInt16LE(240, coff + 16); // SizeOfOptionalHeader
  const optional = coff + 20;
  file.writeUInt16LE(0x20b, optional); // PE32+
  file.writeUInt32LE(16, optional + 108); // NumberOfRvaAndSizes
  if (dlls.length > 0) file.writeUInt32LE(0x1000, optional + 112 + 8); // the import directory's RVA
  const section = optional + 240;
  file.writeUInt32LE(0x400, section + 8); // VirtualSize
  file.writeUInt32LE(0x1000, section + 12); // VirtualAddress
  file.writeUInt32LE(0x400, section + 16); // SizeOfRawData
  file.writeUInt32LE(0x200, section + 20); // PointerToRawData
  let name = 0x1100; // the names follow the descriptors (and the zeroed one that ends them)
  dlls.forEach((dll, i) => {
    file.writeUInt32LE(name, 0x200 + 20 * i + 12);
    file.write(`${dll}\0`, 0x200 + name - 0x1000, 'latin1');
    name += dll.length + 1;
  });
  return file;
}

/**
 * A build folder whose Release/ holds this addon and an ONNX Runtime library (by default of the addon's own kind),
 * beside a CMake cache with these lines.
 */
function buildFolder(name: string, addon: Buffer, cache: string, ort: Buffer = addon): string {
  const release = join(scratch, name, 'Release');
  mkdirSync(join(release, 'espeak-ng-data'), { recursive: true });
  writeFileSync(join(release, 'voxmill.node'), addon);
  writeFileSync(join(release, 'libonnxruntime.so.1'), ort);
  writeFileSync(join(release, 'espeak-ng-data', 'phontab'), '');
  writeFileSync(join(scratch, name, 'CMakeCache.txt'), cache);
  return release;
}
const portable = 'VOXMILL_CPU:STRING=portable\n';
const v2 = 'VOXMILL_CPU:STRING=x86-64-v2\n';
// The library and glibc checks read an ELF addon with readelf (absent on macOS and Windows); these fake addons are
// only headers.
const headersOnly = { allowSystemLibraries: true, allowNewerGlibc: true };

describe('scripts/release/platform-packages.mjs', () => {
  it('reads the ELF machine, and names what is not a binary it packs', () => {
    expect(binaryMachine(elfHeader(0xb7))).toEqual({ format: 'elf', machine: 0xb7 });
    const elf32 = elfHeader(0x3e);
    elf32[4] = 1;
    expect(binaryMachine(elf32)).toBe('not a 64-bit little-endian ELF file');
    expect(binaryMachine(Buffer.from('not a binary at all'))).toBe('not an ELF, Mach-O or PE file');
    expect(binaryMachine(Buffer.from('MZ but nothing after'))).toBe('a truncated PE file');
  });

  it('reads the Mach-O cputype, and refuses universal and 32-bit Mach-O files', () => {
    expect(binaryMachine(machoFile(0x0100000c))).toEqual({ format: 'macho', machine: 0x0100000c });
    expect(binaryMachine(machoFile(0x01000007))).toEqual({ format: 'macho', machine: 0x01000007 });
    const fat = Buffer.alloc(64);
    fat.writeUInt32BE(0xcafebabe, 0);
    fat.writeUInt32BE(2, 4);
    fat.writeUInt32BE(0x01000007, 8);
    fat.writeUInt32BE(0x0100000c, 28);
    expect(binaryMachine(fat)).toMatch(/^a universal \(fat\) Mach-O file \(cputypes 0x1000007, 0x100000c\)/);
    const thin32 = Buffer.alloc(32);
    thin32.writeUInt32LE(0xfeedface, 0);
    expect(binaryMachine(thin32)).toBe('a 32-bit Mach-O file');
  });

  it('reads the PE Machine from behind the MZ header', () => {
    expect(binaryMachine(peFile(0x8664))).toEqual({ format: 'pe', machine: 0x8664 });
    expect(binaryMachine(peFile(0xaa64))).toEqual({ format: 'pe', machine: 0xaa64 });
    const noPe = peFile(0x8664);
    noPe.write('XX', 0x80, 'latin1');
    expect(binaryMachine(noPe)).toBe('an MZ file with no PE header');
  });

  it('lists the libraries a Mach-O or PE file loads, without binutils', () => {
    const libraries = ['/opt/homebrew/opt/ffmpeg/lib/libavformat.61.dylib', '/usr/lib/libc++.1.dylib'];
    expect(machoLibraries(machoFile(0x0100000c, libraries))).toEqual(libraries);
    expect(peLibraries(peFile(0x8664, ['avformat-61.dll', 'KERNEL32.dll']))).toEqual([
      'avformat-61.dll',
      'KERNEL32.dll',
    ]);
    expect(peLibraries(peFile(0x8664))).toEqual([]);
  });

  it('packs a portable x64 build for linux-x64 and refuses it for linux-arm64 and darwin-x64', () => {
    const release = buildFolder('x64', elfHeader(0x3e), portable);
    const variants = { 'x86-64-v2': buildFolder('x64-v2', elfHeader(0x3e), v2) };
    expect(refusal('linux-x64', release, { ...headersOnly, variants })).toBeNull();
    expect(refusal('linux-x64', release, { ...headersOnly, allowSingleVariant: true })).toBeNull();
    expect(refusal('linux-arm64', release, headersOnly)).toMatch(/another machine \(ELF machine 0x3e, x86-64\)/);
    expect(refusal('darwin-x64', release, headersOnly)).toMatch(/another machine \(ELF machine 0x3e, x86-64\)/);
  });

  it('refuses a Mach-O or PE addon for another machine, and names why darwin and win32 cannot be assembled yet', () => {
    const arm64 = buildFolder('darwin-arm64', machoFile(0x0100000c), portable);
    expect(refusal('darwin-x64', arm64)).toMatch(/another machine \(Mach-O cputype 0x100000c, arm64\), not darwin-x64/);
    expect(refusal('linux-arm64', arm64)).toMatch(/another machine \(Mach-O cputype 0x100000c, arm64\)/);
    expect(refusal('darwin-arm64', arm64)).toMatch(/darwin-arm64 cannot be assembled yet: .*ONNX Runtime/);
    const x64 = buildFolder('win32-x64', peFile(0x8664), portable);
    expect(refusal('win32-x64', x64)).toMatch(/win32-x64 cannot be assembled yet: the addon does not build on Windows/);
    expect(refusal('win32-x64', buildFolder('win32-arm64', peFile(0xaa64), portable))).toMatch(
      /another machine \(PE machine 0xaa64, arm64\)/,
    );
  });

  it("refuses an ONNX Runtime library that is not of the addon's kind (the Linux one beside a macOS build)", () => {
    const release = buildFolder('darwin-linux-ort', machoFile(0x0100000c), portable, elfHeader(0xb7));
    expect(refusal('darwin-arm64', release)).toMatch(
      /libonnxruntime\.so\.1 is built for ELF machine 0xb7, aarch64, not a library for the addon's Mach-O cputype/,
    );
  });

  it('refuses a macOS addon linking a library outside the system (Homebrew FFmpeg), unless allowed', () => {
    const addon = machoFile(0x0100000c, ['/usr/lib/libc++.1.dylib', '/opt/homebrew/lib/libavcodec.61.dylib']);
    const release = buildFolder('darwin-brew', addon, portable, machoFile(0x0100000c));
    expect(refusal('darwin-arm64', release)).toMatch(/links \/opt\/homebrew\/lib\/libavcodec\.61\.dylib, which/);
    expect(refusal('darwin-arm64', release, { allowSystemLibraries: true })).toMatch(/cannot be assembled yet/);
  });

  it('refuses a build for this machine, unless allowed for a test here', () => {
    const native = buildFolder('native', elfHeader(0x3e), 'VOXMILL_CPU:STRING=native\n');
    expect(refusal('linux-x64', native, headersOnly)).toMatch(/not a portable build/);
    expect(refusal('linux-x64', native, { ...headersOnly, allowNative: true })).toBeNull();
    const march = buildFolder('march', elfHeader(0x3e), `${portable}CMAKE_CXX_FLAGS:STRING=-O2 -march=native\n`);
    expect(refusal('linux-x64', march, headersOnly)).toMatch(/-march=native/);
  });

  it('refuses a linux-x64 package without its x86-64-v2 build, unless allowed', () => {
    expect(CPU_VARIANTS).toEqual({ 'linux-x64': ['x86-64-v2'] });
    const release = buildFolder('x64-alone', elfHeader(0x3e), portable);
    expect(refusal('linux-x64', release, headersOnly)).toMatch(
      /voxmill\.node alone would crash with SIGILL on x86-64 CPUs without AVX2 .*--variant linux-x64:x86-64-v2=<dir>\/Release, or pass --allow-single-variant/,
    );
    expect(refusal('linux-x64', release, { ...headersOnly, allowSingleVariant: true })).toBeNull();
    // A test pack of a local build (tarball-test.sh) needs no second build.
    expect(refusal('linux-x64', release, { ...headersOnly, allowNative: true })).toBeNull();
    // linux-arm64 has no CPU variants to miss.
    expect(refusal('linux-arm64', buildFolder('arm64-alone', elfHeader(0xb7), portable), headersOnly)).toBeNull();
  });

  it('gives a CPU variant the checks the addon gets, against its own VOXMILL_CPU', () => {
    const release = buildFolder('x64-main', elfHeader(0x3e), portable);
    const check = (dir: string, options = {}) =>
      refusal('linux-x64', release, { ...headersOnly, ...options, variants: { 'x86-64-v2': dir } });
    expect(check(buildFolder('v2-good', elfHeader(0x3e), `${v2}VOXMILL_ZIG:BOOL=ON\n`))).toBeNull();
    // The portable build again, offered as the x86-64-v2 build.
    expect(check(buildFolder('v2-portable', elfHeader(0x3e), portable))).toMatch(
      /^the x86-64-v2 variant: .*v2-portable.Release.voxmill\.node is not an x86-64-v2 build \(VOXMILL_CPU in .*\): build it with VOXMILL_CPU=x86-64-v2$/,
    );
    expect(check(buildFolder('v2-arm64', elfHeader(0xb7), v2))).toMatch(
      /^the x86-64-v2 variant: .*another machine \(ELF machine 0xb7, aarch64\), not linux-x64/,
    );
    expect(check(buildFolder('v2-march', elfHeader(0x3e), `${v2}CMAKE_C_FLAGS:STRING=-march=native\n`))).toMatch(
      /^the x86-64-v2 variant: .*-march=native/,
    );
    expect(check(join(scratch, 'v2-missing', 'Release'))).toMatch(
      /^the x86-64-v2 variant: .*voxmill\.node does not exist/,
    );
    // A variant no loader would pick: another target's, or a CPU level the target has none of.
    const arm64 = buildFolder('arm64-main', elfHeader(0xb7), portable);
    expect(refusal('linux-arm64', arm64, { ...headersOnly, variants: { 'x86-64-v2': release } })).toMatch(
      /--variant linux-arm64:x86-64-v2: linux-arm64's package has no x86-64-v2 build \(its variants: none\)/,
    );
    expect(
      refusal('linux-x64', release, {
        ...headersOnly,
        variants: { 'x86-64-v3': buildFolder('v3', elfHeader(0x3e), v2) },
      }),
    ).toMatch(/has no x86-64-v3 build \(its variants: x86-64-v2\)/);
  });

  it('lays out a linux-x64 package with its x86-64-v2 build beside voxmill.node, in files too', () => {
    const release = buildFolder('x64-layout', elfHeader(0x3e), portable);
    const variant = buildFolder('x64-layout-v2', elfHeader(0x3e), v2);
    expect(variantFile('x86-64-v2')).toBe('voxmill-x86-64-v2.node');
    const { copies, files } = packageContents(release, { 'x86-64-v2': variant });
    expect(copies).toEqual([
      [join(release, 'voxmill.node'), 'voxmill.node'],
      [join(variant, 'voxmill.node'), 'voxmill-x86-64-v2.node'],
      [join(release, 'libonnxruntime.so.1'), 'libonnxruntime.so.1'],
      [join(release, 'espeak-ng-data'), 'espeak-ng-data'],
    ]);
    expect(files).toEqual([
      'voxmill.node',
      'voxmill-x86-64-v2.node',
      'libonnxruntime.so.1',
      'espeak-ng-data',
      'LICENSES',
      'voxmill.json',
    ]);
    expect(packageContents(release).files).toEqual([
      'voxmill.node',
      'libonnxruntime.so.1',
      'espeak-ng-data',
      'LICENSES',
      'voxmill.json',
    ]);
  });

  // Real shared objects (cc and readelf, on Linux): an addon that links a library beside it, which loads another.
  const cc = spawnSync('cc', ['--version']).status === 0 && spawnSync('readelf', ['--version']).status === 0;
  it.skipIf(!cc || process.platform !== 'linux')(
    'packs the libraries an addon loads from beside it (a bundled OpenBLAS), and refuses one linked but missing',
    () => {
      const release = buildFolder('bundled', elfHeader(0x3e), portable);
      const source = join(scratch, 'bundled-source.c');
      writeFileSync(source, 'int bundled_fn(void) { return 1; }\n');
      const build = (out: string, ...args: string[]) => {
        // --no-as-needed: the objects use nothing of what they link, and some toolchains drop such entries.
        const result = spawnSync('cc', ['-shared', '-fPIC', '-o', out, source, '-Wl,--no-as-needed', ...args], {
          encoding: 'utf8',
        });
        expect(result.status, result.stderr).toBe(0);
      };
      // An addon linking a library beside it, which links another beside it.
      const buildBundled = (dir: string) => {
        build(join(dir, 'libgfortran-test.so.5'), '-Wl,-soname,libgfortran-test.so.5');
        build(
          join(dir, 'libscipy_openblas.so'),
          '-Wl,-soname,libscipy_openblas.so',
          `-L${dir}`,
          '-l:libgfortran-test.so.5',
        );
        build(join(dir, 'voxmill.node'), `-L${dir}`, '-lscipy_openblas', '-Wl,-rpath,$ORIGIN');
      };
      buildBundled(release);
      const beside = ['libscipy_openblas.so', 'libgfortran-test.so.5'];
      expect(besideLibraries(join(release, 'voxmill.node'))).toEqual(beside);
      expect(packageContents(release).copies).toEqual([
        [join(release, 'voxmill.node'), 'voxmill.node'],
        ...beside.map((name) => [join(release, name), name]),
        [join(release, 'libonnxruntime.so.1'), 'libonnxruntime.so.1'],
        [join(release, 'espeak-ng-data'), 'espeak-ng-data'],
      ]);
      const checks = { allowNewerGlibc: true, allowSingleVariant: true };
      expect(refusal('linux-x64', release, checks)).toBeNull();
      // A variant must share the very same files: one built against another OpenBLAS is refused.
      const variant = buildFolder('bundled-v2', elfHeader(0x3e), v2);
      writeFileSync(source, 'int bundled_fn(void) { return 2; }\n');
      buildBundled(variant);
      expect(refusal('linux-x64', release, { ...checks, variants: { 'x86-64-v2': variant } })).toMatch(
        /^the x86-64-v2 variant: it links libscipy_openblas\.so, which .*bundled.Release has in another build: build both with the same VOXMILL_BLAS$/,
      );
      // Linked but not beside it: a library a bare system lacks.
      rmSync(join(release, 'libscipy_openblas.so'));
      expect(refusal('linux-x64', release, checks)).toMatch(
        /links libscipy_openblas\.so, which a bare system lacks: build it with VOXMILL_BLAS=bundled or none/,
      );
    },
  );

  it('refuses to assemble a variant without its target, or linux-x64 without its variant', async () => {
    const out = join(scratch, 'assembled');
    const arm64 = buildFolder('assemble-arm64', elfHeader(0xb7), portable);
    const x64 = buildFolder('assemble-x64', elfHeader(0x3e), portable);
    await expect(
      assemble({ targets: { 'linux-arm64': arm64 }, variants: { 'linux-x64': { 'x86-64-v2': x64 } }, out }),
    ).rejects.toThrow(/^--variant linux-x64:x86-64-v2: no --target linux-x64 to pack beside$/);
    await expect(assemble({ targets: { 'linux-x64': x64 }, out, ...headersOnly })).rejects.toThrow(
      /^linux-x64: .*alone would crash with SIGILL on x86-64 CPUs without AVX2/,
    );
  });

  it("takes libc++'s notices from the pinned zig wheel of this machine when zig's clang built the addon", () => {
    expect(zigBuilt(buildFolder('zig', elfHeader(0x3e), `${portable}VOXMILL_ZIG:BOOL=ON\n`))).toBe(true);
    expect(zigBuilt(buildFolder('gcc', elfHeader(0x3e), portable))).toBe(false);
    expect(zigWheel('x64').file).toMatch(/^ziglang-.*x86_64.*\.whl$/);
    expect(zigWheel('arm64').file).toMatch(/^ziglang-.*aarch64.*\.whl$/);
    expect(() => zigWheel('s390x')).toThrow(/pins no zig for this machine \(s390x; PINNED\.zig has x64, arm64\)/);
    expect(() => zigWheel('version')).toThrow(/pins no zig for this machine/);
  });

  it('compares glibc versions number by number, against the 2.28 ceiling', () => {
    expect(GLIBC_CEILING).toBe('2.28');
    expect(compareVersions('2.28', '2.3')).toBeGreaterThan(0);
    expect(compareVersions('2.3', '2.28')).toBeLessThan(0);
    expect(compareVersions('2.35', '2.28')).toBeGreaterThan(0);
    expect(compareVersions('2.28', '2.28.0')).toBe(0);
    expect(compareVersions('2.2.5', '2.3')).toBeLessThan(0);
    const needs = (highest: string, symbols: string[] = []) => ({ highest, symbols });
    expect(glibcAboveCeiling(needs('2.28'))).toBeNull();
    expect(glibcAboveCeiling(needs('2.3'))).toBeNull();
    expect(glibcAboveCeiling(needs('none'))).toBeNull();
    expect(glibcAboveCeiling(needs('2.35', ['hypot']))).toBe('needs GLIBC_2.35 (hypot), above GLIBC_2.28');
    expect(glibcAboveCeiling(needs('2.29'))).toBe('needs GLIBC_2.29, above GLIBC_2.28');
  });

  it("reads the highest GLIBC_ version and the symbols needing it from readelf's output", () => {
    const readelf = [
      "Symbol table '.dynsym' contains 4 entries:",
      '     1: 0000000000000000     0 FUNC    GLOBAL DEFAULT  UND ftell@GLIBC_2.2.5 (2)',
      '     2: 0000000000000000     0 FUNC    GLOBAL DEFAULT  UND _Znam@GLIBCXX_3.4 (4)',
      '     3: 0000000000000000     0 FUNC    GLOBAL DEFAULT  UND hypot@GLIBC_2.35 (14)',
      '     4: 0000000000000000     0 FUNC    GLOBAL DEFAULT  UND stat@GLIBC_2.33 (12)',
      "Version needs section '.gnu.version_r' contains 2 entries:",
      '  0x0010:   Name: GLIBC_2.3  Flags: none  Version: 39',
      '  0x0020:   Name: GLIBC_2.35  Flags: none  Version: 14',
      '  0x0030:   Name: GLIBC_2.33  Flags: none  Version: 12',
      '  0x0040:   Name: GLIBCXX_3.4.29  Flags: none  Version: 15',
    ].join('\n');
    expect(parseGlibcNeeds(readelf)).toEqual({ highest: '2.35', symbols: ['hypot'] });
    expect(parseGlibcNeeds('No version information found in this file.')).toEqual({ highest: 'none', symbols: [] });
  });

  it("reads the highest GLIBCXX_ (libstdc++) version from readelf's output, against gcc 8's 3.4.25", () => {
    expect(GLIBCXX_CEILING).toBe('3.4.25');
    // A gcc build on Debian 12: libstdc++ 3.4.29, beside glibc and C++ ABI versions that are not GLIBCXX_.
    const gcc12 = [
      "Symbol table '.dynsym' contains 5 entries:",
      '     1: 0000000000000000     0 FUNC    GLOBAL DEFAULT  UND hypot@GLIBC_2.35 (14)',
      '     2: 0000000000000000     0 FUNC    GLOBAL DEFAULT  UND _ZSt28__throw_bad_array_new_lengthv@GLIBCXX_3.4.29 (9)',
      '     3: 0000000000000000     0 FUNC    GLOBAL DEFAULT  UND _ZSt19uncaught_exceptionsv@GLIBCXX_3.4.22 (7)',
      '     4: 0000000000000000     0 FUNC    GLOBAL DEFAULT  UND __cxa_throw@CXXABI_1.3 (3)',
      '     5: 0000000000000000     0 FUNC    GLOBAL DEFAULT  UND _ZdlPvm@@GLIBCXX_3.4.9',
      "Version needs section '.gnu.version_r' contains 2 entries:",
      ' 000000: Version: 1  File: libstdc++.so.6  Cnt: 4',
      '  0x0010:   Name: GLIBCXX_3.4.9  Flags: none  Version: 5',
      '  0x0020:   Name: GLIBCXX_3.4.29  Flags: none  Version: 9',
      '  0x0030:   Name: GLIBCXX_3.4.22  Flags: none  Version: 7',
      '  0x0040:   Name: CXXABI_1.3.13  Flags: none  Version: 3',
      ' 0x0050: Version: 1  File: libc.so.6  Cnt: 1',
      '  0x0060:   Name: GLIBC_2.35  Flags: none  Version: 14',
    ].join('\n');
    const gcc = parseGlibcxxNeeds(gcc12);
    expect(gcc).toEqual({ highest: '3.4.29', symbols: ['_ZSt28__throw_bad_array_new_lengthv'] });
    expect(parseGlibcNeeds(gcc12)).toEqual({ highest: '2.35', symbols: ['hypot'] });
    expect(glibcxxAboveCeiling(gcc)).toBe(
      'needs GLIBCXX_3.4.29 (_ZSt28__throw_bad_array_new_lengthv), above GLIBCXX_3.4.25',
    );
    // ONNX Runtime's library (manylinux_2_28): 3.4.22, under the ceiling; 3.4.9 sorts below 3.4.22.
    const ort = parseGlibcxxNeeds(
      [
        '     1: 0000000000000000     0 FUNC    GLOBAL DEFAULT  UND _ZSt19uncaught_exceptionsv@GLIBCXX_3.4.22 (7)',
        '  0x0010:   Name: GLIBCXX_3.4.9  Flags: none  Version: 5',
        '  0x0020:   Name: GLIBCXX_3.4.22  Flags: none  Version: 7',
        '  0x0030:   Name: GLIBC_2.28  Flags: none  Version: 8',
      ].join('\n'),
    );
    expect(ort).toEqual({ highest: '3.4.22', symbols: ['_ZSt19uncaught_exceptionsv'] });
    expect(glibcxxAboveCeiling(ort)).toBeNull();
    // zig's clang links libc++ in: no libstdc++ at all.
    const zig = parseGlibcxxNeeds('  0x0010:   Name: GLIBC_2.28  Flags: none  Version: 2');
    expect(zig).toEqual({ highest: 'none', symbols: [] });
    expect(glibcxxAboveCeiling(zig)).toBeNull();
    expect(glibcxxAboveCeiling({ highest: '3.4.25', symbols: [] })).toBeNull();
    expect(glibcxxAboveCeiling({ highest: '3.4.26', symbols: [] })).toBe('needs GLIBCXX_3.4.26, above GLIBCXX_3.4.25');
  });

  it('names the packages as src/platform-package.ts finds them: a libc suffix on Linux only', () => {
    expect(packageName('linux-x64')).toBe('@voxmill/linux-x64-gnu');
    expect(packageName('darwin-arm64')).toBe('@voxmill/darwin-arm64');
    expect(packageName('win32-x64')).toBe('@voxmill/win32-x64');
    expect(TARGETS['darwin-x64']).toMatchObject({ os: 'darwin', cpu: 'x64', libc: null });
  });

  it("checks a release's manifests agree: versions, voxmill's optional dependencies, os/cpu/libc", () => {
    const voxmill = (version: string, deps: Record<string, string>) => ({
      name: 'voxmill',
      version,
      optionalDependencies: deps,
    });
    const linux = { name: '@voxmill/linux-x64-gnu', version: '0.1.0', os: ['linux'], cpu: ['x64'], libc: ['glibc'] };
    const mac = { name: '@voxmill/darwin-arm64', version: '0.1.0', os: ['darwin'], cpu: ['arm64'] };
    const both = { '@voxmill/linux-x64-gnu': '0.1.0', '@voxmill/darwin-arm64': '0.1.0' };
    expect(releaseDisagreements([voxmill('0.1.0', both), linux, mac])).toEqual([]);
    expect(releaseDisagreements([voxmill('0.1.0', both), { ...linux, version: '0.0.9' }, mac])[0]).toMatch(
      /^versions disagree: .*@voxmill\/linux-x64-gnu@0\.0\.9/,
    );
    expect(releaseDisagreements([voxmill('0.1.0', { '@voxmill/darwin-arm64': '^0.1.0' }), mac])).toEqual([
      'voxmill@0.1.0 lists @voxmill/darwin-arm64 at ^0.1.0',
    ]);
    expect(releaseDisagreements([voxmill('0.1.0', both), linux, { ...mac, cpu: ['x64'] }])).toEqual([
      `@voxmill/darwin-arm64's cpu is ["x64"], not ["arm64"]`,
    ]);
    expect(releaseDisagreements([linux])).toEqual(['no voxmill package among them']);
  });

  it("fails unless each voxmill lists exactly the platform packages among them, and voxmill's manifests agree", () => {
    const x64 = { name: '@voxmill/linux-x64-gnu', version: '0.1.0', os: ['linux'], cpu: ['x64'], libc: ['glibc'] };
    const arm64 = { ...x64, name: '@voxmill/linux-arm64-gnu', cpu: ['arm64'] };
    const voxmill = (...names: string[]) => ({
      name: 'voxmill',
      version: '0.1.0',
      optionalDependencies: { other: '^1.0.0', ...Object.fromEntries(names.map((name) => [name, '0.1.0'])) },
    });
    const both = voxmill(x64.name, arm64.name);
    expect(releaseDisagreements([both, x64, arm64])).toEqual([]);
    // Two voxmill tarballs alike (another copy of the same) are no disagreement.
    expect(releaseDisagreements([both, x64, voxmill(arm64.name, x64.name), arm64])).toEqual([]);
    // One listing a package not among them, or missing one that is.
    expect(releaseDisagreements([both, x64], ['out/voxmill-0.1.0.tgz'])).toEqual([
      'voxmill@0.1.0 (out/voxmill-0.1.0.tgz) lists @voxmill/linux-arm64-gnu, which no package among them is',
    ]);
    expect(releaseDisagreements([voxmill(x64.name), x64, arm64])).toEqual([
      'voxmill@0.1.0 does not list @voxmill/linux-arm64-gnu, which is among them',
    ]);
    expect(releaseDisagreements([voxmill(), x64, arm64])).toEqual([
      'voxmill@0.1.0 does not list @voxmill/linux-arm64-gnu, @voxmill/linux-x64-gnu, which are among them',
    ]);
    // Each leg's voxmill lists its own package only: neither is the one to publish, and they differ.
    const legs = ['packages-linux-x64/voxmill-0.1.0.tgz', 'x64', 'packages-linux-arm64/voxmill-0.1.0.tgz', 'arm64'];
    expect(releaseDisagreements([voxmill(x64.name), x64, voxmill(arm64.name), arm64], legs)).toEqual([
      `voxmill@0.1.0 (${legs[0]}) does not list @voxmill/linux-arm64-gnu, which is among them`,
      `voxmill@0.1.0 (${legs[2]}) does not list @voxmill/linux-x64-gnu, which is among them`,
      `the voxmill manifests differ (${legs[0]} vs ${legs[2]}): ` +
        'optionalDependencies["@voxmill/linux-arm64-gnu"]: absent vs "0.1.0"; ' +
        'optionalDependencies["@voxmill/linux-x64-gnu"]: "0.1.0" vs absent',
    ]);
    // Any other difference is named too, without sources by position.
    expect(releaseDisagreements([both, x64, arm64, { ...both, main: 'dist/other.js' }]).at(-1)).toBe(
      'the voxmill manifests differ (#1 vs #4): main: absent vs "dist/other.js"',
    );
  });

  it('names how two manifests differ, field by field, regardless of key order', () => {
    expect(manifestDifferences({ a: { x: 1, y: 2 }, b: [1] }, { b: [1], a: { y: 2, x: 1 } })).toEqual([]);
    expect(manifestDifferences({ a: { x: 1 }, b: [1], c: 'same' }, { a: { x: 2, z: 3 }, b: [2], c: 'same' })).toEqual([
      'a["x"]: 1 vs 2',
      'a["z"]: absent vs 3',
      'b: [1] vs [2]',
    ]);
    expect(manifestDifferences({ files: 'x'.repeat(100) }, {})).toEqual([`files: "${'x'.repeat(56)}... vs absent`]);
  });

  it('lists the platform packages given for the one voxmill a release publishes (--voxmill-for)', () => {
    const x64 = { name: '@voxmill/linux-x64-gnu', version: '0.1.0', os: ['linux'], cpu: ['x64'], libc: ['glibc'] };
    const arm64 = { ...x64, name: '@voxmill/linux-arm64-gnu', cpu: ['arm64'] };
    const given = (manifest: Record<string, unknown>, target?: string, source = `${manifest.name}.tgz`) => ({
      source,
      manifest,
      record: target ? { target } : undefined,
    });
    // By voxmill.json's target, or (none) by the os/cpu/libc fields; sorted by name, each at voxmill's version.
    expect(platformListing([given(x64, 'linux-x64'), given(arm64)], '0.1.0')).toEqual({
      '@voxmill/linux-arm64-gnu': '0.1.0',
      '@voxmill/linux-x64-gnu': '0.1.0',
    });
    expect(Object.keys(platformListing([given(x64), given(arm64, 'linux-arm64')], '0.1.0'))).toEqual([
      '@voxmill/linux-arm64-gnu',
      '@voxmill/linux-x64-gnu',
    ]);
    expect(() => platformListing([], '0.1.0')).toThrow(/^no platform packages given to list$/);
    const problems = (packages: Array<ReturnType<typeof given>>, version = '0.1.0') => {
      try {
        platformListing(packages, version);
      } catch (error) {
        return (error as Error).message.split('\n  ');
      }
      return [];
    };
    expect(problems([given(x64)], '0.2.0')).toEqual([
      'cannot list these platform packages in voxmill@0.2.0:',
      "@voxmill/linux-x64-gnu@0.1.0 (@voxmill/linux-x64-gnu.tgz) is not at voxmill's version 0.2.0",
    ]);
    expect(
      problems([given({ name: 'voxmill', version: '0.1.0' }, undefined, 'a/voxmill-0.1.0.tgz'), given(x64)]),
    ).toEqual([
      'cannot list these platform packages in voxmill@0.1.0:',
      "a/voxmill-0.1.0.tgz is voxmill's own tarball, not a platform package: leave it out (each leg's lists its own only)",
    ]);
    expect(problems([given(x64, 'linux-x64', 'a.tgz'), given(x64, 'linux-x64', 'b.tgz')]).slice(1)).toEqual([
      '@voxmill/linux-x64-gnu is given twice: a.tgz and b.tgz',
    ]);
    // A voxmill.json naming another target than the package's name and fields, or none at all.
    expect(problems([given(x64, 'linux-arm64', 'x.tgz')]).slice(1)).toEqual([
      "@voxmill/linux-x64-gnu@0.1.0 (x.tgz) is linux-arm64's package, which is @voxmill/linux-arm64-gnu",
      `@voxmill/linux-x64-gnu's cpu is ["x64"], not ["arm64"] (x.tgz)`,
    ]);
    expect(problems([given(x64, 'linux-riscv64', 'x.tgz')]).slice(1)).toEqual([
      expect.stringMatching(
        /^@voxmill\/linux-x64-gnu@0\.1\.0 \(x\.tgz\): its voxmill\.json names the target 'linux-riscv64', which is not one/,
      ),
    ]);
    expect(problems([given({ ...x64, libc: ['musl'] }, undefined, 'x.tgz')]).slice(1)).toEqual([
      '@voxmill/linux-x64-gnu@0.1.0 (x.tgz) has no voxmill.json and its os/cpu/libc (["linux"], ["x64"], ["musl"]) are no target\'s',
    ]);
    expect(problems([given({ name: 'left-pad', version: '0.1.0' }, undefined, 'l.tgz')]).slice(1)).toEqual([
      'left-pad@0.1.0 (l.tgz) is not a platform package (@voxmill/*)',
    ]);
  });

  it("writes voxmill's published manifest: the platform packages listed, no scripts that build a checkout", () => {
    const checkout = {
      name: 'voxmill',
      version: '0.1.0',
      optionalDependencies: { other: '^1.0.0' },
      scripts: { prepare: 'build', prepack: 'prebuild', test: 'vitest' },
    };
    const listing = { '@voxmill/linux-arm64-gnu': '0.1.0', '@voxmill/linux-x64-gnu': '0.1.0' };
    expect(publishedManifest(checkout, listing)).toEqual({
      name: 'voxmill',
      version: '0.1.0',
      optionalDependencies: { other: '^1.0.0', ...listing },
      scripts: { test: 'vitest' },
    });
    expect(checkout.scripts.prepare).toBe('build');
    expect(() => publishedManifest(checkout, { '@voxmill/linux-x64-gnu': '0.0.9' })).toThrow(
      /^@voxmill\/linux-x64-gnu is at 0\.0\.9, not 0\.1\.0$/,
    );
    expect(() => publishedManifest({ ...checkout, scripts: { postinstall: 'x' } }, listing)).toThrow(
      /no install script/,
    );
    expect(publishedManifest({ name: 'voxmill', version: '0.1.0' }, {})).toEqual({
      name: 'voxmill',
      version: '0.1.0',
      optionalDependencies: {},
    });
  });

  it("reads a tarball's package.json without a tar program", () => {
    const folder = join(scratch, 'tarball', 'package');
    mkdirSync(folder, { recursive: true });
    const manifest = { name: 'voxmill', version: '0.1.0' };
    writeFileSync(join(folder, 'package.json'), JSON.stringify(manifest));
    writeFileSync(join(folder, 'README.md'), 'x'.repeat(1500));
    // Relative paths: Git's GNU tar on Windows reads "C:\..." as a remote host.
    const tar = spawnSync('tar', ['czf', 'voxmill-0.1.0.tgz', 'package/README.md', 'package/package.json'], {
      cwd: join(scratch, 'tarball'),
    });
    expect(tar.status).toBe(0);
    const tarball = join(scratch, 'tarball', 'voxmill-0.1.0.tgz');
    expect(JSON.parse(tarballMember(tarball, 'package/package.json') ?? '')).toEqual(manifest);
    expect(tarballMember(tarball, 'package/missing.json')).toBeUndefined();
    // --check over a folder of tarballs (a CI job's artifacts), with a target whose package must be among them.
    expect(checkRelease([join(scratch, 'tarball')])).toEqual([manifest]);
    expect(() => checkRelease([join(scratch, 'tarball')], { required: ['linux-x64'] })).toThrow(
      /no @voxmill\/linux-x64-gnu among them/,
    );
  });

  it("--check fails on the legs' own voxmill tarballs, each listing only its platform package, naming them", () => {
    const artifacts = join(scratch, 'artifacts');
    /** A tarball <artifacts>/<leg>/<file> holding package/package.json (this manifest), and voxmill.json if given. */
    const pack = (leg: string, file: string, manifest: Record<string, unknown>, record?: Record<string, unknown>) => {
      const folder = join(artifacts, leg, 'staging', 'package');
      mkdirSync(folder, { recursive: true });
      writeFileSync(join(folder, 'package.json'), JSON.stringify(manifest));
      if (record) writeFileSync(join(folder, 'voxmill.json'), JSON.stringify(record));
      const members = ['package/package.json', ...(record ? ['package/voxmill.json'] : [])];
      const tar = spawnSync('tar', ['czf', join('..', file), ...members], { cwd: join(folder, '..') });
      expect(tar.status).toBe(0);
      rmSync(join(artifacts, leg, 'staging'), { recursive: true });
    };
    const x64 = { name: '@voxmill/linux-x64-gnu', version: '0.1.0', os: ['linux'], cpu: ['x64'], libc: ['glibc'] };
    const arm64 = { ...x64, name: '@voxmill/linux-arm64-gnu', cpu: ['arm64'] };
    const voxmill = (...names: string[]) => ({
      name: 'voxmill',
      version: '0.1.0',
      optionalDependencies: Object.fromEntries(names.map((name) => [name, '0.1.0'])),
    });
    pack('packages-linux-x64', 'voxmill-linux-x64-gnu-0.1.0.tgz', x64, { target: 'linux-x64' });
    pack('packages-linux-x64', 'voxmill-0.1.0.tgz', voxmill(x64.name));
    pack('packages-linux-arm64', 'voxmill-linux-arm64-gnu-0.1.0.tgz', arm64);
    pack('packages-linux-arm64', 'voxmill-0.1.0.tgz', voxmill(arm64.name));
    const required = ['linux-x64', 'linux-arm64'];
    expect(() => checkRelease([artifacts], { required })).toThrow(
      /voxmill@0\.1\.0 \(.*packages-linux-arm64.voxmill-0\.1\.0\.tgz\) does not list @voxmill\/linux-x64-gnu, which is among them/,
    );
    expect(() => checkRelease([artifacts], { required })).toThrow(
      /the voxmill manifests differ \(.*packages-linux-arm64.voxmill-0\.1\.0\.tgz vs .*packages-linux-x64.voxmill-0\.1\.0\.tgz\): optionalDependencies/,
    );
    // --voxmill-for refuses the legs' voxmill tarballs among them (before packing anything).
    const out = join(scratch, 'voxmill-for');
    expect(() => voxmillFor([artifacts], { out })).toThrow(
      /packages-linux-arm64.voxmill-0\.1\.0\.tgz is voxmill's own tarball, not a platform package/,
    );
    // What the last job does: the legs' voxmill tarballs replaced by one listing every platform package.
    for (const leg of ['packages-linux-x64', 'packages-linux-arm64']) rmSync(join(artifacts, leg, 'voxmill-0.1.0.tgz'));
    pack('.', 'voxmill-0.1.0.tgz', voxmill(x64.name, arm64.name));
    expect(checkRelease([artifacts], { required }).map((manifest) => manifest.name)).toEqual([
      '@voxmill/linux-arm64-gnu',
      '@voxmill/linux-x64-gnu',
      'voxmill',
    ]);
  });
});
