/**
 * Builds the app: the request handler over the route manifest, for `main.ts` and tests.
 */
import { traceRequestId } from "./lib/metrics/tracing.ts";
import type { AppDeps, DepsOptions } from "./lib/deps.ts";
import { closeDeps, createDeps } from "./lib/wire.ts";
import { ApiError, errorResponse, toApiError } from "./lib/errors.ts";
import {
  type Ctx,
  type Handler,
  type Method,
  type Middleware,
  RequestContext,
  type RequestState,
  ResponseHeaders,
  runChain,
  withHeaders,
} from "./lib/api/http.ts";
import {
  allowedMethods,
  createRouter,
  type MiddlewareModule,
  plainPathname,
} from "./lib/api/router.ts";
import { requestIdFrom } from "./lib/api/request_id.ts";
import { initServices } from "./lib/services.ts";
import manifest from "./manifest.ts";

export interface App {
  deps: AppDeps;
  handler: (req: Request, info?: Deno.ServeHandlerInfo) => Promise<Response>;
  /** Stops background work and closes KV (unless the caller passed its own KV). */
  close(): Promise<void>;
}

const router = createRouter(manifest);

/** Middlewares whose folder is a prefix of `pathname`, outermost first, for unmatched paths. */
function fallbackMiddlewares(pathname: string): Middleware[] {
  const found: { dir: string; handlers: Middleware[] }[] = [];
  for (const [file, mod] of Object.entries(manifest.routes)) {
    const dir = file.match(/^\.\/routes(.*)\/_middleware\.tsx?$/)?.[1];
    if (dir === undefined) continue;
    if (dir === "" || pathname === dir || pathname.startsWith(dir + "/")) {
      const h = (mod as MiddlewareModule).handler;
      found.push({ dir, handlers: Array.isArray(h) ? h : [h] });
    }
  }
  return found.sort((a, b) => a.dir.length - b.dir.length).flatMap((x) =>
    x.handlers
  );
}

function remoteAddrOf(info?: Deno.ServeHandlerInfo): string {
  const addr = info?.remoteAddr as Deno.NetAddr | undefined;
  return addr?.hostname ?? "unknown";
}

/** Builds the app on `deps` (or on dependencies built from `options`). */
export async function createApp(
  options: DepsOptions & { deps?: AppDeps } = {},
): Promise<App> {
  const deps = options.deps ?? await createDeps(options);
  await initServices(deps);

  const handler = async (
    req: Request,
    info?: Deno.ServeHandlerInfo,
  ): Promise<Response> => {
    // The whole URL is parsed only when a route asks for it (`ctx.url`).
    let url: URL | undefined;
    const pathname = plainPathname(req.url) ??
      (url = new URL(req.url)).pathname;
    const state: RequestState = {
      requestId: requestIdFrom(req.headers.get("x-request-id")),
      startedAt: performance.now(),
      headers: new ResponseHeaders(),
    };
    // The request's id on its trace (Deno's HTTP server span, with OTEL_DENO=true).
    traceRequestId(state.requestId);
    const isApi = pathname.startsWith("/v1/") || pathname === "/v1";
    const ctx = new RequestContext(req, state, deps, remoteAddrOf(info), url);

    let res: Response;
    try {
      const match = router.match(pathname);
      let middlewares: Middleware[];
      let last: Handler;
      if (!match) {
        state.route = "(unmatched)";
        middlewares = fallbackMiddlewares(pathname);
        last = () => {
          throw new ApiError("AVTR_NOT_FOUND", "No route matches this path");
        };
      } else {
        ctx.params = match.params;
        state.route = match.route.template;
        middlewares = match.route.middlewares;
        last = resolveHandler(match.route.module, req.method as Method);
      }
      res = await runChain(ctx, middlewares, last);
    } catch (err) {
      res = renderError(ctx, err);
    }

    const more = isApi ? { "x-request-id": state.requestId } : undefined;
    if (res.status !== 101) {
      res = withHeaders(res, state.headers, more);
    } else {
      setUpgradeHeaders(ctx, res, more);
    }
    if (req.method === "HEAD" && res.body) {
      res = new Response(null, { status: res.status, headers: res.headers });
    }
    const ms = performance.now() - state.startedAt;
    deps.metrics.request(
      state.route ?? "(unmatched)",
      req.method,
      res.status,
      ms / 1000,
    );
    deps.log.request({
      request_id: state.requestId,
      method: req.method,
      route: state.route,
      path: pathname, // redacted by the logger, as every string field
      status: res.status,
      duration_ms: Math.round(ms * 100) / 100,
      tenant: state.principal?.tenantId,
    });
    return res;
  };

  return {
    deps,
    handler,
    close: () => closeDeps(deps, !options.kv && !options.deps),
  };
}

/**
 * Puts the request's headers (`X-Request-Id`, `X-RateLimit-*`) on a 101 upgrade response
 * in place: such a response cannot be rebuilt, but Deno sends the headers it holds.
 */
function setUpgradeHeaders(
  ctx: Ctx,
  res: Response,
  more: Record<string, string> | undefined,
): void {
  try {
    for (const [k, v] of ctx.state.headers) {
      if (!res.headers.has(k)) res.headers.set(k, v);
    }
    for (const k in more) if (!res.headers.has(k)) res.headers.set(k, more[k]);
  } catch (err) {
    ctx.deps.log.warn("could not set headers on an upgrade response", {
      request_id: ctx.state.requestId,
      err: err instanceof Error ? err.message : String(err),
    });
  }
}

function resolveHandler(
  mod: { handler?: unknown; default?: unknown },
  method: Method,
): Handler {
  const h = mod.handler;
  if (typeof h === "function") return h as Handler;
  const table = (h ?? {}) as Partial<Record<Method, Handler>>;
  const fn = table[method] ?? (method === "HEAD" ? table.GET : undefined);
  if (fn) return fn;
  const allow = allowedMethods(mod as never);
  return () => {
    throw new ApiError(
      "AVTR_METHOD_NOT_ALLOWED",
      `Method ${method} is not allowed on this path`,
      {
        headers: { allow: allow.join(", ") },
      },
    );
  };
}

/** Renders a thrown value as the flat error body; unexpected causes go to the log only. */
export function renderError(ctx: Ctx, err: unknown): Response {
  const apiErr = toApiError(err);
  if (
    apiErr.code === "AVTR_INTERNAL_ERROR" ||
    apiErr.code === "AVTR_SESSION_STATE_UNAVAILABLE"
  ) {
    const cause = apiErr.cause ?? err;
    ctx.deps.log.error("request failed", {
      request_id: ctx.state.requestId,
      code: apiErr.code,
      err: cause instanceof Error
        ? { name: cause.name, message: cause.message, stack: cause.stack }
        : String(cause),
    });
  }
  return errorResponse(
    apiErr,
    ctx.state.requestId,
    ctx.deps.config.docsBaseUrl,
  );
}
