/** SSE text as the translators write it → its events (name and parsed data), in order. */
export function parseFrames(frames: string[]): { event: string | undefined; data: Record<string, unknown> }[] {
  return frames
    .join("")
    .split("\n\n")
    .filter((f) => f !== "")
    .map((f) => {
      const event = /^event: (.*)$/m.exec(f)?.[1];
      const data = /^data: (.*)$/m.exec(f)?.[1];
      if (data === undefined) throw new Error(`frame without data: ${f}`);
      return { event, data: JSON.parse(data) as Record<string, unknown> };
    });
}
