// The one check of an id's form before it reaches a uuid column: a malformed id would make PostgreSQL throw, and
// the routes answer it as what it is (an id nobody has).
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const isUuid = (value: string): boolean => UUID.test(value);
