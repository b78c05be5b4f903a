/**
 * NUL characters (U+0000): JSON and the API server carry them in any string, but no process argument, environment
 * variable, file name or C string can. A run whose pod would carry one fails at Pending naming where it is, instead
 * of a container that cannot start (issue 13 §3).
 */

const NUL = '\u0000';

/** Whether `text` contains a NUL character. */
export const hasNul = (text: string): boolean => text.includes(NUL);

/**
 * The path of the first string in `value` (a JSON value) that contains a NUL character, or undefined. Array items
 * that have a `name` are shown by it (`containers[agent].env[TASK_ID].value`), others by index.
 */
export function findNul(value: unknown, path = ''): string | undefined {
  if (typeof value === 'string') return hasNul(value) ? path : undefined;
  if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) {
      const name =
        isRecord(item) && typeof item.name === 'string' && !hasNul(item.name) ? item.name : String(i);
      const found = findNul(item, `${path}[${name}]`);
      if (found !== undefined) return found;
    }
    return undefined;
  }
  if (isRecord(value)) {
    for (const [key, item] of Object.entries(value)) {
      const here = path === '' ? key : `${path}.${key}`;
      if (hasNul(key)) return here;
      const found = findNul(item, here);
      if (found !== undefined) return found;
    }
  }
  return undefined;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The build error of a pod template with a NUL character at `path`. */
export const nulInPod = (path: string): string =>
  `the run pod's ${path} contains a NUL character (U+0000), which no process argument, environment variable or file can carry`;
