/**
 * Page rendering in Fresh's shape: a route's handler calls `page(ctx, Page, data)` where
 * Fresh would call `ctx.render(data)`; the page component gets `PageProps` and is wrapped
 * in the one console layout. Also the console's per-request state and error pages.
 */
import type { ComponentType, VNode } from "preact";
import { renderToString } from "preact-render-to-string";
// Up into components/, as Fresh's renderer does: every page is wrapped in the one
// layout, and error pages are its notices.
import { Layout, type Section } from "../../components/Layout.tsx";
import { Notice } from "../../components/ui.tsx";
import type { Ctx } from "../api/http.ts";
import { type Administrator, isOperator } from "../principal.ts";
import { administratorOf, type ConsoleSession, signedInAs } from "./session.ts";

/** The console's slot in `ctx.state`, filled by routes/admin/_middleware.ts. */
export interface ConsoleState {
  session?: ConsoleSession;
  /** The parsed form body of a POST (empty otherwise). */
  form: URLSearchParams;
  /** The files of a signed-in upload (multipart) POST; empty otherwise. */
  files: Map<string, File>;
}

/** The console state of a request (an empty one outside the console middleware). */
export function consoleState(ctx: Ctx): ConsoleState {
  const s = ctx.state.console as ConsoleState | undefined;
  if (s) return s;
  const fresh: ConsoleState = { form: new URLSearchParams(), files: new Map() };
  ctx.state.console = fresh;
  return fresh;
}

/** The signed-in console session; the middleware guarantees it on protected routes. */
export function requireSession(ctx: Ctx): ConsoleSession {
  const s = consoleState(ctx).session;
  if (!s) throw new Error("console route reached without a session");
  return s;
}

/**
 * Who the signed-in console session administers: every lib call of a console route
 * passes it, so a tenant administrator sees and changes its own tenant only.
 */
export function requireAdmin(ctx: Ctx): Administrator {
  return administratorOf(requireSession(ctx).record);
}

/** What a page component receives, as in Fresh. */
export interface PageProps<T> {
  data: T;
  url: URL;
  params: Record<string, string>;
  /** The CSRF token for the page's forms ("" when signed out). */
  csrf: string;
  /** The clock's now (epoch ms), so pages render relative things deterministically. */
  now: number;
  /**
   * Who is signed in administers: null signed out; `tenantId` `admin` is the operator,
   * any other a tenant administrator (pages hide what it may not use; lib/ enforces it).
   */
  admin: Administrator | null;
}

export interface PageOptions {
  title: string;
  section: Section;
  status?: number;
  headers?: HeadersInit;
}

/** Renders `Page` with `data` inside the layout as a complete HTML response. */
export function page<T>(
  ctx: Ctx,
  Page: ComponentType<PageProps<T>>,
  data: T,
  options: PageOptions,
): Response {
  const session = consoleState(ctx).session;
  const csrf = session?.record.csrf ?? "";
  const admin = session ? administratorOf(session.record) : null;
  const body = (
    <Layout
      title={options.title}
      section={options.section}
      signedInAs={session ? signedInAs(session.record) : undefined}
      tenant={admin && !isOperator(admin) ? admin.tenantId : undefined}
      csrf={csrf}
    >
      <Page
        data={data}
        url={ctx.url}
        params={ctx.params}
        csrf={csrf}
        now={ctx.deps.now()}
        admin={admin}
      />
    </Layout>
  );
  return html(body, options.status ?? 200, options.headers);
}

/** A full HTML document response from a vnode. */
export function html(
  vnode: VNode,
  status = 200,
  headers?: HeadersInit,
): Response {
  const h = new Headers(headers);
  h.set("content-type", "text/html; charset=utf-8");
  return new Response("<!DOCTYPE html>" + renderToString(vnode), {
    status,
    headers: h,
  });
}

interface ErrorData {
  status: number;
  title: string;
  message: string;
}

function ErrorPage({ data }: PageProps<ErrorData>) {
  return (
    <section class="narrow">
      <h1>{data.title}</h1>
      <Notice kind="error">
        <p>{data.message}</p>
      </Notice>
      <p>
        <a href="/admin">Back to the console</a>
      </p>
    </section>
  );
}

/** An HTML error page (the console never answers with the API's JSON bodies). */
export function errorPage(
  ctx: Ctx,
  status: number,
  title: string,
  message: string,
  headers?: HeadersInit,
): Response {
  return page(ctx, ErrorPage, { status, title, message }, {
    title,
    section: "none",
    status,
    headers,
  });
}
