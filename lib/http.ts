/**
 * The small HTTP layer the app is built on, in Fresh's shape: route modules export
 * `handler` (a method → function table) and optionally a default page component;
 * `_middleware.ts` modules wrap every route below their folder. A manifest maps the
 * module files to URL patterns (`[session_id]` becomes a named group).
 */
import type { PresentedKey } from "./api_keys.ts";
import type { AppDeps } from "./deps.ts";
import type { Principal } from "./principal.ts";

export type Method =
  | "GET"
  | "POST"
  | "PUT"
  | "PATCH"
  | "DELETE"
  | "HEAD"
  | "OPTIONS";

/** Per-request state passed through the middleware chain, like Fresh's `ctx.state`. */
export interface RequestState {
  requestId: string;
  startedAt: number;
  /** Route template (the manifest path), for the access log. */
  route?: string;
  principal?: Principal;
  /** The request's credential, read once (`requestCredential` in lib/auth.ts). */
  credential?: RequestCredential;
  /** Extra headers every response of this request carries (e.g. rate-limit headers). */
  headers: Headers;
  /** Free slots for middleware of other surfaces (the console's session, CSRF token). */
  [key: string]: unknown;
}

/** What a request presents to authenticate with. */
export interface RequestCredential {
  /** The raw credential (`Authorization: Bearer` or `x-api-key`), or null. */
  value: string | null;
  /** The credential as an API key, when it is key-shaped. */
  key: PresentedKey | null;
}

export interface Ctx {
  req: Request;
  url: URL;
  params: Record<string, string>;
  state: RequestState;
  deps: AppDeps;
  /** The peer's address, when the server knows it. */
  remoteAddr: string;
  /** Runs the next middleware, or the route. */
  next: () => Promise<Response>;
}

export type Handler = (ctx: Ctx) => Response | Promise<Response>;
export type Handlers = Partial<Record<Method, Handler>>;
export type Middleware = (ctx: Ctx) => Response | Promise<Response>;

export interface RouteModule {
  handler?: Handlers | Handler;
  // deno-lint-ignore no-explicit-any
  default?: (props: any) => unknown;
}

export interface MiddlewareModule {
  handler: Middleware | Middleware[];
}

export interface Manifest {
  routes: Record<string, RouteModule | MiddlewareModule>;
}

type Segment =
  | { kind: "static"; value: string }
  | { kind: "param"; name: string }
  | { kind: "rest"; name: string };

interface CompiledRoute {
  file: string;
  template: string;
  segments: Segment[];
  module: RouteModule;
  middlewares: Middleware[];
  /** More specific routes sort first: fewer dynamic segments, then longer. */
  rank: number;
}

/** `./routes/v1/sessions/[session_id]/end.ts` → `/v1/sessions/:session_id/end`. */
export function fileToTemplate(file: string): string {
  let p = file.replace(/^\.\/routes/, "").replace(/\.(tsx?|jsx?)$/, "");
  p = p.replace(/\/index$/, "");
  p = p.replace(/\[\.\.\.([A-Za-z0-9_]+)\]/g, ":$1*").replace(
    /\[([A-Za-z0-9_]+)\]/g,
    ":$1",
  );
  return p === "" ? "/" : p;
}

function middlewareDir(file: string): string {
  return file.replace(/^\.\/routes/, "").replace(
    /\/_middleware\.(tsx?|jsx?)$/,
    "",
  );
}

function compileTemplate(template: string): Segment[] {
  return template.split("/").filter(Boolean).map((seg): Segment => {
    if (seg.startsWith(":") && seg.endsWith("*")) {
      return { kind: "rest", name: seg.slice(1, -1) };
    }
    if (seg.startsWith(":")) return { kind: "param", name: seg.slice(1) };
    return { kind: "static", value: seg };
  });
}

/**
 * Matches path segments against a compiled template. Params are percent-decoded; a
 * segment that does not decode makes the route not match (the caller answers 404).
 */
function matchSegments(
  segments: Segment[],
  parts: string[],
): Record<string, string> | null {
  const params: Record<string, string> = {};
  for (let i = 0; i < segments.length; i++) {
    const seg = segments[i];
    if (seg.kind === "rest") {
      const rest = parts.slice(i);
      if (rest.length === 0 || rest.some((p) => p === "")) return null;
      try {
        params[seg.name] = rest.map(decodeURIComponent).join("/");
      } catch {
        return null;
      }
      return params;
    }
    const part = parts[i];
    if (part === undefined || part === "") return null;
    if (seg.kind === "static") {
      if (part !== seg.value) return null;
    } else {
      try {
        params[seg.name] = decodeURIComponent(part);
      } catch {
        return null;
      }
    }
  }
  return parts.length === segments.length ? params : null;
}

export interface Router {
  match(url: URL): {
    route: CompiledRoute;
    params: Record<string, string>;
  } | null;
  routes: CompiledRoute[];
}

/**
 * Compiles the manifest into a matcher. Routes are grouped by segment count, so a
 * request is compared only with templates of its own length (plus catch-alls), most
 * specific first: a static segment wins over a parameter.
 */
export function createRouter(manifest: Manifest): Router {
  const middlewareByDir = new Map<string, Middleware[]>();
  for (const [file, mod] of Object.entries(manifest.routes)) {
    if (!/\/_middleware\.(tsx?|jsx?)$/.test(file)) continue;
    const h = (mod as MiddlewareModule).handler;
    middlewareByDir.set(middlewareDir(file), Array.isArray(h) ? h : [h]);
  }
  const routes: CompiledRoute[] = [];
  for (const [file, mod] of Object.entries(manifest.routes)) {
    if (/\/_[^/]*$/.test(file)) continue;
    const template = fileToTemplate(file);
    const segments = compileTemplate(template);
    // Middlewares of every folder on the file's path, outermost first.
    const fileSegs = file.replace(/^\.\/routes/, "").split("/").filter(Boolean);
    const dirs = new Set([""]);
    for (let i = 1; i < fileSegs.length; i++) {
      dirs.add("/" + fileSegs.slice(0, i).join("/"));
    }
    const middlewares: Middleware[] = [];
    for (const d of dirs) middlewares.push(...(middlewareByDir.get(d) ?? []));
    const dynamic = segments.filter((s) => s.kind !== "static").length;
    routes.push({
      file,
      template,
      segments,
      module: mod as RouteModule,
      middlewares,
      rank: dynamic * 1000 - segments.length,
    });
  }
  routes.sort((a, b) => a.rank - b.rank);
  const byLength = new Map<number, CompiledRoute[]>();
  const catchAll: CompiledRoute[] = [];
  for (const r of routes) {
    if (r.segments.some((s) => s.kind === "rest")) {
      catchAll.push(r);
      continue;
    }
    const list = byLength.get(r.segments.length) ?? [];
    list.push(r);
    byLength.set(r.segments.length, list);
  }
  return {
    routes,
    match(url) {
      const path = url.pathname;
      const parts = path === "/" ? [] : path.slice(1).split("/");
      for (const route of byLength.get(parts.length) ?? []) {
        const params = matchSegments(route.segments, parts);
        if (params) return { route, params };
      }
      for (const route of catchAll) {
        const params = matchSegments(route.segments, parts);
        if (params) return { route, params };
      }
      return null;
    },
  };
}

/** Methods a route module answers (HEAD follows GET). */
export function allowedMethods(mod: RouteModule): Method[] {
  const h = mod.handler;
  if (typeof h === "function" || (h === undefined && mod.default)) {
    return ["GET", "HEAD"];
  }
  const methods = Object.keys(h ?? {}) as Method[];
  if (methods.includes("GET") && !methods.includes("HEAD")) {
    methods.push("HEAD");
  }
  return methods;
}

/** Runs `middlewares` then `last`, each able to call `ctx.next()`. */
export function runChain(
  ctx: Ctx,
  middlewares: Middleware[],
  last: Handler,
): Promise<Response> {
  let i = 0;
  const next = async (): Promise<Response> => {
    if (i < middlewares.length) {
      const mw = middlewares[i++];
      return await mw(ctx);
    }
    return await last(ctx);
  };
  ctx.next = next;
  return next();
}

const JSON_CONTENT_TYPE = "application/json; charset=utf-8";

/** A JSON response with the request's shared headers. */
export function json(
  body: unknown,
  status = 200,
  headers?: HeadersInit,
): Response {
  if (headers === undefined) {
    return new Response(JSON.stringify(body), {
      status,
      headers: { "content-type": JSON_CONTENT_TYPE },
    });
  }
  const h = new Headers(headers);
  h.set("content-type", JSON_CONTENT_TYPE);
  return new Response(JSON.stringify(body), { status, headers: h });
}

/**
 * The `Headers` of `RequestState.headers`: a `Headers` that also keeps what was set in
 * a plain map, so `withHeaders` copies it without iterating a `Headers` (which sorts and
 * costs microseconds a request).
 */
export class StateHeaders extends Headers {
  readonly #map = new Map<string, string>();

  override set(name: string, value: string): void {
    super.set(name, value);
    // Headers strips leading and trailing HTTP whitespace; most values have none.
    this.#map.set(
      name.toLowerCase(),
      isTrimmed(value) ? value : super.get(name)!,
    );
  }

  override append(name: string, value: string): void {
    super.append(name, value);
    this.#map.set(name.toLowerCase(), super.get(name)!);
  }

  override delete(name: string): void {
    super.delete(name);
    this.#map.delete(name.toLowerCase());
  }

  /** The headers set so far, lower-case name → value. */
  entriesMap(): ReadonlyMap<string, string> {
    return this.#map;
  }
}

function isHttpWhitespace(code: number): boolean {
  return code === 0x20 || code === 0x09 || code === 0x0a || code === 0x0d;
}

function isTrimmed(value: string): boolean {
  return typeof value === "string" &&
    (value.length === 0 ||
      (!isHttpWhitespace(value.charCodeAt(0)) &&
        !isHttpWhitespace(value.charCodeAt(value.length - 1))));
}

function headerPairs(extra: Headers): Iterable<[string, string]> {
  return extra instanceof StateHeaders ? extra.entriesMap() : extra;
}

function isEmpty(extra: Headers): boolean {
  if (extra instanceof StateHeaders) return extra.entriesMap().size === 0;
  for (const _ of extra.keys()) return false;
  return true;
}

/**
 * Copies `extra` (and `more`, name → value) into `res`'s headers where `res` does not
 * set them itself, cloning the response when its headers are immutable.
 */
export function withHeaders(
  res: Response,
  extra: Headers,
  more?: Record<string, string>,
): Response {
  if (isEmpty(extra) && more === undefined) return res;
  try {
    copyMissing(res.headers, extra, more);
    return res;
  } catch {
    const headers = new Headers(res.headers);
    copyMissing(headers, extra, more);
    return new Response(res.body, {
      status: res.status,
      statusText: res.statusText,
      headers,
    });
  }
}

function copyMissing(
  target: Headers,
  extra: Headers,
  more?: Record<string, string>,
): void {
  for (const [k, v] of headerPairs(extra)) {
    if (!target.has(k)) target.set(k, v);
  }
  if (more !== undefined) {
    for (const k in more) if (!target.has(k)) target.set(k, more[k]);
  }
}
