import { errors } from "../../errors.js";
import type { LockedCase } from "./lease-sql.js";
import type { COMPLETION_OUTCOMES, CompleteRequest, SUPPORT_JOB_KINDS } from "@model-gateway/worker-kit/wire/support";

// The pure rules of a completion (docs/support.md, "Completing"): what a body must hold, and what becomes of it.

export type CompletionOutcome = (typeof COMPLETION_OUTCOMES)[number];
type JobKind = (typeof SUPPORT_JOB_KINDS)[number];

/**
 * Refuses, before anything is written, a completion whose card cites evidence it did not submit, that submits
 * one evidence id twice, or that answers with nothing to say. The 400 names the field.
 */
export function checkCompletionBody(body: CompleteRequest): void {
  const ids = new Set<string>();
  body.evidence.forEach((e, i) => {
    if (ids.has(e.id)) throw errors.badRequest(`Evidence id "${e.id}" is submitted twice.`, `evidence[${i}].id`, "invalid_value");
    ids.add(e.id);
  });
  body.card?.facts.forEach((fact, i) => {
    const unknown = fact.evidence_ids.find((id) => !ids.has(id));
    if (unknown !== undefined) {
      throw errors.badRequest(
        `card.facts[${i}] cites evidence "${unknown}" that this completion does not submit.`,
        `card.facts[${i}].evidence_ids`,
        "invalid_value",
      );
    }
  });
  if (body.disposition === "answer" && body.content.trim() === "") {
    throw errors.badRequest("An answer needs content.", "content", "invalid_value");
  }
}

/**
 * What a completion of `job` becomes on the locked case. A resolved case and a staff hold are told before a stale
 * revision (a takeover and a resolve also bump it) because they say more; a hold blocks answers only, drafts are
 * for staff. Stale: the job's revision, or the one the worker says it answered, is not the case's.
 */
export function judgeCompletion(
  job: { kind: JobKind; revision: number },
  body: Pick<CompleteRequest, "revision" | "disposition" | "content">,
  on: LockedCase,
): CompletionOutcome {
  const { kind } = job;
  if (on.status === "resolved") return "discarded_resolved";
  if (kind === "answer" && on.staff_hold) return "discarded_hold";
  if (job.revision !== on.revision || body.revision !== on.revision) return "discarded_stale";
  if (kind === "answer") return body.disposition === "answer" ? "published" : "recorded";
  return body.content.trim() === "" ? "recorded" : "published";
}
