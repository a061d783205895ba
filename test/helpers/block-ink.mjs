// `node --import ./test/helpers/block-ink.mjs ...`: from then on, importing Ink or React (or the Ink testing
// library) throws. The e2e test runs the non-interactive `gateway support` commands under it to prove they
// never load the UI.
import { register } from "node:module";

register("./block-ink-hooks.mjs", import.meta.url);
