// Terminal styling: colour only on a terminal, never with NO_COLOR set (https://no-color.org) or TERM=dumb. Pure.

/** Whether to colour a stream: it is a TTY, `NO_COLOR` is unset or empty, and `TERM` is not `dumb`. */
export function colorEnabled(isTty: boolean, env: Readonly<Record<string, string | undefined>>): boolean {
  if (!isTty) return false;
  if ((env.NO_COLOR ?? '') !== '') return false;
  return env.TERM !== 'dumb';
}

/** SGR styles the CLI uses. */
export type Tone = 'bold' | 'dim' | 'red' | 'green' | 'yellow' | 'blue' | 'cyan' | 'magenta';

const SGR: Readonly<Record<Tone, string>> = {
  bold: '1',
  dim: '2',
  red: '31',
  green: '32',
  yellow: '33',
  blue: '34',
  cyan: '36',
  magenta: '35',
};

/** Paints text in a tone, or leaves it as it is when colour is off. */
export type Paint = (tone: Tone, text: string) => string;

/** A painter: ANSI SGR sequences when `enabled`, the identity otherwise. */
export function painter(enabled: boolean): Paint {
  if (!enabled) return (_tone, text) => text;
  return (tone, text) => (text === '' ? text : `\x1b[${SGR[tone]}m${text}\x1b[0m`);
}

/** The tone of a run phase. */
export function phaseTone(phase: string): Tone {
  switch (phase) {
    case 'Succeeded':
      return 'green';
    case 'Failed':
      return 'red';
    case 'Running':
      return 'blue';
    default:
      return 'yellow';
  }
}

/** Removes ANSI escape sequences (for width computations and tests). */
export function stripAnsi(text: string): string {
  return text.replace(/\x1b\[[0-9;]*[A-Za-z]/g, '');
}

/**
 * Control characters other than tab and newline made visible: C0 and DEL as `^X` (`\x1b` → `^[`, DEL `^?`), carriage
 * returns dropped, C1 controls as `<U+0085>` (CSI `\x9b` as `^[[`), and the bidirectional overrides and isolates
 * (U+202A–U+202E, U+2066–U+2069) as `<U+202E>`: text from the cluster (agent output, messages, names) must not move
 * the cursor, recolour the user's terminal or reorder what is shown.
 */
export function sanitize(text: string): string {
  return text.replace(/[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/g, (c) => {
    const code = c.charCodeAt(0);
    if (code === 0x0d) return '';
    if (code < 0x20) return `^${String.fromCharCode(code + 64)}`;
    if (code === 0x7f) return '^?';
    if (code === 0x9b) return '^[[';
    return `<U+${code.toString(16).toUpperCase().padStart(4, '0')}>`;
  });
}
