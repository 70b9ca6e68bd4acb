/**
 * The Slack source (platform `slack`): messages of
 * `channels` (IDs, or names resolved through conversations.list; a reader
 * may pick among the dataset's channels, or any when the dataset lists none)
 * read with conversations.history between `since_ts` and `until_ts`,
 * thread replies through conversations.replies when `include_replies`,
 * capped at `max_messages`. Rows are the message dicts as Slack returns
 * them, channel by channel in the API's order (newest first), each thread's
 * replies right after their parent. Pagination follows `next_cursor`; a 429
 * waits for its `Retry-After` (the Web API client's own handling). The
 * token comes from `credential_override` (the token itself) or the
 * catalog secret `properties.secret_urn`; it is never logged. Filters,
 * offset and limit are applied in process.
 */
import type { ConversationsHistoryResponse, Logger, WebClient } from '@slack/web-api';
import { RetrievalErrors } from '../../errors.ts';
import { revealSecret, type SecretReader } from '../credentials.ts';
import { jsonType } from '../formats.ts';
import { lazyModule } from '../lazy.ts';
import {
  AT_MOST,
  COUNT_PROBLEM,
  credentialFields,
  isCount,
  jsonObject,
  type ReaderOptionTable,
  SUBSET,
  unpinned,
} from '../reader-options.ts';
import { scanBatches } from '../scan.ts';
import type { Row, SchemaField, Source, SourceFactory, SourceInput } from '../types.ts';

interface SlackOptions {
  readonly apiUrl: string | undefined;
  readonly channels: string[];
  readonly includeReplies: boolean;
  readonly maxMessages: number | null;
  /** Slack `oldest` / `latest`: epoch seconds as text. */
  readonly oldest: string | undefined;
  readonly latest: string | undefined;
}

const PAGE = 200;

/** Channels within the dataset's, at most its messages, a window and replies it does not fix. */
const SLACK_READER_OPTIONS: ReaderOptionTable = {
  channels: SUBSET,
  max_messages: AT_MOST,
  since_ts: unpinned(),
  until_ts: unpinned(),
  include_replies: unpinned(),
};
const invalid = (option: string, problem: string) => RetrievalErrors.make.source_options_invalid({ option, problem });
const slackSdk = lazyModule('Slack', () => import('@slack/web-api'));

/** An ISO-8601 time or a Slack ts ("1712345678.000100") → a Slack ts. */
function slackTs(value: unknown, option: string): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'string' && /^\d{1,10}(\.\d{1,6})?$/.test(value)) return value;
  const ms = typeof value === 'string' ? Date.parse(value) : Number.NaN;
  if (!Number.isFinite(ms)) throw invalid(option, 'an ISO-8601 time or a Slack ts');
  return (ms / 1000).toFixed(6);
}

function slackOptions(input: SourceInput): SlackOptions {
  const get = (key: string) => input.options[key] ?? input.properties[key];
  const channels = get('channels');
  if (
    !Array.isArray(channels) ||
    channels.length === 0 ||
    !channels.every((c) => typeof c === 'string' && /^#?[\w.-]{1,80}$/.test(c))
  ) {
    throw invalid('channels', 'a non-empty list of channel IDs or names');
  }
  const includeReplies = get('include_replies') ?? false;
  if (typeof includeReplies !== 'boolean') throw invalid('include_replies', 'a boolean');
  const max = get('max_messages');
  if (max !== undefined && max !== null && !isCount(max)) throw invalid('max_messages', COUNT_PROBLEM);
  // The API URL is the dataset owner's choice (a Slack Enterprise Grid or a test server), never the caller's.
  const apiUrl = input.properties.api_url;
  if (apiUrl !== undefined && (typeof apiUrl !== 'string' || !/^https?:\/\/[^\s]+\/$/.test(apiUrl)))
    throw invalid('api_url', 'an http(s) URL ending in /');
  return {
    apiUrl: apiUrl as string | undefined,
    channels: channels as string[],
    includeReplies,
    maxMessages: (max as number | undefined) ?? null,
    oldest: slackTs(get('since_ts'), 'since_ts'),
    latest: slackTs(get('until_ts'), 'until_ts'),
  };
}

function slackToken(input: SourceInput, secrets: SecretReader | undefined): string {
  let raw = input.credentialOverride;
  const fromOverride = raw !== null;
  const urn = input.properties.secret_urn;
  if (!raw && typeof urn === 'string' && urn !== '') raw = revealSecret(secrets, urn);
  let token = raw?.trim();
  if (token?.startsWith('{')) {
    // A reader's override is the token or {"token"}, nothing else; the owner's secret may hold more.
    const fields = fromOverride ? credentialFields(token, ['token'], 'slack') : jsonObject(token);
    token = typeof fields?.token === 'string' ? fields.token : '';
  }
  if (!token || /\s/.test(token))
    throw RetrievalErrors.make.source_credentials_missing({
      problem: 'no Slack token (credential_override or secret_urn)',
    });
  return token;
}

function classify(error: unknown): Error {
  if (error instanceof Error && error.name === 'ApiError') return error;
  const code = (error as { code?: string; data?: { error?: string } }).data?.error;
  if (code === 'channel_not_found') return RetrievalErrors.make.source_not_found({ problem: 'channel_not_found' });
  if (code) return RetrievalErrors.make.source_unavailable({ problem: `slack answered ${code}` });
  return RetrievalErrors.make.source_unavailable({ problem: 'slack unreachable or the read broke off' });
}

async function client(token: string, options: SlackOptions, signal: AbortSignal): Promise<WebClient> {
  const { LogLevel, WebClient } = await slackSdk();
  const silent: Logger = {
    debug() {},
    info() {},
    warn() {},
    error() {},
    setLevel() {},
    getLevel: () => LogLevel.ERROR,
    setName() {},
  };
  return new WebClient(token, {
    ...(options.apiUrl ? { slackApiUrl: options.apiUrl } : {}),
    logger: silent,
    timeout: 30_000,
    rejectRateLimitedCalls: false,
    retryConfig: { retries: 2, factor: 2, minTimeout: 200, maxTimeout: 2000 },
    fetch: (url, init) =>
      fetch(url, { ...init, signal: init?.signal ? AbortSignal.any([init.signal, signal]) : signal }),
  });
}

async function channelIds(web: WebClient, wanted: readonly string[]): Promise<string[]> {
  if (wanted.every((c) => /^[CGD][A-Z0-9]{2,}$/.test(c))) return [...wanted];
  const byName = new Map<string, string>();
  let cursor: string | undefined;
  do {
    const page = await web.conversations.list({
      types: 'public_channel,private_channel',
      limit: PAGE,
      exclude_archived: true,
      cursor,
    });
    for (const c of page.channels ?? []) if (c.name && c.id) byName.set(c.name, c.id);
    cursor = page.response_metadata?.next_cursor || undefined;
  } while (cursor);
  return wanted.map((c) => {
    if (/^[CGD][A-Z0-9]{2,}$/.test(c)) return c;
    const id = byName.get(c.replace(/^#/, ''));
    if (!id) throw RetrievalErrors.make.source_not_found({ problem: 'channel_not_found', channel: c });
    return id;
  });
}

type Message = Row & { ts?: string; thread_ts?: string; reply_count?: number };

async function* replies(
  web: WebClient,
  channel: string,
  parent: Message,
  options: SlackOptions,
): AsyncGenerator<Message[]> {
  let cursor: string | undefined;
  do {
    const page = await web.conversations.replies({
      channel,
      ts: parent.ts as string,
      limit: PAGE,
      cursor,
      oldest: options.oldest,
      latest: options.latest,
    });
    // The thread's first message is the parent itself, already yielded.
    yield ((page.messages ?? []) as Message[]).filter((m) => m.ts !== parent.ts);
    cursor = page.response_metadata?.next_cursor || undefined;
  } while (cursor);
}

async function* channelMessages(web: WebClient, channel: string, options: SlackOptions): AsyncGenerator<Message[]> {
  let cursor: string | undefined;
  do {
    const page: ConversationsHistoryResponse = await web.conversations.history({
      channel,
      limit: PAGE,
      cursor,
      oldest: options.oldest,
      latest: options.latest,
    });
    for (const message of (page.messages ?? []) as Message[]) {
      yield [message];
      if (options.includeReplies && (message.reply_count ?? 0) > 0 && message.ts)
        yield* replies(web, channel, message, options);
    }
    cursor = page.response_metadata?.next_cursor || undefined;
  } while (cursor);
}

async function* allMessages(web: WebClient, options: SlackOptions, signal: AbortSignal): AsyncGenerator<Row[]> {
  let remaining = options.maxMessages ?? Number.POSITIVE_INFINITY;
  for (const channel of await channelIds(web, options.channels)) {
    for await (const messages of channelMessages(web, channel, options)) {
      signal.throwIfAborted();
      const taken = messages.slice(0, remaining);
      remaining -= taken.length;
      if (taken.length > 0) yield taken;
      if (remaining <= 0) return;
    }
  }
}

export function slackSources(secrets: () => SecretReader | undefined): SourceFactory {
  return {
    platforms: ['slack'],
    readerOptions: SLACK_READER_OPTIONS,
    describe: (input) => ({ path: slackOptions(input).channels.join(','), format: 'json' }),
    create(input): Source {
      const options = slackOptions(input);
      const token = slackToken(input, secrets());
      const read = async function* (signal: AbortSignal, limit: number | null): AsyncGenerator<Row[]> {
        try {
          yield* allMessages(
            await client(token, options, signal),
            { ...options, maxMessages: limit ?? options.maxMessages },
            signal,
          );
        } catch (error) {
          signal.throwIfAborted();
          throw classify(error);
        }
      };
      return {
        async schema(signal): Promise<SchemaField[]> {
          for await (const [first] of read(signal, 1))
            return Object.entries(first ?? {}).map(([name, value]) => ({ name, type: jsonType(value) }));
          return [];
        },
        async *read(request) {
          for await (const batch of scanBatches(read(request.signal, null), request)) {
            yield batch;
            request.signal.throwIfAborted();
          }
        },
      };
    },
  };
}
