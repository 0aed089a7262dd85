import { MemoryBus } from './memory';
import { RedisBus } from './redis';
import type { BusRetention, EventBus } from './types';

export { MemoryBus } from './memory';
export { RedisBus } from './redis';
export { defaultRetention } from './types';
export type { BusItem, BusRetention, EventBus, SubscribeFrom } from './types';

/** Redis Streams when `redisUrl` is given (several processes or machines), else the in-process bus. */
export function createBus(opts: { redisUrl?: string } & Partial<BusRetention> = {}): EventBus {
  const { redisUrl, ...retention } = opts;
  return redisUrl ? new RedisBus(redisUrl, retention) : new MemoryBus(retention);
}
