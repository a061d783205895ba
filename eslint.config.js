// Lint config. Besides the usual checks it enforces the one-way import direction of DESIGN.md §3:
//   pure (errors, billing, config) <- providers <- db/quota <- server (the HTTP toolkit) <- services, in serviceOrder
//   <- runtime (composition root, app assembly) <- {cli, worker-kit}
// and, by scripts/check-cycles.mjs (also in `npm run lint`), no import cycle between files or folders.
import js from "@eslint/js";
import globals from "globals";
import tseslint from "typescript-eslint";

const layer = (regex, message) => ({ regex, message });

const notCli = layer("(^|/)(cli|worker-kit)(/|$)", "src/ never imports cli/ or worker-kit/ (they depend on src/, not the reverse).");
const notRuntime = layer("(^|/)runtime/", "Only cli/ and the runtime itself use src/runtime (the composition root).");
const serviceFolders = "(inference|media|support|transfers|analytics|server|jobs|runtime|auth|catalog|metering|account|mock-upstream)";
const ioFolders = `(db|quota|providers|${serviceFolders.slice(1, -1)})`;

/**
 * The order among the service and route folders, lowest first: each imports only folders before it (and the
 * layers below every service). Folders not built yet have their place already, so that they land in order.
 */
export const serviceOrder = [
  "catalog",
  "auth",
  "analytics",
  "account",
  "metering",
  "inference",
  "media",
  "transfers",
  "support",
  "jobs",
  "mock-upstream",
];

const serviceLayers = serviceOrder.slice(0, -1).map((folder, i) => {
  const above = serviceOrder.slice(i + 1);
  return {
    files: [`src/${folder}/**/*.ts`],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          patterns: [
            notCli,
            notRuntime,
            layer(`(^|/)(${above.join("|")})/`, `src/${folder} sits below ${above.join(", ")}: it imports none of them.`),
          ],
        },
      ],
    },
  };
});

export const importLayers = [
  {
    files: ["src/**/*.ts"],
    rules: { "no-restricted-imports": ["error", { patterns: [notCli, notRuntime] }] },
  },
  {
    files: ["src/runtime/**/*.ts"],
    rules: { "no-restricted-imports": ["error", { patterns: [notCli] }] },
  },
  {
    files: ["src/errors.ts", "src/billing/**/*.ts", "src/config/**/*.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          patterns: [
            notCli,
            layer(`(^|/)${ioFolders}/`, "Pure modules (errors, billing, config) import no I/O layer."),
            layer("^(pg|drizzle-orm|undici|hono|graphile-worker)", "Pure modules stay free of I/O libraries."),
          ],
        },
      ],
    },
  },
  {
    files: ["src/providers/**/*.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          patterns: [notCli, layer(`(^|/)(db|quota|${serviceFolders.slice(1, -1)})/`, "Providers sit below the ledger and the services.")],
        },
      ],
    },
  },
  ...serviceLayers,
  {
    // The HTTP toolkit (context, body reading, respond, the error envelope, health): every route folder imports
    // it, so it imports none of them; the app that mounts them is assembled in src/runtime/app.ts.
    files: ["src/server/**/*.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          patterns: [
            notCli,
            notRuntime,
            layer(
              `(^|/)(quota|${serviceFolders.slice(1, -1).replace("server|", "")})/`,
              "src/server is the HTTP toolkit below every route folder: it imports none of them.",
            ),
          ],
        },
      ],
    },
  },
  {
    files: ["src/db/**/*.ts", "src/quota/**/*.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          patterns: [
            notCli,
            // A table may refer to another folder's (the ledger's foreign key to users): schema files may import schema files.
            layer(`(^|/)${serviceFolders}/(?!schema\\.js$)`, "The database and ledger layers do not import services or routes."),
          ],
        },
      ],
    },
  },
];

export default tseslint.config(
  { ignores: ["dist/", "node_modules/", "migrations/", "coverage/", ".gateway/"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: globals.node },
    rules: {
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
    },
  },
  ...importLayers,
  {
    // Code that runs per request or per stream event: on Node 20 an object spread followed by other members
    // builds a new hidden class for every object (src/objects.ts, docs/performance.md "Object spread"), and a
    // getter or setter in an object literal puts an accessor pair in the old generation for every object, which
    // keeps the accessor's closure (and all it refers to) through scavenges (src/inference/stream-relay.ts).
    files: ["src/{inference,metering,providers,server,quota,analytics,auth,account,catalog}/**/*.ts"],
    rules: {
      "no-restricted-syntax": [
        "error",
        {
          selector: ":function ObjectExpression > SpreadElement",
          message:
            "No object spread in per-request code: use a literal, Object.assign on a fresh object of the gateway's own keys, or extended() from src/objects.ts.",
        },
        {
          selector: ":function ObjectExpression > Property[kind=/^[gs]et$/]",
          message:
            "No getter or setter in an object literal in per-request code: use a method, or a class (its accessors are defined once).",
        },
      ],
    },
  },
);
