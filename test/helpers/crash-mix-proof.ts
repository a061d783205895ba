import type { Pool } from "../../src/db/pool.js";
import type { Outcome } from "./crash-cluster.js";
import { CREDIT_NANO, RESET_WEEKLY, VIDEO_CHARGE, type Mix, type MixUsers } from "./crash-mix.js";
import { evaluationsUncharged, readReseller, resellerBalance, type ResellerRows } from "./evaluation-load.js";
import { readTransfers, transferMismatches, type TransferRecord } from "./transfer-load.js";
import { readVideoJobs, videoMismatches, type VideoJobRow, type VideoSubmission } from "./video-load.js";

// What proves the crash test's mix (crash-mix.ts) after the run: the rows each kind of traffic left, what the test
// prints of them, and everything in them that is not as it must be, kind by kind (empty lists when all is).

export interface ResetRows {
  uses: {
    id: string;
    kind: string;
    trigger: string;
    restored: string;
    at: number;
    hold_status: string | null;
    hold_charged: string | null;
  }[];
  week: { credits: string; posted: string; pending: string } | null;
  day: { credits: string; restored: string; posted: string; pending: string } | null;
  /** Σ of the day's restorations of source reserve_reset, and of every source. */
  resetRestorations: string;
  allRestorations: string;
}

/** The resets user's uses (each with its posted reset), week, day and restorations. */
export async function readResets(pool: Pool, userId: string): Promise<ResetRows> {
  const { rows } = await pool.query<ResetRows>(
    `select
       (select coalesce(json_agg(json_build_object('id', u.id, 'kind', u.kind, 'trigger', u.trigger, 'restored', u.restored::text,
          'at', extract(epoch from u.created_at) * 1000, 'hold_status', h.status, 'hold_charged', h.charged::text) order by u.created_at), '[]')
          from quota_reset_uses u left join quota_holds h on h.request_id = 'reset:' || u.id::text where u.user_id = $1) as uses,
       (select json_build_object('credits', credits::text, 'posted', debits_posted::text, 'pending', debits_pending::text)
          from quota_account_balances where user_id = $1 and kind = 'weekly_resets') as week,
       (select json_build_object('credits', credits::text, 'restored', restored::text, 'posted', debits_posted::text,
          'pending', debits_pending::text) from quota_account_balances where user_id = $1 and kind = 'daily_allowance') as day,
       (select coalesce(sum(r.amount), 0)::text from quota_restorations r join quota_accounts a on a.id = r.account_id
          where a.user_id = $1 and a.kind = 'daily_allowance' and r.source = 'reserve_reset') as "resetRestorations",
       (select coalesce(sum(r.amount), 0)::text from quota_restorations r join quota_accounts a on a.id = r.account_id
          where a.user_id = $1 and a.kind = 'daily_allowance') as "allRestorations"`,
    [userId],
  );
  return rows[0]!;
}

export interface MixRows {
  reseller: ResellerRows;
  videos: VideoJobRow[];
  transfers: TransferRecord[];
  resets: ResetRows;
}

export async function readMix(pool: Pool, users: MixUsers): Promise<MixRows> {
  return {
    reseller: await readReseller(pool, users.reseller.id),
    videos: await readVideoJobs(pool),
    transfers: await readTransfers(pool),
    resets: await readResets(pool, users.resets.id),
  };
}

/** What the test knows beside the rows: the victim, its videos and what a survivor showed of them, the resets' end. */
export interface MixRun {
  /** When the load started (performance.now()). */
  t0: number;
  victim: number;
  killedAtWall: number;
  /** The jobs submitted to the victim before its kill, and their status as a survivor showed them afterwards. */
  victimVideos: VideoSubmission[];
  victimJobs: { status: number; job: string | undefined }[];
  /** The resets user's uses once the day had run out with none left. */
  resetsUsed: number;
  chatUserIds: string[];
  /** The video submissions the upstream received during the run. */
  upstreamVideoSubmissions: number;
}

const countBy = (keys: string[]) => {
  const counts: Record<string, number> = {};
  for (const k of keys) counts[k] = (counts[k] ?? 0) + 1;
  return counts;
};
const statuses = (list: { status: number }[]) => countBy(list.map((o) => String(o.status)));
const fromVictim = (run: MixRun) => (o: { process: number; generation: number }) => o.process === run.victim && o.generation === 0;

/** What the test prints of the mix. */
export function mixReport(mix: Mix, rows: MixRows, run: MixRun) {
  const evaluations = mix.evaluations.outcomes;
  const resets = mix.resets.outcomes;
  const attempts = mix.transfers.attempts;
  return {
    reseller: {
      statuses: statuses(evaluations),
      completed: evaluations.filter((o) => o.completed).length,
      fromVictim: evaluations.filter((o) => fromVictim(run)(o) && o.completed).length,
      balance: resellerBalance(rows.reseller, CREDIT_NANO),
    },
    videos: {
      submitted: countBy(
        mix.videos.submissions.map((v) => `${v.process}.${v.generation} ${v.status}${v.errorCode ? ` ${v.errorCode}` : ""}`),
      ),
      toVictim: run.victimVideos.map((v) => v.status),
      // A refusal's time (since the load started) tells it from the cuts; the upstream's count, whether its job
      // had been submitted there before the refusal.
      refused: mix.videos.submissions
        .filter((v) => v.status !== 200)
        .map((v) => ({
          process: `${v.process}.${v.generation}`,
          status: v.status,
          code: v.errorCode,
          atMs: [v.startedAt, v.endedAt].map((t) => Math.round(t - run.t0)),
        })),
      upstreamSubmissions: run.upstreamVideoSubmissions,
      victimJobsOnSurvivor: run.victimJobs,
      jobs: countBy(rows.videos.map((j) => j.status)),
    },
    resets: {
      statuses: statuses(resets),
      // Refused while a reset was left: a hold that even a restored day could not take beside the leases' (the
      // killed process's until they expire), as docs/billing.md "Automatic resets" says.
      refusedBeforeLastUse: resets.filter(
        (o) => o.status === 429 && performance.timeOrigin + o.endedAt < (rows.resets.uses.at(-1)?.at ?? 0),
      ).length,
      uses: rows.resets.uses.map((u) => ({ restored: u.restored, afterKillMs: Math.round(u.at - run.killedAtWall) })),
      week: rows.resets.week,
      day: rows.resets.day,
    },
    transfers: {
      attempts: attempts.length,
      finals: countBy(attempts.map((a) => (a.final ? `${a.final.status} ${a.final.state ?? a.final.code}` : "none"))),
      answeredByVictim: attempts.filter((a) => a.answers.some((x) => fromVictim(run)(x) && x.status !== 0)).length,
      // Sent to the victim (a 202, or no answer) and followed to their end on another process.
      endedElsewhere: attempts.filter(
        (a) => a.answers.some((x) => fromVictim(run)(x) && x.status !== 200) && a.final && !fromVictim(run)(a.answers.at(-1)!),
      ).length,
      resent: attempts.filter((a) => a.answers.length > 1).length,
    },
  };
}

/**
 * Everything of the mix that is not as it must be, by kind:
 * - evaluations: each one received posted once on the USD balance at the price it named, with its cost_usd logged;
 *   the balance: credited as credited, spent = the posted holds = the log's costs, nothing reserved;
 * - videos: every submission accepted (the victim's four included), every job completed once with its hold posted
 *   once and one log row, the victim's shown completed by a survivor;
 * - resets: exactly the week's resets used, each automatic, posted once on the week (which holds them all and no
 *   more) and restoring the day, whose restorations are exactly those uses; never more used than restored; the
 *   user's clients answered 200 or, the week used up, 429 insufficient_quota (or not at all by the killed process);
 * - transfers: each followed to its end, ended exactly once with its hold and the restoration equal to `applied`.
 */
export function mixMismatches(mix: Mix, rows: MixRows, run: MixRun) {
  const balance = resellerBalance(rows.reseller, CREDIT_NANO);
  const { uses, week, day } = rows.resets;
  const restored = uses.reduce((n, u) => n + BigInt(u.restored), 0n);
  const victimLost = (o: Outcome) => fromVictim(run)(o) && o.status === 0;
  return {
    evaluations: evaluationsUncharged(mix.evaluations.outcomes, rows.reseller),
    balance: [
      ...(balance.credits === CREDIT_NANO &&
      balance.posted === balance.logged &&
      balance.holdsPosted === balance.logged &&
      balance.pending === 0n
        ? []
        : [balance]),
      ...balance.mismatches,
    ],
    videos: [
      ...mix.videos.submissions.filter((v) => v.status !== 200),
      ...(run.victimVideos.length === 4 ? [] : [{ victimVideos: run.victimVideos }]),
      ...run.victimJobs.filter((j) => j.status !== 200 || j.job !== "completed"),
      ...videoMismatches(mix.videos.submissions, rows.videos, VIDEO_CHARGE),
    ],
    resets: [
      ...(run.resetsUsed === RESET_WEEKLY && uses.length === RESET_WEEKLY ? [] : [{ used: run.resetsUsed, uses }]),
      ...uses.filter((u) => u.kind !== "weekly" || u.trigger !== "automatic" || u.hold_status !== "posted" || u.hold_charged !== "1"),
      ...(week?.credits === String(RESET_WEEKLY) && week.posted === String(RESET_WEEKLY) && week.pending === "0" ? [] : [{ week }]),
      ...(day !== null &&
      day.restored === String(restored) &&
      rows.resets.resetRestorations === String(restored) &&
      rows.resets.allRestorations === String(restored) &&
      BigInt(day.posted) <= BigInt(day.credits) + restored
        ? []
        : [{ day, restored: String(restored), restorations: [rows.resets.resetRestorations, rows.resets.allRestorations] }]),
      ...mix.resets.outcomes.filter(
        (o) => o.status !== 200 && !(o.status === 429 && o.errorCode === "insufficient_quota") && !victimLost(o),
      ),
    ],
    transfers: transferMismatches(mix.transfers.attempts, rows.transfers, run.chatUserIds),
  };
}

export const NO_MIX_MISMATCHES = { evaluations: [], balance: [], videos: [], resets: [], transfers: [] };
