import type { StaffClient } from "../../../worker-kit/client/staff-client.js";
import type { WorkerClient } from "../../../worker-kit/client/worker-client.js";
import { describeError } from "../../../worker-kit/client/errors.js";
import type { KeyHelp, ScreenProps } from "../../../worker-kit/tui/screen.js";

// Screen props for component tests: clients are plain objects that record their calls (a method a test did not
// give fails loudly), the editor answers from a queue, and the shell's error and notice lines are recorded.

export interface Recorded {
  calls: { method: string; args: unknown[] }[];
  errors: string[];
  notices: (string | null)[];
  help: KeyHelp[];
  edits: { initial: string; suffix: string | undefined }[];
}

type Methods<T> = { [K in keyof T]?: T[K] };

function recording<T extends object>(recorded: Recorded, methods: Methods<T>, extra: object = {}): T {
  return new Proxy(extra, {
    get(target, name) {
      if (name in target) return (target as Record<string | symbol, unknown>)[name];
      const method = (methods as Record<string | symbol, ((...args: unknown[]) => unknown) | undefined>)[name];
      if (typeof name !== "string" || name === "then") return undefined;
      return (...args: unknown[]) => {
        recorded.calls.push({ method: name, args });
        if (!method) throw new Error(`unexpected call: ${name}`);
        return method(...args);
      };
    },
  }) as T;
}

export function fakeScreenProps(options: {
  staff?: Methods<StaffClient>;
  worker?: Methods<WorkerClient> | null;
  /** What each $EDITOR round answers, in order (null: the user left it empty). */
  edits?: (string | null)[];
  now?: () => number;
  rows?: number;
  refreshMs?: number;
}) {
  const recorded: Recorded = { calls: [], errors: [], notices: [], help: [], edits: [] };
  const edits = [...(options.edits ?? [])];
  const session = {
    token: "t",
    csrf_token: "c",
    expires_at: "2030-01-01T00:00:00.000Z",
    user: { id: "u1", email: "staff@example.test", role: "admin", plan: "free", created_at: "2024-01-01T00:00:00.000Z" },
  };
  const props: ScreenProps = {
    staff: recording<StaffClient>(recorded, options.staff ?? {}, { session }),
    worker: options.worker === null ? null : recording<WorkerClient>(recorded, options.worker ?? {}),
    editText: async (initial, opts) => {
      recorded.edits.push({ initial, suffix: opts?.suffix });
      return edits.length > 0 ? edits.shift()! : null;
    },
    go: () => {},
    showError: (err) => recorded.errors.push(describeError(err)),
    showNotice: (message) => recorded.notices.push(message),
    setHelp: (keys) => (recorded.help = keys),
    clearError: () => {},
    setCapturing: () => {},
    active: true,
    baseUrl: "http://gateway.test",
    refreshMs: options.refreshMs ?? 3_600_000,
    columns: 80,
    rows: options.rows ?? 20,
    now: options.now ?? (() => Date.now()),
  };
  return { props, recorded };
}

/** Lets React effects, Ink's input handling and the fakes' promises run. */
export async function settle(times = 5): Promise<void> {
  for (let i = 0; i < times; i++) await new Promise((resolve) => setTimeout(resolve, 0));
}

export const KEYS = { up: "\u001B[A", down: "\u001B[B" } as const;
