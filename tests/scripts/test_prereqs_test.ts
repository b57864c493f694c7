/**
 * scripts/test_prereqs.ts on a throwaway root: the tools' paths, policy-rc.d and
 * /run/systemd live under a temp dir, and `apt-get`, `systemctl`, `update-rc.d` are
 * shell scripts on a temp PATH that log their arguments and "install" a package by
 * creating its binary under that root. The machine's own packages are never touched.
 */
import assert from "node:assert/strict";
import {
  ensurePrereqs,
  PrereqError,
  PREREQS,
} from "../../scripts/test_prereqs.ts";
import { FIREFOX, WEBKIT_DRIVER } from "../e2e/_drivers.ts";

interface Sandbox {
  root: string;
  bin: string;
  /** Lines the fake commands logged: "<cmd> <args>" and "policy-rc.d: <content>". */
  calls(): Promise<string[]>;
  close(): Promise<void>;
}

/** A fake root holding `present` (tool paths) and a PATH with the fake commands. */
async function sandbox(
  present: string[],
  options: { aptFails?: boolean; systemd?: boolean } = {},
): Promise<Sandbox> {
  const root = await Deno.makeTempDir({ prefix: "prereqs-" });
  const bin = `${root}/fakebin`;
  await Deno.mkdir(bin);
  await Deno.mkdir(`${root}/usr/bin`, { recursive: true });
  for (const p of present) await touch(root + p);
  if (options.systemd) {
    await Deno.mkdir(`${root}/run/systemd/system`, { recursive: true });
  }
  const log = `${root}/calls.log`;
  const script = (name: string, body = "") =>
    Deno.writeTextFile(
      `${bin}/${name}`,
      `#!/bin/sh\nPATH=/usr/bin:/bin\necho "${name} $*" >> '${log}'\n${body}`,
      { mode: 0o755 },
    );
  await script(
    "apt-get",
    `policy='${root}/usr/sbin/policy-rc.d'
[ -f "$policy" ] && echo "policy-rc.d: $(tail -n 1 "$policy")" >> '${log}'
[ "$1" = install ] || exit 0
${
      options.aptFails
        ? 'echo "E: Unable to locate package janus" >&2; exit 100'
        : ""
    }
shift
for a in "$@"; do
  case "$a" in
${
      PREREQS.map((p) =>
        `    ${p.pkg}) mkdir -p '${root}${
          p.path.replace(/\/[^/]*$/, "")
        }'; touch '${root}${p.path}' ;;`
      ).join("\n")
    }
  esac
done
`,
  );
  await script("systemctl");
  await script("update-rc.d");
  return {
    root,
    bin,
    calls: () =>
      Deno.readTextFile(log).then((t) => t.trim().split("\n"), () => []),
    close: () => Deno.remove(root, { recursive: true }),
  };
}

/** The browser matrix's packages (Firefox, WebKitGTK, Xvfb, PulseAudio, GStreamer). */
const MATRIX = PREREQS.slice(4);
const ALL = PREREQS.map((p) => p.pkg).join(" ");

async function touch(file: string): Promise<void> {
  await Deno.mkdir(file.replace(/\/[^/]*$/, ""), { recursive: true });
  await Deno.writeTextFile(file, "");
}

Deno.test("everything present: nothing runs, nothing is installed", async () => {
  const box = await sandbox(PREREQS.map((p) => p.path));
  try {
    const installed = await ensurePrereqs({
      root: box.root,
      uid: 0,
      path: box.bin,
    });
    assert.deepEqual(installed, []);
    assert.deepEqual(await box.calls(), []);
  } finally {
    await box.close();
  }
});

Deno.test("missing as root with apt-get: one update, one install of what is missing, no service started", async () => {
  const box = await sandbox([], { systemd: true });
  const lines: string[] = [];
  try {
    const installed = await ensurePrereqs({
      root: box.root,
      uid: 0,
      path: box.bin,
      log: (l) => lines.push(l),
    });
    assert.deepEqual(installed, PREREQS.map((p) => p.pkg));
    assert.deepEqual(await box.calls(), [
      "apt-get update -qq",
      "policy-rc.d: exit 101",
      `apt-get install -y -qq ${ALL}`,
      "policy-rc.d: exit 101",
      "systemctl disable --now janus.service",
      "update-rc.d janus disable",
    ]);
    assert.deepEqual(lines, [
      `installing ${ALL} from Debian for the tests (apt-get, once)`,
    ]);
    // The temporary policy is gone again; the tools are there.
    await assert.rejects(Deno.stat(`${box.root}/usr/sbin/policy-rc.d`));
    for (const p of PREREQS) await Deno.stat(box.root + p.path);
  } finally {
    await box.close();
  }
});

Deno.test("only Chromium missing: only chromium is installed, the janus service left alone", async () => {
  const box = await sandbox(PREREQS.slice(1).map((p) => p.path));
  try {
    const installed = await ensurePrereqs({
      root: box.root,
      uid: 0,
      path: box.bin,
      log: () => {},
    });
    assert.deepEqual(installed, ["chromium"]);
    assert.deepEqual(await box.calls(), [
      "apt-get update -qq",
      "policy-rc.d: exit 101",
      "apt-get install -y -qq chromium",
      "policy-rc.d: exit 101",
    ]);
  } finally {
    await box.close();
  }
});

Deno.test("not root: one sentence naming what to install, and no apt-get call", async () => {
  const box = await sandbox(PREREQS.slice(1).map((p) => p.path));
  try {
    await assert.rejects(
      ensurePrereqs({ root: box.root, uid: 1000, path: box.bin }),
      (err) =>
        err instanceof PrereqError &&
        err.message ===
          "The tests need Chromium (/usr/bin/chromium): install them (`sudo apt-get install -y chromium`) and run the tests again.",
    );
    assert.deepEqual(await box.calls(), []);
  } finally {
    await box.close();
  }
});

Deno.test("no apt-get: one sentence naming what to install", async () => {
  const box = await sandbox(MATRIX.map((p) => p.path));
  try {
    await assert.rejects(
      ensurePrereqs({ root: box.root, uid: 0, path: `${box.root}/nothing` }),
      (err) =>
        err instanceof PrereqError &&
        err.message ===
          "The tests need Chromium (/usr/bin/chromium), Janus (/usr/bin/janus), espeak-ng (/usr/bin/espeak-ng) and Prometheus' promtool (/usr/bin/promtool), and this machine has no apt-get to install them: install them with your package manager (on Debian/Ubuntu, `sudo apt-get install -y chromium janus espeak-ng prometheus`) and run the tests again.",
    );
  } finally {
    await box.close();
  }
});

Deno.test("apt-get fails: one sentence, apt's output as detail, an existing policy-rc.d kept", async () => {
  const box = await sandbox(MATRIX.map((p) => p.path), { aptFails: true });
  await Deno.mkdir(`${box.root}/usr/sbin`);
  await Deno.writeTextFile(
    `${box.root}/usr/sbin/policy-rc.d`,
    "#!/bin/sh\nexit 0\n",
  );
  try {
    await assert.rejects(
      ensurePrereqs({ root: box.root, uid: 0, path: box.bin, log: () => {} }),
      (err) =>
        err instanceof PrereqError &&
        /^Installing chromium janus espeak-ng prometheus with apt-get failed/
          .test(
            err.message,
          ) &&
        err.detail.includes("E: Unable to locate package janus"),
    );
    // The operator's own policy was neither replaced nor removed.
    assert.equal(
      await Deno.readTextFile(`${box.root}/usr/sbin/policy-rc.d`),
      "#!/bin/sh\nexit 0\n",
    );
    assert.ok((await box.calls()).includes("policy-rc.d: exit 0"));
  } finally {
    await box.close();
  }
});

Deno.test("`deno task test` runs the script first, with the permissions it needs", async () => {
  const config = JSON.parse(
    await Deno.readTextFile(new URL("../../deno.json", import.meta.url)),
  );
  const first = config.tasks.test.match(
    /^deno run ([^&]*) scripts\/test_prereqs\.ts && .*deno test /,
  );
  assert.ok(first, config.tasks.test);
  // The task's own command line, on a throwaway root with nothing installed.
  const box = await sandbox([]);
  try {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", ...first[1].split(" "), "scripts/test_prereqs.ts"],
      cwd: new URL("../../", import.meta.url),
      env: { PREREQS_ROOT: box.root, PATH: box.bin },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stdout = new TextDecoder().decode(out.stdout);
    const stderr = new TextDecoder().decode(out.stderr);
    if (Deno.uid() === 0) {
      assert.equal(out.code, 0, stderr);
      assert.ok(stdout.endsWith(`\ninstalled ${ALL}\n`), stdout);
    } else {
      assert.equal(out.code, 1, stdout);
      assert.match(stderr, /^The tests need Chromium .*: install them /);
    }
  } finally {
    await box.close();
  }
});

Deno.test("the browser matrix's tools are prerequisites: Firefox ESR, WebKitWebDriver, Xvfb, PulseAudio", () => {
  const paths = PREREQS.map((p) => p.path);
  assert.deepEqual(PREREQS.slice(0, 4).map((p) => p.pkg), [
    "chromium",
    "janus",
    "espeak-ng",
    "prometheus",
  ]);
  for (
    const tool of [
      FIREFOX,
      WEBKIT_DRIVER,
      "/usr/bin/Xvfb",
      "/usr/bin/pulseaudio",
      "/usr/bin/parec",
    ]
  ) {
    assert.ok(paths.includes(tool), `${tool} is not installed by the script`);
  }
  assert.deepEqual(MATRIX.map((p) => p.pkg), [
    "firefox-esr",
    "webkit2gtk-driver",
    "xvfb",
    "pulseaudio",
    "pulseaudio-utils",
    "gstreamer1.0-libav",
    "gstreamer1.0-plugins-bad",
  ]);
});
