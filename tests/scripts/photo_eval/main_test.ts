import assert from "node:assert/strict";
import { portraitsIn } from "../../../scripts/photo_eval/main.ts";

Deno.test("portraitsIn() lists a set's JPEG and PNG files, links to them included", async () => {
  const dir = await Deno.makeTempDir({ prefix: "photo-eval-set-" });
  try {
    await Deno.writeFile(`${dir}/b.jpg`, new Uint8Array([1]));
    await Deno.writeFile(`${dir}/notes.txt`, new Uint8Array([1]));
    await Deno.symlink(`${dir}/b.jpg`, `${dir}/a.PNG`);
    await Deno.mkdir(`${dir}/c.jpg`);
    assert.deepEqual(await portraitsIn(dir), ["a.PNG", "b.jpg"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
