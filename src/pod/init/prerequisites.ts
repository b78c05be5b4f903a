/** Package managers the init knows, in detection order (docs/design/reference-behaviour.md#prerequisites). */
export type PackageManager = 'apt' | 'dnf' | 'apk';

/** The executable that reveals each package manager. */
export const PACKAGE_MANAGER_BINARIES: ReadonlyArray<readonly [PackageManager, string]> = [
  ['apt', 'apt-get'],
  ['dnf', 'dnf'],
  ['apk', 'apk'],
];

/** The package providing an executable: the same name, except `sha256sum` → `coreutils`. */
export function packageFor(executable: string): string {
  return executable === 'sha256sum' ? 'coreutils' : executable;
}

/** The first package manager whose executable `has` reports, or undefined. */
export function choosePackageManager(has: (executable: string) => boolean): PackageManager | undefined {
  return PACKAGE_MANAGER_BINARIES.find(([, binary]) => has(binary))?.[0];
}

/**
 * The commands that install `executables` (deduplicated packages, first-seen order).
 * apt: `apt-get update` then `apt-get install --no-install-recommends -y …`; dnf: `dnf install -y …`;
 * apk: `apk add --no-cache …`. Empty input → no commands.
 */
export function installCommands(pm: PackageManager, executables: readonly string[]): string[][] {
  const packages = [...new Set(executables.map(packageFor))];
  if (packages.length === 0) return [];
  switch (pm) {
    case 'apt':
      return [
        ['apt-get', 'update'],
        ['apt-get', 'install', '--no-install-recommends', '-y', ...packages],
      ];
    case 'dnf':
      return [['dnf', 'install', '-y', ...packages]];
    case 'apk':
      return [['apk', 'add', '--no-cache', ...packages]];
  }
}
