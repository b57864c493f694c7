/** The console's front door: the live sessions page is where operators start. */
import { redirect } from "../../lib/console/http.ts";

export const handler = {
  GET(): Response {
    return redirect("/admin/sessions");
  },
};
