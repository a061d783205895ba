import { readFileSync } from "node:fs";
import path from "node:path";
import { z } from "zod";
import { packageRoot } from "../package-root.js";
import { ours } from "../openapi/operation.js";
import { route } from "./route.js";

// GET /: what someone who opens the gateway's address finds, instead of a 404: which software answers and where
// to go next. Public, as /healthz and /openapi.json are; it names nothing of the configuration.

export const indexSchema = z.object({
  name: z.string(),
  version: z.string(),
  links: z.object({
    openapi: z.literal("/openapi.json").meta({ description: "The API description (OpenAPI 3.1)." }),
    healthz: z.literal("/healthz"),
    readyz: z.literal("/readyz"),
    models: z.literal("/v1/models").meta({ description: "The models an API key may use (needs the key)." }),
    docs: z.string().meta({ description: "The HTTP API reference, a path inside the gateway's distribution." }),
  }),
});

const manifestSchema = z.object({ name: z.string(), version: z.string() });

/** GET /, its answer made once from package.json. */
export const indexRoute = route<unknown>(
  {
    method: "get",
    path: "/",
    operationId: "getIndex",
    summary: "What answers here: the gateway's name and version, and links to the API description, the probes and the docs",
    tag: "Operations",
    access: "public",
    ok: { status: 200, description: "The index.", schema: ours("Index", indexSchema) },
  },
  () => {
    const { name, version } = manifestSchema.parse(JSON.parse(readFileSync(path.join(packageRoot, "package.json"), "utf8")));
    const index: z.infer<typeof indexSchema> = {
      name,
      version,
      links: { openapi: "/openapi.json", healthz: "/healthz", readyz: "/readyz", models: "/v1/models", docs: "docs/api.md" },
    };
    return (c) => c.json(index);
  },
);
