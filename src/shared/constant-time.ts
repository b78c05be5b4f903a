import { timingSafeEqual } from 'node:crypto';

/**
 * String equality whose time does not depend on the strings' content (only on their lengths, which are not secret
 * for tokens of a fixed format). For bearer tokens: never compare them with `===`.
 */
export function constantTimeEqual(expected: string, presented: string): boolean {
  const a = new TextEncoder().encode(expected);
  const b = new TextEncoder().encode(presented);
  if (a.length !== b.length) {
    timingSafeEqual(a, a);
    return false;
  }
  return timingSafeEqual(a, b);
}
