// pg-copy-streams 7.0.0 ships no types: the part insert-batch.ts uses. A CopyStreamQuery is a Writable that
// pg's client.query() submits (it has the Submittable's submit()).
declare module "pg-copy-streams" {
  import type { Writable } from "node:stream";
  import type { Submittable } from "pg";

  export interface CopyStreamQuery extends Writable, Submittable {
    rowCount: number;
  }
  export function from(text: string): CopyStreamQuery;
}
