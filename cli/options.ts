import { InvalidArgumentError, type Command } from "commander";

/** The options every data command shares (docs/architecture.md, "Rules"). */
export function withCommonOptions(cmd: Command): Command {
  return cmd
    .option("--config <file>", "config file (default: $GATEWAY_CONFIG, else ./gateway.yaml)")
    .option("--data-dir <dir>", "data dir of the embedded database (default: $GATEWAY_DATA_DIR, else ./.gateway)")
    .option("--json", "print JSON for scripts")
    .option("--init", "create the embedded database when the data dir has none (else that is an error)");
}

/** A listen port option's value. */
export const parsePort = (value: string) => {
  const port = Number(value);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new InvalidArgumentError("must be an integer 0..65535");
  return port;
};

/** An integer option's parser: `min..max`, else commander's one-line refusal naming the option. */
export function intIn(min: number, max: number, name: string) {
  return (value: string) => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < min || n > max) throw new InvalidArgumentError(`${name} must be an integer from ${min} to ${max}`);
    return n;
  };
}
