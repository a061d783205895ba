import { beforeAll, describe, expect, it } from "vitest";
import { createSystemOneAdapter } from "../../src/providers/systemone/index.js";
import type { ProviderAdapter, Target } from "../../src/providers/types.js";
import { jsonAnswer, useRecordingAdapter, type RecordingUpstream } from "../helpers/recording-upstream.js";

let upstream: RecordingUpstream;
let adapter: ProviderAdapter;
let target: Target;
// A base URL with a path (a proxy in front of the evaluator) keeps it.
const fixture = useRecordingAdapter(createSystemOneAdapter, "systemone", (url) => `${url}/eval`, {
  providerId: "judge",
  upstreamModel: "1.13.0",
});
beforeAll(() => void ({ upstream, adapter, target } = fixture));

const options = () => ({ target, signal: AbortSignal.timeout(5000) });
const body = '{"model":"1.13.0","state":{"n":12345678901234567890},"questions":{"q":{"type":"noul"}}}';

describe("systemone adapter", () => {
  it("posts the JSON text as it is to {base_url}/v1/systemone with a bearer key, usage normalised", async () => {
    upstream.answers = [jsonAnswer({ model: "1.13.0", answers: {}, usage: { input_tokens: 12, output_tokens: 1 } })];
    const result = await adapter.evaluate!(body, options());
    expect(result).toMatchObject({ kind: "json", status: 200, usage: { promptTokens: 12, completionTokens: 1, cachedTokens: 0 } });
    const [req] = upstream.requests;
    expect(req).toMatchObject({ method: "POST", path: "/eval/v1/systemone", body });
    expect(req!.headers).toMatchObject({
      authorization: "Bearer provider-key",
      "content-type": "application/json",
      accept: "application/json",
    });
  });

  it("keeps explicit zeros, reads absent usage as null and refuses malformed usage as an invalid answer", async () => {
    upstream.answers = [jsonAnswer({ answers: {}, usage: { input_tokens: 0, output_tokens: 0 } })];
    expect((await adapter.evaluate!(body, options())).usage).toEqual({ promptTokens: 0, completionTokens: 0, cachedTokens: 0 });
    upstream.answers = [jsonAnswer({ answers: {} })];
    expect((await adapter.evaluate!(body, options())).usage).toBeNull();
    for (const usage of [
      { input_tokens: 3 },
      { input_tokens: 1.5, output_tokens: 0 },
      { input_tokens: "3", output_tokens: 0 },
      { input_tokens: -1, output_tokens: 0 },
      7,
    ]) {
      upstream.answers = [jsonAnswer({ answers: {}, usage })];
      await expect(adapter.evaluate!(body, options())).rejects.toMatchObject({
        name: "UpstreamError",
        failure: "protocol",
        retryable: true,
      });
    }
  });

  it("reports 422 as not retryable and 529 with its retry headers, never the body", async () => {
    upstream.answers = [{ status: 422, headers: { "content-type": "application/json" }, body: '{"error":{"message":"secret"}}' }];
    await expect(adapter.evaluate!(body, options())).rejects.toMatchObject({ status: 422, retryable: false });
    upstream.answers = [{ status: 529, headers: { "retry-after": "2", "retry-after-ms": "1500" }, body: "overloaded secret" }];
    const err = await adapter.evaluate!(body, options()).catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 529, retryable: true, retryHeaders: { "retry-after": "2", "retry-after-ms": "1500" } });
    expect(String((err as Error).message)).not.toMatch(/secret/);
  });
});
