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

export async function runTui(options: TuiOptions): Promise<void> {
  throw new Error(`the terminal UI is not built yet (${options.baseUrl})`);
}
