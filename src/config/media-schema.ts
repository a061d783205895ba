import { constants as bufferConstants } from "node:buffer";
import { z } from "zod";
import { MiB } from "./catalog-schema.js";
import { DEFAULT_NATIVE_IMAGE_MODELS } from "../billing/image-quota.js";

// The config's media section: image pricing, downloads of upstream media, video jobs, the embed route
// (schema.ts assembles the whole file; docs/configuration.md).

/** A hostname whose last label is not a number: `999.1.1.1` is a mistyped address, never a name (WHATWG URL refuses it). */
const isHostname = (v: string) => z.hostname().safeParse(v).success && !/(^|\.)\d+\.?$/.test(v);

/** An allow_private entry: a CIDR, one address (IPv4 or IPv6), or a hostname matched exactly. */
const privateUpstream = z
  .string()
  .refine((v) => [z.cidrv4(), z.cidrv6(), z.ipv4(), z.ipv6()].some((format) => format.safeParse(v).success) || isHostname(v), {
    message: "must be a CIDR (10.0.0.0/8, fc00::/7), an IP address or a hostname",
  });

/**
 * Fetching upstream media by URL (an image provider's answer): the URL is the upstream's, so every fetch is
 * checked against non-public addresses after DNS resolution (src/providers/address-policy.ts) unless allowed here.
 */
export const mediaSchema = z
  .strictObject({
    images: z
      .strictObject({
        /** Upstream model IDs priced by their native token usage, with their `-YYYY-MM-DD` snapshots (docs/billing.md). */
        native_usage_models: z.array(z.string().min(1)).default([...DEFAULT_NATIVE_IMAGE_MODELS]),
      })
      .prefault({}),
    /** Video jobs (docs/api.md, "Video"): how every serving process polls their upstreams, and how long a job may run. */
    video: z
      .strictObject({
        poll_interval_seconds: z.int().positive().max(3600).default(5),
        /**
         * How long a process's claim on a job lasts while it polls it: no other process polls the job meanwhile, and
         * the job of a process that died during a poll is taken by another once it lapses.
         */
        claim_seconds: z.int().min(2).max(600).default(30),
        /** A job still running after this long is failed and its hold voided. */
        job_timeout_seconds: z
          .int()
          .positive()
          .default(6 * 3600),
        /** The durable hold's expiry: a job that no process polled again (none running) gives its units back then. */
        hold_expiry_seconds: z
          .int()
          .positive()
          .default(24 * 3600),
      })
      .prefault({})
      .refine((v) => v.hold_expiry_seconds > v.job_timeout_seconds, {
        message: "hold_expiry_seconds must be longer than job_timeout_seconds (a running job must keep its hold)",
        path: ["hold_expiry_seconds"],
      }),
    download: z
      .strictObject({
        max_bytes: z
          .int()
          .positive()
          .max(bufferConstants.MAX_LENGTH)
          .default(32 * MiB),
        /** The whole download, redirects included. */
        timeout_ms: z.int().positive().default(30_000),
        max_redirects: z.int().min(0).max(10).default(3),
        /** Non-public upstreams fetched anyway (a mock upstream on 127.0.0.1, a CDN on an internal network). */
        allow_private: z.array(privateUpstream).default([]),
      })
      .prefault({}),
    /** GET /embed/image:{model} (docs/api.md, "Embeddable images"): its tokens and its cache shared by every process. */
    embed: z
      .strictObject({
        /** The cache's total image bytes; the least recently used entries are evicted past it. */
        cache_max_bytes: z
          .int()
          .nonnegative()
          .default(256 * MiB),
        /** How long an entry serves after it was generated. */
        cache_ttl_seconds: z.int().positive().default(86_400),
        /** How long a request waits for an identical one that is generating (after that it generates itself). */
        wait_seconds: z.int().positive().max(600).default(120),
        /** Embed tokens: the lifetime when POST /v1/embed/tokens names none, and the longest it may ask for. */
        token_ttl_seconds: z.int().positive().default(3_600),
        token_max_ttl_seconds: z.int().positive().max(86_400).default(86_400),
      })
      .prefault({})
      .refine((embed) => embed.token_ttl_seconds <= embed.token_max_ttl_seconds, {
        message: "token_ttl_seconds must not exceed token_max_ttl_seconds",
        path: ["token_ttl_seconds"],
      }),
  })
  .prefault({});

/**
 * A pricing group's name, in the config and in an admin's key alike: a plain name that no object has as a member
 * (`constructor`, `toString`, `__proto__`), so that a name is always data, whatever table holds it.
 */
