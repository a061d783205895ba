import { readFile } from "node:fs/promises";
import os from "node:os";
import { Command, Option } from "commander";
import { DISPOSITIONS, LEASE_SECONDS } from "@model-gateway/worker-kit/wire/support";
import {
  describeError,
  MANUAL_LEASE_SECONDS,
  manualCompleteRequest,
  manualFailRequest,
  parseCardJson,
  type Disposition,
} from "@model-gateway/worker-kit";
import { intIn } from "./options.js";
import { fail, printJson } from "./output.js";
import {
  processSources,
  readAllStdin,
  resolveAccess,
  withAccessOptions,
  withStaff,
  workerOf,
  type AccessOptions,
} from "./support-access.js";
import {
  caseListVerb,
  caseShowVerb,
  caseVerbs,
  incidentListVerb,
  incidentVerbs,
  type StaffFamily,
  type VerbOptions,
} from "./staff-commands.js";
import { claimText, completeText, failText } from "./support-text.js";

// `gateway support`: the support engineer's terminal UI, and a non-interactive twin of each of its screens for
// scripts and CI (docs/worker-kit.md, "Non-interactive commands"). The twins speak to the gateway over HTTP like
// the UI does, and never load Ink or React: only the bare `gateway support` imports the UI, lazily.

type Json = { json?: boolean };

/** Prints the answer as JSON or as a few human lines; every error becomes one line and exit status 1. */
function twin<A extends unknown[]>(work: (...args: A) => Promise<{ json: unknown; text: string[] }>, opts: (...args: A) => Json) {
  return async (...args: A) => {
    try {
      const answer = await work(...args);
      if (opts(...args).json) printJson(answer.json);
      else process.stdout.write(`${answer.text.join("\n")}\n`);
    } catch (err) {
      fail(new Error(describeError(err)));
    }
  };
}

const lastOpts = <A extends unknown[]>(...args: A) => args[args.length - 2] as Json;

const access = (opts: AccessOptions) => resolveAccess(opts, processSources());

async function readContent(file: string): Promise<string> {
  return file === "-" ? readAllStdin() : readFile(file, "utf8");
}

async function readCard(file: string | undefined) {
  if (file === undefined) return null;
  const parsed = parseCardJson(await readFile(file, "utf8"));
  if (!parsed.ok) throw new Error(`${file}: ${parsed.problem}`);
  return parsed.card;
}

/** The staff's verbs over HTTP: the same as `gateway cases` / `gateway incidents` on the database (cli/staff-commands.ts). */
const httpFamily: StaffFamily<AccessOptions & VerbOptions> = {
  options: (cmd) => withAccessOptions(cmd).option("--json", "print JSON for scripts"),
  run: async (opts, work) => withStaff(await access(opts), work),
  fail: (err) => fail(new Error(describeError(err))),
};

function staffCommands(support: Command): void {
  caseVerbs(support.command("cases").description("support cases over HTTP: list, show, takeover, resume, resolve, reopen"), httpFamily);
  caseListVerb(support.command("queue").description("support cases, newest first (one page): `support cases list`"), httpFamily);
  caseShowVerb(support.command("case").description("a case: transcript, card, jobs (`support cases show`)"), httpFamily);
  // Bare, it lists (its --json the `{incidents}` object it has always printed); its subcommands are the verbs.
  const incidents = incidentListVerb(
    support.command("incidents").description("incidents over HTTP: list (bare, or `list`), update, publish, scan"),
    httpFamily,
    (list) => list,
  ).enablePositionalOptions();
  incidentVerbs(incidents, httpFamily);
}

function jobCommands(support: Command): void {
  const job = support.command("job").description("work a support job by hand with the bot token: claim, complete, fail");

  withAccessOptions(job.command("claim").description("claim the oldest claimable job"))
    .option(
      "--lease-seconds <n>",
      `lease length (${LEASE_SECONDS.min}..${LEASE_SECONDS.max})`,
      intIn(LEASE_SECONDS.min, LEASE_SECONDS.max, "--lease-seconds"),
      MANUAL_LEASE_SECONDS,
    )
    .option("--json", "print JSON for scripts")
    .action(
      twin(async (opts: AccessOptions & Json & { leaseSeconds: number }) => {
        const a = await access(opts);
        const workerId = `cli:${a.email ?? os.userInfo().username}`;
        const jobs = await workerOf(a).claim({ limit: 1, lease_seconds: opts.leaseSeconds, worker_id: workerId });
        return { json: { jobs }, text: claimText(jobs) };
      }, lastOpts),
    );

  withAccessOptions(job.command("complete").description("complete a claimed job (a person's work: usage all zero)"))
    .argument("<id>", "job id")
    .requiredOption("--lease-token <token>", "the claim's lease_token")
    .requiredOption("--revision <n>", "the claimed job's revision", intIn(1, Number.MAX_SAFE_INTEGER, "--revision"))
    .requiredOption("--content-file <file>", "the answer's text (- reads stdin)")
    .option("--card-file <file>", "the card as JSON (cardSchema)")
    .addOption(new Option("--disposition <d>", "what the completion is").choices(DISPOSITIONS).default("answer"))
    .option("--json", "print JSON for scripts")
    .action(
      twin(
        async (
          id: string,
          opts: AccessOptions &
            Json & { leaseToken: string; revision: number; contentFile: string; cardFile?: string; disposition: Disposition },
        ) => {
          if (opts.contentFile === "-" && opts.passwordStdin)
            throw new Error("--content-file - and --password-stdin both read stdin: use a file");
          const worker = workerOf(await access(opts));
          const answer = {
            content: await readContent(opts.contentFile),
            card: await readCard(opts.cardFile),
            disposition: opts.disposition,
          };
          const result = await worker.complete(
            id,
            manualCompleteRequest({ lease_token: opts.leaseToken, revision: opts.revision }, answer),
          );
          return { json: result, text: completeText(result) };
        },
        lastOpts,
      ),
    );

  withAccessOptions(job.command("fail").description("fail a claimed job: retryable (queued again after a backoff) unless --permanent"))
    .argument("<id>", "job id")
    .requiredOption("--lease-token <token>", "the claim's lease_token")
    .requiredOption("--error-code <code>", "why, as a code (e.g. manual_release)")
    .option("--permanent", "fail it for good instead of giving it back")
    .option("--json", "print JSON for scripts")
    .action(
      twin(async (id: string, opts: AccessOptions & Json & { leaseToken: string; errorCode: string; permanent?: boolean }) => {
        const worker = workerOf(await access(opts));
        const result = await worker.fail(id, manualFailRequest(opts.leaseToken, opts.errorCode, opts.permanent !== true));
        return { json: result, text: failText(result) };
      }, lastOpts),
    );
}

/**
 * Ink draws only the last frame, at exit, when CI or CONTINUOUS_INTEGRATION is set (it reads them once, when it
 * loads). Whoever opens the interactive UI on a terminal wants every frame, whatever their shell exports.
 */
function drawEveryFrame() {
  if (!process.stdout.isTTY) return;
  delete process.env.CI;
  delete process.env.CONTINUOUS_INTEGRATION;
}

export function supportCommand(): Command {
  const support = withAccessOptions(new Command("support"))
    // The subcommands take the same options: without this (and the program's), `support queue --url X` would hand --url to `support`.
    .enablePositionalOptions()
    .action(async (opts: AccessOptions) => {
      try {
        const a = await access(opts);
        drawEveryFrame();
        const { runTui } = await import("@model-gateway/worker-kit/tui");
        await runTui({ baseUrl: a.baseUrl, email: a.email, password: a.password, botToken: a.botToken });
      } catch (err) {
        fail(new Error(describeError(err)));
      }
    });
  staffCommands(support);
  jobCommands(support);
  return support;
}
