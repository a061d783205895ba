export { listUserRequests, type UserRequestLog, type UserRequestPage } from "./queries.js";
export { userRequestRoutes } from "./routes.js";
export { requestLogs } from "./schema.js";
export type { ErrorClass, RequestLogRow, RequestLogStats, RequestLogWriter, UsageSource } from "./types.js";
export { createRequestLogWriter, type RequestLogWriterOptions } from "./writer.js";
