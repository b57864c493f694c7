/**
 * Static assets under /static/ (the console's stylesheet and island bundle), from the
 * static/ folder. Only plain relative paths of known types are served; revalidated with
 * an ETag on every use so a rebuilt bundle is picked up at once.
 */
import { ApiError } from "../../lib/errors.ts";
import type { Ctx } from "../../lib/api/http.ts";

const ROOT = new URL("../../static/", import.meta.url);

const TYPES: Record<string, string> = {
  css: "text/css; charset=utf-8",
  js: "text/javascript; charset=utf-8",
  svg: "image/svg+xml",
  png: "image/png",
  ico: "image/x-icon",
  woff2: "font/woff2",
};

function notFound(): never {
  throw new ApiError("AVTR_NOT_FOUND", "No route matches this path");
}

async function serve(ctx: Ctx): Promise<Response> {
  const path = ctx.params.path ?? "";
  if (
    !/^[A-Za-z0-9_-]+(\/[A-Za-z0-9_-]+)*\.[a-z0-9]+$/.test(path) ||
    path.includes("..")
  ) {
    notFound();
  }
  const type = TYPES[path.slice(path.lastIndexOf(".") + 1)];
  if (!type) notFound();
  const file = new URL(path, ROOT);
  let info: Deno.FileInfo;
  try {
    info = await Deno.stat(file);
  } catch {
    notFound();
  }
  if (!info.isFile) notFound();
  const etag = `"${info.size.toString(36)}-${
    (info.mtime?.getTime() ?? 0).toString(36)
  }"`;
  const headers = new Headers({
    "content-type": type,
    "cache-control": "no-cache",
    etag,
    "x-content-type-options": "nosniff",
    "cross-origin-resource-policy": "same-origin",
  });
  if (ctx.req.headers.get("if-none-match") === etag) {
    return new Response(null, { status: 304, headers });
  }
  const body = await Deno.readFile(file);
  return new Response(body, { status: 200, headers });
}

export const handler = { GET: serve };
