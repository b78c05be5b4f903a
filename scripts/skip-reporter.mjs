// A node:test reporter that writes one JSON line per skipped test or suite, {file, name, reason}, and nothing else.
// scripts/test.mjs runs it alongside the spec reporter, lists every skip with its reason at the end of each tier
// and, under CI, fails the tier on a skip that test/skips-allowed.json does not allow.
export default async function* skipReporter(source) {
  for await (const event of source) {
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue;
    const { skip, file, name } = event.data;
    if (skip === undefined || skip === false) continue;
    yield `${JSON.stringify({ file: file ?? '', name, reason: typeof skip === 'string' ? skip : '' })}\n`;
  }
}
