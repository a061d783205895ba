// What the chat platform's snapshot text goes through before it is stored (docs/support.md, "Chat platform"):
// staff read it and workers feed it to models, so nothing in it may rewrite what they see. Pure; the schema has
// already bounded its length.

// C0 and C1 controls except tab and newline, and the bidirectional overrides and isolates that can make a
// message display as something other than what it says.
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const HIDDEN = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;

/** Line breaks made `\n`, hidden characters removed, lone surrogates replaced, outer whitespace trimmed. */
export function scrubText(text: string): string {
  return text.toWellFormed().replace(/\r\n?/g, "\n").replace(HIDDEN, "").trim();
}
