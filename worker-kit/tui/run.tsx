import { render } from "ink";
import { login, type StaffClient } from "../client/staff-client.js";
import { createWorkerClient } from "../client/worker-client.js";
import { App, type Screens } from "./app.js";
import { CaseScreen } from "./case-screen.js";
import { createEditor } from "./editor.js";
import { IncidentsScreen } from "./incidents-screen.js";
import { JobScreen } from "./job-screen.js";
import { QueueScreen } from "./queue-screen.js";

// The terminal UI's entry point: the only module the CLI loads to start Ink (lazily, so that every `--json`
// command never loads Ink or React).

export interface TuiOptions {
  /** The gateway's root, such as http://127.0.0.1:8080. */
  baseUrl: string;
  /** Prefilled on the login screen; with both, the UI logs in at once (through the login route and its throttle). */
  email?: string;
  password?: string;
  /** SUPPORT_BOT_TOKEN, for working a job by hand; without it the job screen says how to give one. */
  botToken?: string;
}

// The alternate screen keeps the user's scrollback as it was once the UI exits; an editor such as vim leaves it
// on exit, so it is entered again when the terminal comes back.
const ENTER_ALTERNATE_SCREEN = "\u001B[?1049h";
const LEAVE_ALTERNATE_SCREEN = "\u001B[?1049l";

const screens: Screens = { queue: QueueScreen, case: CaseScreen, incidents: IncidentsScreen, job: JobScreen };

export async function runTui(options: TuiOptions): Promise<void> {
  const { stdin, stdout } = process;
  const interactive = stdin.isTTY && stdout.isTTY;
  const editText = createEditor({
    terminal: {
      release() {
        if (interactive) stdin.setRawMode(false);
      },
      reclaim() {
        if (!interactive) return;
        stdout.write(ENTER_ALTERNATE_SCREEN);
        stdin.setRawMode(true);
      },
    },
  });
  const worker = options.botToken ? createWorkerClient({ baseUrl: options.baseUrl, botToken: options.botToken }) : null;
  const ended: { session: StaffClient | null } = { session: null };
  if (interactive) stdout.write(ENTER_ALTERNATE_SCREEN);
  try {
    const instance = render(
      <App
        baseUrl={options.baseUrl}
        email={options.email}
        password={options.password}
        login={(credentials) => login({ baseUrl: options.baseUrl, ...credentials })}
        worker={worker}
        editText={editText}
        screens={screens}
        onQuit={(staff) => {
          ended.session = staff;
        }}
      />,
      { exitOnCtrlC: false },
    );
    await instance.waitUntilExit();
  } finally {
    if (interactive) stdout.write(LEAVE_ALTERNATE_SCREEN);
  }
  // Ends the session on the gateway rather than leaving a live token behind; a failure here changes nothing the user can act on.
  await ended.session?.logout().catch(() => undefined);
}
