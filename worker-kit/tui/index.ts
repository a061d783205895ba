// The `@model-gateway/worker-kit/tui` export: the support engineer's terminal UI. The only export that loads Ink and
// React (optional peer dependencies of the package), so the core never pulls them in.

export { runTui, type TuiOptions } from "./run.js";
