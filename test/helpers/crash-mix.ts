import { setTimeout as sleep } from "node:timers/promises";
import type { Pool } from "../../src/db/pool.js";
import { parseUsd } from "../../src/billing/usd.js";
import type { ClusterBench } from "./cluster-bench.js";
import { startLoad, type GatewayCluster, type Load } from "./crash-cluster.js";
import type { TestDatabase } from "./db.js";
import { startEvaluationLoad, type EvaluationLoad } from "./evaluation-load.js";
import { logIn, type Session } from "./login.js";
import { startTransfers, type TransferAttempt } from "./transfer-load.js";
import { startVideoLoad, type VideoLoad } from "./video-load.js";

// The rest of the traffic the crash test (test/e2e/ledger-crash.test.ts) runs beside its chat load, through the
// SIGKILL and the cuts: a reseller's evaluations paid in USD, video jobs, a user on a small daily allowance whose
// automatic resets run out, and token transfers among the chat users. Here: the config they need, their users and
// their clients; crash-mix-proof.ts reads the rows that prove them.

const PASSWORD = "correct horse";
/** The reseller's credit: far above what a run spends (about 0.05 USD per 1,000 evaluations here). */
export const CREDIT_USD = "5";
export const CREDIT_NANO = parseUsd(CREDIT_USD)!;
/** Seconds per video, at 100 units a second: each job holds and is charged this × 100. */
export const VIDEO_SECONDS = 2;
export const VIDEO_CHARGE = BigInt(VIDEO_SECONDS * 100);
/**
 * The resets user's day and week: every request holds about 70 (50 completion tokens and its prompt) and is
 * charged about 20-45. The three processes' leases hold part of so small a day, so it runs under the 100-unit
 * threshold after a few hundred units, and each reset restores what was spent since the last (about 100-200):
 * at a few requests a second, a reset every second or so, through the kill, until the week's are gone.
 */
export const RESET_DAILY = 400;
export const RESET_WEEKLY = 8;
const RESET_MAX_TOKENS = 50;

/** The providers, models, plan and video polling the mix needs, merged into the test's config. */
export function mixConfig(bench: ClusterBench) {
  return {
    providers: {
      judge: { protocol: "systemone", base_url: bench.upstream.baseUrl({}).replace(/\/v1$/, ""), api_key: "mock-key" },
      vid: { protocol: "video", base_url: bench.upstream.baseUrl({}), api_key: "mock-key" },
    },
    models: {
      "mix-judge": { kind: "systemone", upstream: "1.13.0", targets: ["judge"], reseller_price: { input_usd_per_million: 0.5 } },
      "mix-clip": {
        kind: "video",
        upstream: "mock-video",
        targets: ["vid"],
        video_price: { units_per_second: 100, default_seconds: VIDEO_SECONDS, max_seconds: 10 },
      },
    },
    plans: { "mix-resets": { daily_tokens: RESET_DAILY, weekly_resets: RESET_WEEKLY, context_limit: 128_000 } },
    // A job completes at its second poll: about two seconds after its submission, on whichever process polls it.
    media: { video: { poll_interval_seconds: 1, claim_seconds: 2 } },
  };
}

export interface MixUser {
  id: string;
  email: string;
  key: string;
}

export interface MixUsers {
  reseller: MixUser;
  video: MixUser;
  resets: MixUser;
}

/** The mix's users and keys, by the admin CLI: the reseller's credited, the resets user on the small plan. */
export async function createMixUsers(bench: ClusterBench, configFile: string, db: TestDatabase, label: string): Promise<MixUsers> {
  const cli = (args: string[]) => bench.cli(args, configFile, db);
  const user = async (name: string, plan: string[], keyKind: string[] = [], credit = false) => {
    const email = `mix-${label}-${name}@example.test`;
    const created = await cli(["users", "create", "--email", email, "--password", PASSWORD, ...plan]);
    const [{ key }] = await Promise.all([
      cli(["keys", "create", "--user", email, ...keyKind]),
      credit && cli(["reseller", "credit", "--user", email, "--usd", CREDIT_USD]),
    ]);
    return { id: created.id!, email, key: key! };
  };
  const [reseller, video, resets] = await Promise.all([
    user("reseller", [], ["--kind", "reseller"], true),
    user("video", []),
    user("resets", ["--plan", "mix-resets"]),
  ]);
  return { reseller, video, resets };
}

/** A session per email; the chat users were created with the mix's password ("correct horse") too. */
export const logInAll = (url: string, emails: string[]): Promise<Session[]> => Promise.all(emails.map((e) => logIn(url, e, PASSWORD)));

/** Turns the user's automatic resets on, as the user does (`PUT /api/v1/user/quota-resets`). */
export async function enableAutoResets(url: string, email: string): Promise<void> {
  const { headers } = await logIn(url, email, PASSWORD);
  const res = await fetch(`${url}/api/v1/user/quota-resets`, {
    method: "PUT",
    headers: { ...headers, "content-type": "application/json" },
    body: JSON.stringify({ auto_reset_enabled: true }),
  });
  if (res.status !== 200) throw new Error(`auto resets of ${email}: ${res.status} ${await res.text()}`);
}

export interface Mix {
  evaluations: EvaluationLoad;
  resets: Load;
  videos: VideoLoad;
  transfers: { attempts: TransferAttempt[]; stop(): Promise<void> };
  /** The video loop skips the victim from now until `victimBack()`; resolves once none of its submissions is under way. */
  victimDown(): Promise<void>;
  victimBack(): void;
  /** Stops everything but the resets' clients. */
  stop(): Promise<void>;
}

/**
 * Starts the mix over the cluster: evaluations and the resets user's requests round-robin over every process
 * (the victim's included), transfers among the chat users round-robin too, and a video every 700 ms to each
 * process in turn, skipping the victim between `victimDown()` and `victimBack()`.
 */
export function startMix(opts: {
  cluster: GatewayCluster;
  label: string;
  users: MixUsers;
  /** The chat model the resets user sends to. */
  chatModel: string;
  /** Sessions and emails of the chat users, who send each other transfers. */
  senders: { headers: Record<string, string>; email: string }[];
  victim: number;
}): Mix {
  const { cluster, users } = opts;
  const evaluations = startEvaluationLoad({ cluster, key: users.reseller.key, model: "mix-judge", clients: 2, pauseMs: 20 });
  const resets = startLoad({
    cluster,
    keys: [users.resets.key],
    model: opts.chatModel,
    clients: 2,
    streams: () => false,
    maxTokens: RESET_MAX_TOKENS,
    pauseMs: 400,
  });
  let victimUp = true;
  const videos = startVideoLoad({
    cluster,
    key: users.video.key,
    model: "mix-clip",
    seconds: VIDEO_SECONDS,
    everyMs: 700,
    route: (n) => {
      const index = n % cluster.current.length;
      return index === opts.victim && !victimUp ? undefined : index;
    },
  });
  const transfers = startTransfers({
    cluster,
    label: opts.label,
    users: opts.senders,
    amount: 25,
    clients: 2,
    everyMs: 200,
    followMs: 20_000,
    route: (client, n) => (n + client) % cluster.current.length,
  });
  return {
    evaluations,
    resets,
    videos,
    transfers,
    async victimDown() {
      victimUp = false;
      await videos.idle();
    },
    victimBack: () => void (victimUp = true),
    async stop() {
      await Promise.all([evaluations.stop(), videos.stop(), transfers.stop()]);
    },
  };
}

/**
 * Waits until the user has used `weekly` resets and its clients have since been refused a few times (429): the
 * day ran out with none left (or `timeoutMs` passed). The uses then.
 */
export async function resetsRunOut(pool: Pool, userId: string, load: Load, weekly: number, timeoutMs: number): Promise<number> {
  const started = performance.now();
  let allUsedAt: number | undefined;
  for (;;) {
    const { rows } = await pool.query<{ n: number }>("select count(*)::int as n from quota_reset_uses where user_id = $1", [userId]);
    if (allUsedAt === undefined && rows[0]!.n >= weekly) allUsedAt = performance.now();
    const refusedSince = allUsedAt === undefined ? 0 : load.outcomes.filter((o) => o.status === 429 && o.startedAt > allUsedAt!).length;
    if (refusedSince >= 3 || performance.now() - started > timeoutMs) return rows[0]!.n;
    await sleep(100);
  }
}
