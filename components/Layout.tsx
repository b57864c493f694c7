/** The console's one layout: document head, header with navigation and sign-out, main. */
import type { ComponentChildren } from "preact";

export type Section =
  | "sessions"
  | "keys"
  | "avatars"
  | "tenants"
  | "try"
  | "instances"
  | "login"
  | "none";

export interface LayoutProps {
  title: string;
  section: Section;
  /** Who is signed in; absent on the sign-in page. */
  signedInAs?: string;
  /** A tenant administrator's tenant (absent for the operator): its one tenant page. */
  tenant?: string;
  /** The session's CSRF token, for the sign-out form. */
  csrf?: string;
  children: ComponentChildren;
}

const NAV: { section: Section; href: string; label: string }[] = [
  { section: "sessions", href: "/admin/sessions", label: "Sessions" },
  { section: "keys", href: "/admin/keys", label: "API keys" },
  { section: "avatars", href: "/admin/avatars", label: "Photo avatars" },
  { section: "tenants", href: "/admin/tenants", label: "Tenants" },
  { section: "try", href: "/admin/try", label: "Try it" },
  { section: "instances", href: "/admin/instances", label: "Instances" },
];

/**
 * The links of who is signed in: a tenant administrator's Tenants link is its own
 * tenant's page, and it gets no Instances link (operator only: infrastructure).
 */
function nav(tenant: string | undefined): typeof NAV {
  if (tenant === undefined) return NAV;
  return NAV.filter((n) => n.section !== "instances").map((n) =>
    n.section === "tenants"
      ? {
        ...n,
        href: `/admin/tenants/${encodeURIComponent(tenant)}`,
        label: "Tenant",
      }
      : n
  );
}

export function Layout(props: LayoutProps) {
  return (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="color-scheme" content="light dark" />
        <title>{`${props.title} · Avatar console`}</title>
        <link rel="icon" href="data:," />
        <link rel="stylesheet" href="/static/console.css" />
        <script type="module" src="/static/build/client.js" />
      </head>
      <body>
        <a class="skip" href="#main">Skip to content</a>
        <header class="top">
          <a class="brand" href="/admin">
            <span class="brand-mark" aria-hidden="true">◐</span>
            Avatar console
          </a>
          {props.signedInAs !== undefined && (
            <nav aria-label="Console">
              <ul>
                {nav(props.tenant).map((n) => (
                  <li key={n.href}>
                    <a
                      href={n.href}
                      aria-current={n.section === props.section
                        ? "page"
                        : undefined}
                    >
                      {n.label}
                    </a>
                  </li>
                ))}
              </ul>
            </nav>
          )}
          {props.signedInAs !== undefined && (
            <form class="signout" method="post" action="/admin/logout">
              <input type="hidden" name="_csrf" value={props.csrf} />
              <span class="who" title="Signed in as">{props.signedInAs}</span>
              <button type="submit" class="btn btn-quiet">Sign out</button>
            </form>
          )}
        </header>
        <main id="main" tabindex={-1}>{props.children}</main>
      </body>
    </html>
  );
}
