// Kubernetes resource quantities (`500m`, `2`, `1.5Gi`, `256M`, `1e3`) as plain numbers of the base unit (cores,
// bytes). Pure. Enough to compare a container's requests and limits with a policy's caps.

const SUFFIXES: Readonly<Record<string, number>> = {
  n: 1e-9,
  u: 1e-6,
  m: 1e-3,
  '': 1,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};

const QUANTITY = /^([+-]?(?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)$/;

/** The value of a quantity in its base unit, or undefined when it is not one. */
export function parseQuantity(text: string): number | undefined {
  const m = QUANTITY.exec(text.trim());
  if (m === null) return undefined;
  const value = Number(`${m[1]}${m[2] ?? ''}`);
  const factor = SUFFIXES[m[3] ?? ''];
  if (!Number.isFinite(value) || factor === undefined) return undefined;
  return value * factor;
}
