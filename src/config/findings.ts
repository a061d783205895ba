import { OPENAI_VIDEO_SECONDS } from "./catalog-schema.js";
import { ConfigError } from "./load.js";
import type { Config, ModelConfig, ProviderConfig } from "./schema.js";

// What the schema cannot see: a config that parses but cannot work (an error: `serve` refuses it, `config check`
// exits 2) or that works but is probably not what was meant (a warning: logged at start, listed by the check).
// docs/configuration.md, "Checks", lists every finding and why it has its level.

export interface ConfigFinding {
  level: "error" | "warning";
  /** The field it is about, dotted (`providers.claude.base_url`); "" for the file as a whole. */
  path: string;
  message: string;
}

type Protocol = ProviderConfig["protocol"];

/**
 * The protocols some route of each kind can call: the union of the `protocols` of the routes serving that kind
 * (src/inference/*-routes.ts, src/media/image-routes.ts, VIDEO_PROTOCOLS). Chat on anthropic is served at
 * /messages only and chat on gemini at /compatible and /v1/chat/completions only, but served all the same.
 */
export const SERVED_PROTOCOLS: Readonly<Record<ModelConfig["kind"], readonly Protocol[]>> = {
  chat: ["openai", "anthropic", "gemini"],
  embedding: ["openai"],
  image: ["openai", "gemini"],
  video: ["video", "openai"],
  systemone: ["systemone"],
};

/** Path endings the gateway appends itself, per protocol: a base URL ending in one doubles it. */
const APPENDED: Readonly<Record<Protocol, { suffixes: readonly string[]; root: string; example: string }>> = {
  openai: {
    suffixes: ["/chat/completions", "/responses", "/embeddings", "/images/generations", "/images/edits", "/videos"],
    root: "the API root including /v1",
    example: "https://api.openai.com/v1",
  },
  video: { suffixes: ["/video/generations"], root: "the API root including /v1", example: "https://api.example.com/v1" },
  anthropic: { suffixes: ["/v1", "/v1/messages"], root: "the host root", example: "https://api.anthropic.com" },
  gemini: {
    suffixes: ["/v1", "/v1beta", "/v1beta/models", "/v1alpha"],
    root: "the host root",
    example: "https://generativelanguage.googleapis.com",
  },
  systemone: { suffixes: ["/v1", "/v1/systemone"], root: "the evaluator's root", example: "https://evaluator.example.com" },
};

function baseUrlFindings(providerId: string, provider: ProviderConfig): ConfigFinding[] {
  const url = new URL(provider.base_url);
  const at = `providers.${providerId}.base_url`;
  const pathname = url.pathname.replace(/\/+$/, "");
  const findings: ConfigFinding[] = [];
  const expected = APPENDED[provider.protocol];
  const doubled = expected.suffixes.find((suffix) => pathname.endsWith(suffix));
  if (doubled) {
    findings.push({
      level: "error",
      path: at,
      message: `ends in ${doubled}, which the gateway appends itself: the base_url of protocol ${provider.protocol} is ${expected.root} (e.g. ${expected.example})`,
    });
  } else if ((provider.protocol === "openai" || provider.protocol === "video") && pathname === "") {
    // OpenAI-compatible servers almost all live under /v1; a few (Groq's /openai/v1) elsewhere, never at the root.
    findings.push({
      level: "warning",
      path: at,
      message: `has no path: requests would go to ${url.origin}/chat/completions; OpenAI-style APIs live under /v1 (e.g. ${expected.example})`,
    });
  }
  if (url.search !== "" || url.hash !== "") {
    findings.push({ level: "error", path: at, message: "has a query string or fragment, which is never sent upstream" });
  }
  return findings;
}

/**
 * OpenAI makes clips of 4, 8 or 12 seconds only: a video model with an `openai` target must default to one of
 * them, and allow at least the shortest (else every request without a `duration` would be refused).
 */
function openaiVideoFindings(modelId: string, model: ModelConfig, protocols: readonly Protocol[]): ConfigFinding[] {
  const price = model.video_price;
  if (model.kind !== "video" || !price || !protocols.includes("openai")) return [];
  const allowed = OPENAI_VIDEO_SECONDS.join(", ");
  const findings: ConfigFinding[] = [];
  if (!(OPENAI_VIDEO_SECONDS as readonly number[]).includes(price.default_seconds)) {
    findings.push({
      level: "error",
      path: `models.${modelId}.video_price.default_seconds`,
      message: `is ${price.default_seconds}: OpenAI makes videos of ${allowed} seconds only, so a model with an openai target defaults to one of them`,
    });
  }
  if (price.max_seconds < OPENAI_VIDEO_SECONDS[0]) {
    findings.push({
      level: "error",
      path: `models.${modelId}.video_price.max_seconds`,
      message: `is ${price.max_seconds}: OpenAI makes videos of ${allowed} seconds only, so a model with an openai target allows at least ${OPENAI_VIDEO_SECONDS[0]}`,
    });
  }
  return findings;
}

function modelFindings(modelId: string, model: ModelConfig, config: Config): ConfigFinding[] {
  const served = SERVED_PROTOCOLS[model.kind];
  const protocols = model.targets.map((target) => config.providers[typeof target === "string" ? target : target.provider]!.protocol);
  if (!protocols.some((p) => served.includes(p))) {
    return [
      {
        level: "error",
        path: `models.${modelId}.targets`,
        message: `no route serves kind ${model.kind} on protocol ${[...new Set(protocols)].join(", ")}: it needs a target of protocol ${served.join(" or ")}`,
      },
    ];
  }
  const unserved = protocols.flatMap((protocol, i) =>
    served.includes(protocol)
      ? []
      : [
          {
            level: "warning" as const,
            path: `models.${modelId}.targets.${i}`,
            message: `protocol ${protocol} cannot serve kind ${model.kind}: this target is never tried`,
          },
        ],
  );
  return [...openaiVideoFindings(modelId, model, protocols), ...unserved];
}

/** Every finding of a config the schema accepted, errors first, each group in the file's order. */
export function configFindings(config: Config): ConfigFinding[] {
  const findings: ConfigFinding[] = [];
  if (Object.keys(config.models).length === 0) {
    findings.push({ level: "error", path: "models", message: "no models are defined: the gateway would have nothing to serve" });
  }
  const used = new Set<string>();
  for (const model of Object.values(config.models)) {
    for (const target of model.targets) used.add(typeof target === "string" ? target : target.provider);
  }
  for (const [providerId, provider] of Object.entries(config.providers)) {
    findings.push(...baseUrlFindings(providerId, provider));
    if (!used.has(providerId)) {
      findings.push({ level: "warning", path: `providers.${providerId}`, message: "no model uses this provider" });
    }
  }
  for (const [modelId, model] of Object.entries(config.models)) findings.push(...modelFindings(modelId, model, config));
  return [...findings.filter((f) => f.level === "error"), ...findings.filter((f) => f.level === "warning")];
}

/** Stops on the first error as an invalid config does (exit 2), naming how many more there are. */
export function refuseErrors(findings: readonly ConfigFinding[], file: string): void {
  const errors = findings.filter((f) => f.level === "error");
  if (errors.length === 0) return;
  const [first, ...rest] = errors;
  throw new ConfigError(
    first!.path,
    first!.message,
    file,
    rest.map((f) => ({ path: f.path, reason: f.message })),
  );
}
