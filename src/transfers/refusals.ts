import { errors, GatewayError } from "../errors.js";
import type { SendRefusal } from "./rules.js";

// The errors a send or a preview answers (docs/api.md, "Token transfers").

export const unavailable = () =>
  errors.badRequest("recipient: no user with that email or ID accepts transfers.", "recipient", "invalid_value");
export const ownAccount = () => errors.badRequest("recipient: you cannot send tokens to yourself.", "recipient", "invalid_value");

export function refusal(r: SendRefusal, amount: number): GatewayError {
  switch (r.refused) {
    case "disabled":
      return errors.forbidden("Token transfers are disabled by the operator.", "transfers_disabled");
    case "below_minimum":
      return errors.badRequest(`amount: the smallest transfer is ${r.minimum} units.`, "amount", "invalid_value");
    case "send_limit":
      return new GatewayError({
        code: "transfer_limit_exceeded",
        param: "amount",
        message: `You can send ${r.left} more units today (your daily send limit, pending transfers counted).`,
      });
    case "receive_limit":
      return new GatewayError({
        code: "transfer_limit_exceeded",
        param: "amount",
        message: `The recipient cannot receive ${amount} more units today (their daily receive limit).`,
      });
    case "service_limit":
      return new GatewayError({
        code: "transfer_limit_exceeded",
        param: "amount",
        message: `The service can move ${r.left} more units today (its daily limit over every user).`,
      });
    case "insufficient":
      return new GatewayError({
        code: "insufficient_transferable",
        param: "amount",
        message: `You can transfer at most ${r.transferable} units now: your remaining units after requests in flight, less what you received today.`,
      });
  }
}

export const keyReused = () =>
  new GatewayError({
    code: "idempotency_key_reused",
    param: "idempotency_key",
    message: "This idempotency key was used for another transfer (another recipient or amount); use a new key.",
  });

export const rateLimited = (lookupsPerMinute: number) =>
  new GatewayError({
    code: "transfer_rate_limited",
    message: `At most ${lookupsPerMinute} previews, and sends to no one who accepts transfers, a minute; try again in a minute.`,
    headers: { "Retry-After": "60" },
  });
