import { STREAM_FAILURE_MESSAGES, type RelayProtocol } from "../metering/relays/stream-relay.js";
import type { StreamEvent, UsageReport } from "../providers/types.js";
import { addImageUsages } from "../providers/upstream-images/add-image-usages.js";

// An image edit stream as the client gets it (spec "Image generation response" rule 4, Events 1; docs/api.md,
// "Images"): each event's bytes as the upstream sent them, once its image is proven an image; the usage read
// from the completed events without touching their bytes. An event with fields OpenAI's ImageEditStreamEvent
// does not have (routing metadata) is written again with its own fields only; an upstream `error` event never
// reaches the client (the adapter raises it by its code, and the relay ends the stream with the gateway's).

/** The fields of ImageEditPartialImageEvent and ImageEditCompletedEvent (OpenAI's description). */
const EVENT_FIELDS = new Set([
  "type",
  "b64_json",
  "created_at",
  "size",
  "quality",
  "background",
  "output_format",
  "partial_image_index",
  "usage",
]);

const COMPLETED = "image_edit.completed";

/** Checks that an event's base64 is an image the gateway delivers (throws ImageDeliveryError otherwise). */
export type InlineImageCheck = (base64: string) => Promise<void>;

export interface EditStreamUsage {
  /** Completed images so far. */
  images: number;
  /** Their usages added up; undefined when one came without usage (the fallback's `absent`). */
  usage: unknown;
  /** The token view of the same usage (for the request log), null when unusable. */
  tokens: UsageReport | null;
}

export interface ImageEditRelay extends RelayProtocol {
  /** What the completed events reported; read when the stream ends. */
  completed(): EditStreamUsage;
}

/**
 * The relay's protocol; `bill` turns what was completed into the billed usage (the route knows the model and the
 * request). `check` validates each event's image before its bytes are written.
 */
export function imageEditRelay(
  check: InlineImageCheck,
  tokensOf: (usage: unknown) => UsageReport | null,
  bill: (completed: EditStreamUsage) => UsageReport,
): ImageEditRelay {
  let images = 0;
  let usage: unknown;
  let usageMissing = false;

  const frame = (name: string | undefined, data: string) => (name ? `event: ${name}\ndata: ${data}\n\n` : `data: ${data}\n\n`);

  function text(event: Extract<StreamEvent, { data: unknown }>): string {
    const { data } = event;
    if (data.type === COMPLETED) {
      images += 1;
      if (data.usage === undefined || data.usage === null) usageMissing = true;
      else usage = images === 1 ? data.usage : addImageUsages(usage, data.usage);
    }
    for (const key of Object.keys(data)) {
      if (!EVENT_FIELDS.has(key)) {
        const own: Record<string, unknown> = {};
        for (const field of Object.keys(data)) if (EVENT_FIELDS.has(field)) own[field] = data[field];
        return frame(event.event, JSON.stringify(own));
      }
    }
    return frame(event.event, event.raw);
  }

  const completed = (): EditStreamUsage => {
    const reported = usageMissing ? undefined : usage;
    return { images, usage: reported, tokens: reported === undefined ? null : tokensOf(reported) };
  };

  return {
    // A completed image can be the end: it waits for the next event, or for the charge when none follows.
    closing: (event) => "done" in event || event.data.type === COMPLETED,
    transform(event) {
      if ("done" in event) return "data: [DONE]\n\n";
      const base64 = event.data.b64_json;
      if (typeof base64 !== "string") return text(event);
      return check(base64).then(() => text(event));
    },
    completed,
    // Asked once the stream is over: the completed events' usage when every one had some (source `upstream`),
    // else the per-image fallback of what was completed (`estimated`).
    usage: () => (images > 0 && !usageMissing ? bill(completed()) : null),
    countLocal: async () => bill(completed()),
    errorFrame: (_requestId, code) =>
      frame(
        "error",
        JSON.stringify({
          type: "error",
          error: {
            message: code === "upstream_invalid_output" ? "The upstream sent an invalid image." : STREAM_FAILURE_MESSAGES[code],
            type: "upstream_error",
            code,
            param: null,
          },
        }),
      ),
  };
}
