import { Text, useInput } from "ink";
import { cleanup, render } from "ink-testing-library";
import { useEffect } from "react";
import { afterEach, describe, expect, it } from "vitest";
import { GatewayHttpError } from "../../../worker-kit/client/errors.js";
import type { StaffClient } from "../../../worker-kit/client/staff-client.js";
import { App, type Screens } from "../../../worker-kit/tui/app.js";
import type { Credentials } from "../../../worker-kit/tui/login-screen.js";
import type { ScreenProps } from "../../../worker-kit/tui/screen.js";
import { fakeStaff, KEY, NOW, until } from "./tui-fakes.js";

afterEach(cleanup);

function stub(name: string) {
  return function Stub({ setHelp, columns, rows }: ScreenProps) {
    useEffect(() => {
      setHelp([{ key: "z", label: `${name} action` }]);
    }, [setHelp]);
    return (
      <Text>
        {name} screen {columns}x{rows}
      </Text>
    );
  };
}

const screens: Screens = {
  queue: stub("queue"),
  case: stub("case"),
  incidents: stub("incidents"),
  job: stub("job"),
};

const WRONG = new GatewayHttpError(401, "invalid_credentials", "wrong email or password", null, "req_1", null);

function start(options: { email?: string; password?: string; login?: (c: Credentials) => Promise<StaffClient> } = {}) {
  const attempts: Credentials[] = [];
  const quits: Array<StaffClient | null> = [];
  const staff = fakeStaff();
  const login = async (c: Credentials) => {
    attempts.push(c);
    return options.login ? options.login(c) : staff;
  };
  const ui = render(
    <App
      baseUrl="http://127.0.0.1:8080"
      email={options.email}
      password={options.password}
      login={login}
      worker={null}
      editText={async () => null}
      screens={screens}
      now={() => NOW}
      onQuit={(s) => quits.push(s)}
    />,
  );
  return { ...ui, attempts, quits, staff };
}

/** The test stdout says 100 columns and no rows; this makes it the 80x24 terminal the UI is designed for. */
function resize(stdout: NodeJS.EventEmitter, columns: number, rows: number) {
  Object.defineProperty(stdout, "columns", { configurable: true, get: () => columns });
  Object.defineProperty(stdout, "rows", { configurable: true, get: () => rows });
  stdout.emit("resize");
}

/** Types one key at a time, each once the field shows the one before (`shown` is what the field shows for `text`). */
async function type(
  ui: { stdin: { write(data: string): void }; lastFrame(): string | undefined },
  field: string,
  text: string,
  shown = text,
) {
  const chars = Array.from(text);
  for (let i = 0; i < chars.length; i++) {
    ui.stdin.write(chars[i]!);
    const expected = `${field}: ${shown.slice(0, i + 1)}`;
    await until(() => ui.lastFrame()!.includes(expected), expected);
  }
}

describe("App: login", () => {
  it("logs in with the typed email and masked password", async () => {
    const ui = start();
    const { lastFrame, stdin, attempts } = ui;
    await until(() => lastFrame()!.includes("Log in to http://127.0.0.1:8080"));
    await type(ui, "email   ", "admin@example.com");
    stdin.write(KEY.enter);
    await until(() => /^> password:/m.test(lastFrame()!), "the password field");
    await type(ui, "password", "s3cret", "******");
    expect(lastFrame()).toContain("password: ******");
    expect(lastFrame()).not.toContain("s3cret");
    stdin.write(KEY.enter);
    await until(() => lastFrame()!.includes("queue screen"), "the queue");
    expect(attempts).toEqual([{ email: "admin@example.com", password: "s3cret" }]);
    expect(lastFrame()!.split("\n")[0]).toContain("gateway http://127.0.0.1:8080 · admin@example.com · queue");
  });

  it("logs in at once when both are prefilled", async () => {
    const { lastFrame, attempts } = start({ email: "admin@example.com", password: "pw" });
    await until(() => lastFrame()!.includes("queue screen"), "the queue");
    expect(attempts).toEqual([{ email: "admin@example.com", password: "pw" }]);
  });

  it("shows a wrong password as the error line and lets you retry", async () => {
    const staff = fakeStaff();
    let tries = 0;
    const ui = start({
      email: "admin@example.com",
      password: "wrong",
      login: async () => {
        tries += 1;
        if (tries === 1) throw WRONG;
        return staff;
      },
    });
    const { lastFrame, stdin, attempts } = ui;
    await until(() => lastFrame()!.includes("wrong email or password"), "the error line");
    expect(lastFrame()).toContain("401 invalid_credentials: wrong email or password (request req_1)");
    expect(lastFrame()).toMatch(/^> password:/m);
    expect(lastFrame()).not.toContain("wrong\n");
    await type(ui, "password", "right", "*****");
    stdin.write(KEY.enter);
    await until(() => lastFrame()!.includes("queue screen"), "the queue");
    expect(attempts.map((a) => a.password)).toEqual(["wrong", "right"]);
  });

  it("shows the login throttle as the error line", async () => {
    const throttled = new GatewayHttpError(429, "rate_limited", "too many login attempts", null, null, 60_000);
    const { lastFrame } = start({
      email: "a@b.c",
      password: "x",
      login: async () => {
        throw throttled;
      },
    });
    await until(() => lastFrame()!.includes("429 rate_limited: too many login attempts"), "the error line");
  });
});

describe("App: shell", () => {
  async function loggedIn() {
    const ui = start({ email: "admin@example.com", password: "pw" });
    await until(() => ui.lastFrame()!.includes("queue screen"), "the queue");
    return ui;
  }

  it("lists the shell's keys and the screen's keys in the help bar", async () => {
    const { lastFrame } = await loggedIn();
    await until(() => lastFrame()!.includes("z queue action"), "the screen's keys");
    expect(lastFrame()).toMatch(/1 queue {2}2 incidents {2}3 job {2}\? help {2}q quit {2}z queue action/);
  });

  it("switches screens with 1, 2 and 3", async () => {
    const { lastFrame, stdin } = await loggedIn();
    stdin.write("2");
    await until(() => lastFrame()!.includes("incidents screen"), "incidents");
    expect(lastFrame()).toContain("z incidents action");
    expect(lastFrame()!.split("\n")[0]).toMatch(/· incidents\s*$/);
    stdin.write("3");
    await until(() => lastFrame()!.includes("job screen"), "job");
    stdin.write("1");
    await until(() => lastFrame()!.includes("queue screen"), "queue");
  });

  it("q quits and hands over the session to log out", async () => {
    const { lastFrame, stdin, quits, staff } = await loggedIn();
    expect(lastFrame()).toContain("queue screen");
    stdin.write("q");
    await until(() => quits.length > 0, "the quit");
    expect(quits).toEqual([staff]);
  });

  it("ctrl-c quits, even on the login screen", async () => {
    const { lastFrame, stdin, quits } = start();
    await until(() => lastFrame()!.includes("Log in"));
    stdin.write("\u0003");
    await until(() => quits.length > 0, "the quit");
    expect(quits).toEqual([null]);
  });

  it("shows a screen's error as one line cut to the width, and a notice replaces it", async () => {
    function Failing({ showError, showNotice }: ScreenProps) {
      useEffect(() => {
        showError(new Error(`first line\nsecond line ${"x".repeat(200)}`));
      }, [showError]);
      useInput((input) => input === "s" && showNotice("saved"));
      return <Text>failing screen</Text>;
    }
    const ui = render(
      <App
        baseUrl="http://gw"
        email="a@b.c"
        password="p"
        login={async () => fakeStaff()}
        worker={null}
        editText={async () => null}
        screens={{ ...screens, queue: Failing }}
      />,
    );
    resize(ui.stdout, 80, 24);
    await until(() => ui.lastFrame()!.includes("first line second line"), "the error line");
    const line = ui
      .lastFrame()!
      .split("\n")
      .find((l) => l.includes("first line"))!;
    expect(line).toMatch(/^first line second line x+…$/);
    expect(line).toHaveLength(80);
    ui.stdin.write("s");
    await until(() => ui.lastFrame()!.includes("saved"), "the notice");
    expect(ui.lastFrame()).not.toContain("first line");
  });

  it("fits 80x24 and lays out again on resize", async () => {
    const { lastFrame, stdout } = await loggedIn();
    resize(stdout, 80, 24);
    await until(() => lastFrame()!.includes("queue screen 80x21"), "the 80x24 layout");
    const lines = lastFrame()!.split("\n");
    expect(lines).toHaveLength(24);
    for (const line of lines) expect(line.length).toBeLessThanOrEqual(80);
    resize(stdout, 40, 12);
    await until(() => lastFrame()!.includes("queue screen 40x8"), "the 40x12 layout");
    const narrow = lastFrame()!.split("\n");
    expect(narrow).toHaveLength(12);
    for (const line of narrow) expect(line.length).toBeLessThanOrEqual(40);
  });
});
