/**
 * The console's access to the gateway: the HTTP SDK (`http-client/`) with the user's key, plus the reads the SDK does
 * not have a method for (the thread list, the step timeline), through its request function.
 */
import { createHttpClient, isThreadlineHttpError, type ThreadlineHttpClient } from '../http-client';
import type { ThreadListPage } from '../protocol/thread-list';
import type { ThreadTarget } from '../protocol/schemas';
import type { StepList, StepPrompt } from '../protocol/time-travel';

export interface ThreadListQuery {
  status?: string;
  agent?: string;
  resource?: string;
  query?: string;
  pageSize?: number;
  pageToken?: string;
}

const enc = encodeURIComponent;
export const threadPath = (t: ThreadTarget) => `/threads/${enc(t.resourceId)}/${enc(t.threadId)}`;

/** A route this gateway does not serve (an older gateway): the feature is shown as unavailable. */
export function isMissingRoute(err: unknown): boolean {
  return isThreadlineHttpError(err) && err.status === 404 && /^No route /.test(err.message);
}

export class ConsoleApi {
  readonly http: ThreadlineHttpClient;

  /** `onUnauthorized` runs when the gateway refuses the key (401): the console asks for another. */
  constructor(
    readonly baseUrl: string,
    readonly apiKey: string | undefined,
    onUnauthorized: () => void,
  ) {
    this.http = createHttpClient({
      baseUrl,
      apiKey,
      retries: 1,
      fetch: async (input, init) => {
        const response = await globalThis.fetch(input, init);
        if (response.status === 401) onUnauthorized();
        return response;
      },
    });
  }

  /** Headers for requests the SDK does not make itself (the event stream). */
  authHeaders(): Record<string, string> {
    return this.apiKey ? { authorization: `Bearer ${this.apiKey}` } : {};
  }

  listThreads(query: ThreadListQuery): Promise<ThreadListPage> {
    return this.http.request('GET', '/threads', { query: { ...query }, retry: true });
  }

  /** Not the SDK's `listSteps`, which answers null on any 404: an older gateway without the route is told apart. */
  steps(target: ThreadTarget): Promise<StepList> {
    return this.http.request('GET', `${threadPath(target)}/steps`, { retry: true });
  }

  stepPrompt(target: ThreadTarget, step: number): Promise<StepPrompt> {
    return this.http.inspectStep(target, step);
  }
}

/** One line for an error shown to the user: the gateway's own message when it sent one. */
export function describeError(err: unknown): string {
  if (isThreadlineHttpError(err)) return `${err.message} (HTTP ${err.status})`;
  if (err instanceof TypeError) return 'The gateway did not answer. Is it running?';
  return err instanceof Error ? err.message : String(err);
}
