import { expect } from "vitest";
import { userCaseResultSchema, type UserCaseResult } from "../../worker-kit/wire/user-cases.js";
import { until } from "./poll.js";

// A support case as a user of `gateway serve --demo` opens one: a chat request that fails (the mock upstream
// refuses a client's own upstream key), then a case about it, which queues an `answer` job for the workers.

/** Opens a case on a failed request of `apiKey`'s, as the user whose session headers are `user`. */
export async function openCaseOnFailedRequest(
  url: string,
  apiKey: string,
  user: Record<string, string>,
  ask: { locale: string; question: string },
): Promise<UserCaseResult["case"]> {
  const failed = await fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json", "x-upstream-api-key": "not-the-mock-key" },
    body: JSON.stringify({ model: "demo-small", messages: [{ role: "user", content: "hello" }] }),
  });
  expect(failed.status).toBe(400);
  const requestId = failed.headers.get("x-request-id")!;
  // The request log is written in batches: the case opens once the row is there.
  return until("the case to open", async () => {
    const res = await fetch(`${url}/api/v1/user/assistant/cases`, {
      method: "POST",
      headers: { ...user, "content-type": "application/json" },
      body: JSON.stringify({ request_id: requestId, ...ask }),
    });
    return res.status === 201 ? userCaseResultSchema.parse(await res.json()).case : undefined;
  });
}
