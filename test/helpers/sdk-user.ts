import OpenAI from "openai";
import type { TestGateway } from "./gateway-app.js";

let users = 0;

/**
 * A new user on `gw` with one API key, and the official OpenAI SDK as that user's client of the gateway (no
 * retries: a test sees each answer as it came). `label` names the test file in the email; `plan` is the config's
 * default when absent.
 */
export async function sdkUser(gw: TestGateway, label: string, plan?: string) {
  const email = `${label}-${++users}@example.test`;
  const user = await gw.services.auth.users.create({ email, password: "password-123", ...(plan === undefined ? {} : { plan }) });
  const { key } = await gw.services.auth.apiKeys.create({ user: email });
  return { id: user.id, key, client: new OpenAI({ apiKey: key, baseURL: `${gw.url}/v1`, maxRetries: 0 }) };
}
