import assert from "node:assert/strict";
import { type Run, runTask } from "./_task.ts";

const PHOTOS = new URL("../fixtures/photo/", import.meta.url).pathname;

/** Runs `deno task avatars ...args` as the operator would, against the KV file `kvPath`. */
function avatars(kvPath: string, ...args: string[]): Promise<Run> {
  return runTask("avatars", kvPath, args);
}

/** Adds the Hopper portrait to tenant `acme` as `name`, with `extra` options. */
function addHopper(kvPath: string, name: string, ...extra: string[]) {
  return avatars(
    kvPath,
    "add",
    "--tenant",
    "acme",
    "--name",
    name,
    "--photo",
    `${PHOTOS}grace_hopper.jpg`,
    "--consent",
    ...extra,
  );
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
      const r = await addHopper(kvPath, "Grace");
      assert.equal(r.code, 0, r.stderr);
      const lines = r.stdout.trim().split("\n");
      assert.equal(lines.length, 1);
      const body = JSON.parse(lines[0]);
      assert.match(body.avatar_id, /^ph_[0-9A-Z]{26}$/);
      assert.deepEqual(body, {
        avatar_id: body.avatar_id,
        name: "Grace",
        framing: "square",
        width: 512,
        height: 512,
      });
      avatarId = body.avatar_id;
    });
    let portraitId = "";
    await t.step("add --framing portrait prepares it 720×1280", async () => {
      const r = await addHopper(kvPath, "Grace tall", "--framing", "portrait");
      assert.equal(r.code, 0, r.stderr);
      const body = JSON.parse(r.stdout);
      assert.deepEqual(
        [body.framing, body.width, body.height],
        ["portrait", 720, 1280],
      );
      portraitId = body.avatar_id;
    });
    await t.step(
      "list prints the tenant's avatars as a JSON array; another tenant's is empty",
      async () => {
        const r = await avatars(kvPath, "list", "--tenant", "acme");
        assert.equal(r.code, 0, r.stderr);
        const list = JSON.parse(r.stdout);
        assert.equal(list.length, 2);
        assert.deepEqual(Object.keys(list[0]), [
          "avatar_id",
          "name",
          "created_at",
          "framing",
          "width",
          "height",
        ]);
        assert.deepEqual(
          list.map((
            e: { avatar_id: string; framing: string; width: number },
          ) => [e.avatar_id, e.framing, e.width]),
          [[avatarId, "square", 512], [portraitId, "portrait", 720]],
        );
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
          2,
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
      const other = await avatars(
        kvPath,
        "remove",
        "--tenant",
        "acme",
        "--id",
        portraitId,
      );
      assert.equal(other.code, 0, other.stderr);
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
    [
      "a framing that is none",
      [
        ...add,
        "--photo",
        `${PHOTOS}grace_hopper.jpg`,
        "--consent",
        "--framing",
        "wide",
      ],
      "error: framing must be square, landscape or portrait",
    ],
    [
      "landscape from a portrait photo",
      [
        ...add,
        "--photo",
        `${PHOTOS}grace_hopper.jpg`,
        "--consent",
        "--framing",
        "landscape",
      ],
      "error: not enough room around the face for landscape",
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
