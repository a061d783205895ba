// What the embedded PostgreSQL's modules share: where it listens, the user it runs as, and its one error type.

export const HOST = "127.0.0.1";

export class EmbeddedPostgresError extends Error {
  override name = "EmbeddedPostgresError";
}

// Lets start retry when a port picked by freePort() is taken before postgres binds it.
export class PortInUseError extends EmbeddedPostgresError {}

export type RunAs = { uid: number; gid: number };

export const fail = (message: string): never => {
  throw new EmbeddedPostgresError(`embedded PostgreSQL: ${message}`);
};
