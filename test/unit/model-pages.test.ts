import { describe, expect, it } from "vitest";
import { GatewayError } from "../../src/errors.js";
import { pageAfter, pageBefore } from "../../src/inference/model-pages.js";

const items = ["a", "b", "c", "d", "e"].map((id) => ({ id }));
const ids = (page: { items: { id: string }[] }) => page.items.map((i) => i.id);

describe("model list pages", () => {
  it("pages forward from the start, then after a cursor, and says whether more follow", () => {
    expect(pageAfter(items, 2, undefined, "after_id")).toMatchObject({ more: true });
    expect(ids(pageAfter(items, 2, undefined, "after_id"))).toEqual(["a", "b"]);
    expect(ids(pageAfter(items, 2, "b", "after_id"))).toEqual(["c", "d"]);
    expect(pageAfter(items, 2, "c", "after_id")).toEqual({ items: [{ id: "d" }, { id: "e" }], more: false });
    expect(pageAfter(items, 10, "e", "after_id")).toEqual({ items: [], more: false });
  });

  it("pages backward right before a cursor, in list order", () => {
    expect(pageBefore(items, 2, "d", "before_id")).toEqual({ items: [{ id: "b" }, { id: "c" }], more: true });
    expect(pageBefore(items, 2, "c", "before_id")).toEqual({ items: [{ id: "a" }, { id: "b" }], more: false });
    expect(pageBefore(items, 2, "a", "before_id")).toEqual({ items: [], more: false });
  });

  it("refuses a cursor that names no item, naming the parameter", () => {
    for (const page of [() => pageAfter(items, 2, "z", "pageToken"), () => pageBefore(items, 2, "z", "pageToken")]) {
      const err = (() => {
        try {
          return page();
        } catch (e) {
          return e;
        }
      })();
      expect(err).toBeInstanceOf(GatewayError);
      expect(err).toMatchObject({ code: "invalid_cursor", param: "pageToken", status: 400 });
    }
  });
});
