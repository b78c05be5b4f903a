/** A JSON object whose shape is not ours to know (a Station's pod template, a manifest fragment). */
export type JsonObject = Record<string, unknown>;
