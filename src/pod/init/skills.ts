import type { Step, Tool } from './steps.ts';

const SAFE_SKILL = /^[A-Za-z0-9_-][A-Za-z0-9._-]*$/;
const UNSAFE_CHARS = /[\s\u0000-\u001f\u007f]/;

/**
 * True iff `name` may become a file name under the skills source: `[A-Za-z0-9._-]`, no leading `.`
 * (docs/design/reference-behaviour.md#skills).
 */
export function isSafeSkillName(name: string): boolean {
  return SAFE_SKILL.test(name);
}

/**
 * True iff `source` is a base URL the init may download from with curl: http, https or file, no whitespace or
 * control characters, not option-shaped. Other curl protocols (dict, gopher, ...) are refused.
 */
export function isAllowedSourceUrl(source: string): boolean {
  if (source.startsWith('-') || UNSAFE_CHARS.test(source)) return false;
  return /^(https?|file):\/\//i.test(source);
}

/** Joins a base URL and one path element with exactly one slash. */
export function joinUrl(base: string, leaf: string): string {
  return `${base.replace(/\/+$/, '')}/${leaf}`;
}

/** The planned skills tool plus what was left out and why. */
export interface SkillsPlan {
  readonly tool: Tool;
  readonly warnings: readonly string[];
}

/**
 * The `skills` tool (docs/design/reference-behaviour.md#skills): always copies `workspace/*\/.claude/skills` and
 * `workspace/.claude/skills`
 * into `<home>/.claude/skills`; with a source, fetches `<source>/settings.json` to `<home>/.claude/settings.json`
 * and `<source>/<name>.tar.gz` unpacked into the skills dir for each safe name. Downloads are best effort
 * (logged on failure) like the reference's `|| true`. Unsafe names and a refused source are reported as warnings.
 */
export function planSkills(
  skills: readonly string[],
  source: string,
  home: string,
  workspace: string,
): SkillsPlan {
  const skillsDir = `${home}/.claude/skills`;
  const warnings: string[] = [];
  const steps: Step[] = [
    { kind: 'mkdir', path: skillsDir },
    { kind: 'collect-skills', workspace, dest: skillsDir },
  ];
  let downloads = false;
  if (source !== '' && !isAllowedSourceUrl(source)) {
    warnings.push(
      `skills source ${JSON.stringify(source)} is not an http(s) or file URL; nothing downloaded`,
    );
  } else if (source !== '') {
    downloads = true;
    steps.push({
      kind: 'exec',
      argv: ['curl', '-fsSL', '-o', `${home}/.claude/settings.json`, '--', joinUrl(source, 'settings.json')],
      bestEffort: true,
    });
    for (const name of skills) {
      if (!isSafeSkillName(name)) {
        warnings.push(`skill name ${JSON.stringify(name)} is not safe; skipped`);
        continue;
      }
      steps.push({
        kind: 'exec',
        argv: [
          'sh',
          '-c',
          'curl -fsSL -- "$1" | tar -xz --no-same-owner -C "$2"',
          'sh',
          joinUrl(source, `${name}.tar.gz`),
          skillsDir,
        ],
        bestEffort: true,
      });
    }
  }
  const tool: Tool = { name: 'skills', steps, requires: downloads ? ['sh', 'curl', 'tar'] : [] };
  return { tool, warnings };
}
