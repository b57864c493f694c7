/**
 * A minimal customer backend. It holds the API key (the browser never sees it), creates a
 * session when the page asks, hands the browser only the media token, refreshes that
 * token for reconnects, and ends the session. It also serves the example page and the
 * bundled browser client.
 *
 *   AVATAR_BASE_URL=http://localhost:8000 AVATAR_API_KEY=avk_… \
 *   ENGINE_URL=wss://engine.example.com/engine ENGINE_TOKEN=… \
 *   AVATAR_TRANSPORT=auto \                    # or webrtc_sfu / websocket_fmp4
 *   SITE_DIR=examples/react/dist \             # optional: the built React example
 *   deno run -A examples/backend.ts            # then open http://localhost:3000
 *
 * A real backend authenticates its own users first and remembers which user owns which
 * session; here every session this process created is refreshable by the page.
 */
import { AvatarApiError, AvatarClient } from "../client/server.ts";

export interface BackendOptions {
  client: AvatarClient;
  /** The service's media WebSocket base, e.g. `wss://avatar.example.com`. */
  wsBaseUrl: string;
  /** The conversation engine the avatar talks with (`external_engine`). */
  engine: { url: string; authHeaders: Record<string, string> };
  /** The browser client (`bundleBrowserClient()`): /avatar.js and its chunks beside it. */
  browserBundle?: BrowserBundle;
  /**
   * A built page to serve instead of the example page (e.g. the React example's
   * `dist/`, examples/react): its files by path, `index.html` at `/`.
   */
  siteDir?: string;
  /** The transport sessions ask for (default `auto`: the SFU when the service has one). */
  transport?: "auto" | "webrtc_sfu" | "websocket_fmp4";
  /** Where the service sends the sessions' webhooks (`webhook_url`); default none. */
  webhookUrl?: string;
}

const HERE = new URL("./", import.meta.url);

/**
 * The browser client as a page loads it, by file name: the entry, `avatar.js`, and the
 * chunks it imports, served beside it. One chunk is the WebAssembly Opus decoder, which
 * only WebKit on Linux imports (client/webcodecs/support.ts): other browsers never
 * fetch its ~90 KB.
 */
export type BrowserBundle = Readonly<Record<string, string>>;

/** Builds client/browser.ts with `deno bundle --code-splitting` (ES modules). */
export async function bundleBrowserClient(): Promise<BrowserBundle> {
  const dir = await Deno.makeTempDir({ prefix: "avatar-bundle-" });
  try {
    const out = await new Deno.Command(Deno.execPath(), {
      args: [
        "bundle",
        "--quiet",
        "--platform",
        "browser",
        "--code-splitting",
        "--outdir",
        dir,
        new URL("../client/browser.ts", HERE).pathname,
      ],
      stdout: "piped",
      stderr: "piped",
    }).output();
    if (!out.success) {
      throw new Error(new TextDecoder().decode(out.stderr));
    }
    const files: Record<string, string> = {};
    for await (const e of Deno.readDir(dir)) {
      const name = e.name === "browser.js" ? "avatar.js" : e.name;
      files[name] = await Deno.readTextFile(`${dir}/${e.name}`);
    }
    if (!files["avatar.js"]) throw new Error("deno bundle wrote no browser.js");
    return files;
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/**
 * The bundle's file at `pathname`, or null: the entry at `entryPath` (default
 * `/avatar.js`), its chunks by name in the same folder.
 */
export function bundleFile(
  bundle: BrowserBundle,
  pathname: string,
  entryPath = "/avatar.js",
): Response | null {
  const dir = entryPath.slice(0, entryPath.lastIndexOf("/") + 1);
  const name = pathname === entryPath
    ? "avatar.js"
    : pathname.startsWith(dir) && pathname !== `${dir}avatar.js`
    ? pathname.slice(dir.length)
    : null;
  if (name === null || !Object.hasOwn(bundle, name)) return null;
  return new Response(bundle[name], {
    headers: { "content-type": "text/javascript; charset=utf-8" },
  });
}

function json(body: unknown, status = 200): Response {
  return Response.json(body, {
    status,
    headers: { "cache-control": "no-store" },
  });
}

const TYPES: Record<string, string> = {
  html: "text/html; charset=utf-8",
  js: "text/javascript; charset=utf-8",
  css: "text/css; charset=utf-8",
  svg: "image/svg+xml",
  png: "image/png",
  json: "application/json",
};

/** A file of a built page under `dir` (no path outside it), or 404. */
async function siteFile(dir: string, pathname: string): Promise<Response> {
  const rel = pathname === "/" ? "index.html" : pathname.slice(1);
  if (rel.split("/").some((p) => p === ".." || p === "" || p.startsWith("."))) {
    return json({ error: "not_found" }, 404);
  }
  try {
    const body = await Deno.readFile(`${dir}/${rel}`);
    const type = TYPES[rel.replace(/^.*\./, "")] ?? "application/octet-stream";
    return new Response(body, { headers: { "content-type": type } });
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) {
      return json({ error: "not_found" }, 404);
    }
    throw err;
  }
}

/** The backend's request handler. */
export function createBackend(
  options: BackendOptions,
): (req: Request) => Promise<Response> {
  const { client } = options;
  const mine = new Set<string>();
  const files: Record<string, [string, () => Promise<string>]> = {
    "/": ["text/html", () => Deno.readTextFile(new URL("page.html", HERE))],
    "/page.js": [
      "text/javascript",
      () => Deno.readTextFile(new URL("page.js", HERE)),
    ],
  };

  async function route(req: Request): Promise<Response> {
    const { pathname } = new URL(req.url);
    if (req.method === "GET" && options.siteDir) {
      return await siteFile(options.siteDir, pathname);
    }
    const script = req.method === "GET" && options.browserBundle
      ? bundleFile(options.browserBundle, pathname)
      : null;
    if (script) return script;
    const file = files[pathname];
    if (req.method === "GET" && file) {
      return new Response(await file[1](), {
        headers: { "content-type": `${file[0]}; charset=utf-8` },
      });
    }
    if (req.method !== "POST") return json({ error: "not_found" }, 404);

    if (pathname === "/api/avatar/sessions") {
      // The page may pick a catalog background (e.g. `transparent`) and an avatar
      // (a catalog id or one of this tenant's photo avatars, `ph_…`); the service
      // validates both.
      const body = await req.json().catch(() => null) as
        | { bg_id?: unknown; avatar_id?: unknown }
        | null;
      const pick = (v: unknown) =>
        typeof v === "string" && /^[A-Za-z0-9_-]{1,64}$/.test(v)
          ? v
          : undefined;
      const bgId = pick(body?.bg_id);
      const avatarId = pick(body?.avatar_id);
      const session = await client.createSession({
        avatar_config: bgId || avatarId
          ? {
            ...(bgId ? { bg_id: bgId } : {}),
            ...(avatarId ? { avatar_id: avatarId } : {}),
          }
          : undefined,
        provider_type: "external_engine",
        provider_config: {
          external_engine: {
            url: options.engine.url,
            auth_headers: options.engine.authHeaders,
          },
        },
        transport: options.transport ?? "auto",
        ...(options.webhookUrl ? { webhook_url: options.webhookUrl } : {}),
      });
      mine.add(session.session_id);
      return json({
        session_id: session.session_id,
        client_token: session.client_token,
        expires_at: session.expires_at,
        ws_base_url: options.wsBaseUrl,
        // The player picks MSE or WebRTC from these.
        transport: session.transport,
        ice_servers: session.stream_metadata.ice_servers,
      });
    }
    const m = pathname.match(/^\/api\/avatar\/sessions\/([^/]+)\/(token|end)$/);
    const id = m ? decodeURIComponent(m[1]) : "";
    if (!m || !mine.has(id)) return json({ error: "not_found" }, 404);
    if (m[2] === "token") {
      const { client_token, expires_at } = await client.createClientToken(id);
      return json({ client_token, expires_at });
    }
    mine.delete(id);
    return json(await client.endSession(id));
  }

  return async (req) => {
    try {
      return await route(req);
    } catch (err) {
      if (!(err instanceof AvatarApiError)) throw err;
      // The code and request id help support; the message may name fields, not secrets.
      return json({ error: err.code, request_id: err.request_id }, 502);
    }
  };
}

if (import.meta.main) {
  const env = (name: string) => {
    const v = Deno.env.get(name);
    if (!v) throw new Error(`Set ${name}`);
    return v;
  };
  const baseUrl = env("AVATAR_BASE_URL");
  const handler = createBackend({
    client: new AvatarClient({ baseUrl, apiKey: env("AVATAR_API_KEY") }),
    wsBaseUrl: Deno.env.get("AVATAR_WS_BASE_URL") ??
      baseUrl.replace(/^http/, "ws"),
    engine: {
      url: env("ENGINE_URL"),
      authHeaders: { authorization: `Bearer ${env("ENGINE_TOKEN")}` },
    },
    // SITE_DIR: a built page to serve instead (e.g. examples/react/dist).
    siteDir: Deno.env.get("SITE_DIR"),
    browserBundle: Deno.env.get("SITE_DIR")
      ? undefined
      : await bundleBrowserClient(),
    transport: (Deno.env.get("AVATAR_TRANSPORT") ?? "auto") as
      | "auto"
      | "webrtc_sfu"
      | "websocket_fmp4",
  });
  Deno.serve({ port: Number(Deno.env.get("PORT") ?? 3000) }, handler);
}
