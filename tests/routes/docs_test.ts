import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { docUrl, ERROR_CODES, type ErrorCode } from "../../lib/errors.ts";
import { testApp } from "../_helpers.ts";

const CODES = Object.keys(ERROR_CODES) as ErrorCode[];

function assertNoScriptsOrInlineStyles(html: string, csp: string | null): void {
  assert.equal(/<script/i.test(html), false, "no scripts");
  assert.equal(/\sstyle=/i.test(html), false, "no inline style attributes");
  assert.equal(/\son[a-z]+=/i.test(html), false, "no inline handlers");
  assert.ok(csp);
  assert.match(csp, /default-src 'none'/);
  assert.equal(/script-src|unsafe-inline/.test(csp), false);
  // The one <style> block is allowed by its hash, nothing else.
  const style = html.match(/<style>([\s\S]*?)<\/style>/)?.[1];
  assert.ok(style);
  const hash = createHash("sha256").update(style).digest("base64");
  assert.ok(csp.includes(`style-src 'sha256-${hash}'`));
}

Deno.test("GET /docs renders the API reference: six paths, auth, errors, rate limits", async () => {
  const app = await testApp();
  try {
    const res = await app.request("/docs");
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type")!, /^text\/html/);
    const html = await res.text();
    assertNoScriptsOrInlineStyles(
      html,
      res.headers.get("content-security-policy"),
    );
    assert.ok(html.startsWith("<!DOCTYPE html>"));
    for (
      const path of [
        "/v1/sessions",
        "/v1/sessions/{session_id}",
        "/v1/sessions/{session_id}/end",
        "/v1/sessions/{session_id}/client-token",
        "/v1/api-keys",
        "/v1/api-keys/{key_id}",
      ]
    ) assert.ok(html.includes(`<code>${path}</code>`), path);
    for (const id of ["authentication", "errors", "rate-limits"]) {
      assert.ok(html.includes(`id="${id}"`), id);
    }
    for (
      const h of [
        "X-RateLimit-Limit",
        "X-RateLimit-Remaining",
        "X-RateLimit-Reset",
        "Retry-After",
      ]
    ) {
      assert.ok(html.includes(h), h);
    }
    for (const code of CODES) {
      assert.ok(html.includes(`href="/docs/errors/${code}"`), code);
    }
    assert.ok(html.includes('href="/openapi.json"'));
  } finally {
    await app.close();
  }
});

Deno.test("every doc_url resolves to its error page when DOCS_BASE_URL points at the app", async (t) => {
  const base = "https://avatar.example.com/docs";
  const app = await testApp({ DOCS_BASE_URL: base });
  try {
    for (const code of CODES) {
      await t.step(code, async () => {
        const url = new URL(docUrl(app.app.deps.config.docsBaseUrl, code));
        assert.equal(url.origin, "https://avatar.example.com");
        const res = await app.request(url.pathname);
        assert.equal(res.status, 200);
        const html = await res.text();
        const info = ERROR_CODES[code];
        assert.ok(html.includes(`<code>${code}</code>`));
        assert.ok(
          html.includes(info.title.replaceAll("'", "&#39;")) ||
            html.includes(info.title),
        );
        assert.ok(html.includes(`<dd>${info.status}</dd>`));
        assert.ok(html.includes(info.retryable ? "yes —" : "no —"));
        // The doc text, with `code` spans rendered as <code>.
        const firstWords = info.doc.split("`")[0].slice(0, 20);
        assert.ok(
          html.includes(firstWords.replaceAll("'", "&#39;")) ||
            html.includes(firstWords),
        );
        assertNoScriptsOrInlineStyles(
          html,
          res.headers.get("content-security-policy"),
        );
      });
    }
  } finally {
    await app.close();
  }
});

Deno.test("an error body's doc_url leads to the page of its code", async () => {
  const app = await testApp({
    DOCS_BASE_URL: "https://avatar.example.com/docs",
  });
  try {
    const err = await app.request("/v1/nope");
    const { doc_url, code } = await err.json();
    assert.equal(code, "AVTR_NOT_FOUND");
    const page = await app.request(new URL(doc_url).pathname);
    assert.equal(page.status, 200);
    assert.ok((await page.text()).includes("<code>AVTR_NOT_FOUND</code>"));
  } finally {
    await app.close();
  }
});

Deno.test("an unknown error code gets a 404 page", async (t) => {
  const app = await testApp();
  try {
    for (const code of ["AVTR_NOPE", "constructor", "__proto__", "toString"]) {
      await t.step(code, async () => {
        const res = await app.request(`/docs/errors/${code}`);
        assert.equal(res.status, 404);
        assert.match(res.headers.get("content-type")!, /^text\/html/);
        const html = await res.text();
        assert.ok(html.includes("Unknown error code"));
        assert.ok(html.includes('href="/docs#errors"'));
      });
    }
  } finally {
    await app.close();
  }
});
