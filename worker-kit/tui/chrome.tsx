import { Box, Text } from "ink";
import type { KeyHelp, Route } from "./screen.js";
import { helpOverlayLines } from "./state/help.js";
import { shortId } from "./state/short-id.js";
import { oneLine, truncate } from "./state/text.js";

// The shell's fixed lines around a screen's body: the header, the error/notice line and the help bar. Each is cut
// to the terminal's width so that nothing wraps and the body keeps the rows it was given.

export function routeTitle(route: Route): string {
  return route.screen === "case" ? `case ${shortId(route.caseId)}` : route.screen;
}

export function Header(props: { baseUrl: string; who: string; route: Route; columns: number }) {
  const text = `gateway ${props.baseUrl} · ${props.who} · ${routeTitle(props.route)}`;
  return (
    <Text inverse bold>
      {truncate(oneLine(text), props.columns).padEnd(props.columns)}
    </Text>
  );
}

export type Message = { kind: "error" | "notice"; text: string } | null;

/** Always one line, empty when there is nothing to say, so the layout does not jump. */
export function MessageLine(props: { message: Message; columns: number }) {
  if (props.message === null) return <Text> </Text>;
  const text = truncate(oneLine(props.message.text), props.columns);
  return <Text color={props.message.kind === "error" ? "red" : "green"}>{text}</Text>;
}

export function HelpBar(props: { lines: string[]; columns: number }) {
  return (
    <Box flexDirection="column">
      {props.lines.map((line, i) => (
        <Text key={i} dimColor>
          {truncate(line, props.columns)}
        </Text>
      ))}
    </Box>
  );
}

/** The `?` overlay: every key of the shell and the current screen, one per line, in place of the body. */
export function HelpOverlay(props: { title: string; keys: KeyHelp[]; columns: number }) {
  return (
    <Box flexDirection="column">
      <Text bold>{truncate(`Keys: ${props.title} (any key closes this help)`, props.columns)}</Text>
      {helpOverlayLines(props.keys, props.columns).map((line, i) => (
        <Text key={i}>{line}</Text>
      ))}
    </Box>
  );
}
