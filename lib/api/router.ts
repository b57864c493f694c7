/**
 * The router of the HTTP layer, in Fresh's shape: a manifest maps route module files to
 * URL patterns (`[session_id]` becomes a named parameter, `_middleware.ts` modules wrap
 * every route below their folder), and `createRouter` matches a pathname to the most
 * specific route with its middlewares.
 */
import type { Handler, Handlers, Method, Middleware } from "./http.ts";

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
    } else if (part.includes("%")) {
      try {
        params[seg.name] = decodeURIComponent(part);
      } catch {
        return null;
      }
    } else {
      params[seg.name] = part;
    }
  }
  return parts.length === segments.length ? params : null;
}

export interface Router {
  /** The route for a URL's `pathname`, with its params, or null. */
  match(pathname: string): {
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
  // Candidates by segment count and first segment: the routes whose first segment is
  // that static value or a parameter, most specific first. A first segment no route
  // names gets only the parameter-first routes of its length.
  const candidates = new Map<string, CompiledRoute[]>();
  const catchAll: CompiledRoute[] = [];
  const paramFirst = (r: CompiledRoute) => r.segments[0]?.kind !== "static";
  for (const r of routes) {
    if (r.segments.some((s) => s.kind === "rest")) {
      catchAll.push(r);
      continue;
    }
    const first = r.segments[0];
    const bucket = r.segments.length + "/" +
      (first?.kind === "static" ? first.value : "");
    candidates.set(bucket, [...candidates.get(bucket) ?? [], r]);
  }
  for (const [bucket, list] of candidates) {
    if (bucket.endsWith("/")) continue;
    const length = Number(bucket.slice(0, bucket.indexOf("/")));
    const dynamic = candidates.get(length + "/") ?? [];
    candidates.set(
      bucket,
      [...list, ...dynamic.filter(paramFirst)].sort((a, b) => a.rank - b.rank),
    );
  }
  return {
    routes,
    match(path) {
      const parts = path === "/" ? [] : path.slice(1).split("/");
      const list = candidates.get(parts.length + "/" + (parts[0] ?? "")) ??
        candidates.get(parts.length + "/") ?? [];
      for (const route of list) {
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

/** An authority (host and port) with nothing the URL parser would read differently. */
const PLAIN_AUTHORITY = /^[A-Za-z0-9.:[\]-]+$/;
/**
 * A path the URL parser leaves as it is: letters, digits and the path characters it
 * never encodes, with no dot (so no dot segment), escape or backslash.
 */
const PLAIN_PATH = /^\/[A-Za-z0-9_~\/:@!$&'()*+,;=-]*$/;

/**
 * The `pathname` of an absolute `http(s)` URL without parsing all of it, or null when the
 * URL needs the parser (dots, percent escapes, other characters): then
 * `new URL(url).pathname` is the answer. When not null, it equals that.
 */
export function plainPathname(url: string): string | null {
  const scheme = url.startsWith("http://")
    ? 4
    : url.startsWith("https://")
    ? 5
    : -1;
  if (scheme < 0) return null;
  const slash = url.indexOf("/", scheme + 3);
  if (slash < 0 || !PLAIN_AUTHORITY.test(url.slice(scheme + 3, slash))) {
    return null;
  }
  let end = url.length;
  for (let i = slash; i < url.length; i++) {
    const c = url.charCodeAt(i);
    if (c === 0x3f || c === 0x23) { // ? #
      end = i;
      break;
    }
  }
  const path = url.slice(slash, end);
  return PLAIN_PATH.test(path) ? path : null;
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
