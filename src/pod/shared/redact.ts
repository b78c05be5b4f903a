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
