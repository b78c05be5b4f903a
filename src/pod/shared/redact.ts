/**
 * A URL safe to log: userinfo and the query string are removed (either may carry a token); text that is not a URL
 * becomes `<invalid url>`. Pure.
 */
export function redactUrl(text: string): string {
  try {
    const u = new URL(text);
    const query = u.search ? '?…' : '';
    return `${u.protocol}//${u.host}${u.pathname}${query}`;
  } catch {
    return '<invalid url>';
  }
}

/** Replaces every spelling of `url` inside `message` (as given, and as normalized by `URL`) with `redactUrl(url)`. */
export function scrubUrl(message: string, url: string): string {
  const shown = redactUrl(url);
  let out = message.split(url).join(shown);
  try {
    out = out.split(new URL(url).href).join(shown);
  } catch {
    // not a URL: nothing more to hide
  }
  return out;
}
