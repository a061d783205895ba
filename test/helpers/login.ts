// Logging in as a client does (POST /api/v1/auth/login), for the tests that need a session.

/** The login's raw answer, for tests of the login itself (its status, its cookie). */
export function postLogin(url: string, email: string, password: string): Promise<Response> {
  return fetch(`${url}/api/v1/auth/login`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ email, password }),
  });
}

export interface Session {
  token: string;
  csrfToken: string;
  /** `Authorization` and `X-CSRF-Token`: what a user route needs, and an admin state change too. */
  headers: Record<string, string>;
}

/** A session of the user; throws with the answer when the login is refused. */
export async function logIn(url: string, email: string, password: string): Promise<Session> {
  const res = await postLogin(url, email, password);
  if (res.status !== 200) throw new Error(`login of ${email} answered ${res.status}: ${await res.text()}`);
  const { token, csrf_token } = (await res.json()) as { token: string; csrf_token: string };
  return { token, csrfToken: csrf_token, headers: { authorization: `Bearer ${token}`, "x-csrf-token": csrf_token } };
}
