/**
 * How a step loads the file parts the model provider cannot take as a URL. The provider gets the URL itself when it
 * says it supports it for that media type (`supportedUrls`, e.g. OpenAI's images); every other `http(s)` URL is
 * downloaded here, by the worker, with the AI SDK's download: it refuses `localhost`, private, loopback and
 * link-local addresses (checked on the address the name resolves to, on every redirect) and strips credentials
 * from redirects, so a caller cannot point the worker at its own network. What the SDK leaves open is how much and
 * how long (2 GiB, no timeout): bounded here. Ingress (`client/inputs.ts`) already refuses other schemes.
 */
import { createDownload, type Experimental_DownloadFunction as DownloadFunction } from 'ai';

export interface DownloadLimits {
  /** Largest file the worker downloads for one part. */
  maxBytes: number;
  /** How long one download may take, from the request to the last byte. */
  timeoutMs: number;
}

export const defaultDownloadLimits: DownloadLimits = { maxBytes: 32 * 1024 * 1024, timeoutMs: 30_000 };

type DownloadOne = ReturnType<typeof createDownload>;

/**
 * The step's `experimental_download`: URLs the model takes pass through untouched (`null`), the others are
 * downloaded within `limits`, and all of it stops when `abortSignal` (the activity's cancellation) fires.
 */
export function boundedDownload(
  abortSignal: AbortSignal,
  limits: DownloadLimits = defaultDownloadLimits,
  downloadOne: DownloadOne = createDownload({ maxBytes: limits.maxBytes }),
): DownloadFunction {
  return (requested) =>
    Promise.all(
      requested.map(({ url, isUrlSupportedByModel }) =>
        isUrlSupportedByModel
          ? null
          : downloadOne({ url, abortSignal: AbortSignal.any([abortSignal, AbortSignal.timeout(limits.timeoutMs)]) }),
      ),
    );
}
