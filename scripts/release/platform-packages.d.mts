// Types for scripts/release/platform-packages.mjs, as the unit tests import it.
export const TARGETS: Record<
  'linux-x64' | 'linux-arm64',
  { os: string; cpu: string; libc: string; suffix: string; elfMachine: number; ort: string }
>;
/** The ELF header's e_machine of a 64-bit little-endian shared object, or a reason it is not one. */
export function elfMachine(bytes: Buffer): number | string;
/** Why the addon in `releaseDir` cannot be packed for `target`; null when it can. */
export function refusal(
  target: 'linux-x64' | 'linux-arm64',
  releaseDir: string,
  options?: { allowNative?: boolean; allowSystemLibraries?: boolean },
): string | null;
export function neededLibraries(file: string): string[];
export function highestGlibc(file: string): string;
export function assemble(options: {
  targets: Partial<Record<'linux-x64' | 'linux-arm64', string>>;
  out: string;
  allowNative?: boolean;
  allowSystemLibraries?: boolean;
}): Promise<string[]>;
