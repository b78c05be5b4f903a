// The little XML of S3's answers this client reads: the Error body, ListObjectsV2's ListBucketResult and
// CopyObject's CopyObjectResult. Extracted by hand (elements we read never nest inside one of the same name), then
// validated with valibot.

import * as v from 'valibot';

const ENTITIES: Readonly<Record<string, string>> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

/** Decodes XML character data: the five named entities and numeric references; CDATA sections kept as written. */
export function decodeXmlText(text: string): string {
  return text.replace(
    /<!\[CDATA\[([\s\S]*?)\]\]>|&(#x[0-9a-fA-F]+|#[0-9]+|[a-z]+);/g,
    (whole, cdata, ref) => {
      if (cdata !== undefined) return cdata as string;
      const r = ref as string;
      if (r.startsWith('#x')) return String.fromCodePoint(Number.parseInt(r.slice(2), 16));
      if (r.startsWith('#')) return String.fromCodePoint(Number.parseInt(r.slice(1), 10));
      return ENTITIES[r] ?? whole;
    },
  );
}

const escapeRe = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The raw inner text of every `<tag …>…</tag>` (and `''` for `<tag/>`) in `xml`, in order. */
export function xmlElements(xml: string, tag: string): string[] {
  const t = escapeRe(tag);
  const re = new RegExp(`<${t}(?:\\s[^>]*?)?(?:/>|>([\\s\\S]*?)</${t}\\s*>)`, 'g');
  return [...xml.matchAll(re)].map((m) => m[1] ?? '');
}

/** The decoded text of the first `<tag>` in `xml`, or undefined. */
export function xmlText(xml: string, tag: string): string | undefined {
  const raw = xmlElements(xml, tag)[0];
  return raw === undefined ? undefined : decodeXmlText(raw);
}

/** `xml` without its `<tag>` elements (to read a parent's own children beside repeated ones). */
function withoutElements(xml: string, tag: string): string {
  const t = escapeRe(tag);
  return xml.replace(new RegExp(`<${t}(?:\\s[^>]*?)?(?:/>|>[\\s\\S]*?</${t}\\s*>)`, 'g'), '');
}

const ErrorSchema = v.object({
  code: v.pipe(v.string(), v.minLength(1)),
  message: v.string(),
  requestId: v.optional(v.string()),
});
export type S3ErrorBody = v.InferOutput<typeof ErrorSchema>;

/** The `<Error>` of an S3 error body, or undefined when `xml` is not one. */
export function parseErrorXml(xml: string): S3ErrorBody | undefined {
  const body = xmlElements(xml, 'Error')[0];
  if (body === undefined) return undefined;
  const parsed = v.safeParse(ErrorSchema, {
    code: xmlText(body, 'Code'),
    message: xmlText(body, 'Message') ?? '',
    requestId: xmlText(body, 'RequestId'),
  });
  return parsed.success ? parsed.output : undefined;
}

const digitsToNumber = v.pipe(v.string(), v.regex(/^\d+$/, 'not a whole number'), v.transform(Number));
const boolText = v.pipe(
  v.picklist(['true', 'false'], 'not true or false'),
  v.transform((s) => s === 'true'),
);

const ObjectSchema = v.object({
  key: v.pipe(v.string(), v.minLength(1)),
  size: digitsToNumber,
  etag: v.optional(v.string()),
  lastModified: v.optional(v.string()),
});
export type ListedObject = v.InferOutput<typeof ObjectSchema>;

const ListSchema = v.object({
  objects: v.array(ObjectSchema),
  isTruncated: boolText,
  nextContinuationToken: v.optional(v.pipe(v.string(), v.minLength(1))),
});
export type ListPage = v.InferOutput<typeof ListSchema>;

/** A ListObjectsV2 answer (`<ListBucketResult>`); an error message when it is not a valid one. */
export function parseListXml(xml: string): { ok: true; value: ListPage } | { ok: false; error: string } {
  const root = xmlElements(xml, 'ListBucketResult')[0];
  if (root === undefined) return { ok: false, error: 'no ListBucketResult element' };
  const own = withoutElements(withoutElements(root, 'Contents'), 'CommonPrefixes');
  const parsed = v.safeParse(ListSchema, {
    objects: xmlElements(root, 'Contents').map((c) => ({
      key: xmlText(c, 'Key'),
      size: xmlText(c, 'Size'),
      etag: xmlText(c, 'ETag'),
      lastModified: xmlText(c, 'LastModified'),
    })),
    isTruncated: xmlText(own, 'IsTruncated') ?? 'false',
    nextContinuationToken: xmlText(own, 'NextContinuationToken') || undefined,
  });
  if (!parsed.success) return { ok: false, error: `invalid ListBucketResult: ${parsed.issues[0]?.message}` };
  if (parsed.output.isTruncated && parsed.output.nextContinuationToken === undefined)
    return { ok: false, error: 'invalid ListBucketResult: truncated without NextContinuationToken' };
  return { ok: true, value: parsed.output };
}

const CopySchema = v.object({ etag: v.pipe(v.string(), v.minLength(1)) });

/** The ETag of a `<CopyObjectResult>`, or undefined when `xml` is not one. */
export function parseCopyXml(xml: string): string | undefined {
  const root = xmlElements(xml, 'CopyObjectResult')[0];
  if (root === undefined) return undefined;
  const parsed = v.safeParse(CopySchema, { etag: xmlText(root, 'ETag') });
  return parsed.success ? parsed.output.etag : undefined;
}
