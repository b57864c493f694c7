/**
 * Operator CLI for photo avatars (DECISIONS 12), behind `deno task avatars`:
 *
 *   avatars add --tenant T --name N --photo FILE --consent [--framing F]
 *   avatars list --tenant T
 *   avatars remove --tenant T --id AVATAR_ID
 *
 * Opens the KV store named by `KV_PATH`, like main.ts. Results are JSON on stdout. Exit
 * codes: 0 done; 1 failed (no such avatar, store unavailable); 2 bad input, with one
 * line on stderr naming the cause, and nothing stored.
 */
import { ApiError } from "../lib/errors.ts";
import { OPERATOR } from "../lib/principal.ts";
import { ConfigError, loadConfig } from "../lib/config.ts";
import { openKv } from "../lib/kv/store.ts";
import {
  addPhotoAvatar,
  isFraming,
  listPhotoAvatars,
  MAX_PHOTO_BYTES,
  photoEntryOf,
  PhotoRefusal,
  removePhotoAvatar,
} from "../lib/photo/mod.ts";
import { parseArgs, type Parsed, UsageError } from "./_args.ts";

const USAGE = `usage:
  deno task avatars add --tenant TENANT --name NAME --photo FILE.jpg|FILE.png --consent
      [--framing square|landscape|portrait]
  deno task avatars list --tenant TENANT
  deno task avatars remove --tenant TENANT --id AVATAR_ID

--consent states that you have the pictured person's consent; without it nothing is stored.
--framing is the picture's (and the stream's) shape: square 512×512 (the default),
landscape 1280×720 or portrait 720×1280.
The store is KV_PATH (as for the server).`;

const COMMANDS: Record<
  string,
  { flags: string[]; optional?: string[]; switches?: string[] }
> = {
  add: {
    flags: ["tenant", "name", "photo"],
    optional: ["framing"],
    switches: ["consent"],
  },
  list: { flags: ["tenant"] },
  remove: { flags: ["tenant", "id"] },
};

function parse(command: string, args: string[]): Parsed {
  const spec = COMMANDS[command];
  if (!spec) throw new UsageError(`unknown command ${command}`);
  const parsed = parseArgs(
    args,
    [...spec.flags, ...spec.optional ?? []],
    spec.switches,
  );
  if (parsed.positional.length > 0) {
    throw new UsageError(`unexpected argument ${parsed.positional[0]}`);
  }
  for (const flag of spec.flags) {
    if (!parsed.flags.get(flag)) throw new UsageError(`--${flag} is required`);
  }
  return parsed;
}

/** The photo file's bytes; its size is checked before it is read. */
async function readPhoto(path: string): Promise<Uint8Array> {
  let size: number;
  try {
    size = (await Deno.stat(path)).size;
  } catch {
    throw new UsageError(`cannot read --photo ${path}`);
  }
  if (size > MAX_PHOTO_BYTES) throw new PhotoRefusal("larger than 8 MiB");
  return await Deno.readFile(path);
}

/** Runs the CLI with `args`; returns the exit code. Output goes to `out`/`err`. */
export async function main(
  args: string[],
  env: Record<string, string | undefined>,
  out: (line: string) => void = console.log,
  err: (line: string) => void = console.error,
): Promise<number> {
  const [command, ...rest] = args;
  if (command === "help" || command === "--help") {
    out(USAGE);
    return 0;
  }
  let kv: Deno.Kv | undefined;
  try {
    if (command === undefined) {
      throw new UsageError("a command is required: add, list or remove");
    }
    const parsed = parse(command, rest);
    const tenantId = parsed.flags.get("tenant")!;
    // Consent is checked before the photo is even read.
    if (command === "add" && !parsed.flags.has("consent")) {
      throw new PhotoRefusal("consent not given");
    }
    const framing = parsed.flags.get("framing");
    if (framing !== undefined && !isFraming(framing)) {
      throw new PhotoRefusal("framing must be square, landscape or portrait");
    }
    const photo = command === "add"
      ? await readPhoto(parsed.flags.get("photo")!)
      : undefined;
    const config = loadConfig(env);
    kv = await openKv(config.kvPath);
    if (command === "add") {
      const avatar = await addPhotoAvatar(
        { kv, now: Date.now, config },
        OPERATOR,
        {
          tenantId,
          name: parsed.flags.get("name")!,
          bytes: photo!,
          consentBy: "operator (CLI)",
          framing,
        },
      );
      const e = photoEntryOf(avatar);
      out(JSON.stringify({
        avatar_id: e.avatar_id,
        name: e.name,
        framing: e.framing,
        width: e.width,
        height: e.height,
      }));
      return 0;
    }
    if (command === "list") {
      out(JSON.stringify(await listPhotoAvatars(kv, OPERATOR, tenantId)));
      return 0;
    }
    const id = parsed.flags.get("id")!;
    if (!(await removePhotoAvatar(kv, OPERATOR, tenantId, id))) {
      err(`error: no photo avatar ${id} in tenant ${tenantId}`);
      return 1;
    }
    out(JSON.stringify({ avatar_id: id, removed: true }));
    return 0;
  } catch (e) {
    if (
      e instanceof UsageError || e instanceof PhotoRefusal ||
      e instanceof ConfigError
    ) {
      err(`error: ${e.message}`);
      return 2;
    }
    if (e instanceof ApiError) {
      err(`error: ${e.message}`);
      return 1;
    }
    throw e;
  } finally {
    kv?.close();
  }
}

if (import.meta.main) {
  Deno.exit(await main(Deno.args, Deno.env.toObject()));
}
