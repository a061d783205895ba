import { Box, useApp } from "ink";
import { useCallback, useMemo, useRef, useState, type ComponentType } from "react";
import { describeError } from "../client/errors.js";
import type { StaffClient } from "../client/staff-client.js";
import type { WorkerClient } from "../client/worker-client.js";
import type { CaseScreenProps } from "./case-screen.js";
import type { QueueScreenProps } from "./queue-screen.js";
import { Header, HelpBar, HelpOverlay, MessageLine, routeTitle, type Message } from "./chrome.js";
import type { EditText } from "./editor.js";
import { LoginScreen, type Credentials } from "./login-screen.js";
import type { KeyHelp, Route, ScreenProps } from "./screen.js";
import { helpLines } from "./state/help.js";
import { useTerminalSize } from "./use-terminal-size.js";
import { useKeys } from "./use-keys.js";

// The shell: the login screen first, then header, the current screen's body, the error/notice line and the help
// bar, laid out to the terminal's size. The screens come in as a prop so tests can pass stubs and the entry point
// (run.tsx) decides which ones exist.

export interface Screens {
  queue: ComponentType<QueueScreenProps>;
  case: ComponentType<CaseScreenProps>;
  incidents: ComponentType<ScreenProps>;
  job: ComponentType<ScreenProps>;
}

export interface AppProps {
  baseUrl: string;
  email?: string;
  password?: string;
  login(credentials: Credentials): Promise<StaffClient>;
  worker: WorkerClient | null;
  editText: EditText;
  screens: Screens;
  now?: () => number;
  /** How often the queue and the incidents refresh (REFRESH_MS unless given; tests make it short). */
  refreshMs?: number;
  /** Called once when the user quits, with the session if one was opened (the caller logs it out). */
  onQuit?(staff: StaffClient | null): void;
}

/** How often the queue and the incidents read themselves again, unless told otherwise. */
export const REFRESH_MS = 5000;

const SHELL_KEYS: KeyHelp[] = [
  { key: "1", label: "queue" },
  { key: "2", label: "incidents" },
  { key: "3", label: "job" },
  { key: "?", label: "help" },
  { key: "q", label: "quit" },
];

export function App(props: AppProps) {
  const { exit } = useApp();
  const size = useTerminalSize();
  const [staff, setStaff] = useState<StaffClient | null>(null);
  const { onQuit } = props;
  const quit = useCallback(() => {
    onQuit?.(staff);
    exit();
  }, [onQuit, staff, exit]);
  useKeys((input, key) => {
    if (key.ctrl && input === "c") quit();
  });

  if (staff === null) {
    return (
      <Box height={size.rows} width={size.columns} flexDirection="column">
        <LoginScreen
          baseUrl={props.baseUrl}
          email={props.email}
          password={props.password}
          login={props.login}
          onLoggedIn={setStaff}
          columns={size.columns}
        />
      </Box>
    );
  }
  return <Shell {...props} staff={staff} columns={size.columns} rows={size.rows} quit={quit} />;
}

interface ShellProps extends AppProps {
  staff: StaffClient;
  columns: number;
  rows: number;
  quit(): void;
}

/** The shell's one line of errors and notices, and the moves on it the screens get. */
function useMessageLine() {
  const [message, setMessage] = useState<Message>(null);
  const showError = useCallback((err: unknown) => setMessage({ kind: "error", text: describeError(err) }), []);
  const showNotice = useCallback((text: string | null) => setMessage(text === null ? null : { kind: "notice", text }), []);
  const clearError = useCallback(() => setMessage((m) => (m?.kind === "error" ? null : m)), []);
  return { message, setMessage, showError, showNotice, clearError };
}

function Shell(props: ShellProps) {
  const { staff, columns, rows, screens, quit } = props;
  const [route, setRoute] = useState<Route>({ screen: "queue" });
  const [screenKeys, setScreenKeys] = useState<KeyHelp[]>([]);
  const [capturing, setCapturing] = useState(false);
  const [helpOpen, setHelpOpen] = useState(false);
  const { message, setMessage, showError, showNotice, clearError } = useMessageLine();
  const keptReplies = useRef(new Map<string, string>()).current;
  const now = props.now ?? Date.now;

  const go = useCallback(
    (next: Route) => {
      setScreenKeys([]);
      setMessage(null);
      setCapturing(false);
      setRoute(next);
    },
    [setMessage],
  );

  useKeys((input) => {
    if (helpOpen) return setHelpOpen(false);
    if (capturing) return;
    if (input === "1") go({ screen: "queue" });
    else if (input === "2") go({ screen: "incidents" });
    else if (input === "3") go({ screen: "job" });
    else if (input === "?") setHelpOpen(true);
    else if (input === "q") quit();
  });

  const keys = useMemo(() => [...SHELL_KEYS, ...screenKeys], [screenKeys]);
  const help = useMemo(() => helpLines(keys, columns), [keys, columns]);
  const bodyRows = Math.max(1, rows - 2 - help.length);
  const screenProps: ScreenProps = {
    staff,
    worker: props.worker,
    editText: props.editText,
    go,
    showError,
    showNotice,
    clearError,
    setCapturing,
    setHelp: setScreenKeys,
    active: !helpOpen,
    baseUrl: props.baseUrl,
    refreshMs: props.refreshMs ?? REFRESH_MS,
    columns,
    rows: bodyRows,
    now,
  };
  return (
    <Box height={rows} width={columns} flexDirection="column">
      <Header baseUrl={props.baseUrl} who={staff.session.user.email} route={route} columns={columns} />
      <Box height={bodyRows} flexDirection="column" overflow="hidden">
        {helpOpen ? <HelpOverlay title={routeTitle(route)} keys={keys} columns={columns} /> : null}
        {/* Hidden, not unmounted, under the help: the screen keeps its list, cursor and scroll. */}
        <Box display={helpOpen ? "none" : "flex"} flexDirection="column">
          <Body route={route} screens={screens} screenProps={screenProps} keptReplies={keptReplies} />
        </Box>
      </Box>
      <MessageLine message={message} columns={columns} />
      <HelpBar lines={help} columns={columns} />
    </Box>
  );
}

interface BodyProps {
  route: Route;
  screens: Screens;
  screenProps: ScreenProps;
  keptReplies: Map<string, string>;
}

function Body({ route, screens, screenProps, keptReplies }: BodyProps) {
  switch (route.screen) {
    case "queue":
      return <screens.queue {...screenProps} focus={route.focus} stack={route.stack} filter={route.filter} />;
    case "case":
      return <screens.case key={route.caseId} {...screenProps} caseId={route.caseId} back={route.back} keptReplies={keptReplies} />;
    case "incidents":
      return <screens.incidents {...screenProps} />;
    case "job":
      return <screens.job {...screenProps} />;
  }
}
