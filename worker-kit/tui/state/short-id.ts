// The id the UI shows for a case: a UUID's first group (8 hex digits), the prefix `gateway cases show` and
// `gateway support case` accept as long as no other case starts with it. The UI itself always calls the gateway
// with the full id.

export const SHORT_ID_LENGTH = 8;

export const shortId = (id: string): string => id.slice(0, SHORT_ID_LENGTH);

/** A model the request log does not know (validation failed before it was read) is named, never left blank. */
export const modelName = (model: string | null | undefined): string => (model ? model : "(none)");
