/**
 * Wraps a function of one value so that it runs once per object: cache entries are immutable and replaced on
 * change, so the result for an object (a parse, typically) can be kept for as long as the object lives. Values
 * that are not objects are passed through unmemoised.
 */
export function oncePerObject<R>(fn: (value: unknown) => R): (value: unknown) => R {
  const memo = new WeakMap<object, R>();
  return (value) => {
    if (typeof value !== 'object' || value === null) return fn(value);
    if (memo.has(value)) return memo.get(value) as R;
    const result = fn(value);
    memo.set(value, result);
    return result;
  };
}
