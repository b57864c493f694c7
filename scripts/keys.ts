/**
 * Operator CLI for API keys, behind `deno task keys` (docs/authentication.md):
 *
 *   keys create --tenant T --scopes a,b [--name N] [--expires-in-days D]
 *   keys list [--tenant T]
 *   keys revoke KEY_ID
 *
 * Opens the KV store named by `KV_PATH`, like main.ts. `create` prints the plaintext key
 * on stdout, once; everything else a human reads goes to stderr. Exit codes: 0 done,
 * 1 failed (unknown key, store unavailable), 2 usage or validation error.
 */
import { listApiKeys, revokeApiKey } from "../lib/auth/api_key_admin.ts";
import { type ApiKeyView, createApiKey } from "../lib/auth/api_keys.ts";
import { ConfigError, loadConfig } from "../lib/config.ts";
import { closeDeps, createDeps } from "../lib/wire.ts";
import { ApiError } from "../lib/errors.ts";
import { createLogger } from "../lib/log.ts";
import { OPERATOR, type Scope, SCOPES } from "../lib/principal.ts";
import { openKv } from "../lib/kv/store.ts";
import { parseArgs, type Parsed, UsageError } from "./_args.ts";

const USAGE = `usage:
  deno task keys create --tenant TENANT --scopes SCOPE[,SCOPE...] [--name NAME] [--expires-in-days DAYS]
  deno task keys list [--tenant TENANT]
  deno task keys revoke KEY_ID

scopes: ${SCOPES.join(", ")}
The store is KV_PATH (as for the server).`;

const DAY_MS = 86_400_000;

function fmtTime(ms: number | undefined): string {
  return ms === undefined ? "-" : new Date(ms).toISOString();
}

function describe(key: ApiKeyView): string {
  return [
    `key_id:      ${key.key_id}`,
    `tenant_id:   ${key.tenant_id}`,
    `scopes:      ${key.scopes.join(",")}`,
    `name:        ${key.name ?? "-"}`,
    `created_at:  ${fmtTime(key.created_at)}`,
    `expires_at:  ${fmtTime(key.expires_at)}`,
  ].join("\n");
}

/** Runs the CLI with `args`; returns the exit code. Output goes to `out`/`err`. */
export async function main(
  args: string[],
  env: Record<string, string | undefined>,
  out: (line: string) => void = console.log,
  err: (line: string) => void = console.error,
): Promise<number> {
  const [command, ...rest] = args;
  if (command === undefined || command === "help" || command === "--help") {
    (command === undefined ? err : out)(USAGE);
    return command === undefined ? 2 : 0;
  }
  let parsed: Parsed;
  try {
    if (command === "create") {
      parsed = parseArgs(rest, ["tenant", "scopes", "name", "expires-in-days"]);
      if (parsed.positional.length > 0) {
        throw new UsageError(`unexpected argument ${parsed.positional[0]}`);
      }
      if (!parsed.flags.has("tenant")) {
        throw new UsageError("--tenant is required");
      }
      if (!parsed.flags.has("scopes")) {
        throw new UsageError("--scopes is required");
      }
      const days = parsed.flags.get("expires-in-days");
      if (days !== undefined && !/^[1-9][0-9]{0,4}$/.test(days)) {
        throw new UsageError(
          "--expires-in-days must be a whole number of days, 1 to 99999",
        );
      }
    } else if (command === "list") {
      parsed = parseArgs(rest, ["tenant"]);
      if (parsed.positional.length > 0) {
        throw new UsageError(`unexpected argument ${parsed.positional[0]}`);
      }
    } else if (command === "revoke") {
      parsed = parseArgs(rest, []);
      if (parsed.positional.length !== 1) {
        throw new UsageError("revoke takes exactly one KEY_ID");
      }
    } else {
      throw new UsageError(`unknown command ${command}`);
    }
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    err(`error: ${e.message}\n\n${USAGE}`);
    return 2;
  }

  let config;
  try {
    config = loadConfig(env);
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    err(`configuration error: ${e.message}`);
    return 2;
  }
  const kv = await openKv(config.kvPath);
  const deps = await createDeps({
    config,
    kv,
    log: createLogger(() => {}),
  });
  try {
    return await run(command, parsed, deps, out, err);
  } catch (e) {
    if (!(e instanceof ApiError)) throw e;
    err(`error: ${e.message}`);
    return e.status === 400 ? 2 : 1;
  } finally {
    await closeDeps(deps);
  }
}

async function run(
  command: string,
  parsed: Parsed,
  deps: Awaited<ReturnType<typeof createDeps>>,
  out: (line: string) => void,
  err: (line: string) => void,
): Promise<number> {
  if (command === "create") {
    const days = parsed.flags.get("expires-in-days");
    const scopes = parsed.flags.get("scopes")!.split(",").map((s) => s.trim())
      .filter(Boolean) as Scope[];
    const name = parsed.flags.get("name");
    const { key, api_key } = await createApiKey(deps, OPERATOR, {
      tenant_id: parsed.flags.get("tenant")!,
      scopes,
      ...(name !== undefined ? { name } : {}),
      ...(days !== undefined
        ? { expires_at: deps.now() + Number(days) * DAY_MS }
        : {}),
    });
    err(describe(key));
    err("api_key (shown once, store it now; it cannot be shown again):");
    out(api_key);
    return 0;
  }
  if (command === "list") {
    const tenant = parsed.flags.get("tenant");
    const rows: string[][] = [[
      "KEY_ID",
      "TENANT",
      "SCOPES",
      "NAME",
      "CREATED",
      "EXPIRES",
      "REVOKED",
      "LAST_USED",
    ]];
    let cursor: string | undefined;
    do {
      const page = await listApiKeys(deps, OPERATOR, {
        ...(tenant !== undefined ? { tenant_id: tenant } : {}),
        ...(cursor !== undefined ? { cursor } : {}),
        limit: 100,
      });
      for (const k of page.keys) {
        rows.push([
          k.key_id,
          k.tenant_id,
          k.scopes.join(","),
          k.name ?? "-",
          fmtTime(k.created_at),
          fmtTime(k.expires_at),
          fmtTime(k.revoked_at),
          fmtTime(k.last_used_at),
        ]);
      }
      cursor = page.cursor ?? undefined;
    } while (cursor !== undefined);
    const widths = rows[0].map((_, i) =>
      Math.max(...rows.map((r) => r[i].length))
    );
    for (const r of rows) {
      out(r.map((c, i) => c.padEnd(widths[i])).join("  ").trimEnd());
    }
    return 0;
  }
  const keyId = parsed.positional[0];
  const { alreadyRevoked } = await revokeApiKey(deps, OPERATOR, keyId);
  out(alreadyRevoked ? `${keyId} was already revoked` : `${keyId} revoked`);
  return 0;
}

if (import.meta.main) {
  Deno.exit(await main(Deno.args, Deno.env.toObject()));
}
