import assert from "node:assert/strict";

Deno.test("deno task sfu prints the SFU variables, then `sfu ready`, and stops Janus on SIGTERM", async () => {
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      new URL("../../scripts/sfu.ts", import.meta.url).pathname,
    ],
    // Port 0: free ports, so the test never meets another Janus on 8088.
    env: { SFU_HTTP_PORT: "0", SFU_ADMIN_PORT: "0" },
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const lines: string[] = [];
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let buf = "";
  while (!lines.includes("sfu ready")) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += value;
    const parts = buf.split("\n");
    buf = parts.pop() ?? "";
    lines.push(...parts);
  }
  try {
    assert.deepEqual(lines.map((l) => l.split("=")[0]), [
      "SFU_URL",
      "SFU_API_SECRET",
      "SFU_API_KEY",
      "ICE_SERVERS",
      "sfu ready",
    ]);
    const vars = Object.fromEntries(
      lines.slice(0, 4).map((
        l,
      ) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)]),
    );
    assert.match(vars.SFU_URL, /^http:\/\/127\.0\.0\.1:\d+\/janus$/);
    assert.deepEqual(JSON.parse(vars.ICE_SERVERS), []);
    const created = await fetch(vars.SFU_URL, {
      method: "POST",
      body: JSON.stringify({
        janus: "create",
        transaction: "t",
        token: vars.SFU_API_SECRET,
      }),
    }).then((r) => r.json());
    assert.equal(created.janus, "success");
    child.kill("SIGTERM");
    assert.equal((await child.status).code, 0);
    await assert.rejects(fetch(`${vars.SFU_URL}/info`));
  } finally {
    reader.releaseLock();
    await child.stdout.cancel().catch(() => {});
    try {
      child.kill("SIGKILL");
    } catch { /* exited */ }
    await child.status;
  }
});
