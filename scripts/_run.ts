/** Runs a command to completion; its stdout, or an error carrying its stderr. */
export async function run(
  cmd: string,
  args: string[],
  opts: { cwd?: string; env?: Record<string, string> } = {},
): Promise<string> {
  const out = await new Deno.Command(cmd, {
    args,
    cwd: opts.cwd,
    env: opts.env,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder();
  if (!out.success) {
    throw new Error(
      `${cmd} ${args.join(" ")} failed (${out.code}):\n${
        text.decode(out.stdout).slice(-2000)
      }\n${text.decode(out.stderr).slice(-4000)}`,
    );
  }
  return text.decode(out.stdout);
}
