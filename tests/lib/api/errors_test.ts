import assert from "node:assert/strict";
import {
  ApiError,
  ERROR_CODES,
  type ErrorCode,
  errorResponse,
} from "../../../lib/errors.ts";

Deno.test("an error body carries param on 400s only, whatever the code was given (DECISIONS 3)", async (t) => {
  for (const code of Object.keys(ERROR_CODES) as ErrorCode[]) {
    await t.step(code, async () => {
      const err = new ApiError(code, "m", { param: "field.path" });
      const body = await errorResponse(err, "r", "https://docs.example.com")
        .json();
      if (ERROR_CODES[code].status === 400) {
        assert.equal(body.param, "field.path");
      } else {
        assert.equal("param" in body, false, JSON.stringify(body));
        assert.equal(err.param, undefined);
      }
    });
  }
});
