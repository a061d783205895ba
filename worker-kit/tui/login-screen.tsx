import { Box, Text } from "ink";
import { useCallback, useEffect, useRef, useState } from "react";
import { describeError } from "../client/errors.js";
import type { StaffClient } from "../client/staff-client.js";
import { oneLine, truncate } from "./state/text.js";
import { TextField } from "./text-field.js";
import { useKeys } from "./use-keys.js";

// The first screen: email and password for the gateway's login route (an admin account; its throttle applies).
// With both prefilled it logs in at once; a failure (wrong password, throttled) shows as one line and the form
// stays for another try, with the password cleared and focused.

export interface Credentials {
  email: string;
  password: string;
}

export interface LoginScreenProps {
  baseUrl: string;
  email?: string;
  password?: string;
  login(credentials: Credentials): Promise<StaffClient>;
  onLoggedIn(staff: StaffClient): void;
  columns: number;
}

type Field = "email" | "password";

export function LoginScreen(props: LoginScreenProps) {
  const { login, onLoggedIn, columns } = props;
  const [email, setEmail] = useState(props.email ?? "");
  const [password, setPassword] = useState(props.password ?? "");
  const [focus, setFocus] = useState<Field>(props.email ? "password" : "email");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);

  const submit = useCallback(
    async (credentials: Credentials) => {
      if (credentials.email.trim() === "" || credentials.password === "") {
        setError("email and password are both needed");
        return;
      }
      setBusy(true);
      setError(null);
      try {
        onLoggedIn(await login({ email: credentials.email.trim(), password: credentials.password }));
      } catch (err) {
        setBusy(false);
        setError(describeError(err));
        setPassword("");
        setFocus("password");
      }
    },
    [login, onLoggedIn],
  );

  const prefilled = useRef(props.email && props.password ? { email: props.email, password: props.password } : null);
  useEffect(() => {
    if (prefilled.current) void submit(prefilled.current);
    prefilled.current = null;
  }, [submit]);

  useKeys(
    (_input, key) => {
      if (key.tab || key.upArrow || key.downArrow) setFocus((f) => (f === "email" ? "password" : "email"));
    },
    { isActive: !busy },
  );

  const onSubmitEmail = () => (password === "" ? setFocus("password") : void submit({ email, password }));
  return (
    <Box flexDirection="column" width={columns}>
      <Text bold wrap="truncate-end">
        Log in to {props.baseUrl}
      </Text>
      <Text> </Text>
      <TextField
        label="email   "
        value={email}
        onChange={setEmail}
        onSubmit={onSubmitEmail}
        focused={!busy && focus === "email"}
        width={columns}
      />
      <TextField
        label="password"
        value={password}
        onChange={setPassword}
        onSubmit={() => void submit({ email, password })}
        focused={!busy && focus === "password"}
        mask="*"
        width={columns}
      />
      <Text> </Text>
      {busy ? <Text dimColor>logging in…</Text> : null}
      {error === null ? null : <Text color="red">{truncate(oneLine(error), columns)}</Text>}
      <Text dimColor wrap="truncate-end">
        tab switch field · enter log in · ctrl-c quit
      </Text>
    </Box>
  );
}
