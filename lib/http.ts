/**
 * The small HTTP layer the app is built on, in Fresh's shape: route modules export
 * `handler` (a method → function table) and optionally a default page component;
 * `_middleware.ts` modules wrap every route below their folder. A manifest maps the
 * module files to URL patterns (`[session_id]` becomes a named group).
 */
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
  /** Extra headers every response of this request carries (e.g. rate-limit headers). */
  headers: Headers;
  /** Free slots for middleware of other surfaces (the console's session, CSRF token). */
  [key: string]: unknown;
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

interface CompiledRoute {
  file: string;
  template: string;
  pattern: URLPattern;
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

export interface Router {
  match(url: URL): {
    route: CompiledRoute;
    params: Record<string, string>;
  } | null;
  routes: CompiledRoute[];
}

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
    const middlewares: Middleware[] = [];
    // Outermost first: "", "/v1", "/v1/sessions", ...
    const segments = template.split("/").filter(Boolean);
    const dirs = [""];
    for (let i = 0; i < segments.length; i++) {
      const fileSegs = file.replace(/^\.\/routes/, "").split("/").filter(
        Boolean,
      );
      dirs.push("/" + fileSegs.slice(0, i + 1).join("/"));
    }
    for (const d of new Set(dirs)) {
      middlewares.push(...(middlewareByDir.get(d) ?? []));
    }
    const dynamic = segments.filter((s) => s.startsWith(":")).length;
    routes.push({
      file,
      template,
      pattern: new URLPattern({ pathname: template }),
      module: mod as RouteModule,
      middlewares,
      rank: dynamic * 1000 - segments.length,
    });
  }
  routes.sort((a, b) => a.rank - b.rank);
  return {
    routes,
    match(url) {
      for (const route of routes) {
        const m = route.pattern.exec({ pathname: url.pathname });
        if (m) {
          const params: Record<string, string> = {};
          for (const [k, v] of Object.entries(m.pathname.groups)) {
            if (v !== undefined) params[k] = decodeURIComponent(v);
          }
          return { route, params };
        }
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

/** A JSON response with the request's shared headers. */
export function json(
  body: unknown,
  status = 200,
  headers?: HeadersInit,
): Response {
  const h = new Headers(headers);
  h.set("content-type", "application/json; charset=utf-8");
  return new Response(JSON.stringify(body), { status, headers: h });
}

/** Copies `extra` into `res`'s headers, cloning the response when they are immutable. */
export function withHeaders(res: Response, extra: Headers): Response {
  if ([...extra.keys()].length === 0) return res;
  try {
    for (const [k, v] of extra) if (!res.headers.has(k)) res.headers.set(k, v);
    return res;
  } catch {
    const headers = new Headers(res.headers);
    for (const [k, v] of extra) if (!headers.has(k)) headers.set(k, v);
    return new Response(res.body, {
      status: res.status,
      statusText: res.statusText,
      headers,
    });
  }
}
