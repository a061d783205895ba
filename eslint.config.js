// Lint config. Besides the usual checks it enforces the one-way import direction (docs/architecture.md, "Layout"):
//   pure (errors, billing, config) <- openapi <- metrics <- providers <- db/quota <- server (the HTTP toolkit) <- services, in serviceOrder
//   <- runtime (composition root, app assembly) <- {cli, worker-kit}
// worker-kit is a package of its own (@model-gateway/worker-kit, docs/worker-kit.md): no relative import leaves its
// folder, it imports only its own dependencies, and it speaks to the gateway over HTTP. The wire modules the two
// share (worker-kit/wire/: pure zod schemas of what the routes take and answer) live in it; src/ imports them as
// `@model-gateway/worker-kit/wire/<name>` and nothing else of it, cli/ imports the package's exports only, and a
// wire module imports nothing but zod and other wire modules (test/unit/import-layers.test.ts walks the graph).
// And, by scripts/check-cycles.mjs (also in `npm run lint`), no import cycle between files or folders.
import path from "node:path";
import js from "@eslint/js";
import globals from "globals";
import tseslint from "typescript-eslint";

const layer = (regex, message) => ({ regex, message });
/** An import of any of `folders` (a path segment), optionally followed by `rest`. */
const anyOf = (folders, rest = "") => `(^|/)(${folders.join("|")})/${rest}`;
/** One block of the rule: these files may import none of these patterns. */
const restrict = (files, ...patterns) => ({ files, rules: { "no-restricted-imports": ["error", { patterns }] } });

const notCli = layer(
  "^(?:\\.{1,2}/(?:.*/)?(?:cli|worker-kit)(?:/|$)|@model-gateway/worker-kit(?!/wire/[a-z0-9-]+$))",
  "src/ never imports cli/ or worker-kit/ (they depend on src/, not the reverse); of worker-kit only its wire modules, as @model-gateway/worker-kit/wire/<name>.",
);
/** worker-kit is installed on its own: what it imports must be in its own package.json. */
const notOwnDependency = layer(
  "^(?!node:|zod$|pino$|ink$|react$|\\.)",
  "worker-kit imports only its own dependencies (worker-kit/package.json: zod, pino; ink and react in tui/) and node: built-ins.",
);
const notRuntime = layer("(^|/)runtime/", "Only cli/ and the runtime itself use src/runtime (the composition root).");
/**
 * The ledger's statements and its lock order (docs/billing.md, "Locks") are its own: what sits above it moves
 * quota through the QuotaLedger, or, inside a transaction it holds, through the ledger's face for that.
 */
const notQuotaStatements = layer(
  "(^|/)quota/(?:[a-z0-9-]+-sql|account-locks)\\.js$",
  "quota's statements (its *-sql.ts modules) and account-locks.ts are the ledger's own: use the QuotaLedger, or inside a transaction you hold, ledgerInTransaction(client) from src/quota/in-transaction.ts (it takes the ledger's locks in the ledger's order).",
);

/**
 * The order among the service and route folders, lowest first: each imports only folders before it (and the
 * layers below every service). Folders not built yet have their place already, so that they land in order.
 */
export const serviceOrder = [
  "catalog",
  "auth",
  "analytics",
  "balances",
  "metering",
  "inference",
  "media",
  "transfers",
  "support",
  "jobs",
  "mock-upstream",
];
/** Everything above the database and the ledger: the HTTP toolkit, the services, the composition root. */
const aboveLedger = ["server", ...serviceOrder, "runtime"];

/** The gateway's own wire module files, and what they may import. */
export const WIRE_FILES = ["src/**/wire.ts", "src/**/*-wire.ts"];

/**
 * A relative import that resolves outside the folder given as the option: worker-kit is packed and installed on
 * its own, and a file outside its folder is not in the package.
 */
const packageBoundary = {
  meta: {
    type: "problem",
    schema: [{ type: "string" }],
    messages: { outside: '"{{spec}}" leaves {{folder}}/: a package imports its own files and its dependencies only.' },
  },
  create(context) {
    const folder = context.options[0];
    const root = path.resolve(context.cwd, folder);
    const check = (node) => {
      const spec = node.source?.value;
      if (typeof spec !== "string" || !spec.startsWith(".")) return;
      const target = path.resolve(path.dirname(context.filename), spec);
      if (!target.startsWith(root + path.sep)) context.report({ node: node.source, messageId: "outside", data: { spec, folder } });
    };
    return { ImportDeclaration: check, ExportNamedDeclaration: check, ExportAllDeclaration: check, ImportExpression: check };
  },
};

export const importLayers = [
  restrict(["src/**/*.ts"], notCli, notRuntime, notQuotaStatements),
  restrict(["src/runtime/**/*.ts"], notCli, notQuotaStatements),
  restrict(
    ["cli/**/*.ts"],
    notQuotaStatements,
    layer(
      "^(?:\\.{1,2}/(?:.*/)?worker-kit(?:/|$)|@model-gateway/worker-kit/(?!tui$|reference$|wire/[a-z0-9-]+$))",
      "cli/ imports worker-kit through the package's exports only: @model-gateway/worker-kit, /tui, /reference, /wire/<name>.",
    ),
  ),
  restrict(
    ["src/errors.ts", "src/billing/**/*.ts", "src/config/**/*.ts", "src/time/**/*.ts"],
    notCli,
    layer(anyOf(["metrics", "db", "quota", "providers", ...aboveLedger]), "Pure modules (errors, billing, config) import no I/O layer."),
    layer("^(pg|drizzle-orm|undici|hono|graphile-worker|prom-client)", "Pure modules stay free of I/O libraries."),
  ),
  // The API description's machinery: route folders and providers (the evaluation request's JSON Schema) use it.
  restrict(
    ["src/openapi/**/*.ts"],
    notCli,
    notRuntime,
    layer(
      anyOf(["metrics", "db", "quota", "providers", ...aboveLedger]),
      "src/openapi sits below every I/O layer: it imports none of them.",
    ),
  ),
  // The recorders every layer that records is given (the ledger, the metering path, the app's middleware): below
  // all of them, so it reads their numbers through structural types (src/metrics/recorders.ts), never their modules.
  restrict(
    ["src/metrics/**/*.ts"],
    notCli,
    notRuntime,
    layer(anyOf(["providers", "db", "quota", ...aboveLedger]), "src/metrics sits below every layer that records: it imports none of them."),
  ),
  restrict(
    ["src/providers/**/*.ts"],
    notCli,
    layer(anyOf(["db", "quota", ...aboveLedger]), "Providers sit below the ledger and the services."),
  ),
  ...serviceOrder.slice(0, -1).map((folder, i) => {
    const above = serviceOrder.slice(i + 1);
    return restrict(
      [`src/${folder}/**/*.ts`],
      notCli,
      notRuntime,
      notQuotaStatements,
      layer(anyOf(above), `src/${folder} sits below ${above.join(", ")}: it imports none of them.`),
    );
  }),
  // The HTTP toolkit (context, body reading, respond, the error envelope, health): every route folder imports
  // it, so it imports none of them; the app that mounts them is assembled in src/runtime/app.ts.
  restrict(
    ["src/server/**/*.ts"],
    notCli,
    notRuntime,
    layer(anyOf(["quota", ...serviceOrder]), "src/server is the HTTP toolkit below every route folder: it imports none of them."),
  ),
  restrict(
    ["src/db/**/*.ts", "src/quota/**/*.ts"],
    notCli,
    // A table may refer to another folder's (the ledger's foreign key to users): schema files may import schema files.
    layer(anyOf(aboveLedger, "(?!schema\\.js$)"), "The database and ledger layers do not import services or routes."),
  ),
  restrict(
    WIRE_FILES,
    layer("^(?!zod$|\\.|@model-gateway/worker-kit/wire/)", "A wire module imports no package but zod (and worker-kit's wire modules)."),
    layer("^\\.{1,2}/(?!(?:\\.\\./)*(?:[a-z0-9-]+/)*(?:[a-z0-9-]+-)?wire\\.js$)", "A wire module imports only other wire modules."),
  ),
  restrict(["worker-kit/**/*.{ts,tsx}"], notOwnDependency),
  restrict(
    ["worker-kit/wire/**/*.ts"],
    layer("^(?!zod$|\\./[a-z0-9-]+\\.js$)", "A wire module imports nothing but zod and the other wire modules beside it."),
  ),
  // The core (client, runner, reference worker, the TUI's state) has no UI: the CLI's --json twins load it
  // without ever loading Ink or React.
  ...[
    ["worker-kit/{index,client/**/*,runner/**/*,reference/**/*,tui/editor,tui/screen}.ts", "(^|/)tui/(?!state/|editor\\.js$|screen\\.js$)"],
    ["worker-kit/tui/state/**/*.ts", "^\\.\\./(?!\\.\\./|editor\\.js$|screen\\.js$)"],
  ].map(([files, components]) =>
    restrict(
      [files],
      notOwnDependency,
      layer(
        "^(ink|react|ink-testing-library)(/|$)",
        "worker-kit's core has no UI import: only worker-kit/tui components use Ink and React.",
      ),
      layer(components, "worker-kit's core does not import the TUI's components."),
    ),
  ),
];

export default tseslint.config(
  { ignores: ["**/dist/", "**/node_modules/", "migrations/", "coverage/", ".gateway/"] },
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
    files: ["worker-kit/**/*.{ts,tsx}"],
    plugins: { "model-gateway": { rules: { "package-boundary": packageBoundary } } },
    rules: { "model-gateway/package-boundary": ["error", "worker-kit"] },
  },
  {
    // One concern a file, one step a function (docs/architecture.md, "Rules"): a file past 400 lines or a function
    // past 80 (its nested functions counted, as a factory's methods are) is split by concern, not trimmed.
    files: ["src/**/*.ts", "cli/**/*.ts", "worker-kit/**/*.{ts,tsx}"],
    rules: {
      "max-lines": ["error", { max: 400 }],
      "max-lines-per-function": ["error", { max: 82 }],
    },
  },
  {
    // Code that runs per request or per stream event: on Node 20 an object spread followed by other members
    // builds a new hidden class for every object (src/objects.ts, docs/performance.md "Object spread"), and a
    // getter or setter in an object literal puts an accessor pair in the old generation for every object, which
    // keeps the accessor's closure (and all it refers to) through scavenges (src/metering/relays/stream-relay.ts).
    files: ["src/{inference,metering,providers,server,quota,analytics,auth,balances,catalog,metrics}/**/*.ts"],
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
