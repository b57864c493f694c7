import assert from "node:assert/strict";
import { type Run, runTask } from "./_task.ts";

const PHOTOS = new URL("../fixtures/photo/", import.meta.url).pathname;

/** Runs `deno task avatars ...args` as the operator would, against the KV file `kvPath`. */
function avatars(kvPath: string, ...args: string[]): Promise<Run> {
  return runTask("avatars", kvPath, args);
}

async function storedKeys(kvPath: string): Promise<number> {
  const kv = await Deno.openKv(kvPath);
  try {
    let n = 0;
    for await (const _ of kv.list({ prefix: [] })) n++;
    return n;
  } finally {
    kv.close();
  }
}

Deno.test("scripts/avatars.ts adds, lists and removes photo avatars in the KV_PATH store", async (t) => {
  const dir = await Deno.makeTempDir();
  const kvPath = `${dir}/data/kv.sqlite3`;
  try {
    let avatarId = "";
    await t.step("add prints one JSON line and exits 0", async () => {
      const r = await avatars(
        kvPath,
        "add",
        "--tenant",
        "acme",
        "--name",
        "Grace",
        "--photo",
        `${PHOTOS}grace_hopper.jpg`,
        "--consent",
      );
      assert.equal(r.code, 0, r.stderr);
      const lines = r.stdout.trim().split("\n");
      assert.equal(lines.length, 1);
      const body = JSON.parse(lines[0]);
      assert.match(body.avatar_id, /^ph_[0-9A-Z]{26}$/);
      assert.deepEqual(body, {
        avatar_id: body.avatar_id,
        name: "Grace",
        width: 512,
        height: 512,
      });
      avatarId = body.avatar_id;
    });
    await t.step(
      "list prints the tenant's avatars as a JSON array; another tenant's is empty",
      async () => {
        const r = await avatars(kvPath, "list", "--tenant", "acme");
        assert.equal(r.code, 0, r.stderr);
        const list = JSON.parse(r.stdout);
        assert.equal(list.length, 1);
        assert.deepEqual(Object.keys(list[0]), [
          "avatar_id",
          "name",
          "created_at",
        ]);
        assert.equal(list[0].avatar_id, avatarId);
        assert.ok(Number.isInteger(list[0].created_at));
        assert.deepEqual(
          JSON.parse(
            (await avatars(kvPath, "list", "--tenant", "globex")).stdout,
          ),
          [],
        );
      },
    );
    await t.step(
      "remove under another tenant exits 1 and keeps it",
      async () => {
        const r = await avatars(
          kvPath,
          "remove",
          "--tenant",
          "globex",
          "--id",
          avatarId,
        );
        assert.equal(r.code, 1);
        assert.equal(
          JSON.parse((await avatars(kvPath, "list", "--tenant", "acme")).stdout)
            .length,
          1,
        );
      },
    );
    await t.step("remove deletes it and every chunk", async () => {
      const r = await avatars(
        kvPath,
        "remove",
        "--tenant",
        "acme",
        "--id",
        avatarId,
      );
      assert.equal(r.code, 0, r.stderr);
      assert.deepEqual(JSON.parse(r.stdout), {
        avatar_id: avatarId,
        removed: true,
      });
      assert.equal(await storedKeys(kvPath), 1); // the tenant's count, now 0
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("scripts/avatars.ts exits 2 with one line naming the cause and stores nothing", async (t) => {
  const dir = await Deno.makeTempDir();
  const kvPath = `${dir}/kv.sqlite3`;
  const text = `${dir}/notes.txt`;
  await Deno.writeTextFile(text, "not a picture");
  const add = ["add", "--tenant", "acme", "--name", "A"];
  const cases: [string, string[], string][] = [
    [
      "no --consent",
      [...add, "--photo", `${PHOTOS}grace_hopper.jpg`],
      "error: consent not given",
    ],
    [
      "a small face",
      [...add, "--photo", `${PHOTOS}astronaut.png`, "--consent"],
      "error: face too small",
    ],
    [
      "a text file",
      [...add, "--photo", text, "--consent"],
      "error: not a JPEG or PNG",
    ],
    [
      "a missing file",
      [...add, "--photo", `${dir}/nope.jpg`, "--consent"],
      `error: cannot read --photo ${dir}/nope.jpg`,
    ],
    ["no --tenant", ["list"], "error: --tenant is required"],
    ["an unknown command", ["rename"], "error: unknown command rename"],
  ];
  try {
    for (const [name, args, line] of cases) {
      await t.step(name, async () => {
        const r = await avatars(kvPath, ...args);
        assert.equal(r.code, 2);
        assert.equal(r.stdout, "");
        assert.equal(r.stderr, `${line}\n`);
      });
    }
    assert.equal(
      await Deno.stat(kvPath).then(() => storedKeys(kvPath), () => 0),
      0,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
