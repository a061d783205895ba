import { countPromptTokens, estimatePromptTokens } from "../metering/estimate.js";
import { ANTHROPIC_BETA, readAnthropicBeta } from "../providers/anthropic/anthropic-beta.js";
import { createChatToMessagesStream } from "../providers/anthropic/chat-to-messages-stream.js";
import { convertChatToMessage } from "../providers/anthropic/convert-chat-to-message.js";
import { convertMessagesToChat } from "../providers/anthropic/convert-messages-to-chat.js";
import { collectMessageText } from "../providers/anthropic/message-text.js";
import { anthropicMessagesRequestSchema, type AnthropicMessagesRequest } from "../providers/anthropic/messages-request-schema.js";
import type { ChatRequestBody } from "../providers/openai/chat-types.js";
import { UpstreamError } from "../providers/types.js";
import { validate } from "../server/body.js";
import { vendor } from "../openapi/operation.js";
import { route } from "../server/route.js";
import { byokHeader, meteredOperation } from "../metering/metered-operation.js";
import { requestHeader } from "../server/headers.js";
import { answeredIn, deliverJson, deliverRelayed, deliverTranslatedJson } from "../metering/deliver.js";
import { localUsage } from "../metering/estimate.js";
import { withPublicModel } from "../metering/public-model.js";
import { meteredHandler, type InferenceDeps, type RouteSpec } from "../metering/metered-handler.js";
import { messagesErrorFrame, relayNativeMessages } from "../metering/relays/messages-relay.js";
import { translatedChatRelay } from "../metering/relays/relay-protocols.js";
import { messagesCharge } from "../metering/relays/charge-frames.js";
import { extended } from "../objects.js";

// POST /messages and /v1/messages (the Anthropic SDK appends /v1/messages to its base URL): the Anthropic
// Messages shape, JSON and SSE. A target speaking `anthropic` gets the request as the client wrote it (model
// rewritten); a target speaking `openai` gets it translated to chat, and its answer is translated back
// (src/providers/anthropic, docs/translation.md). The choice is per target, so fallback may cross protocols.
// Billed with the chat rule on the normalised usage (docs/billing.md).

/** The request, and its chat translation: for chat targets, and for the estimates of every target. */
interface MessagesBody {
  request: AnthropicMessagesRequest;
  chat: ChatRequestBody;
  /** The client's anthropic-beta list, for native targets. */
  betas: Readonly<Record<string, string>> | undefined;
}

const messages: RouteSpec<MessagesBody> = {
  route: "/messages",
  clientProtocol: "anthropic",
  kind: "chat",
  protocols: ["anthropic", "openai"],
  parse(raw, c) {
    const betas = readAnthropicBeta(requestHeader(c, ANTHROPIC_BETA));
    const request = validate(anthropicMessagesRequestSchema, raw);
    return { request, chat: convertMessagesToChat(request), betas: betas === undefined ? undefined : { [ANTHROPIC_BETA]: betas } };
  },
  describe({ request, chat }) {
    // The chat form counts images at a flat figure instead of their base64 text; blocks without a chat form
    // (documents, thinking) are left out of the estimate, and billed from the upstream's usage.
    const extra = [chat.tools];
    return {
      modelId: request.model,
      streamed: request.stream === true,
      estimate: { promptTokens: estimatePromptTokens(chat.messages, extra), completionTokens: request.max_tokens },
      countPrompt: () => countPromptTokens(chat.messages, extra),
      outputTokens: request.max_tokens,
    };
  },
  call(adapter, target, { request, chat, betas }, options) {
    if (target.provider.protocol === "anthropic") {
      if (!adapter.messages) throw new UpstreamError("connect", null);
      return adapter.messages(
        extended(request, { model: target.upstreamModel }),
        betas ? extended(options, { clientHeaders: betas }) : options,
      );
    }
    if (!adapter.chatCompletions) throw new UpstreamError("connect", null);
    return adapter.chatCompletions(extended(chat, { model: target.upstreamModel }), options);
  },
  json(answer, delivery) {
    const { body, request } = delivery;
    const publicModel = body.request.model;
    if (answeredIn(delivery) !== "anthropic")
      return deliverTranslatedJson(delivery, answer, (usage) => convertChatToMessage(answer.body, { publicModel, usage }));
    return deliverJson(delivery, withPublicModel(answer, publicModel), answer.usage, () => {
      const generated: string[] = [];
      collectMessageText(answer.body.content, generated);
      return localUsage(request.countPrompt, generated.join(""));
    });
  },
  stream(opened, delivery) {
    const { body, request } = delivery;
    const publicModel = body.request.model;
    const protocol =
      answeredIn(delivery) === "anthropic"
        ? relayNativeMessages(publicModel, request.countPrompt)
        : translatedChatRelay(createChatToMessagesStream({ publicModel, promptTokens: request.estimate.promptTokens }), {
            countPrompt: request.countPrompt,
            errorFrame: messagesErrorFrame,
          });
    return deliverRelayed(delivery, opened, protocol, messagesCharge);
  },
};

const messagesOperation = (path: string, operationId: string) =>
  meteredOperation("Inference", {
    method: "post",
    path,
    operationId,
    summary: `Anthropic messages${path === "/messages" ? "" : " (where the Anthropic SDK appends /v1/messages)"}`,
    body: vendor("anthropic", "CreateMessageParams"),
    ok: {
      status: 200,
      description: "The message; with `stream: true`, its server-sent events.",
      schema: vendor("anthropic", "Message"),
      events: vendor("anthropic", "MessageStreamEvent"),
    },
    headers: Object.assign({ [ANTHROPIC_BETA]: "Anthropic beta features, forwarded to Anthropic providers." }, byokHeader),
  });

/** POST /messages, at the root and under /v1 (where the Anthropic SDK appends /v1/messages), through the metering path. */
export const messagesRoute = route<InferenceDeps>(
  [messagesOperation("/messages", "createMessage"), messagesOperation("/v1/messages", "createMessageV1")],
  (deps) => meteredHandler(deps, messages),
);
