/** Command-line options of the operator CLIs (scripts/keys.ts, scripts/avatars.ts). */

export class UsageError extends Error {}

export interface Parsed {
  positional: string[];
  flags: Map<string, string>;
}

/**
 * `--name value` or `--name=value` for each name in `allowed`; the names in `switches`
 * take no value (present → `"true"`). Throws `UsageError` on anything else.
 */
export function parseArgs(
  args: string[],
  allowed: string[],
  switches: string[] = [],
): Parsed {
  const positional: string[] = [];
  const flags = new Map<string, string>();
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (!arg.startsWith("--")) {
      positional.push(arg);
      continue;
    }
    const eq = arg.indexOf("=");
    const name = eq === -1 ? arg.slice(2) : arg.slice(2, eq);
    const isSwitch = switches.includes(name);
    if (!allowed.includes(name) && !isSwitch) {
      throw new UsageError(`unknown option --${name}`);
    }
    let value: string | undefined = eq === -1 ? undefined : arg.slice(eq + 1);
    if (isSwitch) {
      if (value !== undefined) throw new UsageError(`--${name} takes no value`);
      value = "true";
    } else if (value === undefined) {
      value = args[++i];
      if (value === undefined) throw new UsageError(`--${name} needs a value`);
    }
    if (flags.has(name)) throw new UsageError(`--${name} given twice`);
    flags.set(name, value);
  }
  return { positional, flags };
}
