/** `*` matches any run of characters; everything else literally (model globs of policies and price tables). Pure. */
export function globMatch(glob: string, value: string): boolean {
  const pattern = glob
    .split('*')
    .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
    .join('.*');
  return new RegExp(`^${pattern}$`).test(value);
}
