import assert from "node:assert/strict";
import {
  assertPublicTarget,
  isPrivateAddress,
  TargetRefusedError,
} from "../../lib/net_guard.ts";

Deno.test("isPrivateAddress() knows the internal ranges", async (t) => {
  const internal = [
    "127.0.0.1",
    "10.1.2.3",
    "172.16.0.1",
    "172.31.255.255",
    "192.168.1.1",
    "169.254.169.254",
    "100.64.0.1",
    "0.0.0.0",
    "224.0.0.1",
    "::1",
    "::",
    "fe80::1",
    "fc00::1",
    "fd12:3456::1",
    "fec0::1",
    "::ffff:127.0.0.1",
    "::ffff:10.0.0.1",
    "2002:7f00:1::1",
    "64:ff9b::a00:1",
    "not-an-ip",
    // Leading zeros read as octal by libc (getaddrinfo): 10.0.0.1, 172.16.0.1, 127.0.0.8.
    "012.0.0.1",
    "172.020.0.1",
    "127.0.0.010",
    "8.8.8.08",
  ];
  const external = [
    "8.8.8.8",
    "172.32.0.1",
    "100.128.0.1",
    "2606:4700::1111",
    "::ffff:8.8.8.8",
  ];
  for (const ip of internal) {
    await t.step(
      `${ip} is internal`,
      () => assert.equal(isPrivateAddress(ip), true),
    );
  }
  for (const ip of external) {
    await t.step(
      `${ip} is public`,
      () => assert.equal(isPrivateAddress(ip), false),
    );
  }
});

Deno.test("assertPublicTarget() checks scheme, credentials and every resolved address", async (t) => {
  const resolver = (map: Record<string, string[]>) => (host: string) =>
    Promise.resolve(map[host] ?? []);
  const r = resolver({
    "engine.example.com": ["93.184.216.34"],
    "mixed.example.com": ["93.184.216.34", "10.0.0.7"],
    "inner.example.com": ["169.254.169.254"],
  });
  const opts = { allowPrivate: false, schemes: ["wss:"], resolver: r };
  await t.step("public name passes", async () => {
    const url = await assertPublicTarget("wss://engine.example.com/x", opts);
    assert.equal(url.hostname, "engine.example.com");
  });
  const refused: [string, string, RegExp][] = [
    [
      "one private address among public ones",
      "wss://mixed.example.com/",
      /private/,
    ],
    ["metadata address", "wss://inner.example.com/", /private/],
    ["loopback literal", "wss://127.0.0.1:9000/", /private/],
    ["localhost", "wss://localhost/", /private/],
    ["unresolvable", "wss://nowhere.example.com/", /resolved/],
    ["wrong scheme", "ws://engine.example.com/", /scheme/],
    [
      "credentials in the URL",
      "wss://user:pw@engine.example.com/",
      /credentials/,
    ],
    ["not a URL", "wss//", /valid URL/],
  ];
  for (const [name, target, message] of refused) {
    await t.step(name, async () => {
      await assert.rejects(
        assertPublicTarget(target, opts),
        (e) =>
          e instanceof TargetRefusedError && message.test(e.message) &&
          !e.message.includes("10.0.0.7"),
      );
    });
  }
  await t.step("private targets pass when allowed", async () => {
    await assertPublicTarget("wss://127.0.0.1:9000/", {
      ...opts,
      allowPrivate: true,
    });
  });
  await t.step("a resolver that never answers is bounded", async () => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const slow = () =>
      new Promise<string[]>((res) =>
        timer = setTimeout(() => res(["8.8.8.8"]), 5000)
      );
    await assert.rejects(
      assertPublicTarget("wss://slow.example.com/", {
        ...opts,
        resolver: slow,
        timeoutMs: 30,
      }),
      /could not be resolved/,
    );
    clearTimeout(timer);
  });
});

Deno.test("isPrivateAddress() refuses the IPv6 ranges that translate or tunnel to IPv4, and discard", async (t) => {
  const refused: [string, string][] = [
    ["::ffff:0:7f00:1", "SIIT ::ffff:0:0/96 (127.0.0.1)"],
    ["::ffff:0:808:808", "SIIT ::ffff:0:0/96 (even a public IPv4)"],
    ["::ffff:0:10.0.0.1", "SIIT, dotted tail"],
    ["2001::1", "Teredo 2001::/32"],
    ["2001:0:4136:e378:8000:63bf:3fff:fdd2", "Teredo with a server and client"],
    ["100::1", "discard 100::/64"],
    ["100::ffff:ffff:ffff:ffff", "discard, top of the /64"],
    ["64:ff9b::7f00:1", "NAT64 to loopback"],
    ["64:ff9b::192.168.0.1", "NAT64, dotted tail"],
    ["64:ff9b:1::a00:1", "local-use NAT64 64:ff9b:1::/48"],
    ["2002:c0a8:101::1", "6to4 of 192.168.1.1"],
    ["1::2::3", "two :: (malformed)"],
    ["12g::1", "a group that is not hex"],
  ];
  for (const [ip, what] of refused) {
    await t.step(
      `${ip} (${what}) is refused`,
      () => assert.equal(isPrivateAddress(ip), true),
    );
  }
  for (const ip of ["2001:4860::8888", "101::1", "100:0:0:1::1"]) {
    await t.step(
      `${ip} is public`,
      () => assert.equal(isPrivateAddress(ip), false),
    );
  }
  await t.step(
    "and assertPublicTarget() refuses a name resolving there",
    async () => {
      for (const ip of ["::ffff:0:a00:1", "2001::1", "100::1"]) {
        await assert.rejects(
          assertPublicTarget("wss://engine.example.com/v1", {
            allowPrivate: false,
            schemes: ["wss:"],
            resolver: () => Promise.resolve([ip]),
          }),
          TargetRefusedError,
        );
      }
    },
  );
});
