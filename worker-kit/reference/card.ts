import type { Card, Evidence, RequestFacts } from "../wire/support.js";

// The card and evidence of a completion, built from the job's request facts alone (never from the model's
// words): what the card states is then exactly what the gateway's own log says, each fact citing the one
// evidence item that carries the facts. Pure.

export const REQUEST_EVIDENCE_ID = "request";

export interface CardAndEvidence {
  card: Card;
  evidence: Evidence[];
}

/** What a failure of each error class (src/support/cases/request-facts.ts) suggests, and what to check. */
interface Diagnosis {
  hypotheses: string[];
  checks: string[];
  next_step: string;
  confidence: number;
}

const BY_CLASS: Record<string, Diagnosis> = {
  invalid_request: {
    hypotheses: ["The request body does not match the route's schema (a field is missing, misspelt or out of range)."],
    checks: ["Compare the request with the route's documentation (GET /openapi.json)."],
    next_step: "Fix the field the error names and send the request again.",
    confidence: 0.7,
  },
  authentication: {
    hypotheses: ["The API key is missing, mistyped or revoked."],
    checks: ["Check that the Authorization header carries the whole key.", "Check that the key is listed as active in the dashboard."],
    next_step: "Send the request again with a valid API key.",
    confidence: 0.8,
  },
  permission: {
    hypotheses: ["The key is restricted to other models, or the plan does not include this model."],
    checks: ["Check the key's allowed models.", "Check the plan's model access."],
    next_step: "Use a model the key and plan allow, or ask an administrator to extend them.",
    confidence: 0.7,
  },
  not_found: {
    hypotheses: ["The model name is not one the gateway serves, or the route does not exist."],
    checks: ["List the available models with GET /v1/models."],
    next_step: "Send the request again with a model from the list.",
    confidence: 0.8,
  },
  quota_exceeded: {
    hypotheses: ["Today's allowance (or the reseller balance) is used up."],
    checks: ["Check the remaining quota with GET /api/v1/user/quota."],
    next_step: "Wait for the daily reset at 00:00 UTC, use a reserve reset, or ask for more quota.",
    confidence: 0.8,
  },
  rate_limited: {
    hypotheses: ["Too many requests in a short time."],
    checks: ["Check whether the client honours Retry-After."],
    next_step: "Retry after the delay the answer gave, and spread requests out.",
    confidence: 0.7,
  },
  context_limit: {
    hypotheses: ["The prompt and the requested output exceed the plan's context limit."],
    checks: ["Count the prompt's tokens and max_tokens against the plan's limit."],
    next_step: "Shorten the prompt or lower max_tokens, or move to a plan with a larger context.",
    confidence: 0.8,
  },
  upstream_error: {
    hypotheses: ["The upstream provider failed or answered something invalid; it is usually temporary."],
    checks: ["Check whether other requests to the same model fail too (an incident)."],
    next_step: "Retry in a few minutes; if it keeps failing, staff will look at the provider.",
    confidence: 0.5,
  },
  upstream_timeout: {
    hypotheses: ["The upstream provider was too slow to answer."],
    checks: ["Check whether long prompts or large max_tokens make it slower."],
    next_step: "Retry, or ask for a shorter answer.",
    confidence: 0.5,
  },
  upstream_unreachable: {
    hypotheses: ["The upstream provider could not be reached; it is usually temporary."],
    checks: ["Check whether other requests to the same model fail too (an incident)."],
    next_step: "Retry in a few minutes.",
    confidence: 0.5,
  },
  client_cancelled: {
    hypotheses: ["The client closed the connection before the answer ended (a client timeout, or the user stopped it)."],
    checks: ["Check the client's timeout against the request's latency."],
    next_step: "Raise the client's timeout, or stream the answer.",
    confidence: 0.6,
  },
  unavailable: {
    hypotheses: ["The gateway was briefly unavailable (its database or a restart)."],
    checks: ["Check whether the request succeeds now."],
    next_step: "Retry after the Retry-After delay.",
    confidence: 0.5,
  },
  internal: {
    hypotheses: ["The gateway hit an internal error."],
    checks: [],
    next_step: "Staff need to look at the gateway's logs for this request id.",
    confidence: 0.3,
  },
};

function diagnose(facts: RequestFacts): Diagnosis {
  const known = facts.error_class ? BY_CLASS[facts.error_class] : undefined;
  if (known) return known;
  if (facts.status < 400) {
    return {
      hypotheses: ["The request succeeded; the problem is in what the answer said, not in the gateway."],
      checks: ["Compare the answer with what was expected."],
      next_step: "Describe what looked wrong in the answer.",
      confidence: 0.3,
    };
  }
  if (facts.status >= 500) return BY_CLASS.upstream_error!;
  return {
    hypotheses: ["The gateway refused the request."],
    checks: [],
    next_step: "Check the request against the documentation.",
    confidence: 0.4,
  };
}

function problemOf(facts: RequestFacts): string {
  const what = `Request ${facts.request_id} to ${facts.route} (model ${facts.model || "unknown"})`;
  if (facts.status < 400) return `${what} succeeded with status ${facts.status}.`;
  const code = facts.error_code ? ` (${facts.error_code})` : "";
  const summary = facts.error_summary ? `: ${facts.error_summary}` : ".";
  return `${what} failed with status ${facts.status}${code}${summary}`;
}

const CITED_FIELDS = ["status", "error_code", "error_class", "model", "route", "streamed", "latency_ms", "quota_charged"] as const;

/** An ISO 8601 time with its offset, as the card's schema wants it; undefined when the text is no time. */
function isoTime(text: string | null): string | undefined {
  if (!text) return undefined;
  const time = new Date(text);
  return Number.isNaN(time.getTime()) ? undefined : time.toISOString();
}

export function buildCard(facts: RequestFacts | null): CardAndEvidence {
  if (!facts) {
    return {
      card: {
        problem: "The case cites no request the gateway could find.",
        facts: [],
        hypotheses: [],
        checks: [],
        missing: ["The X-Request-Id of the failing request (every gateway answer carries one)."],
        next_step: "Ask for the request id of a failing request.",
        confidence: 0,
      },
      evidence: [],
    };
  }
  const observedAt = isoTime(facts.completed_at);
  const cited = CITED_FIELDS.map((field) => ({
    field,
    value: facts[field],
    evidence_ids: [REQUEST_EVIDENCE_ID],
    ...(facts.request_id ? { request_id: facts.request_id } : {}),
    ...(observedAt ? { observed_at: observedAt } : {}),
  }));
  const diagnosis = diagnose(facts);
  return {
    card: {
      problem: problemOf(facts),
      facts: cited,
      hypotheses: diagnosis.hypotheses,
      checks: diagnosis.checks,
      missing: facts.error_detail_available || facts.status < 400 ? [] : ["The gateway's error code (only the status was logged)."],
      next_step: diagnosis.next_step,
      confidence: diagnosis.confidence,
    },
    evidence: [{ id: REQUEST_EVIDENCE_ID, kind: "request_facts", content: facts }],
  };
}
