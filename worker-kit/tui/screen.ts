import type { StaffClient } from "../client/staff-client.js";
import type { WorkerClient } from "../client/worker-client.js";
import type { EditText } from "./editor.js";

// The contract between the TUI's shell (app.tsx: login, navigation, help bar, error line, terminal size) and its
// screens (queue, case, incidents, job). A screen is a component of ScreenProps; it does its own fetching through
// the clients, reports failures through showError (one line; the UI stays), and lists its keys with setHelp.

/** What the queue showed when a case was opened from it: esc brings it back, the cursor on that case. */
export interface QueueView {
  /** The queue's page stack (state/page-stack.ts), spelt out: the shell's types do not reach into state/. */
  stack: { readonly cursors: ReadonlyArray<string | undefined> };
  filter: string;
}

/** `focus` on the queue: the case to put the cursor on. */
export type Route =
  | ({ screen: "queue"; focus?: string } & Partial<QueueView>)
  | { screen: "case"; caseId: string; back?: QueueView }
  | { screen: "incidents" }
  | { screen: "job" };
export type ScreenName = Route["screen"];

export interface KeyHelp {
  /** As shown: "t", "enter", "←/→". */
  key: string;
  label: string;
}

export interface ScreenProps {
  staff: StaffClient;
  /** Null when no bot token was given: the job screen then says how to give one. */
  worker: WorkerClient | null;
  editText: EditText;
  go(route: Route): void;
  showError(err: unknown): void;
  /** Clears the error line (after an action succeeds) or shows a one-line notice. */
  showNotice(message: string | null): void;
  /** Clears the line if it holds an error, and leaves a notice (a refresh that worked says nothing new). */
  clearError(): void;
  /**
   * The screen takes every key (a text field, a y/n question): the shell's own keys (1, 2, 3, q, ?) are off until
   * it gives them back, so typing "q" into a filter does not quit.
   */
  setCapturing(capturing: boolean): void;
  /** False while the shell shows an overlay (the help): the screen then takes no key and does not refresh. */
  active: boolean;
  /** The gateway's root, for the stale mark when it cannot be reached. */
  baseUrl: string;
  /** How often the queue and the incidents read themselves again. */
  refreshMs: number;
  /** The screen's own keys, shown in the help bar after the shell's. */
  setHelp(keys: KeyHelp[]): void;
  /** The body's size: the terminal less the shell's header, error and help lines. */
  columns: number;
  rows: number;
  /** Milliseconds since the epoch; injected so that countdowns are testable. */
  now(): number;
}
