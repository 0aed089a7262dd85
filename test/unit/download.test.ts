/**
 * The worker's download of file parts (activities/download.ts): URLs the model takes pass through, the AI SDK's
 * refusal of private addresses stays in force, and a download that hangs is cut at the time bound.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { boundedDownload, defaultDownloadLimits } from '../../activities/download';

let server: Server;
let url: string;
let requests = 0;
beforeAll(async () => {
  server = createServer((_req, res) => {
    requests++;
    res.end('secret');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/internal`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe('boundedDownload', () => {
  it('passes URLs the model supports through untouched', async () => {
    const download = boundedDownload(new AbortController().signal);
    expect(await download([{ url: new URL('https://example.com/a.png'), isUrlSupportedByModel: true }])).toEqual([
      null,
    ]);
  });

  it('refuses loopback and private addresses without sending a request', async () => {
    const download = boundedDownload(new AbortController().signal);
    for (const target of [url, 'http://localhost/x', 'http://169.254.169.254/latest/meta-data', 'http://10.0.0.1/']) {
      await expect(download([{ url: new URL(target), isUrlSupportedByModel: false }])).rejects.toThrow(
        /not allowed|disallowed/,
      );
    }
    expect(requests).toBe(0);
  });

  it('cuts a download at the time bound', async () => {
    const hanging = ({ abortSignal }: { abortSignal?: AbortSignal }) =>
      new Promise<never>((_, reject) => abortSignal!.addEventListener('abort', () => reject(abortSignal!.reason)));
    const download = boundedDownload(
      new AbortController().signal,
      { ...defaultDownloadLimits, timeoutMs: 50 },
      hanging as never,
    );
    await expect(
      download([{ url: new URL('https://example.com/big.pdf'), isUrlSupportedByModel: false }]),
    ).rejects.toThrow(/timeout|aborted/i);
  });

  it("stops when the step's activity is cancelled", async () => {
    const cancel = new AbortController();
    const hanging = ({ abortSignal }: { abortSignal?: AbortSignal }) =>
      new Promise<never>((_, reject) => abortSignal!.addEventListener('abort', () => reject(abortSignal!.reason)));
    const download = boundedDownload(cancel.signal, defaultDownloadLimits, hanging as never);
    const pending = download([{ url: new URL('https://example.com/big.pdf'), isUrlSupportedByModel: false }]);
    cancel.abort(new Error('activity cancelled'));
    await expect(pending).rejects.toThrow('activity cancelled');
  });
});
