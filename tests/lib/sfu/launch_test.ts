import assert from "node:assert/strict";
import {
  detectIceInterface,
  fillTemplate,
  startJanus,
} from "../../../lib/sfu/launch.ts";
import { startTestJanus } from "./_janus.ts";

Deno.test("startJanus() runs Janus from the repository's config: token auth, APIs on loopback only", async () => {
  const j = await startTestJanus();
  try {
    assert.match(j.url, /^http:\/\/127\.0\.0\.1:\d+\/janus$/);
    assert.deepEqual(Object.keys(j.env).sort(), [
      "ICE_SERVERS",
      "SFU_API_KEY",
      "SFU_API_SECRET",
      "SFU_URL",
    ]);
    assert.ok(j.apiSecret.length >= 32 && j.apiKey.length >= 32);
    // Without the token Janus refuses; with it, it creates a session.
    const bare = await fetch(j.url, {
      method: "POST",
      body: JSON.stringify({ janus: "create", transaction: "t" }),
    }).then((r) => r.json());
    assert.equal(bare.janus, "error");
    assert.equal(bare.error.code, 403);
    const ok = await fetch(j.url, {
      method: "POST",
      body: JSON.stringify({
        janus: "create",
        transaction: "t",
        token: j.apiSecret,
      }),
    }).then((r) => r.json());
    assert.equal(ok.janus, "success");
    // Only loopback listens: the machine's other address gets no answer.
    const other = Deno.networkInterfaces().find((i) =>
      i.family === "IPv4" && !i.address.startsWith("127.")
    );
    assert.ok(other, "the machine has a non-loopback IPv4 address");
    const port = new URL(j.url).port;
    await assert.rejects(
      fetch(`http://${other.address}:${port}/janus/info`, {
        signal: AbortSignal.timeout(3000),
      }),
    );
    // The Debian defaults are not in force: the well-known admin secret is refused.
    const admin = await fetch(j.adminUrl, {
      method: "POST",
      body: JSON.stringify({
        janus: "list_sessions",
        transaction: "t",
        admin_secret: "janusoverlord",
      }),
    }).then((r) => r.json());
    assert.equal(admin.janus, "error");
  } finally {
    await j.stop();
  }
  assert.equal(await j.exited, 0);
});

Deno.test("startJanus() starts again on other ports when one it picked was taken before Janus bound it", async () => {
  // The port handed out first is held by another listener, as when a parallel test's
  // process takes a port between the probe and Janus's bind.
  const held = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const heldPort = (held.addr as Deno.NetAddr).port;
  const handed: number[] = [];
  const pickPort = (hostname: string) => {
    if (handed.length === 1) return handed.push(heldPort), heldPort;
    const l = Deno.listen({ hostname, port: 0 });
    const port = (l.addr as Deno.NetAddr).port;
    l.close();
    handed.push(port);
    return port;
  };
  try {
    const j = await startTestJanus({ pickPort });
    try {
      // The first start's admin port was the held one; the second start's were free.
      assert.equal(handed[1], heldPort);
      assert.equal(handed.length, 4);
      assert.ok(!j.adminUrl.includes(`:${heldPort}/`), j.adminUrl);
      assert.ok(j.url.includes(`:${handed[2]}/`), j.url);
      assert.ok(j.adminUrl.includes(`:${handed[3]}/`), j.adminUrl);
    } finally {
      await j.stop();
    }
  } finally {
    held.close();
  }
});

Deno.test("startJanus() does not move a port the caller chose", async () => {
  const held = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const heldPort = (held.addr as Deno.NetAddr).port;
  try {
    await assert.rejects(
      startTestJanus({ adminPort: heldPort }),
      (err: Error & { portTaken?: boolean }) => err.portTaken === true,
    );
  } finally {
    held.close();
  }
});

Deno.test("startJanus() fails with how to install Janus when the binary is missing", async () => {
  await assert.rejects(
    startJanus({ bin: "/nonexistent/janus" }),
    /Janus not found at \/nonexistent\/janus.*apt-get install -y janus/,
  );
});

Deno.test("detectIceInterface() picks a real interface, never loopback", () => {
  const lo = {
    family: "IPv4",
    name: "lo",
    address: "127.0.0.1",
    netmask: "255.0.0.0",
    scopeid: null,
    cidr: "127.0.0.1/8",
    mac: "00:00:00:00:00:00",
  } as const;
  const eth = { ...lo, name: "ens5", address: "10.1.2.3", cidr: "10.1.2.3/24" };
  assert.equal(detectIceInterface([lo, eth]), "ens5");
  assert.throws(() => detectIceInterface([lo]), /non-loopback/);
});

Deno.test("fillTemplate() refuses unknown fields and values that could break the config", () => {
  assert.equal(fillTemplate('a = "{{A}}"', { A: "x" }), 'a = "x"');
  assert.throws(() => fillTemplate("{{B}}", {}), /no value/);
  assert.throws(
    () => fillTemplate("{{A}}", { A: 'x"\nadmin_secret="y' }),
    /bad value/,
  );
});
