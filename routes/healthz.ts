import { type Ctx, json } from "../lib/http.ts";

export const handler = {
  GET(ctx: Ctx): Response {
    return json({ status: "ok" });
  },
};
